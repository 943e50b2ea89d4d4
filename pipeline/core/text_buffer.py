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
"""

from __future__ import annotations

__all__ = ("TextBuffer",)

from typing import Final

GROUP: Final = 64
"""Pieces joined into one string at a time."""


class TextBuffer:
    """Appends strings; holds them joined in groups; returns the whole text on demand."""

    __slots__ = ("_groups", "_pending")

    def __init__(self, initial: str = "") -> None:
        self._groups: list[str] = []
        self._pending: list[str] = [initial] if initial else []

    def append(self, text: str) -> None:
        """Add *text* at the end (called per delta: kept to a list append and a length check)."""
        pending = self._pending
        pending.append(text)
        if len(pending) >= GROUP:
            self._groups.append("".join(pending))
            pending.clear()

    def getvalue(self) -> str:
        """Everything appended, as one string."""
        if not self._groups:
            return "".join(self._pending)
        return "".join(self._groups) + "".join(self._pending)

    def clear(self) -> None:
        """Forget everything appended."""
        self._groups = []
        self._pending = []

    def __len__(self) -> int:
        """Characters held (counted on demand: callers on a hot path keep their own count)."""
        return sum(map(len, self._groups)) + sum(map(len, self._pending))

    def __bool__(self) -> bool:
        """Whether any text is held."""
        return any(self._groups) or any(self._pending)
