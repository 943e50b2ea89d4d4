r"""Incremental, exact Server-Sent Events parser (stage 02).

Bytes go in as the network delivers them; events come out. Any split of the
same bytes gives the same events: a piece may end inside a line, inside a
UTF-8 character, or between the CR and LF of a CRLF line end, because the
parser only decodes *complete lines* and remembers a trailing CR.

Follows the WHATWG event-stream rules: CRLF, CR and LF line ends; lines
starting with ``:`` are comments (OpenRouter's ``: OPENROUTER PROCESSING``
keepalive); ``event:``, ``data:`` (several lines joined with ``\n``),
``id:``; a single space after the colon is removed; a blank line dispatches.
One deliberate deviation, documented in ``docs/decisions.md``: an event
still pending when the body ends is dispatched rather than dropped, because
some providers end their stream without the final blank line.

A single line longer than ``max_line_bytes`` raises ``SseLineTooLongError``: a
stream that never sends a line end must not grow memory without bound.

Linear in the bytes fed, however a long line is cut: the pieces of an
unfinished line are kept in a list and joined once, when its line end
arrives (never ``partial + piece`` per read, which is quadratic for a line of
megabytes delivered in small writes).
"""

from __future__ import annotations

__all__ = ("SseEvent", "SseLineTooLong", "SseParser")

import re
from typing import Final

import attrs

from rxcord.core.errors import SseLineTooLongError

_UTF8_BOM: Final = b"\xef\xbb\xbf"
_BLANK_RUN: Final = re.compile(b"\n{3,}")
_DEFAULT_MAX_LINE: Final = 8 * 1024 * 1024


@attrs.frozen(slots=True)
class SseEvent:
    """One dispatched event."""

    data: str
    """The data lines joined with ``\\n``."""
    event: str | None = None
    """The ``event:`` name; ``None`` for the default ``message`` type."""
    id: str | None = None


SseLineTooLong = SseLineTooLongError
"""The name this error had before every exception name ended in ``Error``; kept for callers."""


