"""Stage 01 of Anthropic Messages: the body ``build_anthropic_body`` writes, thinking replay included."""

from __future__ import annotations

from rxcord.core.request import ChatRequest, ImagePart, Message, Role, SamplerSettings, TextPart, ToolSpec
from rxcord.core.types import FunctionCall, ThoughtKind, ThoughtLogEntry
from rxcord.providers.anthropic.request import DEFAULT_MAX_TOKENS, build_anthropic_body, thinking_blocks
from tests.providers.anthropic.test_normalizer import _calls, _run, _signature, _sse, _thoughts

# --------------------------------------------------------------------------- stage 01


def _history() -> ChatRequest:
    calls = (
        FunctionCall(name="get_weather", args={"city": "Paris"}, id="toolu_A"),
        FunctionCall(name="get_time", args={}, id="call.with:odd/chars"),
    )
    thoughts = (
        ThoughtLogEntry(kind=ThoughtKind.REDACTED, signature="ENCRYPTED"),
        ThoughtLogEntry(kind=ThoughtKind.RAW, text="Need the "),
        ThoughtLogEntry(kind=ThoughtKind.RAW, text="weather."),
        ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature="SIG-1"),
    )
    return ChatRequest(
        model="claude-sonnet-4-5",
        system="You are terse.",
        messages=(
            Message(role=Role.SYSTEM, content=(TextPart("Answer in English."),)),
            Message.user(
                "Look:",
                ImagePart(mime_type="image/png", data_b64="iVBORw0KGgo="),
                ImagePart(url="https://example.com/cat.jpg"),
            ),
            Message(
                role=Role.ASSISTANT, content=(TextPart("Checking."),), tool_calls=calls, thoughts=thoughts
            ),
            Message(role=Role.TOOL, tool_call_id="toolu_A", content=(TextPart('{"temp": 21}'),)),
            Message(role=Role.TOOL, tool_call_id="call.with:odd/chars", content=(TextPart("14:05"),)),
            Message.user("And tomorrow?"),
        ),
        tools=(
            ToolSpec(
                name="get_weather",
                description="Weather by city.",
                parameters={
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            ),
            ToolSpec(name="get_time"),
        ),
        stop=("END",),
        sampler=SamplerSettings(
            temperature=0.7, top_p=0.97, top_k=40, max_tokens=1000, reasoning_effort="low"
        ),
    )


def test_golden_body_with_thinking() -> None:
    """The whole Messages body: thinking replayed before tool_use, tool results merged, thinking set."""
    body = build_anthropic_body(_history())
    assert body == {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1000 + 2048,
        "system": "You are terse.\n\nAnswer in English.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look:"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                    },
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "redacted_thinking", "data": "ENCRYPTED"},
                    {"type": "thinking", "thinking": "Need the weather.", "signature": "SIG-1"},
                    {"type": "text", "text": "Checking."},
                    {"type": "tool_use", "id": "toolu_A", "name": "get_weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "call_with_odd_chars", "name": "get_time", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_A", "content": '{"temp": 21}'},
                    {"type": "tool_result", "tool_use_id": "call_with_odd_chars", "content": "14:05"},
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "Weather by city.",
                "input_schema": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
            {"name": "get_time", "input_schema": {"type": "object", "properties": {}}},
        ],
        "stop_sequences": ["END"],
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "top_p": 0.97,
        "stream": True,
    }


def test_body_without_thinking_keeps_samplers_and_prefill() -> None:
    """Without thinking: default max_tokens, samplers sent, prefill appended without trailing space."""
    request = ChatRequest(
        model="claude-haiku-4-5",
        messages=(Message.user("Hi"),),
        sampler=SamplerSettings(temperature=0.2, top_p=0.5, top_k=10, reasoning_effort="none"),
        prefill="Hello ",
        extra={"metadata": {"user_id": "u1"}},
    )
    body = build_anthropic_body(request, stream=False)
    assert body == {
        "model": "claude-haiku-4-5",
        "max_tokens": DEFAULT_MAX_TOKENS,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        ],
        "temperature": 0.2,
        "top_k": 10,
        "top_p": 0.5,
        "metadata": {"user_id": "u1"},
    }


def test_thinking_drops_incompatible_settings() -> None:
    """With thinking, a top_p under 0.95 and the prefill are left out rather than rejected by the API."""
    request = ChatRequest(
        model="m",
        messages=(Message.user("Hi"),),
        sampler=SamplerSettings(temperature=0.2, top_p=0.5, reasoning_effort="high"),
        prefill="Sure",
    )
    body = build_anthropic_body(request)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 16384}
    assert body["max_tokens"] == DEFAULT_MAX_TOKENS + 16384
    assert "temperature" not in body and "top_p" not in body
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]


def test_thinking_replay_round_trip_from_a_capture() -> None:
    """Thoughts captured from a stream rebuild the exact signed blocks, placed before the tool_use block."""
    chunks = _run(_sse("redacted_thinking.sse"))
    turn = Message(role=Role.ASSISTANT, tool_calls=tuple(_calls(chunks)), thoughts=_thoughts(chunks))
    body = build_anthropic_body(ChatRequest(model="m", messages=(Message.user("time?"), turn)))
    content = body["messages"][1]["content"]
    assert [block["type"] for block in content] == ["redacted_thinking", "thinking", "tool_use"]
    assert content[1] == {
        "type": "thinking",
        "thinking": "The user wants the time in Tokyo; the get_time tool answers that.",
        "signature": _signature("redacted_thinking.sse"),
    }
    assert content[2]["id"] == "toolu_01C8dX4rV2nM6pQ9sT1wY3zA"


def test_unsigned_thinking_is_not_replayed() -> None:
    """RAW text never closed by a signature cannot be replayed; a signed RAW entry is a block by itself."""
    blocks = thinking_blocks(
        [
            ThoughtLogEntry(kind=ThoughtKind.RAW, text="whole", signature="S1"),
            ThoughtLogEntry(kind=ThoughtKind.RAW, text="dangling"),
            ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text="gemini only"),
        ]
    )
    assert blocks == [{"type": "thinking", "thinking": "whole", "signature": "S1"}]


def test_calls_without_ids_get_stable_ids_and_results_match_them() -> None:
    """A replayed call without an id gets one, and an id-less tool result answers it by name."""
    turn = Message(role=Role.ASSISTANT, tool_calls=(FunctionCall(name="a"), FunctionCall(name="b")))
    results = (
        Message(role=Role.TOOL, name="b", content=(TextPart("B"),)),
        Message(role=Role.TOOL, name="a", content=(TextPart("A"),)),
    )
    body = build_anthropic_body(ChatRequest(model="m", messages=(Message.user("go"), turn, *results)))
    ids = [block["id"] for block in body["messages"][1]["content"]]
    answered = [(block["tool_use_id"], block["content"]) for block in body["messages"][2]["content"]]
    assert answered == [(ids[1], "B"), (ids[0], "A")]
    assert len(set(ids)) == 2


def test_tool_result_with_image_uses_blocks() -> None:
    """A tool result carrying an image is sent as content blocks, not a string."""
    turn = Message(role=Role.ASSISTANT, tool_calls=(FunctionCall(name="shot", id="t1"),))
    result = Message(
        role=Role.TOOL,
        tool_call_id="t1",
        content=(TextPart("here"), ImagePart(url="https://example.com/s.png")),
    )
    body = build_anthropic_body(ChatRequest(model="m", messages=(Message.user("go"), turn, result)))
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "t1",
            "content": [
                {"type": "text", "text": "here"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/s.png"}},
            ],
        }
    ]
