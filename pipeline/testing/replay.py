"""A provider replay server: serve a captured response body over real HTTP on 127.0.0.1.

``rxcord replay``, the demo, the tests and the benchmarks point a provider
adapter at this server instead of the provider. The capture is written
exactly as recorded, with the recorded status and content type, in pieces
(of N bytes, of random sizes from a seed, or one per line) with an optional
pause between pieces, so the client's parser sees the same splits a real
network could produce.

The server records, per request, whether the client closed the connection
before the whole body was written (``closed_early``): the proof that a
stop or a kill really aborts the HTTP request.
"""

from __future__ import annotations

__all__ = ("Chunking", "ReplayServer", "ServedRequest", "split_body")

import asyncio
import json
import random
from collections.abc import Sequence
from typing import Any

import attrs
from aiohttp import web


@attrs.frozen(kw_only=True)
class Chunking:
    """How the body is cut into writes."""

    size: int | None = None
    """Pieces of exactly this many bytes."""
    seed: int | None = None
    """Pieces of random sizes (1-64 bytes) from this seed."""

    def describe(self) -> str:
        """A short human description."""
        if self.size is not None:
            return f"{self.size}-byte pieces"
        if self.seed is not None:
            return f"random pieces (seed {self.seed})"
        return "one piece per line"


def split_body(body: bytes, chunking: Chunking) -> list[bytes]:
    """Cut *body* into the pieces the server writes."""
    if chunking.size is not None:
        step = max(1, chunking.size)
        return [body[i : i + step] for i in range(0, len(body), step)] or [b""]
    if chunking.seed is not None:
        rng = random.Random(chunking.seed)
        pieces: list[bytes] = []
        pos = 0
        while pos < len(body):
            step = rng.randint(1, 64)
            pieces.append(body[pos : pos + step])
            pos += step
        return pieces or [b""]
    return body.splitlines(keepends=True) or [b""]


@attrs.define
class ServedRequest:
    """What the server saw of one request."""

    path: str
    body: Any
    """The decoded JSON request body (or text)."""
    headers: dict[str, str] = attrs.field(repr=False)
    pieces_written: int = 0
    completed: bool = False
    """The whole body was written."""
    closed_early: bool = False
    """The client closed the connection before the whole body was written."""


@attrs.define
class ReplayServer:
    """Serves one capture (or a sequence of responses) to every POST on any path."""

    body: bytes
    status: int = 200
    content_type: str = "text/event-stream"
    chunking: Chunking = Chunking()
    pace: float = 0.0
    """Seconds to wait between pieces."""
    responses: Sequence[tuple[int, str, bytes]] = ()
    """Optional per-request responses (status, content type, body), used in order; the last repeats."""
    requests: list[ServedRequest] = attrs.field(factory=list)
    _runner: web.AppRunner | None = attrs.field(default=None, init=False)
    _done: asyncio.Event = attrs.field(factory=asyncio.Event, init=False)
    base_url: str = attrs.field(default="", init=False)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Start serving; return the base URL (``http://127.0.0.1:PORT``)."""
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        server = site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        bound = sockets[0].getsockname()[1]
        self.base_url = f"http://{host}:{bound}"
        return self.base_url

    async def close(self) -> None:
        """Stop serving."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ReplayServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def wait_finished(self, timeout: float = 5.0) -> None:
        """Wait until the latest request's handler has finished writing (or saw the close)."""
        await asyncio.wait_for(self._done.wait(), timeout)

    def _response_for(self, index: int) -> tuple[int, str, bytes]:
        if self.responses:
            return self.responses[min(index, len(self.responses) - 1)]
        return self.status, self.content_type, self.body

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            decoded: Any = json.loads(raw) if raw else None
        except ValueError:
            decoded = raw.decode("utf-8", errors="replace")
        served = ServedRequest(path=request.path_qs, body=decoded, headers=dict(request.headers))
        self.requests.append(served)
        self._done.clear()
        status, ctype, body = self._response_for(len(self.requests) - 1)
        response = web.StreamResponse(status=status, headers={"Content-Type": ctype})
        try:
            await response.prepare(request)
            for index, piece in enumerate(split_body(body, self.chunking)):
                if index and self.pace > 0:
                    await asyncio.sleep(self.pace)
                transport = request.transport
                if transport is None or transport.is_closing():
                    served.closed_early = True
                    return response
                await response.write(piece)
                served.pieces_written += 1
            await response.write_eof()
            served.completed = True
        except ConnectionError:
            served.closed_early = True
        except asyncio.CancelledError:
            served.closed_early = True
            raise
        finally:
            self._done.set()
        return response
