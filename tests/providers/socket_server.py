"""A loopback HTTP/1.1 server that writes a scripted response in scripted pieces (tests only).

Each response is a list of byte pieces, written one after another with a drain (and a loop
step) between them, so the client's reads are cut where the test says, as far as TCP lets
a loopback connection keep them apart. It counts connections and records each request.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import ssl
from collections.abc import Sequence
from types import TracebackType

import attrs


def chunked(body: bytes, sizes: Sequence[int]) -> bytes:
    """*body* in chunked framing, with chunks of *sizes* (cycled; the rest in one last chunk)."""
    out, pos, index = [], 0, 0
    while pos < len(body):
        size = max(1, sizes[index % len(sizes)]) if sizes else len(body)
        piece = body[pos : pos + size]
        out.append(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        pos += len(piece)
        index += 1
    return b"".join(out) + b"0\r\n\r\n"


def response(
    body: bytes,
    *,
    status: int = 200,
    ctype: str = "text/event-stream",
    framing: str = "chunked",
    sizes: Sequence[int] = (),
    gzipped: bool = False,
    extra: str = "",
) -> bytes:
    """A whole response: head and body, framed by *framing* (``chunked``, ``length``, ``close``)."""
    if gzipped:
        body = gzip.compress(body)
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {ctype}\r\n{extra}"
    if gzipped:
        head += "Content-Encoding: gzip\r\n"
    if framing == "chunked":
        return (head + "Transfer-Encoding: chunked\r\n\r\n").encode() + chunked(body, sizes)
    if framing == "length":
        return (head + f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    return (head + "Connection: close\r\n\r\n").encode() + body


def cut(data: bytes, cuts: Sequence[int]) -> list[bytes]:
    """*data* cut at the offsets *cuts* (any order, duplicates and out-of-range ones ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(data)})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


@attrs.define
class PieceServer:
    """``async with PieceServer([pieces, ...]) as server``: the n-th connection gets the n-th script.

    *hold*: keep the connection open after the last piece (a stalled stream) until the client
    goes; the server then notes that it saw the client close (``client_closed``).
    """

    scripts: list[list[bytes]]
    tls: ssl.SSLContext | None = None
    hold: bool = False
    connections: int = 0
    requests: list[bytes] = attrs.field(factory=list)
    client_closed: asyncio.Event = attrs.field(factory=asyncio.Event)
    port: int = 0
    _server: asyncio.Server | None = None

    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> PieceServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = self.connections
        self.connections += 1
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self.requests.append(head + await reader.readexactly(length))
            for piece in self.scripts[min(index, len(self.scripts) - 1)]:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(0)
            if self.hold and not await reader.read(1):
                self.client_closed.set()
        except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError):
            self.client_closed.set()
        finally:
            writer.close()
