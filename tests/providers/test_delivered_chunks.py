"""Between two events the transport keeps nothing of the events it delivered: counted, not timed.

A live stream spends almost all its life waiting for the next read. Whatever the pump still
refers to then (the last chunk, its decoded JSON, the batch, the body piece it came in) is
walked by every full collection, once per stream in flight. The server here is gated: it
writes the next event only when the test says so, so each check runs while the pump waits.
"""

from __future__ import annotations

import asyncio
import gc
import json
import weakref
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import aiohttp
import pytest

from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import Batch, RawStreamChunk
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.sse import SseParser
from rxcord.providers.transport import TransportConfig, stream_source

EVENTS = 6
MARK = b"delivered-"
"""In every event's text (and in no request byte): a body piece still held is recognised by it."""


def _event(index: int) -> bytes:
    delta = {"id": "x", "choices": [{"index": 0, "delta": {"content": f"{MARK.decode()}{index} "}}]}
    return b"data: " + json.dumps(delta).encode() + b"\n\n"


class _GatedServer:
    """One streamed response whose body pieces the test writes (``send``), one at a time."""

    def __init__(self) -> None:
        self.pieces: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._served: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def send(self, piece: bytes | None) -> None:
        """Write *piece* as one chunk of the body (``None``: end the body)."""
        self.pieces.put_nowait(piece)

    async def __aenter__(self) -> _GatedServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self.send(None)  # the handler ends (if the client is still there, with the body)
        await asyncio.wait_for(self._served, 30)
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            while (piece := await self.pieces.get()) is not None:
                writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                await writer.drain()
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        except ConnectionError:
            pass  # the client went away (a failed test's dispose)
        finally:
            writer.close()
            if not self._served.done():
                self._served.set_result(None)


class _WeakObserver:
    """Keeps a weak reference to each chunk it is given, and the chunks' texts: never a chunk."""

    def __init__(self) -> None:
        self.refs: list[weakref.ref[RawStreamChunk]] = []
        self.texts: list[str] = []
        self.errors: list[Exception] = []
        self.completed = asyncio.get_running_loop().create_future()
        self._arrived: asyncio.Future[None] | None = None

    def on_next(self, value: Any) -> None:
        for chunk in value.items if isinstance(value, Batch) else (value,):
            self.refs.append(weakref.ref(chunk))
            self.texts.append(chunk.data["choices"][0]["delta"]["content"])
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)

    def on_error(self, error: Exception) -> None:
        self.errors.append(error)
        if not self.completed.done():
            self.completed.set_result(None)

    def on_completed(self) -> None:
        if not self.completed.done():
            self.completed.set_result(None)

    async def next_chunk(self) -> None:
        self._arrived = asyncio.get_running_loop().create_future()
        await asyncio.wait_for(self._arrived, 30)


def _pump_frames() -> Iterator[tuple[str, dict[str, Any]]]:
    """The suspended coroutines of the stream's task, outermost first, with their local variables."""
    (task,) = [task for task in asyncio.all_tasks() if task.get_name().startswith("rxcord:")]
    coro: Any = task.get_coro()
    while coro is not None and getattr(coro, "cr_frame", None) is not None:
        yield coro.cr_code.co_qualname, coro.cr_frame.f_locals
        coro = coro.cr_await


def _delivered(value: object) -> bool:
    """Whether *value* is (or is a list of) a delivered chunk, or a body piece carrying events."""
    if isinstance(value, RawStreamChunk | Batch):
        return True
    if isinstance(value, bytes | bytearray | memoryview):
        return MARK in bytes(value)
    if isinstance(value, list | tuple):
        return any(_delivered(item) for item in value)
    return False


def _request(port: int) -> Any:
    chat = ChatRequest(model="m", messages=(Message.user("hi"),))
    return OpenAIAdapter().build_request(chat, base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test")


@pytest.mark.parametrize("reader", ["socket", "aiohttp"])
async def test_no_delivered_chunk_outlives_its_read(reader: str) -> None:
    """Paused between events: every delivered chunk is gone, no pump frame holds one (or its piece)."""
    config = TransportConfig(allow_private_network=True, reader=reader)  # type: ignore[arg-type]
    async with _GatedServer() as server, aiohttp.ClientSession() as session:
        observer = _WeakObserver()
        source = stream_source(
            OpenAIAdapter(), _request(server.port), session=session, config=config, batched=True
        )
        subscription = source.subscribe(observer)
        try:
            for index in range(EVENTS):
                server.send(_event(index))
                await observer.next_chunk()
                gc.collect()
                alive = [ref() for ref in observer.refs if ref() is not None]
                assert not alive, (reader, index, alive)
                held = [
                    (name, key)
                    for name, local in _pump_frames()
                    for key, value in local.items()
                    if _delivered(value)
                ]
                assert not held, (reader, index, held)
            server.send(b"data: [DONE]\n\n")
            server.send(None)
            await asyncio.wait_for(observer.completed, 30)
        finally:
            subscription.dispose()
    # Behaviour unchanged: every event, in order, and a clean end.
    assert not observer.errors
    assert observer.texts == [f"{MARK.decode()}{index} " for index in range(EVENTS)]


def test_a_stream_of_whole_events_makes_the_parser_no_list() -> None:
    """The live case (each read whole ``data:`` events): the parser holds no list between reads."""
    parser = SseParser()
    for index in range(EVENTS):
        assert [data for data, _, _ in parser.feed_raw(_event(index))] == [_event(index)[6:-2]]
        assert not [held for held in gc.get_referents(parser) if isinstance(held, list)]


def test_a_parser_makes_its_lists_only_while_it_needs_them() -> None:
    """An unfinished line and a multi-line event are held; once dispatched, no list is left."""
    parser = SseParser()
    assert parser.feed_raw(b"event: x\ndata: a\nda") == []
    assert sum(isinstance(held, list) for held in gc.get_referents(parser)) == 2  # the line, the data
    assert parser.feed_raw(b"ta: b\n\n") == [(b"a\nb", "x", None)]
    assert not [held for held in gc.get_referents(parser) if isinstance(held, list)]
    assert parser.feed_raw(b"data: c") == []
    assert parser.close_raw() == [(b"c", None, None)]
    assert not [held for held in gc.get_referents(parser) if isinstance(held, list)]
