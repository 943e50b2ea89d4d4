"""A provider request read by an ``asyncio.Protocol``: the body handled in ``data_received`` (stage 02).

aiohttp's reader hands each network read to a ``StreamReader`` and wakes the reading task up
for it: a loop step per read, and in live mode every SSE event is a read of its own. This
reader parses the head and the body's framing (``rxcord.providers.http1``) as bytes arrive and,
once the transport asks for it (``SocketResponse.stream``), hands each body piece to the
transport's event handling from ``data_received`` itself: no task wake-up per read.

What it carries, as the aiohttp path does: TLS (the loop's ``ssl=``, the request's host as
``server_hostname``, so the certificate is checked for the host asked for even when the
connection goes to a pinned address), the SSRF guard's pinned addresses (it connects to those
and never resolves the host again), ``Content-Length``, chunked and close-delimited bodies, a
body read whole (``read``, for the capped reader) or pushed (``stream``), and disposal closing
the socket. One request per connection (``Connection: close``): nothing is pooled.

Flow control: pieces nobody took yet are held only up to ``_PAUSE_AT`` bytes; past that the
socket stops reading until they are taken.
"""

from __future__ import annotations

__all__ = ("SocketResponse", "open_request")

import asyncio
import collections
import ssl
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from loguru import logger
from multidict import CIMultiDictProxy
from yarl import URL

from rxcord.core.errors import InputError
from rxcord.core.version import __version__
from rxcord.providers.http1 import BodyFraming, Head, HeadReader, framing_for, is_unusual

_log = logger.bind(stage="02-transport")

_PAUSE_AT: Final = 256 * 1024
"""Bytes of body held for a reader that has not taken them before the socket stops reading."""
_USER_AGENT: Final = f"rxcord/{__version__}"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

OnPiece = Callable[[bytes], bool]
"""Takes one body piece; ``True``: stop reading (the transport is done with the response)."""

_default_tls: ssl.SSLContext | None = None


def default_tls() -> ssl.SSLContext:
    """The system's trust store, made once (a context costs milliseconds to build)."""
    global _default_tls  # noqa: PLW0603 - one shared, immutable-after-creation context
    if _default_tls is None:
        _default_tls = ssl.create_default_context()
    return _default_tls


