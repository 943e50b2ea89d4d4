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

A live stream holds several buffers, and the collector walks every list they
keep: the joined groups and the pieces not joined yet share one list (the
groups first), and an empty buffer holds no list at all.
"""

from __future__ import annotations

__all__ = ("TextBuffer",)

from typing import Final

GROUP: Final = 64
"""Pieces joined into one string at a time."""


class TextBuffer:
    """Appends strings; holds them joined in groups; returns the whole text on demand."""

    __slots__ = ("_loose", "_parts")

    def __init__(self, initial: str = "") -> None:
        self._parts: list[str] | None = [initial] if initial else None
        """The joined groups, then the pieces appended since the last join; ``None`` while empty."""
        self._loose = 1 if initial else 0
        """How many pieces at the end of ``_parts`` are not joined yet."""

    def append(self, text: str) -> None:
        """Add *text* at the end (called per delta: kept to a list append and a count)."""
        parts = self._parts
        if parts is None:
            self._parts = [text]
            self._loose = 1
            return
        parts.append(text)
        loose = self._loose + 1
        if loose >= GROUP:
            parts[-loose:] = ("".join(parts[-loose:]),)
            loose = 0
        self._loose = loose

    def getvalue(self) -> str:
        """Everything appended, as one string."""
        parts = self._parts
        return "" if parts is None else "".join(parts)

    def clear(self) -> None:
        """Forget everything appended."""
        self._parts = None
        self._loose = 0

    def __len__(self) -> int:
        """Characters held (counted on demand: callers on a hot path keep their own count)."""
        parts = self._parts
        return 0 if parts is None else sum(map(len, parts))

    def __bool__(self) -> bool:
        """Whether any text is held."""
        parts = self._parts
        return parts is not None and any(parts)
