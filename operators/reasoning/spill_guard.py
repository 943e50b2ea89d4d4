"""Catch a tagless reasoning tail glued to the first visible text (stage 03).

Some backends stream reasoning in its own field and then concatenate the
unflushed end of their reasoning buffer onto the answer with no separator:
the first content delta reads ``must do.Hello!``. This module is the
*ReasoningContentSpillGuard*: a per-stream transducer that moves such a
fragment (``must do.``) to reasoning, and the operator that runs it over a
``ProcessedChunk`` stream.

Theory
------
The missing space is the fingerprint: a backend joining two buffers leaves a
sentence boundary *glued* to the next word, while a model's own prose puts
whitespace after it. The guard therefore fires at most once per stream, on
the first visible content of the stream when reasoning was seen before it
(visible text that streams before any reasoning disarms the guard for good:
reasoning arriving later cannot make a later sentence a spill), and only when:

1. that content starts (after leading whitespace, which passes through) with
   a lowercase letter: code at the start (a leading backtick), a capital or a
   CJK character is never touched;
2. its first sentence boundary (a run of ``.``, ``!``, ``?``) is glued: the
   next character is not whitespace. A spaced boundary (``wait. Actually``)
   is the model's prose and ends the inspection with nothing stripped;
3. the boundary is outside inline code: boundaries after an odd number of
   backticks (inside `` `obj.Method` `` or a span still open) are skipped;
   so is a ``.`` between two digits (``3.14``, ``v1.2``), because
   numbers are far more common at the start of an answer than a
   reasoning tail ending in a digit glued to an answer starting with one;
4. and EITHER the text after the boundary looks like an answer start (an
   uppercase or caseless letter, an emoji or other pictograph, a quote or an
   opening bracket: ``wait.Actually``) OR the fragment before it is a
   multi-word clause (``g it out.hey master 👋``, where capitalization is
   blind because the reply is lowercase too). A single word glued to a
   lowercase continuation (``wait.actually``) is left alone.

The fragment up to and including the boundary goes to reasoning; the rest is
visible. Bare dotted identifiers in prose are accepted collateral.

The decision must not depend on how the backend split its deltas, so once
the guard is armed and content starts lowercase, that content is held back
until the first boundary and the character after it have arrived. The hold
is bounded: a boundary must start within the first ``limit`` characters
(default 200) of the content, otherwise the text is released untouched; and
the stream ending (or a non-text chunk) releases it as is, and a graceful stop
delivers it as the answer (it only *might* be reasoning: ``rxcord.operators.reasoning.held_at_stop``).
After the decision the guard passes everything through.
"""

from __future__ import annotations

__all__ = ("AFTER_TEXT", "DEFAULT_DECISION_LIMIT", "SpillGuard", "spill_guard")

import enum
import unicodedata
from typing import Final

import attrs

from rxcord.core.types import Operator, ProcessedChunk
from rxcord.operators.reasoning.guard import reasoning_guard
from rxcord.operators.reasoning.held_at_stop import NOTHING, Held

AFTER_TEXT: Final = "after_text"
"""Metadata key of a chunk whose reasoning came after visible text (set by the adapter's
normalizer wrapper, ``rxcord.providers.unrecognized``): the guard is then disarmed."""

DEFAULT_DECISION_LIMIT: Final = 200
"""A glued boundary must start within this many characters of the content to count."""

_BOUNDARY: Final = frozenset(".!?")
_ANSWER_START_CATEGORIES: Final = frozenset(("So", "Ps", "Pi", "Pf"))
"""Pictographs and emoji; opening brackets; initial and final quotes."""


class _Mode(enum.Enum):
    IDLE = enum.auto()
    """No reasoning and no visible text seen yet: pass through (visible text disarms for good)."""
    ARMED = enum.auto()
    """Reasoning seen, no visible content yet."""
    HOLDING = enum.auto()
    """The first visible content starts lowercase: held until decided."""
    DONE = enum.auto()
    """Decided: pass through for the rest of the stream."""


def _looks_like_answer_start(char: str) -> bool:
    """Whether *char*, right after a glued boundary, reads as the start of an answer."""
    if char.isalpha():
        return not char.islower()  # uppercase, titlecase or caseless (CJK, kana, Hangul)
    if char in "\"'":
        return True
    return unicodedata.category(char) in _ANSWER_START_CATEGORIES


