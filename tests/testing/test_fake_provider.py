"""``FakeProvider``: a scripted Chat Completions model an adapter streams from into ``MemorySink``."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord import ChatRequest, Message, OpenRouterAdapter, TransportConfig, stream_to_discord
from rxcord.core.config import StreamContext
from rxcord.core.state import StreamResult
from rxcord.core.types import StreamStatus
from rxcord.testing import (
    Chunking,
    FakeProvider,
    FakeProviderNotStartedError,
    MemorySink,
    ScriptedToolCall,
    chat_completions_body,
)

LOCAL = TransportConfig(allow_private_network=True)
"""The fake listens on 127.0.0.1, which a base-URL override is otherwise refused."""
REQUEST = ChatRequest(model="fake-model", messages=(Message.user("hi"),))


async def _stream(model: FakeProvider, sink: MemorySink) -> StreamResult:
    return await stream_to_discord(
        OpenRouterAdapter(),
        REQUEST,
        sink=sink,
        base_url=model.base_url,
        api_key="fake-key",
        context=StreamContext(channel_id="7"),
        transport=LOCAL,
    )


async def test_a_scripted_reply_reaches_the_memory_sink_whole() -> None:
    """The reply, cut into 3-byte network writes, arrives once and whole; the request was recorded."""
    reply = "Hello from the fake model: " + "word " * 40
    sink = MemorySink()
    async with FakeProvider(reply=reply, chunking=Chunking(size=3)) as model:
        result = await _stream(model, sink)
        requests = model.requests
    assert result.status is StreamStatus.COMPLETED
    assert "".join(sink.contents) == reply.strip()
    assert len(requests) == 1 and requests[0].completed
    assert requests[0].headers["Authorization"] == "Bearer fake-key"
    assert requests[0].body["messages"][-1]["content"] == "hi"


async def test_reasoning_and_a_tool_call_are_streamed_in_the_wire_format() -> None:
    """Reasoning deltas become the result's reasoning, the call its function call; the text is delivered."""
    call = ScriptedToolCall(name="lookup", arguments='{"q": "x"}')
    sink = MemorySink()
    async with FakeProvider(reply="Let me look.", reasoning="thinking hard", tool_call=call) as model:
        result = await _stream(model, sink)
    assert result.reasoning == "thinking hard"
    assert [(c.name, dict(c.args), c.id) for c in result.function_calls] == [("lookup", {"q": "x"}, "call_1")]
    assert "".join(sink.contents) == "Let me look."


async def test_an_error_status_is_a_typed_error_result_and_nothing_is_posted() -> None:
    """A scripted 429 answers with the wire's JSON error body: the stream ends in error, no message."""
    sink = MemorySink()
    async with FakeProvider(status=429, error="slow down") as model:
        result = await _stream(model, sink)
    assert result.status is StreamStatus.ERROR
    assert sink.contents == []


async def test_the_url_is_refused_outside_the_context() -> None:
    """Read before start (or after close), the URL is a typed error, not an empty string."""
    model = FakeProvider(reply="x")
    with pytest.raises(FakeProviderNotStartedError):
        _ = model.base_url
    async with model:
        assert model.base_url.startswith("http://127.0.0.1:")
    with pytest.raises(FakeProviderNotStartedError):
        _ = model.requests


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=80), st.text(max_size=40), st.integers(min_value=1, max_value=20))
def test_the_body_carries_the_script_exactly(reply: str, reasoning: str, delta_size: int) -> None:
    """Whatever the delta size, content deltas join to the reply, reasoning deltas to the reasoning."""
    body = chat_completions_body(reply, reasoning=reasoning, delta_size=delta_size).decode()
    events = [line[6:] for line in body.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    deltas = [c["delta"] for e in events[:-1] for c in json.loads(e)["choices"]]
    assert "".join(d.get("content", "") for d in deltas) == reply
    assert "".join(d.get("reasoning", "") for d in deltas) == reasoning
