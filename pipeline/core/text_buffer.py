"""A compact append-only text buffer for long streams (a leaf module).

A streamed answer arrives as tens of thousands of deltas of a few characters.
Kept as a list, each delta costs a ``str`` object (about 50 bytes of header for
3 characters) plus a list slot, for as long as the stream lasts, and everyone
who keeps the deltas (the normalizer's resend check, the aggregated flusher,
the result fold) keeps them all alive. ``TextBuffer`` joins every
``GROUP`` appended pieces into one string, so what it holds is about the text
itself and the deltas can be freed as soon as they have passed through.

Appending stays O(1) amortized (one join per ``GROUP`` pieces, each piece
copied once more); ``getvalue`` joins the groups.

A live stream holds several buffers (stage 03's resend check, the flusher's held
text, the result's visible and delivered text), and the collector walks every
list they keep: the joined groups and the pieces not joined yet share one list
(the groups first), an empty buffer holds no list at all, and a short text
(``SHORT`` characters at most: a flusher's text waiting for its message, most of
an answer's first messages) is held as one string, no list either. Appending to a
short text copies it, at most ``SHORT`` characters: a bounded cost per piece, so
appending stays linear in the text.
"""

from __future__ import annotations

__all__ = ("TextBuffer",)

from typing import Final

GROUP: Final = 64
"""Pieces joined into one string at a time."""

SHORT: Final = 2048
"""A text up to this long is held as one string (a message's worth: a flusher's held text fits)."""


class TextBuffer:
    """Appends strings; holds them joined in groups; returns the whole text on demand."""

    __slots__ = ("_loose", "_parts")

    def __init__(self, initial: str = "") -> None:
        self._parts: str | list[str] | None = initial or None
        """``None`` while empty; a short text as one string; else the joined groups, then the pieces
        appended since the last join."""
        self._loose = 0
        """How many pieces at the end of the list ``_parts`` are not joined yet."""

    def append(self, text: str) -> None:
        """Add *text* at the end (called per delta: kept to a list append and a count)."""
        parts = self._parts
        # ``type() is`` rather than ``isinstance``: no call per delta.
        if type(parts) is list:
            parts.append(text)
            loose = self._loose + 1
            if loose >= GROUP:
                parts[-loose:] = ("".join(parts[-loose:]),)
                loose = 0
            self._loose = loose
        elif type(parts) is str:
            if len(parts) + len(text) <= SHORT:
                self._parts = parts + text
            else:
                # Too long to copy per piece: the text so far is the first group.
                self._parts = [parts, text]
                self._loose = 1
        else:
            self._parts = text or None

    def getvalue(self) -> str:
        """Everything appended, as one string."""
        parts = self._parts
        if parts is None:
            return ""
        return parts if type(parts) is str else "".join(parts)

    def clear(self) -> None:
        """Forget everything appended."""
        self._parts = None
        self._loose = 0

    def __len__(self) -> int:
        """Characters held (counted on demand: callers on a hot path keep their own count)."""
        parts = self._parts
        if parts is None:
            return 0
        return len(parts) if type(parts) is str else sum(map(len, parts))

    def __bool__(self) -> bool:
        """Whether any text is held."""
        parts = self._parts
        if parts is None:
            return False
        return bool(parts) if type(parts) is str else any(parts)