def _spill_end(text: str, limit: int, *, final: bool) -> int | None:
    """How much of *text* (content from its first non-space character) is a spilled fragment.

    Returns the end of the fragment, ``0`` when nothing is spilled, or
    ``None`` when more text is needed to decide (never when *final*).
    """
    ticks = 0
    size = len(text)
    i = 0
    while i < size:
        if i >= limit:
            return 0
        char = text[i]
        if char == "`":
            ticks += 1
        elif char in _BOUNDARY and not ticks % 2:
            end = i + 1
            while end < size and text[end] in _BOUNDARY:
                end += 1
            if end == size:
                return 0 if final else None
            after = text[end]
            if after.isspace():
                return 0
            if char == "." and end == i + 1 and i and text[i - 1].isdigit() and after.isdigit():
                i = end
                continue
            if _looks_like_answer_start(after) or len(text[:i].split()) > 1:
                return end
            return 0
        i += 1
    return 0 if final else None


@attrs.define
class SpillGuard:
    """Incremental, per-stream reasoning spill guard.

    Create one per stream. Call ``note_reasoning`` when reasoning shows up
    (a reasoning field or a think block), ``feed`` each visible content delta
    and ``finish`` at the end; ``feed`` and ``finish`` return the
    ``(visible, spilled_reasoning)`` text they release.

    Examples:
        >>> guard = SpillGuard()
        >>> guard.note_reasoning()
        >>> guard.feed("must d")
        ('', '')
        >>> guard.feed("o.Hello!")
        ('Hello!', 'must do.')
        >>> guard.feed(" more.Text")
        (' more.Text', '')
    """

    limit: int = DEFAULT_DECISION_LIMIT
    """A glued boundary must start within this many characters of the first visible content."""
    _mode: _Mode = attrs.field(default=_Mode.IDLE, init=False)
    _held: str = attrs.field(default="", init=False)

    def note_reasoning(self) -> None:
        """Reasoning was seen in this stream (a reasoning field or a think block)."""
        if self._mode is _Mode.IDLE:
            self._mode = _Mode.ARMED

    def note_visible(self) -> None:
        """Visible content arrived before any reasoning (an earlier stage may still hold it): disarm."""
        if self._mode is _Mode.IDLE:
            self._mode = _Mode.DONE

    def feed(self, text: str) -> tuple[str, str]:
        """Consume one visible content delta; return the ``(visible, spilled_reasoning)`` it releases."""
        mode = self._mode
        if mode is _Mode.DONE:
            return text, ""
        if mode is _Mode.IDLE:
            if not text.isspace() and text:
                # Visible text before any reasoning: the first visible content is not after
                # reasoning, so the guard can never fire in this stream.
                self._mode = _Mode.DONE
            return text, ""
        lead = ""
        if mode is _Mode.ARMED:
            body = text.lstrip()
            if not body:
                return text, ""
            lead = text[: len(text) - len(body)]
            if not body[0].islower():
                self._mode = _Mode.DONE
                return text, ""
            self._mode = _Mode.HOLDING
            text = body
        held = self._held + text
        end = _spill_end(held, self.limit, final=False)
        if end is None:
            self._held = held
            return lead, ""
        self._held = ""
        self._mode = _Mode.DONE
        return lead + held[end:], held[:end]

    def held(self) -> Held:
        """The undecided hold: visible text that only *may* be spilled reasoning, the answer at a stop."""
        return Held(answer=self._held) if self._mode is _Mode.HOLDING else NOTHING

    def finish(self) -> tuple[str, str]:
        """The stream ended (or a non-text chunk arrived): release held text untouched."""
        if self._mode is not _Mode.HOLDING:
            return "", ""
        held, self._held = self._held, ""
        self._mode = _Mode.DONE
        # Undecided at the end means no glued boundary with a character after it: nothing spilled.
        return held, ""


def spill_guard(*, note_held: bool = False) -> Operator[ProcessedChunk, ProcessedChunk]:
    """Move a reasoning tail glued to the first visible content into ``thoughts``.

    A text chunk whose ``thoughts`` are non-empty arms the guard before its
    content is fed. Text chunks leave with ``content`` set to what the guard
    releases (possibly empty while it holds) and any spilled fragment
    appended to ``thoughts`` as a ``RAW`` entry; every other field is kept.
    Held text is released as an extra text chunk just *before* a non-text
    chunk and at completion. Errors pass through; held text is then dropped.

    .. marble::
        -r---a---b-----|     r="" + RAW "..."   a="must d"   b="o.Hello!"
        [   spill_guard()  ]
        -r---A---B-----|     A=""   B="Hello!" + RAW "must do."

    Returns:
        An operator; a fresh ``SpillGuard`` is created for every subscription.
    """
    return reasoning_guard(SpillGuard, _arm, name="spill_guard", note_held=note_held)


def _arm(guard: SpillGuard, chunk: ProcessedChunk) -> None:
    # A chunk carrying reasoning arms the guard before its own content is fed, unless the
    # normalizer marked it as coming after visible text (text an earlier guard may still hold).
    if chunk.thoughts:
        if chunk.metadata.get(AFTER_TEXT):
            guard.note_visible()
        guard.note_reasoning()
