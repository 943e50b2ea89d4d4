"""How a stream ends (stage 02): only the wire format's end marker ends it cleanly.

``data: [DONE]`` for Chat Completions, ``message_stop`` for Anthropic, a candidate's
``finishReason`` for Gemini. A body that ends, or a connection that closes or resets,
at an event boundary before it is a retryable ``truncated_stream``: retried before
commitment (attempts counted on the replay server), passed on after it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import RawStreamChunk
from rxcord.operators.aio import drain
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.nvidia import NvidiaAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig, TransportStats, stream_source
from rxcord.testing.replay import ReplayServer
from tests.faults.fake_provider import FakeProvider, Plan

SSE = "text/event-stream"
CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"
CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
CONFIG = TransportConfig(backoff=0.01, allow_private_network=True, transient_retries=2)


def _chat_event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"id": "chatcmpl-1", "choices": [choice]}).encode() + b"\n\n"


CHAT_FULL = (
    _chat_event({"role": "assistant", "content": ""})
    + _chat_event({"content": "Hello"})
    + _chat_event({"content": " world"})
    + _chat_event({}, "stop")
    + b"data: [DONE]\n\n"
)


def _without_last_event(body: bytes) -> bytes:
    """*body* cut at the boundary before its last event: the end marker's event is gone."""
    blank = b"\r\n\r\n" if b"\r\n" in body else b"\n\n"  # Gemini's captures end lines with CRLF
    events = body.rstrip(b"\r\n").split(blank)
    return blank.join(events[:-1]) + blank


def _capture(name: str) -> bytes:
    return (CAPTURES / name).read_bytes()


_CHAT_NOTHING = _chat_event({"role": "assistant", "content": ""})
_ANTHROPIC_NOTHING = b'event: ping\ndata: {"type": "ping"}\n\n'
_GEMINI_NOTHING = (
    b'data: {"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"}, "index": 0}]}\n\n'
)

# (name, adapter, a whole stream ending with its marker, events that commit nothing):
# the cut drops the marker's event.
WIRES: list[tuple[str, ProviderAdapter, bytes, bytes]] = [
    ("openai", OpenAIAdapter(), CHAT_FULL, _CHAT_NOTHING),
    ("openrouter", OpenRouterAdapter(), CHAT_FULL, b": OPENROUTER PROCESSING\n\n" + _CHAT_NOTHING),
    ("nvidia", NvidiaAdapter(), CHAT_FULL, _CHAT_NOTHING),
    ("custom", CustomAdapter(), CHAT_FULL, _CHAT_NOTHING),
    ("anthropic", AnthropicAdapter(), _capture("anthropic/text.sse"), _ANTHROPIC_NOTHING),
    ("google", GoogleAdapter(), _capture("google/text.sse"), _GEMINI_NOTHING),
]
IDS = [wire[0] for wire in WIRES]
CHAT_WIRES = {"openai", "openrouter", "nvidia", "custom"}


@pytest.mark.parametrize("name", sorted(CHAT_WIRES))
async def test_a_chat_stream_closed_after_its_finish_reason_ends_cleanly(name: str) -> None:
    """Some OpenAI-compatible servers close after ``finish_reason`` without ``[DONE]``: a clean end."""
    adapter = next(wire[1] for wire in WIRES if wire[0] == name)
    async with ReplayServer(body=_without_last_event(CHAT_FULL)) as server:
        chunks, stats = await _run(server, adapter)
    assert _codes(chunks) == [] and stats.attempts == 1
    assert _texts(adapter, chunks) == "Hello world"


async def _run(
    server: ReplayServer | str, adapter: ProviderAdapter, config: TransportConfig = CONFIG
) -> tuple[list[RawStreamChunk], TransportStats]:
    stats = TransportStats()
    base = server if isinstance(server, str) else server.base_url
    http = adapter.build_request(CHAT, base_url=f"{base}/v1", api_key="k")
    chunks = await drain(stream_source(adapter, http, config=config, stats=stats))
    return chunks, stats


def _texts(adapter: ProviderAdapter, chunks: list[RawStreamChunk]) -> str:
    normalizer = adapter.new_normalizer()
    out = [p.content for raw in chunks for p in normalizer.feed(raw) if p.content]
    return "".join(out)


def _codes(chunks: list[RawStreamChunk]) -> list[str | int | None]:
    return [c.error.code for c in chunks if c.error is not None]


@pytest.mark.parametrize(("name", "adapter", "body", "nothing"), WIRES, ids=IDS)
async def test_a_stream_ending_with_its_marker_ends_cleanly(
    name: str, adapter: ProviderAdapter, body: bytes, nothing: bytes
) -> None:
    """The whole stream: its text, no error, one attempt (the baseline the cut is compared with)."""
    async with ReplayServer(body=body) as server:
        chunks, stats = await _run(server, adapter)
    assert _codes(chunks) == [] and stats.attempts == 1
    assert _texts(adapter, chunks)


