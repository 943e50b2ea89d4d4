"""What the transport holds before commitment is bounded (stage 02), compressed bodies included.

Past ``max_held_events`` chunks or ``max_held_bytes`` of body read without commitment the
attempt commits: what is held passes on, nothing grows, nothing is lost. Work is counted
(chunks held, bytes read before commitment, the largest batch handed on, decompression
steps, traced memory), never timed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web

from rxcord.core.errors import UndecodableBodyError
from rxcord.core.inflate import Inflater, body_reader
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import Batch, RawStreamChunk
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import (
    BATCH_EVENTS,
    READ_SLICE,
    TransportConfig,
    TransportStats,
    stream_source,
)
from rxcord.testing.replay import Chunking, ReplayServer
from tests.local_app import serve_app

SSE = "text/event-stream"
CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
CONFIG = TransportConfig(backoff=0.01, allow_private_network=True)
EMPTY_DELTA = b'data: {"choices":[{"index":0,"delta":{}}]}\n\n'
"""An event that carries nothing: it commits nothing, and counts toward the bound."""


def _event(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({"id": "chatcmpl-1", "choices": [choice]}).encode() + b"\n\n"


ANSWER = _event({"content": "hi"}) + _event({}, "stop") + b"data: [DONE]\n\n"


class _Counted:
    """An observer that keeps counts, not chunks (holding 400k chunks would be the test's own peak)."""

    def __init__(self) -> None:
        self.items = 0
        self.largest = 0
        self.texts: list[str] = []
        self.errors: list[Any] = []

    def on_next(self, item: RawStreamChunk | Batch[RawStreamChunk]) -> None:
        chunks = list(item) if isinstance(item, Batch) else [item]
        self.items += len(chunks)
        self.largest = max(self.largest, len(chunks))
        for raw in chunks:
            if raw.error is not None:
                self.errors.append(raw.error)
            elif isinstance(raw.data, dict) and (content := raw.data["choices"][0]["delta"].get("content")):
                self.texts.append(content)


async def _stream(
    base_url: str, config: TransportConfig = CONFIG, *, trace: bool = False
) -> tuple[_Counted, TransportStats, float]:
    """Run one stream into a counting observer; the traced-memory peak in MiB when *trace*."""
    adapter = OpenAIAdapter()
    http = adapter.build_request(CHAT, base_url=f"{base_url}/v1", api_key="k")
    stats, seen, done = TransportStats(), _Counted(), asyncio.Event()
    failures: list[Exception] = []
    if trace:
        tracemalloc.start()
    try:
        stream_source(adapter, http, config=config, stats=stats, batched=True).subscribe(
            seen.on_next, lambda exc: (failures.append(exc), done.set()), done.set
        )
        await done.wait()
        peak = tracemalloc.get_traced_memory()[1] / (1 << 20) if trace else 0.0
    finally:
        if trace:
            tracemalloc.stop()
    assert not failures
    return seen, stats, peak


async def test_400k_empty_deltas_before_the_first_token_are_held_bounded() -> None:
    """400k events that carry nothing: at most max_held_events held, then they pass on; none lost."""
    body = _event({"role": "assistant", "content": ""}) + EMPTY_DELTA * 400_000 + ANSWER
    async with ReplayServer(body=body, chunking=Chunking(size=1 << 16)) as server:
        seen, stats, _ = await _stream(server.base_url)
    assert seen.texts == ["hi"] and seen.errors == []
    assert seen.items == 400_003  # every event passed on: nothing lost
    assert stats.peak_held_events == CONFIG.max_held_events
    # One batch at commitment (what was held and the rest of its read), then reads' batches:
    # before the bound it was one batch of all 400k events, handed downstream in one go.
    assert seen.largest <= CONFIG.max_held_events + BATCH_EVENTS


async def test_past_the_bound_the_attempt_is_committed_and_not_retried() -> None:
    """The bound's price, as documented: a cut after it is passed on, not retried."""
    config = TransportConfig(backoff=0.01, allow_private_network=True, max_held_events=10)
    body = EMPTY_DELTA * 100  # no [DONE]: the stream is cut
    async with ReplayServer(body=body) as server:
        seen, stats, _ = await _stream(server.base_url, config)
    assert stats.attempts == 1 and len(server.requests) == 1
    assert stats.peak_held_events == 10 and seen.items == 101
    assert [error.code for error in seen.errors] == ["truncated_stream"]


async def test_below_the_bound_a_cut_is_still_retried() -> None:
    """The same cut with fewer events than the bound: held, then retried (attempts counted)."""
    config = TransportConfig(backoff=0.01, allow_private_network=True, max_held_events=200)
    responses = [(200, SSE, EMPTY_DELTA * 100), (200, SSE, ANSWER)]
    async with ReplayServer(body=b"", responses=responses) as server:
        seen, stats, _ = await _stream(server.base_url, config)
    assert stats.attempts == 2 and seen.texts == ["hi"] and seen.errors == []
    assert stats.peak_held_events == 100


def _gzip(parts: list[bytes], repeat: int = 1) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = bytearray()
    for _ in range(repeat):
        for part in parts:
            out += compressor.compress(part)
    out += compressor.flush()
    return bytes(out)


_BOMBS: dict[bytes, bytes] = {}


def _bomb(unit: bytes, size: int = 32 << 20) -> bytes:
    """*size* bytes of *unit* repeated, gzip-compressed (made once per unit: about 1 KiB per MiB)."""
    if unit not in _BOMBS:
        block = unit * ((1 << 20) // len(unit))
        _BOMBS[unit] = _gzip([block], size // len(block))
    return _BOMBS[unit]


@contextlib.asynccontextmanager
async def _encoded_server(
    body: bytes, encoding: str, status: int = 200, ctype: str = SSE
) -> AsyncIterator[str]:
    async def handle(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(
            status=status, headers={"Content-Type": ctype, "Content-Encoding": encoding}
        )
        await response.prepare(request)
        for start in range(0, len(body), 1 << 16):
            await response.write(body[start : start + (1 << 16)])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/{tail:.*}", handle)
    async with serve_app(app) as origin:
        yield origin


@pytest.mark.parametrize(
    ("unit", "trace"),
    # Memory is traced once: tracing every one of 240k comment lines' objects is slow on a loaded box.
    [(b"\n", True), (b": keepalive\n\n", False)],
    ids=["blank lines", "comments"],
)
async def test_a_gzip_bomb_of_nothing_ends_bounded(unit: bytes, trace: bool) -> None:
    """32 MiB of blank lines (or comments) in 32-70 KiB of gzip: bounded holds, steps and memory.

    The bytes of nothing count toward the hold bound: the attempt commits after
    ``max_held_bytes`` (no retry of a bomb), decompression goes a step at a time, and the
    stream cap (here 3 MiB, after decompression) ends it with a typed error.
    """
    config = TransportConfig(backoff=0.01, allow_private_network=True, max_stream_bytes=3 << 20)
    async with _encoded_server(_bomb(unit), "gzip") as base:
        seen, stats, peak = await _stream(base, config, trace=trace)
    [error] = seen.errors
    assert error.code == "malformed_response" and "exceeded" in error.message
    assert stats.attempts == 1
    assert config.max_held_bytes < stats.peak_held_bytes <= config.max_held_bytes + READ_SLICE
    assert peak < 4, f"traced peak {peak:.1f} MiB"  # aiohttp's own decompression held whole reads


async def test_a_gzip_stream_is_decoded() -> None:
    """An ordinary gzip-encoded stream (decoded here, not by aiohttp) gives its events unchanged."""
    body = (
        _event({"role": "assistant", "content": ""}) + _event({"content": "Hel"}) + _event({"content": "lo"})
    )
    async with _encoded_server(_gzip([body, _event({}, "stop"), b"data: [DONE]\n\n"]), "gzip") as base:
        seen, stats, _ = await _stream(base)
    assert seen.texts == ["Hel", "lo"] and seen.errors == [] and stats.attempts == 1


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS], ids=["zlib", "raw deflate"])
async def test_a_deflate_stream_is_decoded(wbits: int) -> None:
    """``deflate`` as the standard means it (zlib-wrapped) and as some servers send it (raw)."""
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = compressor.compress(_event({"content": "Hi"}) + ANSWER) + compressor.flush()
    async with _encoded_server(body, "deflate") as base:
        seen, _, _ = await _stream(base)
    assert seen.texts == ["Hi", "hi"] and seen.errors == []


async def test_a_gzip_error_body_is_decoded_and_classified() -> None:
    """An HTTP error's JSON body, gzip-encoded: read and classified as when it was plain."""
    error = json.dumps(
        {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}
    ).encode()
    async with _encoded_server(_gzip([error]), "gzip", status=401, ctype="application/json") as base:
        seen, _, _ = await _stream(base)
    [found] = seen.errors
    assert found.status == 401 and "Incorrect API key" in found.message


async def test_a_corrupt_gzip_body_is_a_typed_error() -> None:
    """Not gzip at all under a gzip header: a malformed_response, not a crash or a hang."""
    async with _encoded_server(b"data: not gzip\n\n", "gzip") as base:
        seen, _, _ = await _stream(base)
    [error] = seen.errors
    assert error.code == "malformed_response" and "corrupt" in error.message


async def test_inflater_steps_are_bounded() -> None:
    """Every read of a 16 MiB bomb is at most one step; the count of steps is the size over the step."""
    bomb = _gzip([bytes(1 << 20)], 16)
    pieces = iter([bomb[i : i + 4096] for i in range(0, len(bomb), 4096)])

    async def read() -> bytes:
        return next(pieces, b"")

    inflater = Inflater(read, "gzip", READ_SLICE)
    total = steps = largest = 0
    while piece := await inflater.read():
        total, steps, largest = total + len(piece), steps + 1, max(largest, len(piece))
    assert total == 16 << 20 and largest == READ_SLICE
    # Full steps, and at most one short step per compressed piece (where its input ran out).
    assert (16 << 20) // READ_SLICE <= steps <= (16 << 20) // READ_SLICE + len(bomb) // 4096 + 1


async def test_an_encoding_not_asked_for_is_refused() -> None:
    """Only gzip and deflate are asked for; anything else is a typed error naming it."""

    async def read() -> bytes:
        return b""

    assert body_reader(read, "", READ_SLICE) is read and body_reader(read, "identity", READ_SLICE) is read
    with pytest.raises(UndecodableBodyError, match="br"):
        body_reader(read, "br", READ_SLICE)
