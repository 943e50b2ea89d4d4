r"""Resent text: how much of a new part restates the end of what its stream already emitted.

Some backends (Gemini's) resend text: a part may repeat all or the start of what came before
("...the oven to 200 degrees." then "oven to 200 degrees. Step two"), or restate the whole
answer so far (cumulative parts). The overview asks adapters to remove overlapping text.

The rule: a part is a resend, in whole or in part, when it **begins with the last k characters
emitted** on its channel, for ``k >= MIN_RESENT_CHARS``; the longest such k is dropped, the rest
of the part is new text. Plain deltas, cumulative parts and overlapping parts of one answer so
give the same text, as long as each restatement is at least ``MIN_RESENT_CHARS`` long.

What is never taken for a resend (the model's own repeated text):

* an overlap shorter than ``MIN_RESENT_CHARS`` ("ha" then "ha", "\n" then "\n");
* an overlap that repeats a shorter unit, its smallest period at most half its length
  ("ha ha ha ...", a table rule "|---|---|---|", "=====" lines): such text continues itself;
* text repeated anywhere but exactly at the boundary between what was emitted and the part.

The cost the rule accepts: a model that repeats 20+ characters of aperiodic text verbatim
right at a part boundary, with nothing in between, loses the repeat (almost always a degenerate
loop anyway); a cumulative backend restating fewer than ``MIN_RESENT_CHARS`` characters, or text
that is so far all one repeated unit, is not de-duplicated (indistinguishable from laughter).

Work is linear: a check reads at most the part's length of emitted text, a C-speed ``find``
for the part's first ``MIN_RESENT_CHARS`` characters, then only on a hit one prefix-function
(KMP) pass over at most as many characters.
"""

from __future__ import annotations

__all__ = ("MIN_RESENT_CHARS", "ResendFilter", "resent_overlap")

from typing import Final

import attrs

MIN_RESENT_CHARS: Final = 20
"""Shortest restatement taken for a resend (shorter repeats are the model's own text)."""


def _prefix_function(pattern: str) -> list[int]:
    """``fail[i]``: the longest proper border of ``pattern[: i + 1]`` (Knuth-Morris-Pratt)."""
    fail = [0] * len(pattern)
    k = 0
    for i in range(1, len(pattern)):
        char = pattern[i]
        while k and pattern[k] != char:
            k = fail[k - 1]
        if pattern[k] == char:
            k += 1
        fail[i] = k
    return fail


def resent_overlap(emitted_tail: str, part: str) -> int:
    """How many leading characters of *part* restate the end of *emitted_tail* (0: none).

    *emitted_tail* needs to be at most ``len(part)`` characters long (a longer overlap cannot
    exist); the longest overlap is returned when it is a resend by the module's rule.
    """
    if len(part) < MIN_RESENT_CHARS:
        return 0  # also keeps the slice below from reading the whole tail for an empty part
    window = emitted_tail[-len(part) :] if len(emitted_tail) > len(part) else emitted_tail
    if len(window) < MIN_RESENT_CHARS:
        return 0
    start = window.find(part[:MIN_RESENT_CHARS])
    if start < 0:
        return 0
    text = window[start:]
    pattern = part[: len(text)]
    fail = _prefix_function(pattern)
    k = 0
    for char in text:
        while k and (k == len(pattern) or pattern[k] != char):
            k = fail[k - 1]
        if pattern[k] == char:
            k += 1
    if k < MIN_RESENT_CHARS or 2 * (k - fail[k - 1]) <= k:
        return 0
    return k


@attrs.define
class ResendFilter:
    """One channel of one stream: what it emitted, and each new part without its resent start."""

    _pieces: list[str] = attrs.field(factory=list, init=False)
    """Emitted text, part by part (never joined whole: a check reads only a suffix)."""

    def fresh(self, part: str) -> str:
        """*part* without the start that restates the emitted text; the rest is recorded as emitted."""
        dropped = resent_overlap(self._suffix(len(part)), part)
        new = part[dropped:] if dropped else part
        if new:
            self._pieces.append(new)
        return new

    def _suffix(self, length: int) -> str:
        """The last *length* emitted characters (fewer when less was emitted), read once."""
        taken = 0
        index = len(self._pieces)
        while index and taken < length:
            index -= 1
            taken += len(self._pieces[index])
        if index == len(self._pieces):
            return ""
        first = self._pieces[index]
        head = first[taken - length :] if taken > length else first
        return head + "".join(self._pieces[index + 1 :])
