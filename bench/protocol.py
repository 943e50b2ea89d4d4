"""A provider reader driven by the socket: an ``asyncio.Protocol`` fed from ``data_received``.

The transport floor (b) reads with aiohttp: the socket's ``data_received`` feeds aiohttp's
HTTP parser and ``StreamReader``, and the reading task wakes up (a loop step) for every
piece. This reader does the least HTTP/1.1 a benchmark stream needs over plain TCP on
127.0.0.1 (one POST, ``Connection: close``, a chunked or length-delimited body) and hands
every SSE event to a callback from ``data_received`` itself: no task, no wake-up per read.

It is the ceiling of what a socket-driven transport could save against aiohttp's
StreamReader: the live figure runs it under the same load as the floor (b).
It is not a general HTTP client (no TLS, proxies, redirects, compression or keep-alive).
"""

from __future__ import annotations

__all__ = ("SseProtocol", "read_events")

import asyncio
from collections.abc import Callable

import orjson
from yarl import URL


class SseProtocol(asyncio.Protocol):
    """Parses the response head, the chunked framing and the SSE events as bytes arrive."""

    def __init__(self, on_event: Callable[[bytes], None], done: asyncio.Future[int]) -> None:
        self.on_event = on_event
        self.done = done
        self.head = b""
        self.in_body = False
        self.chunked = False
        self.frame = b""
        """Chunked framing not yet decoded."""
        self.left = 0
        """Bytes left in the current chunk (chunked bodies)."""
        self.sse = b""
        self.events = 0

    def data_received(self, data: bytes) -> None:
        if not self.in_body:
            self.head += data
            end = self.head.find(b"\r\n\r\n")
            if end < 0:
                return
            head, data = self.head[:end].lower(), self.head[end + 4 :]
            self.in_body = True
            self.chunked = b"transfer-encoding: chunked" in head
        if self.chunked:
            self._dechunk(data)
        else:
            self._feed(data)

    def _dechunk(self, data: bytes) -> None:
        buf = self.frame + data if self.frame else data
        pos = 0
        size = len(buf)
        while pos < size:
            if self.left:
                take = min(self.left, size - pos)
                self._feed(buf[pos : pos + take])
                pos += take
                self.left -= take
                if self.left:
                    break
                continue
            line_end = buf.find(b"\r\n", pos)
            if line_end < 0:
                break
            if line_end == pos:  # the CRLF after a chunk's data
                pos += 2
                continue
            length = int(buf[pos:line_end].split(b";", 1)[0], 16)
            pos = line_end + 2
            if length == 0:
                self._finish()
                pos = size
                break
            self.left = length
        self.frame = buf[pos:] if pos < size else b""

    def _feed(self, data: bytes) -> None:
        buf = self.sse + data if self.sse else data
        events = buf.split(b"\n\n")
        self.sse = events.pop()
        for event in events:
            if event.startswith(b"data: "):
                self.events += 1
                self.on_event(event[6:])

    def _finish(self) -> None:
        if not self.done.done():
            self.done.set_result(self.events)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            if exc is None:
                self.done.set_result(self.events)
            else:
                self.done.set_exception(exc)


async def read_events(url: str, body: dict[str, object], on_event: Callable[[bytes], None]) -> int:
    """POST *body* as JSON to *url* (``http://127.0.0.1:PORT/...``); *on_event* gets each event's data."""
    target = URL(url)
    payload = orjson.dumps(body)
    loop = asyncio.get_running_loop()
    done: asyncio.Future[int] = loop.create_future()
    transport, _ = await loop.create_connection(lambda: SseProtocol(on_event, done), target.host, target.port)
    try:
        request = (
            f"POST {target.raw_path_qs} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
            f"Content-Type: application/json\r\nAccept: text/event-stream\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        ).encode()
        transport.write(request + payload)
        return await done
    finally:
        transport.close()
