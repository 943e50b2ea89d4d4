"""Clean ends: a stream that reaches its end marker without a finish reason ends with ``stop``, noted.

``[DONE]`` ends a Chat Completions stream and ``message_stop`` an Anthropic message; a reply whose
last event gave no finish reason is complete, so its result says ``stop`` (with the note in
``raw_finish_reason``), never ``None``. A body that stops before the marker is a different case
(the transport's ``truncated_stream``) and is not tested here.
"""

from __future__ import annotations

import json
from typing import Any

from rxcord.compose.run import stream_to_discord
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ChunkType, FinishReason, ProcessedChunk, RawStreamChunk, StreamStatus
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.anthropic.normalizer import NO_STOP_REASON
from rxcord.providers.chat_completions.normalizer import NO_FINISH_REASON
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

REQUEST = ChatRequest(model="gpt-4o", messages=(Message.user("hi"),))


def _delta(delta: dict[str, Any]) -> dict[str, Any]:
    return {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}


def _feed(adapter: Any, events: list[dict[str, Any]]) -> list[ProcessedChunk]:
    normalizer = adapter.new_normalizer()
    out: list[ProcessedChunk] = []
    for event in events:
        out.extend(
            normalizer.feed(RawStreamChunk(provider=adapter.name, data=event, event=event.get("type")))
        )
    out.extend(normalizer.finish())
    return out


def _finishes(chunks: list[ProcessedChunk]) -> list[tuple[Any, Any]]:
    return [
        (c.metadata.get("finish_reason"), c.metadata.get("raw_finish_reason"))
        for c in chunks
        if c.type is ChunkType.DONE and "finish_reason" in c.metadata
    ]


def test_chat_completions_end_without_finish_reason_is_stop_with_a_note() -> None:
    """Deltas, then the end: one ``done`` with ``stop`` and the note."""
    chunks = _feed(OpenAIAdapter(), [_delta({"role": "assistant"}), _delta({"content": "Hello."})])
    assert _finishes(chunks) == [(FinishReason.STOP, NO_FINISH_REASON)]


def test_chat_completions_reported_finish_reason_is_untouched() -> None:
    """A reported finish reason is kept as it came (no note)."""
    done = {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    chunks = _feed(OpenAIAdapter(), [_delta({"content": "Hel"}), done])
    assert _finishes(chunks) == [(FinishReason.LENGTH, "length")]


def test_chat_completions_calls_without_finish_reason_end_as_tool_calls() -> None:
    """Assembled tool calls at a clean end without a finish reason: ``tool_calls``, then the calls."""
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    chunks = _feed(OpenAIAdapter(), [_delta({"tool_calls": [call]})])
    assert _finishes(chunks) == [(FinishReason.TOOL_CALLS, NO_FINISH_REASON)]
    assert [c.function_call.name for c in chunks if c.function_call is not None] == ["f"]


def _anthropic_events(stop_reason: str | None) -> list[dict[str, Any]]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [],
        "usage": {"input_tokens": 5},
    }
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Paris."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]


def test_anthropic_message_stop_without_stop_reason_is_stop_with_a_note() -> None:
    """``message_stop`` after a ``message_delta`` with a null stop reason: ``stop``, noted, usage kept."""
    chunks = _feed(AnthropicAdapter(), _anthropic_events(None))
    assert _finishes(chunks) == [(FinishReason.STOP, NO_STOP_REASON)]
    last = [c for c in chunks if c.type is ChunkType.DONE and "finish_reason" in c.metadata][-1]
    assert last.usage is not None and last.usage.output_tokens == 3


def test_anthropic_stop_reason_then_message_stop_gives_one_finish() -> None:
    """A real stop reason is the only finish: ``message_stop`` adds nothing after it."""
    chunks = _feed(AnthropicAdapter(), _anthropic_events("end_turn"))
    assert _finishes(chunks) == [(FinishReason.STOP, "end_turn")]


async def test_done_without_finish_reason_ends_the_result_with_stop() -> None:
    """End to end: content then ``data: [DONE]`` and no finish_reason: the result says stop, noted."""
    body = "".join("data: " + json.dumps(e) + "\n\n" for e in (_delta({"content": "Hello there."}),))
    sink = MemorySink()
    async with ReplayServer(body=(body + "data: [DONE]\n\n").encode()) as server:
        result = await stream_to_discord(
            OpenAIAdapter(),
            REQUEST,
            sink=sink,
            base_url=server.base_url,
            api_key="sk-test-key-000000",
            transport=TransportConfig(allow_private_network=True),
        )
    assert result.status is StreamStatus.COMPLETED and sink.contents == ["Hello there."]
    assert (result.finish_reason, result.raw_finish_reason) == (FinishReason.STOP, NO_FINISH_REASON)


def test_nothing_recognised_before_done_is_still_an_error() -> None:
    """The clean-end rule needs a recognised chunk: events of another shape, then the end, stay an error."""
    chunks = _feed(OpenAIAdapter(), [{"type": "response.output_text.delta", "delta": "Hi"}])
    assert [c.type for c in chunks] == [ChunkType.ERROR]
    assert chunks[0].error is not None and chunks[0].error.code == "unrecognized_response"
    stray = _feed(AnthropicAdapter(), [{"type": "ping"}, {"type": "message_stop"}])
    assert [c.type for c in stray] == [ChunkType.ERROR]
