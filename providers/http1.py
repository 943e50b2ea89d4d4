"""HTTP/1.1 response framing for the socket reader (stage 02): the head and the body's framing.

Pure and synchronous: bytes in as the socket delivers them, decoded pieces out, so the socket
reader (``rxcord.providers.socket_reader``) can drive them from ``data_received``. Every piece
is looked at once: a partial line (the head, a chunk's size line) is kept in a buffer that is
bounded (``MAX_HEAD_BYTES``, ``MAX_SIZE_LINE``) and searched only from where the last search
stopped, so the work is linear in the bytes whatever the cuts.

A response these rules do not cover (another protocol's bytes, a transfer coding other than
``chunked``, folded header lines, conflicting lengths) raises an internal error while the head is
read (``is_unusual`` tells it): the transport then performs the attempt through aiohttp instead.
Broken framing in the body (a size line that is not hex) raises ``ConnectionError``: a cut stream.
"""

from __future__ import annotations

__all__ = (
    "MAX_HEAD_BYTES",
    "MAX_SIZE_LINE",
    "BodyFraming",
    "ChunkedBody",
    "CloseBody",
    "Head",
    "HeadReader",
    "LengthBody",
    "framing_for",
    "is_unusual",
)

import re
from typing import Final, Protocol

import attrs
from multidict import CIMultiDict, CIMultiDictProxy

MAX_HEAD_BYTES: Final = 64 * 1024
"""The most bytes one response head may take (aiohttp's own limit is about 8 KiB per line)."""
MAX_SIZE_LINE: Final = 4096
"""The most bytes a chunk's size line may take (its extensions included)."""

_STATUS_LINE: Final = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?")
_HEX: Final = re.compile(rb"[0-9A-Fa-f]{1,16}")
_DIGITS: Final = re.compile(r"[0-9]{1,19}")


class _UnservedResponseError(ValueError):
    """A response the socket reader does not serve; the transport asks aiohttp instead."""


def is_unusual(exc: BaseException) -> bool:
    """Whether *exc* says the response is one the socket reader does not serve (see above)."""
    return isinstance(exc, _UnservedResponseError)


@attrs.frozen
class Head:
    """A response's status line and headers."""

    status: int
    reason: str
    headers: CIMultiDictProxy[str]
    keeps_open: bool
    """HTTP/1.0 without keep-alive closes after the body (informational only: requests say close)."""


class HeadReader:
    """Collects a response head; ``feed`` returns the head and the bytes after it once complete.

    Informational (1xx) heads other than ``101`` are skipped, as HTTP says.
    """

    __slots__ = ("_buf", "_searched")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._searched = 0
        """Where the next search for the blank line starts (never the whole buffer again)."""

    def feed(self, data: bytes) -> tuple[Head, bytes] | None:
        """Take *data*; the head and what follows it, or ``None`` while the head is incomplete.

        Raises:
            _UnservedResponseError: Not an HTTP/1.x head, or one past ``MAX_HEAD_BYTES``.
        """
        buf = self._buf
        buf += data
        while True:
            end = buf.find(b"\r\n\r\n", self._searched)
            if end < 0:
                if len(buf) > MAX_HEAD_BYTES:
                    raise _UnservedResponseError(f"a response head longer than {MAX_HEAD_BYTES} bytes")
                self._searched = max(0, len(buf) - 3)
                if len(buf) >= 12 and not buf.startswith(b"HTTP/1."):
                    raise _UnservedResponseError("the response is not HTTP/1.x")
                return None
            head = parse_head(bytes(buf[:end]))
            rest = bytes(buf[end + 4 :])
            if 100 <= head.status < 200 and head.status != 101:
                # An interim answer (100 Continue, 103 Early Hints): the real one follows.
                buf.clear()
                buf += rest
                self._searched = 0
                continue
            buf.clear()
            return head, rest


def parse_head(raw: bytes) -> Head:
    """The status line and headers of *raw* (without the final blank line).

    Raises:
        _UnservedResponseError: Anything but a plain HTTP/1.x head.
    """
    lines = raw.split(b"\r\n")
    match = _STATUS_LINE.fullmatch(lines[0])
    if match is None:
        raise _UnservedResponseError("the response's status line is not HTTP/1.x")
    headers: CIMultiDict[str] = CIMultiDict()
    for line in lines[1:]:
        if line[:1] in (b" ", b"\t"):
            raise _UnservedResponseError("a folded header line (obsolete line folding)")
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise _UnservedResponseError("a header line without a name and a colon")
        headers.add(name.decode("latin-1"), value.strip(b" \t").decode("latin-1"))
    connection = headers.get("Connection", "").lower()
    keeps_open = "close" not in connection and (match.group(1) == b"1" or "keep-alive" in connection)
    reason = (match.group(3) or b"").decode("latin-1")
    return Head(int(match.group(2)), reason, CIMultiDictProxy(headers), keeps_open)


