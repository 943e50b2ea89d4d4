"""What stage 03 still holds when a graceful stop ends the stream: kept as reasoning, never lost.

The stage 03 text guards hold text they cannot classify yet: ``think_strip`` the start of a
stream in its start window (a ``</think>`` may still turn it into reasoning) or a partial
tag, ``spill_guard`` visible text that may be spilled reasoning. A graceful stop (``/stop``,
an interrupt) ends the stream at the stop gate, after stage 03, so stage 03 never reaches its
end and never releases that text.

So each guard notes on the chunk it lets pass what it still holds after it (``HELD``, in the
chunk's metadata; only while something is held, at the start of a stream), and the stop gate,
at a graceful stop, emits what the last chunk it passed notes as one reasoning chunk (a
``RAW`` thought) just before the stop: the text is in the result's ``reasoning`` and never
shown as the answer (on these endpoints it is usually reasoning whose opener was in the
prompt). Noted per chunk, it is the same whether the chunks came one by one or in one batch
per read (where stage 03 has already read past the chunk the stop follows).
"""

from __future__ import annotations

__all__ = ("HELD", "held_after", "held_reasoning", "noting_held")

from typing import Final

import attrs
from rxcord.core.types import ProcessedChunk, ThoughtKind, ThoughtLogEntry

HELD: Final = "rxcord.held"
"""Metadata key: ``{guard name: text it holds after this chunk}``."""


def noting_held(chunk: ProcessedChunk, guard: str, held: str) -> ProcessedChunk:
    """*chunk* noting that *guard* holds *held* after it (*chunk* itself when both are empty)."""
    notes = chunk.metadata.get(HELD)
    if not held and not notes:
        return chunk
    merged = {**notes, guard: held} if notes else {guard: held}
    return attrs.evolve(chunk, metadata={**chunk.metadata, HELD: merged})


def held_after(chunk: ProcessedChunk | None, order: tuple[str, ...] = ("spill_guard", "think_strip")) -> str:
    """The text the guards hold after *chunk*, in stream order (a later guard holds earlier text)."""
    if chunk is None:
        return ""
    notes = chunk.metadata.get(HELD)
    if not notes:
        return ""
    return "".join(notes.get(guard, "") for guard in order)


def held_reasoning(chunk: ProcessedChunk | None) -> ProcessedChunk | None:
    """The reasoning chunk the stop gate emits for what was held after *chunk* (``None``: nothing held)."""
    held = held_after(chunk)
    if not held:
        return None
    return ProcessedChunk.text("", thoughts=(ThoughtLogEntry(kind=ThoughtKind.RAW, text=held),))