@attrs.define(slots=True)
class SseParser:
    """Feed bytes with ``feed``; call ``close`` at end of body."""

    max_line_bytes: int = _DEFAULT_MAX_LINE
    # Both lists are ``None`` while empty (as ``rxcord.core.text_buffer.TextBuffer``): a live
    # stream's events arrive whole, one ``data:`` line each, so most parsers never make either.
    _pending: list[bytes] | None = attrs.field(default=None, init=False)
    """The pieces of the unfinished last line (joined once, when it ends)."""
    _pending_bytes: int = attrs.field(default=0, init=False)
    _skip_lf: bool = attrs.field(default=False, init=False)
    _at_start: bool = attrs.field(default=True, init=False)
    _data: list[bytes] | None = attrs.field(default=None, init=False)
    """The current event's data values, undecoded (decoded once, at dispatch); ``None``: none yet."""
    _event: str | None = attrs.field(default=None, init=False)
    _id: str | None = attrs.field(default=None, init=False)
    comments: int = attrs.field(default=0, init=False)
    """Comment (keepalive) lines seen so far."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        """Consume *chunk*; return the events it completed."""
        return [SseEvent(_text(data), event, id_) for data, event, id_ in self.feed_raw(chunk)]

    def close(self) -> list[SseEvent]:
        """End of body: dispatch a pending event (see the module docstring)."""
        return [SseEvent(_text(data), event, id_) for data, event, id_ in self.close_raw()]

    def feed_raw(self, chunk: bytes) -> list[tuple[bytes, str | None, str | None]]:
        """``feed`` as ``(data, event, id)`` tuples with the data still UTF-8 bytes.

        The transport's hot path: no event objects, and a JSON decoder can take the
        bytes as they are. ``data.decode("utf-8", "replace")`` is ``SseEvent.data``.
        """
        out: list[tuple[bytes, str | None, str | None]] = []
        if not chunk:
            return out
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        pending = self._pending
        if pending is not None:
            if b"\n" not in chunk and b"\r" not in chunk and not self._at_start:
                # Still inside the same line: keep the piece, copy nothing.
                self._hold(chunk)
                return out
            pending.append(chunk)
            buf = b"".join(pending)
            self._pending = None
            self._pending_bytes = 0
        else:
            buf = chunk
        if self._at_start:
            if len(buf) < len(_UTF8_BOM) and _UTF8_BOM.startswith(buf):
                self._hold(buf)
                return out
            self._at_start = False
            if buf.startswith(_UTF8_BOM):
                buf = buf[len(_UTF8_BOM) :]
        line = self._line
        if b"\r" not in buf:
            # LF-only (every provider in practice): whole events are the text between
            # blank lines. An event that is one ``data:`` line, with nothing pending
            # from earlier lines, is dispatched without the line-by-line machinery;
            # anything else goes through it, so the events are the same.
            if b"\n\n\n" in buf:
                # A blank line after a blank line dispatches nothing: a run of them is one
                # (a body of blank lines costs one C-speed pass, not a Python step per line).
                buf = _BLANK_RUN.sub(b"\n\n", buf)
            blocks = buf.split(b"\n\n")
            tail = blocks.pop()
            for block in blocks:
                if (
                    block.startswith(b"data:")
                    and self._data is None
                    and self._event is None
                    and b"\n" not in block
                ):
                    out.append((block[6:] if block.startswith(b" ", 5) else block[5:], None, self._id))
                    continue
                if (
                    block.startswith(b":")
                    and self._data is None
                    and self._event is None
                    and b"\n" not in block
                ):
                    # A lone keepalive comment between events: counted, nothing to decode or dispatch.
                    self.comments += 1
                    continue
                for raw in block.split(b"\n"):
                    line(raw, out)
                self._dispatch(out)
            lines = tail.split(b"\n")
            rest = lines.pop()
            for raw in lines:
                line(raw, out)
            if rest:
                self._hold(rest)
            return out
        for raw in buf.splitlines(keepends=True):
            last = raw[-1:]
            if last == b"\n":
                line(raw[:-2] if raw[-2:] == b"\r\n" else raw[:-1], out)
            elif last == b"\r":
                line(raw[:-1], out)
            else:
                self._hold(raw)
        # A CR at the very end may be the first half of a CRLF split across pieces.
        self._skip_lf = buf[-1:] == b"\r"
        return out

    def close_raw(self) -> list[tuple[bytes, str | None, str | None]]:
        """``close`` as ``(data, event, id)`` tuples (data as UTF-8 bytes)."""
        out: list[tuple[bytes, str | None, str | None]] = []
        if self._pending is not None:
            tail = b"".join(self._pending)
            self._pending = None
            self._pending_bytes = 0
            self._line(tail, out)
        self._dispatch(out)
        return out

    def _hold(self, piece: bytes) -> None:
        """Keep *piece* of the unfinished last line, within the line bound."""
        self._pending_bytes += len(piece)
        if self._pending_bytes > self.max_line_bytes:
            self._pending = None
            self._pending_bytes = 0
            raise SseLineTooLongError(f"SSE line exceeds {self.max_line_bytes} bytes")
        pending = self._pending
        if pending is None:
            self._pending = [piece]
        else:
            pending.append(piece)

    def _line(self, raw: bytes, out: list[tuple[bytes, str | None, str | None]]) -> None:
        if not raw:
            self._dispatch(out)
            return
        if raw[:5] == b"data:":
            # The common line, without the general field split: the ASCII field
            # name never changes how the value decodes.
            self._add_data(raw[6:] if raw[5:6] == b" " else raw[5:])
            return
        line = raw.decode("utf-8", errors="replace")
        if line[0] == ":":
            self.comments += 1
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._add_data(b"")  # a bare "data" line: "data:..." lines are handled above
        elif name == "event":
            self._event = value or None
        elif name == "id" and "\0" not in value:
            self._id = value
        # "retry" and unknown fields are ignored, as the standard says.

    def _add_data(self, value: bytes) -> None:
        data = self._data
        if data is None:
            self._data = [value]
        else:
            data.append(value)

    def _dispatch(self, out: list[tuple[bytes, str | None, str | None]]) -> None:
        data = self._data
        if data is not None:
            out.append((data[0] if len(data) == 1 else b"\n".join(data), self._event, self._id))
            self._data = None
        self._event = None


def _text(data: bytes) -> str:
    # Decoding the joined lines equals joining the decoded lines: a newline byte
    # can never be part of a multi-byte character, so it ends any broken one.
    return data.decode("utf-8", errors="replace")
