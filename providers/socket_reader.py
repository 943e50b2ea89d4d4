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
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from rxcord.core.errors import InputError
from rxcord.core.version import __version__
from rxcord.providers.http1 import BodyFraming, HeadReader, framing_for, is_unusual

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


_NO_HEADERS: Final[Mapping[str, str]] = CIMultiDictProxy(CIMultiDict())
"""A response's headers until its head is read."""


class SocketResponse(asyncio.Protocol):
    """One response read from its socket: status, headers, and its body (``read`` or ``stream``).

    The protocol and the response are one object, and one future is alive at a time (the
    head's, a ``read``'s, or the stream's end): a live stream holds as few objects as it can.
    """

    __slots__ = (
        "_done",
        "_ended",
        "_failure",
        "_framing",
        "_heads",
        "_held",
        "_paused",
        "_pieces",
        "_push",
        "_waiter",
        "headers",
        "method",
        "status",
        "transport",
        "url",
    )

    def __init__(self, method: str, url: URL) -> None:
        self.method = method
        self.url = url
        self.status = 0
        self.headers: Mapping[str, str] = _NO_HEADERS
        """Case-insensitive once the head is read; read only."""
        self.transport: asyncio.Transport | None = None
        self._heads: HeadReader | None = HeadReader()
        self._framing: BodyFraming | None = None
        """``None`` until the head is read."""
        self._waiter: asyncio.Future[None] | None = asyncio.get_running_loop().create_future()
        """The head's future, then a ``read``'s while it waits (``None`` between them)."""
        self._pieces: collections.deque[bytes] | None = None
        """Pieces nobody took yet (pulled with ``read``; ``None`` until one is held)."""
        self._held = 0
        self._paused = False
        self._ended = False
        """The body ended (cleanly, or with ``_failure``), or the pushed-to callable stopped it."""
        self._failure: BaseException | None = None
        self._push: OnPiece | None = None
        self._done: asyncio.Future[bool] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        framing = self._framing
        if framing is None:
            self._head_received(data)
            return
        if self._ended:
            return
        try:
            piece = framing.feed(data)
            if piece:
                # One piece per network read, as aiohttp's readany gives: a read that holds several
                # chunks (a client that fell behind) is one batch downstream, not one per chunk.
                push, done = self._push, self._done
                if push is None or done is None:
                    self._hold(piece)
                elif done.done():
                    # The reading task was cancelled (a dispose, the idle bound): nothing more is pushed.
                    self._ended = True
                    return
                elif push(piece):
                    self._finish_push(stopped=True)
                    return
            if framing.done:
                self._end(None)
        except Exception as exc:
            self._fail(exc)

    def _head_received(self, data: bytes) -> None:
        heads = self._heads
        if heads is None:
            return  # failed already
        try:
            got = heads.feed(data)
            if got is None:
                return
            head, rest = got
            self._heads = None
            framing = framing_for(head, method=self.method)
        except Exception as exc:
            self._fail(exc)
            return
        self.status, self.headers, self._framing = head.status, head.headers, framing
        self._wake()
        if framing.done:
            self._end(None)
        elif rest:
            self.data_received(rest)

    def eof_received(self) -> bool | None:
        return None  # close the transport: the body (if close-delimited) ends at connection_lost

    def connection_lost(self, exc: Exception | None) -> None:
        framing = self._framing
        if framing is None:
            self._fail(exc or ConnectionError("the connection closed before the response head"))
            return
        if self._ended:
            return
        if exc is None and framing.ends_at_close():
            self._end(None)
            return
        self._end(
            exc or ConnectionError("the connection closed in the middle of the body (payload not completed)")
        )

    def _fail(self, exc: BaseException) -> None:
        if self._framing is None:
            self._heads = None
            waiter, self._waiter = self._waiter, None
            if waiter is not None and not waiter.done():
                waiter.set_exception(exc)
        self._end(exc)
        if self.transport is not None:
            self.transport.close()

    def _hold(self, piece: bytes) -> None:
        pieces = self._pieces
        if pieces is None:
            self._pieces = pieces = collections.deque()
        pieces.append(piece)
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
        done = self._done
        if done is not None and not done.done():
            if failure is None:
                done.set_result(False)
            else:
                done.set_exception(failure)

    def _finish_push(self, *, stopped: bool) -> None:
        self._ended = True
        done = self._done
        if done is not None and not done.done():
            done.set_result(stopped)

    def _wake(self) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def head_read(self) -> None:
        """Wait for the response head (``status`` and ``headers`` are set then).

        Raises:
            OSError: The connection closed before the head (or failed).
            ValueError: The head is not one this reader serves (``is_unusual``).
        """
        waiter = self._waiter
        if waiter is not None and self._framing is None:
            await waiter
        elif self._framing is None and self._failure is not None:
            raise self._failure

    @property
    def failure(self) -> BaseException | None:
        """What ended the body early: a cut, or what the pushed-to callable raised.

        The callable may cancel the reading task itself (an observer that disposes as it
        raises): the task then sees a cancellation, and finds the exception here.
        """
        return self._failure

    async def read(self) -> bytes:
        """The next piece of the (still encoded) body; ``b""`` at its end.

        Raises:
            ConnectionError: The body was cut (or its framing broken).
        """
        while not self._pieces:
            if self._ended:
                if self._failure is not None:
                    raise self._failure
                return b""
            # One future per wait, woken by the read that brings a piece (or the end).
            self._waiter = waiter = asyncio.get_running_loop().create_future()
            await waiter
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
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._done = done
        pieces, self._pieces, self._held = self._pieces, None, 0
        try:
            while pieces:
                if on_piece(pieces.popleft()):
                    self._finish_push(stopped=True)
                    return done
        except Exception as exc:
            # Set here: the body may have ended already (``_end`` then does nothing more).
            self._failure = exc
            done.set_exception(exc)
            self._fail(exc)
            return done
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

    def close(self) -> None:
        """Close the socket (an unread body is never read on: the server sees the client go)."""
        transport = self.transport
        if transport is not None and not transport.is_closing():
            transport.close()


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
    connect_timeout: float | None,
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
        connect_timeout: Seconds for the connection (and the TLS handshake); ``None``: the
            caller bounds it (the transport's ``IdleWatch``, which *on_transport* rebounds:
            ``asyncio.timeout`` would leave its cancelled timer in the loop's heap per request).
        on_transport: Called with the socket's transport once connected, before the request
            is sent (tests count sockets; the transport moves to its first-byte bound).

    Raises:
        OSError: No connection (each pinned address failed), or it closed before the head.
    """
    host = url.raw_host or ""
    secure = url.scheme == "https"
    context = (tls or default_tls()) if secure else None
    loop = asyncio.get_running_loop()
    response = SocketResponse(method, url)
    payload = _request_bytes(method, url, headers, body)
    targets = list(addresses) if addresses else [host]
    failure: OSError | None = None
    transport: asyncio.BaseTransport | None = None
    async with asyncio.timeout(connect_timeout):  # None: no bound (a no-op, no timer)
        for target in targets:
            try:
                transport, _ = await loop.create_connection(
                    lambda: response,
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
        await response.head_read()
    except BaseException as exc:
        transport.close()
        if isinstance(exc, Exception) and is_unusual(exc):
            _log.info("{host}: {why}; the response is read through aiohttp", host=host, why=exc)
            return None
        raise
    return response
