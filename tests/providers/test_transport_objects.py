"""What a transport stream holds while it reads, and the layers each read passes: counted, not timed.

Every object the collector tracks is walked by each full collection (which stops the loop), so
what one live stream holds for its life is multiplied by the streams in flight. The server is a
child process (its connections' objects are not this process's), on 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import gc
import subprocess
import sys
import types
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxcord.core.request import ChatRequest, Message
from rxcord.core.stream_scheduler import StreamScheduler
from rxcord.core.types import Batch
from rxcord.providers.idle_watch import IdleWatch
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig, stream_source

EVENTS = 8
"""Events each response sends before it holds the connection open (the stream mid-body)."""
STREAMS = 12

_SERVER = r"""
import asyncio, json, sys
events = int(sys.argv[1])
delta = {"id": "x", "choices": [{"index": 0, "delta": {"content": "word "}}]}
EVENT = b"data: " + json.dumps(delta).encode() + b"\n\n"
async def handle(reader, writer):
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    await reader.readexactly(length)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(events):
        writer.write(b"%x\r\n%s\r\n" % (len(EVENT), EVENT))
        await writer.drain()
        await asyncio.sleep(0.001)
    await reader.read()  # held open until the client goes away
    writer.close()
async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
    print(server.sockets[0].getsockname()[1], flush=True)
    await server.serve_forever()
asyncio.run(main())
"""


@pytest.fixture
async def port() -> AsyncIterator[int]:
    process = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(EVENTS)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 30)
        yield int(line)
    finally:
        process.kill()
        process.wait()


class _Reader:
    """Counts the chunks; done once *events* arrived (the stream is then mid-body, held open)."""

    def __init__(self, events: int, *, layers: bool = False) -> None:
        self.record = layers
        self.chunks = 0
        self.events = events
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.errors: list[Exception] = []
        self.layers: list[list[str]] = []

    def on_next(self, value: Any) -> None:
        if self.record:
            self.layers.append(_transport_coroutines())
        self.chunks += len(value.items) if isinstance(value, Batch) else 1
        if self.chunks >= self.events and not self.done.done():
            self.done.set_result(None)

    def on_error(self, error: Exception) -> None:
        self.errors.append(error)
        if not self.done.done():
            self.done.set_result(None)

    def on_completed(self) -> None:
        pass


def _transport_coroutines() -> list[str]:
    """The transport's coroutine frames on the stack of this call (each is resumed per read)."""
    names = []
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_filename.endswith("transport.py") and code.co_flags & 0x80:  # CO_COROUTINE
            names.append(code.co_qualname)
        frame = frame.f_back
    return names