@pytest.mark.parametrize(("name", "adapter", "body", "nothing"), WIRES, ids=IDS)
async def test_a_cut_at_an_event_boundary_after_content_is_truncated_stream(
    name: str, adapter: ProviderAdapter, body: bytes, nothing: bytes
) -> None:
    """Closed cleanly between two events, before the marker: the text so far, then truncated_stream."""
    cut = _without_last_event(body)
    if name in CHAT_WIRES:  # the finish reason ends a Chat Completions stream too: cut before it
        cut = _without_last_event(cut)
    async with ReplayServer(body=cut) as server:
        chunks, stats = await _run(server, adapter)
    [code] = _codes(chunks)
    assert code == "truncated_stream" and chunks[-1].error is not None and chunks[-1].error.retryable
    assert _texts(adapter, chunks)  # the partial text is kept, before the error
    assert stats.attempts == 1 and len(server.requests) == 1  # committed: never sent again


@pytest.mark.parametrize(("name", "adapter", "body", "nothing"), WIRES, ids=IDS)
async def test_a_cut_before_commitment_is_retried(
    name: str, adapter: ProviderAdapter, body: bytes, nothing: bytes
) -> None:
    """Cut after events that commit nothing: retried transparently; the whole answer follows."""
    responses = [(200, SSE, nothing), (200, SSE, nothing), (200, SSE, body)]
    async with ReplayServer(body=b"", responses=responses) as server:
        chunks, stats = await _run(server, adapter)
    assert _codes(chunks) == [] and _texts(adapter, chunks)
    assert stats.attempts == 3 and len(server.requests) == 3


async def test_a_cut_before_commitment_fails_typed_once_retries_are_spent() -> None:
    """Every attempt cut before commitment: 1 + transient_retries attempts, then truncated_stream."""
    cut = _chat_event({"role": "assistant", "content": ""})
    async with ReplayServer(body=cut) as server:
        chunks, stats = await _run(server, OpenAIAdapter())
    assert _codes(chunks) == ["truncated_stream"]
    assert stats.attempts == 3 and len(server.requests) == 3


async def test_a_mid_event_cut_is_reported_once() -> None:
    """Cut inside an event: one truncated_stream (the mid-event one), not a second for the boundary."""
    body = _chat_event({"content": "Partial"}) + b'data: {"id": "chatcmpl-1", "choi'
    async with ReplayServer(body=body) as server:
        chunks, _ = await _run(server, OpenAIAdapter())
    assert _codes(chunks) == ["truncated_stream"]


async def test_a_stream_ending_with_an_error_event_ends_with_that_error_only() -> None:
    """An error event is the stream's last word: no cut is reported after it."""
    body = _chat_event({"content": "Hello"}) + b'data: {"error": {"message": "overloaded", "code": 500}}\n\n'
    async with ReplayServer(body=body) as server:
        chunks, _ = await _run(server, adapter := OpenAIAdapter())
    assert _codes(chunks) == []  # the error is the event's: the adapter reads it, the transport adds none
    assert [raw for raw in chunks if adapter.rejection(raw) is not None] == chunks[-1:]


async def _reset_server(events: bytes) -> tuple[web.AppRunner, str]:
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": SSE})
        await response.prepare(request)
        await response.write(events)
        await asyncio.sleep(0.05)  # the events reach the client before the reset
        assert request.transport is not None
        request.transport.abort()
        return response

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return runner, f"http://127.0.0.1:{port}"


async def test_a_reset_at_an_event_boundary_is_truncated_stream() -> None:
    """The connection reset between two events after content: the text so far, then truncated_stream."""
    runner, base = await _reset_server(_chat_event({"content": "Hello"}))
    try:
        chunks, stats = await _run(base, OpenAIAdapter())
    finally:
        await runner.cleanup()
    assert _texts(OpenAIAdapter(), chunks) == "Hello"
    assert _codes(chunks) == ["truncated_stream"] and stats.attempts == 1


async def test_a_reset_after_message_stop_ends_cleanly() -> None:
    """Anthropic's marker read, then the connection reset: the stream had ended, nothing is cut."""
    adapter = AnthropicAdapter()
    runner, base = await _reset_server(_capture("anthropic/text.sse"))
    try:
        chunks, stats = await _run(base, adapter)
    finally:
        await runner.cleanup()
    assert _codes(chunks) == [] and _texts(adapter, chunks) and stats.attempts == 1


async def test_cuts_before_commitment_are_retried_against_the_fake_provider() -> None:
    """Two attempts cut cleanly at a boundary after the role delta, the third whole: three requests."""
    pieces = ["Hel", "lo"]
    async with FakeProvider(pieces, [Plan("cut", 0), Plan("cut", 0)]) as provider:
        chunks, stats = await _run(provider.base_url.removesuffix("/v1"), OpenAIAdapter())
    assert provider.attempts == 3 and stats.attempts == 3
    assert _codes(chunks) == [] and _texts(OpenAIAdapter(), chunks) == "Hello"


async def test_a_cut_after_commitment_is_not_retried_against_the_fake_provider() -> None:
    """Cut after content: one request, the text so far, then truncated_stream."""
    async with FakeProvider(["Hel", "lo", "!"], [Plan("cut", 2)]) as provider:
        chunks, _ = await _run(provider.base_url.removesuffix("/v1"), OpenAIAdapter())
    assert provider.attempts == 1
    assert _texts(OpenAIAdapter(), chunks) == "Hello" and _codes(chunks) == ["truncated_stream"]
