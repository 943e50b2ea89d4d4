"""Stage 01 of Google Gemini: the body ``build_gemini_body`` writes, signature replay included."""

from __future__ import annotations

import pytest

from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest, ImagePart, Message, Role, SamplerSettings, TextPart, ToolSpec
from rxcord.core.types import FunctionCall, ThoughtKind, ThoughtLogEntry
from rxcord.providers.google.request import build_gemini_body
from tests.providers.google.test_normalizer import SIG_A, _run, _sse, _text

# --------------------------------------------------------------------------- stage 01


def _history() -> ChatRequest:
    weather = FunctionCall(name="get_weather", args={"city": "Paris"}, id="c1", thought_signature="SIG-CALL")
    clock = FunctionCall(name="get_time", args={"tz": "CET"}, id="c2")
    return ChatRequest(
        model="models/gemini-2.5-flash",
        system="You are terse.",
        messages=(
            Message(role=Role.SYSTEM, content=(TextPart("Answer in English."),)),
            Message.user(
                "What is in these?",
                ImagePart(mime_type="image/png", data_b64="iVBORw0KGgo="),
                ImagePart(mime_type="image/jpeg", url="https://example.com/cat.jpg"),
            ),
            Message(
                role=Role.ASSISTANT,
                content=(TextPart("Checking."),),
                tool_calls=(weather, clock),
                thoughts=(ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature="SIG-CALL"),),
            ),
            Message(role=Role.TOOL, tool_call_id="c1", content=(TextPart('{"temp": 21}'),)),
            Message(role=Role.TOOL, tool_call_id="c2", content=(TextPart("14:05"),)),
            Message(
                role=Role.ASSISTANT,
                content=(TextPart("It is 21 degrees "), TextPart("at 14:05.")),
                thoughts=(
                    ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text="done"),
                    ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature="SIG-TEXT"),
                ),
            ),
            Message.user("Thanks"),
        ),
        tools=(
            ToolSpec(
                name="get_weather",
                description="Weather by city.",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                    "additionalProperties": False,
                },
            ),
            ToolSpec(name="get_time"),
        ),
        stop=("END",),
        sampler=SamplerSettings(temperature=0.7, top_p=0.9, top_k=40, max_tokens=512, reasoning_effort="low"),
    )


def test_golden_body() -> None:
    """The whole GenerateContentRequest: roles, parts, signatures on their parts, tools, generationConfig."""
    body = build_gemini_body(_history())
    assert body == {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "What is in these?"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/cat.jpg"}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "Checking."},
                    {
                        "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                        "thoughtSignature": "SIG-CALL",
                    },
                    {"functionCall": {"name": "get_time", "args": {"tz": "CET"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "get_weather", "response": {"temp": 21}}},
                    {"functionResponse": {"name": "get_time", "response": {"result": "14:05"}}},
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "It is 21 degrees "},
                    {"text": "at 14:05.", "thoughtSignature": "SIG-TEXT"},
                ],
            },
            {"role": "user", "parts": [{"text": "Thanks"}]},
        ],
        "systemInstruction": {"parts": [{"text": "You are terse.\n\nAnswer in English."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather by city.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                            "additionalProperties": False,
                        },
                    },
                    {"name": "get_time", "parametersJsonSchema": {"type": "object", "properties": {}}},
                ]
            }
        ],
        "generationConfig": {
            "temperature": 0.7,
            "topP": 0.9,
            "topK": 40,
            "maxOutputTokens": 512,
            "stopSequences": ["END"],
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 1024},
        },
    }


def test_signature_round_trip_from_a_capture() -> None:
    """A captured call's signature is replayed once, on the call's part, when the turn is sent back."""
    chunks = _run(_sse("text_and_call.sse"))
    calls = tuple(c.function_call for c in chunks if c.function_call is not None)
    thoughts = tuple(t for c in chunks for t in c.thoughts)
    turn = Message(
        role=Role.ASSISTANT, content=(TextPart(_text(chunks)),), tool_calls=calls, thoughts=thoughts
    )
    body = build_gemini_body(ChatRequest(model="m", messages=(Message.user("weather?"), turn)))
    parts = body["contents"][1]["parts"]
    assert parts == [
        {"text": "Let me look up the current weather in Paris for you."},
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Paris", "unit": "celsius"}},
            "thoughtSignature": SIG_A,
        },
    ]


def test_text_signature_round_trip_from_a_capture() -> None:
    """A signature that came on a text part goes back on the turn's last text part."""
    chunks = _run(_sse("thoughts.sse"))
    turn = Message(
        role=Role.ASSISTANT,
        content=(TextPart(_text(chunks)),),
        thoughts=tuple(t for c in chunks for t in c.thoughts),
    )
    body = build_gemini_body(ChatRequest(model="m", messages=(turn,)))
    assert body["contents"][0]["parts"] == [{"text": _text(chunks), "thoughtSignature": SIG_A}]


def test_signature_without_text_gets_an_empty_text_part() -> None:
    """A text signature on a turn with no text rides on an empty text part, as Gemini sends it."""
    turn = Message(
        role=Role.ASSISTANT, thoughts=(ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature="S"),)
    )
    body = build_gemini_body(ChatRequest(model="m", messages=(turn,)))
    assert body["contents"] == [{"role": "model", "parts": [{"text": "", "thoughtSignature": "S"}]}]


def test_tool_result_name_fallbacks() -> None:
    """A tool result finds its name by call id, then by pending calls; with neither it is an InputError."""
    call = FunctionCall(name="lookup", args={})
    turn = Message(role=Role.ASSISTANT, tool_calls=(call,))
    result = Message(role=Role.TOOL, content=(TextPart("[1, 2]"),))
    body = build_gemini_body(ChatRequest(model="m", messages=(turn, result)))
    assert body["contents"][1]["parts"] == [
        {"functionResponse": {"name": "lookup", "response": {"result": "[1, 2]"}}}
    ]
    with pytest.raises(InputError):
        build_gemini_body(ChatRequest(model="m", messages=(result,)))


def test_generation_config_details() -> None:
    """Penalties and seed are sent when set, stop sequences capped at five, extra merged one level deep."""
    request = ChatRequest(
        model="m",
        messages=(Message.user("hi"), Message(role=Role.ASSISTANT)),
        stop=("a", "b", "c", "d", "e", "f"),
        sampler=SamplerSettings(
            presence_penalty=0.5, frequency_penalty=0.25, seed=7, reasoning_effort="2048"
        ),
        prefill="Sure,",
        extra={"generationConfig": {"candidateCount": 1}, "safetySettings": [{"category": "X"}]},
    )
    body = build_gemini_body(request, include_thoughts=False)
    assert body["contents"] == [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "model", "parts": [{"text": "Sure,"}]},
    ]
    assert body["generationConfig"] == {
        "presencePenalty": 0.5,
        "frequencyPenalty": 0.25,
        "seed": 7,
        "stopSequences": ["a", "b", "c", "d", "e"],
        "thinkingConfig": {"thinkingBudget": 2048},
        "candidateCount": 1,
    }
    assert body["safetySettings"] == [{"category": "X"}]
