"""Cut points as recorded: where a text may be cut, and where its fenced blocks lie.

``MarkdownScanner`` (``rxcord.operators.markdown.scan``) records these; the cut
policy (``rxcord.operators.markdown.cut_policy``, which also defines ``Level`` and
``Fence``, re-exported here) chooses among them for both the live flusher
(stage 05) and the message splitter (stage 07).
"""

from __future__ import annotations

__all__ = ("Cut", "CutList", "Fence", "FenceSpan", "Level", "NullCuts")


from array import array
from collections.abc import Iterator
from typing import Final

import attrs

from rxcord.operators.markdown.cut_policy import Fence, Level

_NO_POSITIONS: Final = array("q")
"""The ``ends`` and ``starts`` of every list without cut points (shared, never appended to)."""
_NO_LEVELS: Final = array("b")
"""The ``levels`` of every list without cut points (shared, never appended to)."""


@attrs.frozen
class Cut:
    """A place where text may be cut."""

    end: int
    """Where the text before the cut ends (before the whitespace of the cut)."""
    start: int
    """Where the text after the cut begins."""
    level: Level
    fence: Fence | None = None
    """Set when the cut is inside a fenced block: close it before, reopen it after."""


class CutList:
    """The cut points of a text, in increasing position order, stored compactly.

    A long answer has a cut point per word: as ``Cut`` objects (with their two
    position integers) that is about 130 bytes each, the largest thing an
    aggregated stream holds at its end. Here a cut is 17 bytes in three
    machine-integer arrays (fences, rare, aside); ``ends`` supports ``bisect``
    directly, and indexing or iterating gives ``Cut`` values. The arrays are
    read-only to consumers (``add`` is the only writer): an empty list shares
    module-level empty arrays, so it holds no array of its own.
    """

    __slots__ = ("ends", "fences", "levels", "starts")

    def __init__(self) -> None:
        # The arrays are the shared empties until the first cut point: the live flusher
        # clears its list after every read, so most of the time a stream holds none.
        self.ends = _NO_POSITIONS
        """``Cut.end`` of every cut point."""
        self.starts = _NO_POSITIONS
        """``Cut.start`` of every cut point."""
        self.levels = _NO_LEVELS
        """``Cut.level`` of every cut point, as an integer."""
        self.fences: dict[int, Fence] = {}
        """Index -> the fence of a cut point inside a fenced block."""

    def add(self, end: int, start: int, level: int, fence: Fence | None = None) -> None:
        """Record a cut point (*level*: a ``Level``) after every one recorded so far."""
        if fence is not None:
            self.fences[len(self.ends)] = fence
        ends = self.ends
        if ends is _NO_POSITIONS:
            # (Written out, not a helper: this runs on the scanner's path, once per list filled.)
            self.ends = ends = array("q")
            self.starts = array("q")
            self.levels = array("b")
        ends.append(end)
        self.starts.append(start)
        self.levels.append(level)

    def append(self, cut: Cut) -> None:
        """Record *cut* (``add`` without building a ``Cut`` first is cheaper)."""
        self.add(cut.end, cut.start, cut.level, cut.fence)

    def clear(self) -> None:
        """Forget every cut point (the arrays go back to the shared empties)."""
        self.ends = self.starts = _NO_POSITIONS
        self.levels = _NO_LEVELS
        if self.fences:
            # A new empty dict is not tracked by the collector; one that held a fence stays tracked.
            self.fences = {}

    def __len__(self) -> int:
        return len(self.ends)

    def __getitem__(self, index: int) -> Cut:
        if index < 0:
            index += len(self.ends)
        return Cut(self.ends[index], self.starts[index], Level(self.levels[index]), self.fences.get(index))

    def __iter__(self) -> Iterator[Cut]:
        fences = self.fences
        for index, (end, start, level) in enumerate(zip(self.ends, self.starts, self.levels, strict=True)):
            yield Cut(end, start, Level(level), fences.get(index))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CutList):
            return list(self) == list(other)
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable, like a list

    def __repr__(self) -> str:
        return f"CutList({list(self)!r})"


class NullCuts(CutList):
    """A ``CutList`` that records nothing: for a scanner read only for its fences, tables and code state."""

    __slots__ = ()

    def add(self, end: int, start: int, level: int, fence: Fence | None = None) -> None:
        """Drop the cut point."""


@attrs.frozen
class FenceSpan:
    """Where a fenced block lies."""

    start: int
    """Start of the opening line."""
    content_start: int
    """Start of the first content line."""
    end: int | None
    """Start of the closing line; ``None`` while the block is open."""
    fence: Fence
