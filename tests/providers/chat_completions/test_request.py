"""Stage 01 of the Chat Completions wire: the bodies ``build_chat_body`` and ``build_messages`` write."""

from __future__ import annotations

from rxcord.core.request import ChatRequest, ImagePart, Message, Role, SamplerSettings, TextPart, ToolSpec
from rxcord.core.types import FunctionCall
from rxcord.providers.chat_completions.request import build_chat_body, build_messages


def _tool_loop_request() -> ChatRequest:
    call = FunctionCall(
        name="get_weather",
        args={"location": "Paris"},
        id="call_1",
        replay={"reasoning_details": [{"type": "reasoning.text", "text": "hm", "index": 0}]},
    )
    return ChatRequest(
        model="m",
        system="Be brief.",
        messages=(
            Message.user("What is this?", ImagePart(mime_type="image/jpeg", data_b64="QUJD")),
            Message(role=Role.ASSISTANT, tool_calls=(call,), replay={"reasoning_content": "think"}),
            Message(role=Role.TOOL, tool_call_id="call_1", name="get_weather", content=(TextPart("sunny"),)),
        ),
        tools=(ToolSpec(name="get_weather", description="Weather", parameters={"type": "object"}),),
        stop=("\nUser:",),
        sampler=SamplerSettings(temperature=0.7, top_k=40, max_tokens=256, seed=3, reasoning_effort="low"),
    )


def test_body_puts_images_as_image_url_parts() -> None:
    """A user turn with an image becomes text and ``image_url`` parts (inline data as a data URL)."""
    messages = build_messages(_tool_loop_request())
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,QUJD"}},
        ],
    }


def test_body_text_only_user_turn_is_a_plain_string() -> None:
    """Without images, content is a plain string (the most widely accepted shape)."""
    assert build_messages(ChatRequest(model="m", messages=(Message.user("hi"),))) == [
        {"role": "user", "content": "hi"}
    ]


def test_body_system_first_and_prefill_last() -> None:
    """The system prompt opens the messages and a prefill closes them as an assistant turn."""
    request = ChatRequest(model="m", system="S", messages=(Message.user("u"),), prefill="Sure,")
    messages = build_messages(request)
    assert messages[0] == {"role": "system", "content": "S"}
    assert messages[-1] == {"role": "assistant", "content": "Sure,"}


def test_body_tool_calls_keep_ids_and_replay_fields() -> None:
    """Assistant calls keep their ids and JSON arguments; replay fields go back on the message."""
    assistant = build_messages(_tool_loop_request())[2]
    assert assistant["content"] is None
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
        }
    ]
    assert assistant["reasoning_content"] == "think"
    assert assistant["reasoning_details"] == [{"type": "reasoning.text", "text": "hm", "index": 0}]


def test_body_tool_result_is_role_tool() -> None:
    """A tool result is a ``tool`` message answering its call id."""
    assert build_messages(_tool_loop_request())[3] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "sunny",
    }


def test_body_tool_result_without_id_answers_the_open_call() -> None:
    """A call without an id gets one, and a result without an id answers it."""
    request = ChatRequest(
        model="m",
        messages=(
            Message(role=Role.ASSISTANT, tool_calls=(FunctionCall(name="a"), FunctionCall(name="b"))),
            Message(role=Role.TOOL, name="b", content=(TextPart("B"),)),
            Message(role=Role.TOOL, content=(TextPart("A"),)),
        ),
    )
    messages = build_messages(request)
    ids = [call["id"] for call in messages[0]["tool_calls"]]
    assert len(set(ids)) == 2
    assert messages[1]["tool_call_id"] == ids[1]
    assert messages[2]["tool_call_id"] == ids[0]


def test_body_tools_stop_sampler_stream_options() -> None:
    """Tools, stop, sampler settings, ``stream: true`` and ``include_usage`` are all sent."""
    body = build_chat_body(_tool_loop_request())
    assert body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object"}},
        }
    ]
    assert body["stop"] == ["\nUser:"]
    assert (body["temperature"], body["top_k"], body["max_tokens"], body["seed"]) == (0.7, 40, 256, 3)
    assert body["reasoning_effort"] == "low"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert "top_p" not in body


def test_body_not_streamed_has_no_stream_options() -> None:
    """A non-streamed body says ``stream: false`` and asks for no stream options."""
    body = build_chat_body(ChatRequest(model="m"), stream=False)
    assert body["stream"] is False
    assert "stream_options" not in body


def test_body_extra_fields_win() -> None:
    """``ChatRequest.extra`` is merged last."""
    body = build_chat_body(ChatRequest(model="m", extra={"temperature": 0.1, "min_p": 0.05}))
    assert body["temperature"] == 0.1
    assert body["min_p"] == 0.05