class _Reader(asyncio.Protocol):
    """One response: its head, then its body pieces, pulled (``read``) or pushed (``stream``)."""

    def __init__(self, method: str) -> None:
        loop = asyncio.get_running_loop()
        self.method = method
        self.transport: asyncio.Transport | None = None
        self.head: asyncio.Future[Head] = loop.create_future()
        self._heads: HeadReader | None = HeadReader()
        self._framing: BodyFraming | None = None
        self._pieces: collections.deque[bytes] = collections.deque()
        self._held = 0
        self._paused = False
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        """The body ended (cleanly, or with ``_failure``)."""
        self._failure: BaseException | None = None
        self._push: OnPiece | None = None
        self._done: asyncio.Future[bool] | None = None
        self._loop = loop

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            if self._heads is not None:
                got = self._heads.feed(data)
                if got is None:
                    return
                head, data = got
                self._heads = None
                self._framing = framing_for(head, method=self.method)
                if not self.head.done():
                    self.head.set_result(head)
                if self._framing.done:
                    self._end(None)
                    return
            framing = self._framing
            if framing is None or self._ended:
                return
            pieces = framing.feed(data)
            if pieces:
                # One piece per network read, as aiohttp's readany gives: a read that holds several
                # chunks (a client that fell behind) is one batch downstream, not one per chunk.
                self._deliver(pieces[0] if len(pieces) == 1 else b"".join(pieces))
            if self._ended:
                return
            if framing.done:
                self._end(None)
        except Exception as exc:
            self._fail(exc)

    def eof_received(self) -> bool | None:
        return None  # close the transport: the body (if close-delimited) ends at connection_lost

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.head.done():
            self.head.set_exception(exc or ConnectionError("the connection closed before the response head"))
            return
        if self._ended:
            return
        framing = self._framing
        if exc is None and framing is not None and framing.ends_at_close():
            self._end(None)
            return
        self._end(
            exc or ConnectionError("the connection closed in the middle of the body (payload not completed)")
        )

    def _fail(self, exc: BaseException) -> None:
        if not self.head.done():
            self.head.set_exception(exc)
        self._end(exc)
        if self.transport is not None:
            self.transport.close()

    def _deliver(self, piece: bytes) -> None:
        push = self._push
        if push is not None:
            done = self._done
            if done is not None and done.done():
                # The reading task was cancelled (a dispose, the idle bound): nothing more is pushed.
                self._ended = True
                return
            if push(piece):
                self._finish_push(stopped=True)
            return
        self._pieces.append(piece)
        self._held += len(piece)
        self._wake()
        if self._held > _PAUSE_AT and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def _end(self, failure: BaseException | None) -> None:
        if self._ended:
            return
        self._ended = True
        self._failure = failure
        self._wake()
        if self._done is not None and not self._done.done():
            if failure is None:
                self._done.set_result(False)
            else:
                self._done.set_exception(failure)

    def _finish_push(self, *, stopped: bool) -> None:
        self._ended = True
        if self._done is not None and not self._done.done():
            self._done.set_result(stopped)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    @property
    def failure(self) -> BaseException | None:
        """What ended the body early (see ``SocketResponse.failure``)."""
        return self._failure

    async def read(self) -> bytes:
        """The next body piece; ``b""`` at the body's end.

        Raises:
            ConnectionError: The body was cut (or its framing broken).
        """
        while not self._pieces:
            if self._ended:
                if self._failure is not None:
                    raise self._failure
                return b""
            self._waiter = self._loop.create_future()
            await self._waiter
        piece = self._pieces.popleft()
        self._held -= len(piece)
        if self._paused and self._held <= _PAUSE_AT // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return piece

    def stream(self, on_piece: OnPiece) -> asyncio.Future[bool]:
        """Hand every body piece to *on_piece* as it arrives (those already held first).

        The future: ``True`` when *on_piece* asked to stop, ``False`` at the body's end; the
        exception *on_piece* raised, or the cut. *on_piece* runs inside ``data_received``.
        """
        done: asyncio.Future[bool] = self._loop.create_future()
        self._done = done
        try:
            while self._pieces:
                piece = self._pieces.popleft()
                if on_piece(piece):
                    self._finish_push(stopped=True)
                    return done
        except Exception as exc:
            # Set here: the body may have ended already (``_end`` then does nothing more).
            self._failure = exc
            done.set_exception(exc)
            self._fail(exc)
            return done
        self._pieces.clear()
        self._held = 0
        if self._ended:
            if self._failure is None:
                done.set_result(False)
            else:
                done.set_exception(self._failure)
            return done
        self._push = on_piece
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return done


class SocketResponse:
    """A response read by the socket reader: status, headers, and its body (``read`` or ``stream``)."""

    __slots__ = ("_reader", "headers", "status", "url")

    def __init__(self, reader: _Reader, head: Head, url: URL) -> None:
        self._reader = reader
        self.status = head.status
        self.headers: CIMultiDictProxy[str] = head.headers
        self.url = url

    async def read(self) -> bytes:
        """The next piece of the (still encoded) body; ``b""`` at its end."""
        return await self._reader.read()

    def stream(self, on_piece: OnPiece) -> asyncio.Future[bool]:
        """Push every piece of the (still encoded) body to *on_piece* (see ``_Reader.stream``)."""
        return self._reader.stream(on_piece)

    @property
    def failure(self) -> BaseException | None:
        """What ended the body early: a cut, or what the pushed-to callable raised.

        The callable may cancel the reading task itself (an observer that disposes as it
        raises): the task then sees a cancellation, and finds the exception here.
        """
        return self._reader.failure

    def close(self) -> None:
        """Close the socket (an unread body is never read on: the server sees the client go)."""
        transport = self._reader.transport
        if transport is not None and not transport.is_closing():
            transport.close()

    @property
    def transport(self) -> asyncio.Transport | None:
        """The socket's asyncio transport (tests check ``is_closing()`` after disposal)."""
        return self._reader.transport