class BodyFraming(Protocol):
    """How the body's end is known: ``feed`` gives the body's bytes in *data*."""

    done: bool
    """The body's last byte was read."""

    def feed(self, data: bytes) -> list[bytes]:
        """The body's bytes in *data* (framing removed); ``done`` once the body ended."""
        ...

    def ends_at_close(self) -> bool:
        """Whether the connection closing now ends the body cleanly (else it was cut)."""
        ...


class LengthBody:
    """A body of ``Content-Length`` bytes."""

    __slots__ = ("done", "left")

    def __init__(self, length: int) -> None:
        self.left = length
        self.done = length == 0

    def feed(self, data: bytes) -> list[bytes]:
        if self.done or not data:
            return []
        take = data if len(data) <= self.left else data[: self.left]
        self.left -= len(take)
        self.done = self.left == 0
        return [take]

    def ends_at_close(self) -> bool:
        return self.done


class CloseBody:
    """A body delimited by the connection's close (no length, no chunking)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False

    def feed(self, data: bytes) -> list[bytes]:
        return [data] if data else []

    def ends_at_close(self) -> bool:
        return True


class ChunkedBody:
    """``Transfer-Encoding: chunked``: size lines, data, CRLF; a zero size ends the body.

    Trailers after the last chunk are not read: the request asked for ``Connection: close``.
    """

    __slots__ = ("_after_data", "_line", "done", "left")

    def __init__(self) -> None:
        self.left = 0
        """Data bytes left in the current chunk."""
        self._after_data = False
        """The line being read is the (empty) one that ends a chunk's data."""
        self._line = bytearray()
        """A size line cut by the network (bounded by ``MAX_SIZE_LINE``)."""
        self.done = False

    def feed(self, data: bytes) -> list[bytes]:
        """The chunk data in *data*.

        Raises:
            ConnectionError: The framing is broken (the stream cannot be read on).
        """
        out: list[bytes] = []
        pos, size = 0, len(data)
        while pos < size and not self.done:
            if self.left:
                end = min(size, pos + self.left)
                out.append(data[pos:end] if pos or end < size else data)
                self.left -= end - pos
                pos = end
                if not self.left:
                    self._after_data = True
                continue
            newline = data.find(b"\n", pos)
            if newline < 0:
                self._hold(data[pos:])
                break
            self._hold(data[pos:newline])
            pos = newline + 1
            self._line_done()
        return out

    def _hold(self, piece: bytes) -> None:
        self._line += piece
        if len(self._line) > MAX_SIZE_LINE:
            raise ConnectionError(f"a chunk size line longer than {MAX_SIZE_LINE} bytes")

    def _line_done(self) -> None:
        line = bytes(self._line).rstrip(b"\r")
        self._line.clear()
        if self._after_data:
            self._after_data = False
            if line:
                raise ConnectionError("chunked framing: no line end after a chunk's data")
            return
        digits = line.split(b";", 1)[0].strip(b" \t")
        if _HEX.fullmatch(digits) is None:
            raise ConnectionError("chunked framing: a chunk size that is not a hex number")
        self.left = int(digits, 16)
        if not self.left:
            self.done = True

    def ends_at_close(self) -> bool:
        return self.done


def framing_for(head: Head, *, method: str) -> BodyFraming:
    """The framing of *head*'s body (RFC 9112 section 6.3).

    Raises:
        _UnservedResponseError: A transfer coding other than ``chunked``, or an unusable length.
    """
    if method == "HEAD" or head.status in (204, 304):
        return LengthBody(0)
    codings = ",".join(head.headers.getall("Transfer-Encoding", ())).lower()
    if codings:
        if [part.strip() for part in codings.split(",")] != ["chunked"]:
            raise _UnservedResponseError(
                f"a transfer coding the socket reader does not decode: {codings[:80]!r}"
            )
        return ChunkedBody()
    lengths = {value.strip() for value in head.headers.getall("Content-Length", ())}
    if not lengths:
        return CloseBody()
    if len(lengths) > 1 or _DIGITS.fullmatch(next(iter(lengths))) is None:
        raise _UnservedResponseError("an unusable Content-Length")
    return LengthBody(int(next(iter(lengths))))
