"""Where edit mode's first message may end: the first safe boundary of the first words.

The rule is ``rxcord.operators.markdown.cut_policy.first_message_cut``; ``FirstCut`` applies
it to a stream of visible deltas. It feeds a ``MarkdownScanner`` (the cut points stages 05
and 07 use: never inside inline code, a mention, a masked link, a table or a list item line
being written) until it finds the first cut point the rule accepts, and is done then: its
work is linear in the text before that point, and it reads nothing after it.

A word boundary is taken only when no inline marker is open before it (``**``, ``__``,
``~~``, ``||``, a single ``*``, counted outside inline code), so the first message never
shows ``**the`` waiting for its closer. The markers are counted from one accepted-or-not
candidate to the next: each character once.
"""

from __future__ import annotations

__all__ = ("FirstCut",)

import re
from typing import Final

from rxcord.operators.markdown.cut_policy import Level, first_message_cut
from rxcord.operators.markdown.cuts import Cut, CutList
from rxcord.operators.markdown.scan import MarkdownScanner

_PAIRED: Final = ("**", "__", "~~", "||")
_SINGLE_STAR: Final = 1 << len(_PAIRED)
_TICKS: Final = re.compile("`+")


class FirstCut:
    """Finds the end of edit mode's first message in a stream of visible deltas (pure)."""

    __slots__ = ("_checked", "_code", "_limit", "_off", "_open", "_parts", "_scanner", "_text", "end")

    def __init__(self, limit: int) -> None:
        self._scanner: MarkdownScanner | None = MarkdownScanner()
        """Dropped once ``end`` is found: nothing after it is read (a stream keeps its FirstCut)."""
        self._limit = limit
        """Past this many characters without an accepted cut, the text is shown as it is."""
        self._text = ""
        """Text from ``_off`` on is the text after ``_checked``, not yet read for inline markers."""
        self._off = 0
        self._parts: list[str] | None = None
        """Deltas after ``_text``, joined to it when next read (once per delta at most); ``None``: none."""
        self._checked = 0
        self._open = 0
        """One bit per kind of inline marker left open (``_PAIRED``, then a single ``*``)."""
        self._code = 0
        """The backtick run of the inline code span open at ``_checked`` (0: none)."""
        self.end: int | None = None
        """Where the text of the first message ends, once found (before its boundary's whitespace)."""

    def feed(self, delta: str) -> int | None:
        """Add *delta*; where the first message ends once it is known (then always the same)."""
        scanner = self._scanner
        if scanner is None or not delta:
            return self.end
        scanner.feed(delta)
        if self._parts is None:
            self._parts = [delta]
        else:
            self._parts.append(delta)
        # Only cut points the scanner has committed: the tail of the text fed so far may still
        # be taken back by what follows (a backtick run opening a code span across the break),
        # so accepting it would make the first message depend on how the deltas were cut.
        found = self._first(scanner.cuts)
        scanner.cuts.clear()
        if found is None and scanner.fed >= self._limit:
            found = scanner.fed  # nothing safe within a message: shown as it is (the preview closes a fence)
        if found is not None:
            self.end = found
            self._text, self._parts, self._scanner = "", None, None
        return self.end

    def shown(self, text: str) -> str:
        """The first message's text in *text* (the stream's visible text so far, ``end`` known).

        A boundary whose whitespace starts with a line break keeps it, so a closing fence line
        ends as a complete line (a preview would otherwise take its block as still open); what
        the whitespace starts with is the text's, not the chunking's.
        """
        assert self.end is not None
        return text[: self.end] + ("\n" if text.startswith("\n", self.end) else "")

    def _first(self, cuts: CutList) -> int | None:
        for cut in cuts:
            if cut.end > self._limit:
                return None  # past a message: the text is shown as it is (``feed``)
            if self._accepts(cut):
                return cut.end
        return None

    def _accepts(self, cut: Cut) -> bool:
        if cut.end <= 0 or not first_message_cut(cut.level, cut.fence is not None, cut.end):
            return False
        if cut.level >= Level.SENTENCE:
            return True
        return self._closed_at(cut.end)

    def _closed_at(self, end: int) -> bool:
        """Whether no inline marker is open in the text before *end* (read from ``_checked`` on)."""
        if end < self._checked:
            return False  # an earlier place than one already read: a later cut point will do
        if self._parts:  # the unread rest and the new deltas, joined once
            self._text = self._text[self._off :] + "".join(self._parts)
            self._off, self._parts = 0, None
        stop = self._off + end - self._checked
        self._track(self._text[self._off : stop])
        self._off, self._checked = stop, end
        return not self._open and not self._code

    def _track(self, text: str) -> None:
        # *text* runs from one word end to the next: a backtick run or a marker is never split.
        i, n = 0, len(text)
        while i < n:
            found = _TICKS.search(text, i)
            stop = n if found is None else found.start()
            if not self._code:
                part = text[i:stop]
                for bit, marker in enumerate(_PAIRED):
                    self._open ^= (part.count(marker) & 1) << bit
                if (part.count("*") - 2 * part.count("**")) & 1:
                    self._open ^= _SINGLE_STAR
            if found is None:
                return
            run = found.end() - found.start()
            if not self._code:
                self._code = run
            elif run == self._code:
                self._code = 0
            i = found.end()
