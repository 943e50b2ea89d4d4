"""The socket reader's connect bound is the attempt's ``IdleWatch`` (counted, not timed).

``asyncio.timeout`` around the connect left its cancelled timer (and the timer's context) in the
loop's heap for the bound's length, one per stream. The transport's watch bounds the connect
instead, and rebounds to the first-byte bound, from the same start, once connected.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ErrorType, RawStreamChunk
from rxcord.providers.idle_watch import IdleWatch
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig, TransportStats, stream_source

_DELTA = {"id": "x", "choices": [{"index": 0, "delta": {"content": "word "}}]}
_EVENT = b"data: " + json.dumps(_DELTA).encode() + b"\n\n"


class _Server:
    """Answers each request with a streamed head (and one event when *head*), then holds it open."""

    def __init__(self, *, head: bool) -> None:
        self.head = head
        self.port = 0
        self.requests = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            self.requests += 1
            if self.head:
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(_EVENT), _EVENT)
                )
                await writer.drain()
            await reader.read()  # held open until the client goes away
        except ConnectionError:
            pass
        finally:
            writer.close()


@pytest.fixture(params=[True, False], ids=["streaming", "silent"])
async def server(request: pytest.FixtureRequest) -> AsyncIterator[_Server]:
    async for served in _serving(head=request.param):
        yield served


@pytest.fixture
async def silent() -> AsyncIterator[_Server]:
    async for served in _serving(head=False):
        yield served


async def _serving(*, head: bool) -> AsyncIterator[_Server]:
    served = _Server(head=head)
    listening = await asyncio.start_server(served.serve, "127.0.0.1", 0)
    served.port = listening.sockets[0].getsockname()[1]
    try:
        yield served
    finally:
        listening.close()


def _request(port: int) -> Any:
    chat = ChatRequest(model="m", messages=(Message.user("hi"),))
    return OpenAIAdapter().build_request(chat, base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")


class _Observer:
    def __init__(self) -> None:
        self.chunks: list[RawStreamChunk] = []
        self.completed = asyncio.get_running_loop().create_future()

    def on_next(self, value: RawStreamChunk) -> None:
        self.chunks.append(value)

    def on_error(self, error: Exception) -> None:
        self.completed.set_exception(error)

    def on_completed(self) -> None:
        self.completed.set_result(None)


def _fetch_socket_watch() -> IdleWatch:
    """The waiting pump's watch (a local of ``_Pump._fetch_socket``)."""
    (task,) = [task for task in asyncio.all_tasks() if task.get_name().startswith("rxcord:")]
    coro: Any = task.get_coro()
    while coro is not None and hasattr(coro, "cr_await"):
        if coro.cr_code.co_qualname == "_Pump._fetch_socket":
            watch = coro.cr_frame.f_locals["watch"]
            assert isinstance(watch, IdleWatch)
            return watch
        coro = coro.cr_await
    raise AssertionError("no socket attempt is waiting")


async def _until(condition: Any) -> None:
    for _ in range(10_000):
        if condition():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("never reached")


async def test_a_connected_stream_leaves_no_cancelled_timer(server: _Server) -> None:
    """Connected (waiting for the head, or mid-body): the heap holds no cancelled timer of it."""
    loop = asyncio.get_running_loop()
    scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]
    cancelled_before = sum(handle.cancelled() for handle in scheduled)
    config = TransportConfig(allow_private_network=True, reader="socket", connect_timeout=3600.0)
    stats = TransportStats()
    observer = _Observer()
    subscription = stream_source(
        OpenAIAdapter(), _request(server.port), config=config, stats=stats
    ).subscribe(observer)
    try:
        await _until(lambda: server.requests == 1 and (observer.chunks or not server.head))
        assert stats.sockets and stats.readers == (["socket"] if server.head else [])
        assert sum(handle.cancelled() for handle in scheduled) <= cancelled_before
        watches = [handle for handle in scheduled if isinstance(handle._callback, IdleWatch)]  # type: ignore[attr-defined]
        assert len(watches) == 1  # the one timer of the connect, first-byte and idle bounds
    finally:
        subscription.dispose()


async def test_once_connected_the_bound_is_the_first_byte_bound_from_the_start(silent: _Server) -> None:
    """A silent server: connected, the attempt's bound is the first-byte bound since its start."""
    server = silent
    loop = asyncio.get_running_loop()
    started = loop.time()
    config = TransportConfig(
        allow_private_network=True, reader="socket", connect_timeout=1800.0, first_byte_timeout=3600.0
    )
    subscription = stream_source(OpenAIAdapter(), _request(server.port), config=config).subscribe(_Observer())
    try:
        await _until(lambda: server.requests == 1)
        watch = _fetch_socket_watch()
        assert watch.seconds == 3600.0
        assert started <= watch.last <= loop.time()
        handle = watch._handle
        # Armed for the connect bound, not re-armed: it re-arms for the rest when it fires early.
        assert handle is not None and handle.when() == pytest.approx(watch.last + 1800.0)
    finally:
        subscription.dispose()


async def test_a_connect_that_never_completes_is_a_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The connect bound still holds (well inside the first-byte bound): a retryable timeout error."""
    loop = asyncio.get_running_loop()
    connects = 0

    async def never(*args: Any, **kwargs: Any) -> Any:
        nonlocal connects
        connects += 1
        await asyncio.Future()

    monkeypatch.setattr(loop, "create_connection", never)
    config = TransportConfig(
        allow_private_network=True,
        reader="socket",
        connect_timeout=0.01,
        first_byte_timeout=3600.0,
        transient_retries=0,
    )
    observer = _Observer()
    stream_source(OpenAIAdapter(), _request(9), config=config).subscribe(observer)
    await asyncio.wait_for(observer.completed, 60)
    (chunk,) = observer.chunks
    assert chunk.error is not None
    assert chunk.error.type is ErrorType.TIMEOUT and chunk.error.retryable
    assert connects == 1
