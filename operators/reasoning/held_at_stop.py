"""What stage 03 still holds when a graceful stop ends the stream: delivered, never lost.

The stage 03 text guards hold text they cannot classify yet: ``think_strip`` the start of a
stream in its start window (a ``</think>`` may still turn it into reasoning), a partial tag,
or a ``<think>`` block it has seen open; ``spill_guard`` visible text that may be spilled
reasoning. A graceful stop (``/stop``, a shutdown, an interrupt) ends the stream at the stop
gate, after stage 03, so stage 03 never reaches its end and never releases that text.

So each guard notes on the chunk it lets pass what it still holds after it, split the way a
stop must deliver it (only while something is held):

* ``HELD``: text held only because it *might* turn out to be reasoning (the start window, the
  spill guard's hold, a partial tag). The user saw it being written (typing), and nothing in
  the stream marked it as reasoning: a stop delivers it as the answer. It is short (a window,
  a decision limit), so it is noted as plain text.
* ``HELD_REASONING``: text the stream already marked as reasoning (inside a ``<think>`` that
  was seen open, or a start the chat template opened). A stop keeps it as reasoning, never
  shown. It can be long (a block is held until its closer), so it is noted as a ``HeldText``
  view of the guard's parts: constant work per chunk, joined once, at the stop.

At a graceful stop the gate emits what the last chunk it passed notes as one chunk, just
before the stop: the ``HELD`` text as its content, the ``HELD_REASONING`` text as a ``RAW``
thought. Noted per chunk, it is the same whether the chunks came one by one or in one batch
per read (where stage 03 has already read past the chunk the stop follows). A kill delivers
nothing (the gate ignores it and the chain is disposed).
"""

from __future__ import annotations

__all__ = (
    "HELD",
    "HELD_REASONING",
    "NOTHING",
    "Held",
    "HeldText",
    "held_after",
    "noting_held",
    "released_at_stop",
)

from collections.abc import Mapping
from typing import Final

import attrs

from rxcord.core.types import ProcessedChunk, ThoughtKind, ThoughtLogEntry

HELD: Final = "rxcord.held"
"""Metadata key: ``{guard name: text it holds after this chunk that a stop delivers as the answer}``."""
HELD_REASONING: Final = "rxcord.held_reasoning"
"""Metadata key: ``{guard name: HeldText it holds after this chunk that a stop keeps as reasoning}``."""


class HeldText:
    """A snapshot of text a guard holds as a list of parts it only ever appends to, plus a tail.

    Taking one costs constant work however long the hold; ``str`` joins it (at a stop).
    The guard appends only non-empty parts, and starts a new list rather than clear one a
    snapshot may still refer to.
    """

    __slots__ = ("_count", "_parts", "_tail")

    def __init__(self, parts: list[str], tail: str = "") -> None:
        self._parts = parts
        self._count = len(parts)
        self._tail = tail

    def __str__(self) -> str:
        return "".join(self._parts[: self._count]) + self._tail

    def __bool__(self) -> bool:
        return bool(self._count or self._tail)  # the parts are never empty strings

    def __repr__(self) -> str:
        return f"HeldText({str(self)!r})"


@attrs.frozen
class Held:
    """What one guard holds after a chunk: delivered as the answer at a stop, kept as reasoning."""

    answer: str = ""
    reasoning: HeldText | str = ""


NOTHING: Final = Held()


def noting_held(chunk: ProcessedChunk, guard: str, held: Held) -> ProcessedChunk:
    """*chunk* noting what *guard* holds after it (*chunk* itself when nothing is held or noted)."""
    metadata = chunk.metadata
    if held is NOTHING and not metadata:
        return chunk  # the common case: nothing held, nothing noted
    answers: Mapping[str, str] | None = metadata.get(HELD)
    reasons: Mapping[str, HeldText | str] | None = metadata.get(HELD_REASONING)
    if not held.answer and not held.reasoning and not answers and not reasons:
        return chunk
    notes = dict(metadata)
    if held.answer or answers:
        notes[HELD] = {**(answers or {}), guard: held.answer}
    if held.reasoning or reasons:
        notes[HELD_REASONING] = {**(reasons or {}), guard: held.reasoning}
    return attrs.evolve(chunk, metadata=notes)


def held_after(chunk: ProcessedChunk | None) -> tuple[str, str]:
    """``(answer, reasoning)`` the guards hold after *chunk*, each in stream order.

    A chunk passes the guards in pipeline order and each adds its note after the earlier
    ones; a later guard holds earlier text, so the notes are read in reverse.
    """
    if chunk is None:
        return "", ""
    metadata = chunk.metadata
    answers: Mapping[str, str] | None = metadata.get(HELD)
    reasons: Mapping[str, HeldText | str] | None = metadata.get(HELD_REASONING)
    answer = "".join(reversed(list(answers.values()))) if answers else ""
    reasoning = "".join(str(held) for held in reversed(list(reasons.values()))) if reasons else ""
    return answer, reasoning


def released_at_stop(chunk: ProcessedChunk | None) -> ProcessedChunk | None:
    """The chunk the stop gate emits for what was held after *chunk* (``None``: nothing held)."""
    answer, reasoning = held_after(chunk)
    if not answer and not reasoning:
        return None
    thoughts = (ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning),) if reasoning else ()
    return ProcessedChunk.text(answer, thoughts=thoughts)