def _request_bytes(method: str, url: URL, headers: Mapping[str, str], body: bytes) -> bytes:
    host = url.raw_host or ""
    authority = f"[{host}]" if ":" in host else host
    port = url.explicit_port
    if port is not None and port != _DEFAULT_PORTS.get(url.scheme):
        authority = f"{authority}:{port}"
    lines = [f"{method} {url.raw_path_qs or '/'} HTTP/1.1", f"Host: {authority}"]
    names = {name.lower() for name in headers}
    for name, value in headers.items():
        if any(c in name or c in value for c in "\r\n\0") or not name:
            # Checked by name only: a header's value may be a key.
            raise InputError(f"request header {name[:60]!r} contains a line break or NUL")
        if name.lower() in ("host", "content-length", "connection", "transfer-encoding"):
            continue  # the reader frames the request itself
        lines.append(f"{name}: {value}")
    if "user-agent" not in names:
        lines.append(f"User-Agent: {_USER_AGENT}")
    lines += [f"Content-Length: {len(body)}", "Connection: close", "", ""]
    return "\r\n".join(lines).encode("latin-1") + body


async def open_request(
    method: str,
    url: URL,
    headers: Mapping[str, str],
    body: bytes,
    *,
    addresses: Sequence[str] | None,
    tls: ssl.SSLContext | None,
    connect_timeout: float,
    on_transport: Callable[[asyncio.Transport], None] | None = None,
) -> SocketResponse | None:
    """Connect, send the request and read the response head.

    ``None``: the response is one this reader does not serve (not plain HTTP/1.x: another
    protocol's bytes, a transfer coding other than chunked, folded or conflicting headers);
    the caller performs the request through aiohttp instead.

    Args:
        method: The request's method.
        url: The request's URL (its host is the TLS server name and the ``Host`` header).
        headers: The request's headers (framing headers are the reader's own).
        body: The encoded request body.
        addresses: The SSRF guard's checked addresses (tried in order, never re-resolved);
            ``None``: the host is resolved by the loop (a provider's own origin).
        tls: The trust for an ``https`` URL (``None``: the system's trust store).
        connect_timeout: Seconds for the connection (and the TLS handshake).
        on_transport: Called with the socket's transport once connected (tests count sockets).

    Raises:
        OSError: No connection (each pinned address failed), or it closed before the head.
    """
    host = url.raw_host or ""
    secure = url.scheme == "https"
    context = (tls or default_tls()) if secure else None
    loop = asyncio.get_running_loop()
    reader = _Reader(method)
    payload = _request_bytes(method, url, headers, body)
    targets = list(addresses) if addresses else [host]
    failure: OSError | None = None
    transport: asyncio.BaseTransport | None = None
    async with asyncio.timeout(connect_timeout):
        for target in targets:
            try:
                transport, _ = await loop.create_connection(
                    lambda: reader,
                    target,
                    url.port or _DEFAULT_PORTS[url.scheme],
                    ssl=context,
                    server_hostname=host if secure else None,
                )
                break
            except OSError as exc:  # the next pinned address may answer
                failure = exc
    if transport is None:
        raise failure or OSError(f"cannot connect to {host}")
    assert isinstance(transport, asyncio.Transport)
    if on_transport is not None:
        on_transport(transport)
    try:
        transport.write(payload)
        head = await reader.head
    except BaseException as exc:
        transport.close()
        if isinstance(exc, Exception) and is_unusual(exc):
            _log.info("{host}: {why}; the response is read through aiohttp", host=host, why=exc)
            return None
        raise
    return SocketResponse(reader, head, url)