def _request(port: int) -> Any:
    chat = ChatRequest(model="m", messages=(Message.user("hi"),))
    return OpenAIAdapter().build_request(chat, base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")


async def _held_per_stream(
    port: int, session: aiohttp.ClientSession | None
) -> tuple[float, dict[str, float]]:
    """Tracked objects each of STREAMS streams holds mid-body (subscription and observer included)."""
    adapter, http = OpenAIAdapter(), _request(port)
    config = TransportConfig(allow_private_network=True)

    async def streams(count: int) -> tuple[list[_Reader], list[Any]]:
        readers = [_Reader(EVENTS) for _ in range(count)]
        subscriptions = [
            stream_source(adapter, http, session=session, config=config, batched=True).subscribe(reader)
            for reader in readers
        ]
        await asyncio.wait_for(asyncio.gather(*(reader.done for reader in readers)), 60)
        for reader in readers:
            assert not reader.errors and reader.chunks >= EVENTS
        return readers, subscriptions

    _, warm = await streams(2)  # warmed up: imports, pools and caches are not per stream
    for subscription in warm:
        subscription.dispose()
    await asyncio.sleep(0.05)
    gc.collect()
    before = collections.Counter(type(o).__name__ for o in gc.get_objects())
    _, subscriptions = await streams(STREAMS)
    gc.collect()
    after = collections.Counter(type(o).__name__ for o in gc.get_objects())
    for subscription in subscriptions:
        subscription.dispose()
    await asyncio.sleep(0.05)
    grown = {name: (after[name] - before[name]) / STREAMS for name in after if after[name] > before[name]}
    return sum(grown.values()), grown


async def test_an_aiohttp_stream_holds_few_objects(port: int) -> None:
    """A caller's session (the live bench's path): 81.7 tracked objects per stream, 133.7 before.

    No closure cells and no lock of the transport's own, three coroutines of it, one timer.
    """
    async with aiohttp.ClientSession() as session:
        total, grown = await _held_per_stream(port, session)
    assert total <= 90, sorted(grown.items(), key=lambda kv: -kv[1])[:20]
    assert grown.get("cell", 0) < 1, grown
    assert grown.get("coroutine", 0) <= 3 + 3, grown  # the transport's three, aiohttp's read and wait
    assert grown.get("TimerHandle", 0) < 1.5, grown  # the idle bound's; the first-byte bound shares it


async def test_a_socket_reader_stream_holds_few_objects(port: int) -> None:
    """No session (the socket reader): 56.3 tracked objects per stream, 96.3 before."""
    total, grown = await _held_per_stream(port, None)
    assert total <= 65, sorted(grown.items(), key=lambda kv: -kv[1])[:20]
    assert grown.get("cell", 0) < 1, grown


@pytest.mark.parametrize("reader", ["aiohttp", "socket"])
async def test_a_read_passes_three_transport_coroutines(port: int, reader: str) -> None:
    """aiohttp: each read resumes run, _fetch_aiohttp and _read (six coroutines before); socket: pushed."""
    adapter, http = OpenAIAdapter(), _request(port)
    config = TransportConfig(allow_private_network=True, reader=reader)  # type: ignore[arg-type]
    async with aiohttp.ClientSession() as session:
        observer = _Reader(EVENTS, layers=True)
        source = stream_source(adapter, http, session=session, config=config, batched=True)
        subscription = source.subscribe(observer)
        await asyncio.wait_for(observer.done, 60)
        subscription.dispose()
    assert not observer.errors and observer.layers
    if reader == "aiohttp":
        assert all(
            layers == ["_Pump._read", "_Pump._fetch_aiohttp", "_Pump.run"] for layers in observer.layers
        ), observer.layers
    else:  # pushed from data_received (no coroutine resumed), or with the head, from the task's stream()
        pushed_in_task = ["_Pump._read", "_Pump._fetch_socket", "_Pump.run"]  # five before
        assert all(layers in ([], pushed_in_task) for layers in observer.layers), observer.layers


def _awaited_coroutines(task: asyncio.Task[Any]) -> list[str]:
    """The coroutines a waiting task holds, outermost first (what the stream keeps alive)."""
    names = []
    coro: Any = task.get_coro()
    while coro is not None and hasattr(coro, "cr_await"):
        names.append(coro.cr_code.co_qualname)
        coro = coro.cr_await
    return names


@pytest.mark.parametrize(
    ("reader", "expected"),
    [
        # run, the attempt, the read; aiohttp's own two below them (three of ours and two before).
        (
            "aiohttp",
            [
                "_Pump.run",
                "_Pump._fetch_aiohttp",
                "_Pump._read",
                "StreamReader.readany",
                "StreamReader._wait",
            ],
        ),
        # pushed: the task waits on the stream's future (five of ours before: _fetch, _push_events).
        ("socket", ["_Pump.run", "_Pump._fetch_socket", "_Pump._read"]),
    ],
)
async def test_a_waiting_stream_holds_three_transport_coroutines(
    port: int, reader: str, expected: list[str]
) -> None:
    adapter, http = OpenAIAdapter(), _request(port)
    config = TransportConfig(allow_private_network=True, reader=reader)  # type: ignore[arg-type]
    async with aiohttp.ClientSession() as session:
        observer = _Reader(EVENTS)
        subscription = stream_source(adapter, http, session=session, config=config).subscribe(observer)
        await asyncio.wait_for(observer.done, 60)
        await asyncio.sleep(0)  # the task is back at its wait
        (task,) = [task for task in asyncio.all_tasks() if task.get_name().startswith("rxcord:")]
        held = _awaited_coroutines(task)
        subscription.dispose()
    assert not observer.errors
    assert held == expected


class _ContextProbe(_Reader):
    """Sets *var* in the context each chunk is delivered in (the aiohttp path: the pump task's)."""

    def __init__(self, events: int, var: contextvars.ContextVar[int]) -> None:
        super().__init__(events)
        self.var = var

    def on_next(self, value: Any) -> None:
        self.var.set(self.chunks)
        super().on_next(value)


@pytest.mark.parametrize("reader", ["aiohttp", "socket"])
async def test_the_pump_runs_in_the_schedulers_context(port: int, reader: str) -> None:
    """Subscribed with a StreamScheduler (drain's), the task and its idle bound share its context."""
    var: contextvars.ContextVar[int] = contextvars.ContextVar("probe", default=-1)
    scheduler = StreamScheduler(asyncio.get_running_loop())
    adapter, http = OpenAIAdapter(), _request(port)
    config = TransportConfig(allow_private_network=True, reader=reader)  # type: ignore[arg-type]
    async with aiohttp.ClientSession() as session:
        observer = _ContextProbe(EVENTS, var)
        source = stream_source(adapter, http, session=session, config=config, batched=True)
        # As the chain's light hops subscribe (the pump itself is the subscription).
        subscription = source._subscribe_core(observer, scheduler)
        await asyncio.wait_for(observer.done, 60)
        await asyncio.sleep(0)
        watches = [
            handle._callback
            for handle in asyncio.get_running_loop()._scheduled  # type: ignore[attr-defined]
            if isinstance(handle._callback, IdleWatch) and not handle.cancelled()
        ]
        contexts = [watch._handle._context for watch in watches if watch._handle is not None]
        subscription.dispose()
    assert not observer.errors
    assert getattr(subscription, "context", None) is scheduler.context
    assert contexts == [scheduler.context]  # the idle bound's timer: no context of its own
    if reader == "aiohttp":  # delivered in the task: what it set is in the scheduler's context itself
        assert scheduler.context[var] == observer.chunks - 1


async def test_without_a_stream_scheduler_the_pump_copies_a_context(port: int) -> None:
    """A plain subscribe (no scheduler, or another one): one context copied at subscribe time."""
    adapter, http = OpenAIAdapter(), _request(port)
    config = TransportConfig(allow_private_network=True)
    async with aiohttp.ClientSession() as session:
        observer = _Reader(EVENTS)
        source = stream_source(adapter, http, session=session, config=config)
        subscription = source._subscribe_core(observer, AsyncIOScheduler(asyncio.get_running_loop()))
        await asyncio.wait_for(observer.done, 60)
        subscription.dispose()
    context = getattr(subscription, "context", None)
    assert isinstance(context, contextvars.Context)
    assert context is not contextvars.copy_context()
