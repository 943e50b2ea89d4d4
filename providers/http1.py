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
from multidict import CIMultiDict

MAX_HEAD_BYTES: Final = 64 * 1024
"""The most bytes one response head may take (aiohttp's own limit is about 8 KiB per line)."""
MAX_SIZE_LINE: Final = 4096
"""The most bytes a chunk's size line may take (its extensions included)."""

_STATUS_LINE: Final = re.compile(rb"HTTP/1\.([01]) ([0-9]{3})(?: ([^\r\n]*))?")
_SIZE_LINE: Final = re.compile(rb"[ \t]*([0-9A-Fa-f]{1,16})[ \t]*(?:;[^\n]*)?\r*")
"""A chunk's size line without its line feed: the hex size, extensions (ignored), carriage returns."""
_CARRIAGE_RETURNS: Final = re.compile(rb"\r*")
_LINE_WINDOW: Final = MAX_SIZE_LINE + 1
"""How far a search for a line's end looks: a longer line is broken framing."""
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
    headers: CIMultiDict[str]
    """Read only (not wrapped in a proxy: a live stream keeps them, one object fewer)."""
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
    return Head(int(match.group(2)), reason, headers, keeps_open)


class BodyFraming(Protocol):
    """How the body's end is known: ``feed`` gives the body's bytes in *data*."""

    done: bool
    """The body's last byte was read."""

    def feed(self, data: bytes) -> bytes:
        """The body's bytes in *data*, framing removed (one piece per read); ``done`` once it ended."""
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

    def feed(self, data: bytes) -> bytes:
        if self.done:
            return b""
        take = data if len(data) <= self.left else data[: self.left]
        self.left -= len(take)
        self.done = self.left == 0
        return take

    def ends_at_close(self) -> bool:
        return self.done


class CloseBody:
    """A body delimited by the connection's close (no length, no chunking)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False

    def feed(self, data: bytes) -> bytes:
        return data

    def ends_at_close(self) -> bool:
        return True


class ChunkedBody:
    """``Transfer-Encoding: chunked``: size lines, data, CRLF; a zero size ends the body.

    Trailers after the last chunk are not read: the request asked for ``Connection: close``.
    A read holding whole chunks (the usual case: a server writes one chunk per event) is decoded
    where it lies: the size line matched in place, the data sliced once (not at all when a read
    is data only), the CRLF after it compared. Only a line the network cut is copied, into a
    buffer bounded by ``MAX_SIZE_LINE``; each byte is searched at most twice.
    """

    __slots__ = ("_after_data", "_line", "done", "left")

    def __init__(self) -> None:
        self.left = 0
        """Data bytes left in the current chunk."""
        self._after_data = False
        """The line being read is the (empty) one that ends a chunk's data."""
        self._line: bytearray | None = None
        """A line cut by the network (``None`` until one is: most reads hold whole lines)."""
        self.done = False

    def feed(self, data: bytes) -> bytes:
        """The chunk data in *data*, as one piece.

        Raises:
            ConnectionError: The framing is broken (the stream cannot be read on).
        """
        out = b""
        more: list[bytes] | None = None
        """Only a read holding several chunks' data joins pieces."""
        pos, size = 0, len(data)
        while pos < size and not self.done:
            left = self.left
            if left:
                end = pos + left if pos + left < size else size
                piece = data if pos == 0 and end == size else data[pos:end]
                self.left = left - (end - pos)
                self._after_data = not self.left
                pos = end
                if not out:
                    out = piece
                elif more is None:
                    more = [out, piece]
                else:
                    more.append(piece)
                continue
            if self._line is None:
                if self._after_data and data[pos : pos + 2] == b"\r\n":
                    self._after_data = False  # the usual CRLF after a chunk's data
                    pos += 2
                    continue
                newline = data.find(b"\n", pos, pos + _LINE_WINDOW)
                if newline >= 0:
                    match = None if self._after_data else _SIZE_LINE.fullmatch(data, pos, newline)
                    if match is None:
                        self._line_done(data, pos, newline)  # the line after a chunk's data, or broken
                    else:
                        self.left = int(match[1], 16)  # the usual size line, matched where it lies
                        self.done = not self.left
                    pos = newline + 1
                    continue
            pos = self._hold(data, pos)
        return out if more is None else b"".join(more)

    def _hold(self, data: bytes, pos: int) -> int:
        """A line the network cut: held (bounded) until its end comes; where the bytes after it start."""
        held = self._line
        room = MAX_SIZE_LINE - (len(held) if held is not None else 0)
        newline = data.find(b"\n", pos, pos + room + 1)
        if newline < 0:
            if len(data) - pos > room:
                raise ConnectionError(f"a chunk size line longer than {MAX_SIZE_LINE} bytes")
            if held is None:
                self._line = held = bytearray()
            held += data[pos:]
            return len(data)
        if held is None:
            self._line_done(data, pos, newline)
        else:
            held += data[pos:newline]
            self._line = None
            self._line_done(held, 0, len(held))
        return newline + 1

    def _line_done(self, line: bytes | bytearray, start: int, stop: int) -> None:
        """The line ``line[start:stop]`` (its line feed excluded), read where it lies (no copy)."""
        if self._after_data:
            self._after_data = False
            if _CARRIAGE_RETURNS.fullmatch(line, start, stop) is None:
                raise ConnectionError("chunked framing: no line end after a chunk's data")
            return
        match = _SIZE_LINE.fullmatch(line, start, stop)
        if match is None:
            raise ConnectionError("chunked framing: a chunk size that is not a hex number")
        self.left = int(match[1], 16)
        self.done = not self.left

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
