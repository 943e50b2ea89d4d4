"""The wiring shared by the two stage 03 text guards that split visible text from reasoning.

``think_strip`` and ``spill_guard`` are both per-stream transducers that
turn text into ``(visible, reasoning)`` and may hold some back. This module
threads one through a stream of processed chunks (``rxcord.operators.thread_text``): text chunks leave with
their content replaced by the visible part and the reasoning appended to
their thoughts as a ``RAW`` entry (every other field kept; a chunk whose
text is all held still passes, with empty content); held text is released
as an extra text chunk just *before* a non-text chunk and at completion;
errors pass through (held text is then dropped).
"""

from __future__ import annotations

__all__ = ("ReasoningSplitter", "reasoning_guard")

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import attrs

from rxcord.core.types import ProcessedChunk, ThoughtKind, ThoughtLogEntry
from rxcord.operators.fused import Fusable
from rxcord.operators.reasoning.held_at_stop import NOTHING, Held, noting_held
from rxcord.operators.thread_text import thread_text


class ReasoningSplitter(Protocol):
    """A per-stream transducer from text to (visible, reasoning)."""

    def feed(self, text: str) -> tuple[str, str]:
        """Consume *text*; return the visible and reasoning text released so far."""
        ...

    def finish(self) -> tuple[str, str]:
        """The stream ended (or a non-text chunk comes): release what is held."""
        ...

    def held(self) -> Held:
        """What is held now, as a graceful stop must deliver it (``operators/reasoning/held_at_stop.py``)."""
        ...


_S = TypeVar("_S", bound=ReasoningSplitter)


def _with_split(chunk: ProcessedChunk, visible: str, reasoning: str) -> ProcessedChunk:
    if not reasoning:
        return chunk if visible == chunk.content else attrs.evolve(chunk, content=visible)
    entry = ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning)
    return attrs.evolve(chunk, content=visible, thoughts=(*chunk.thoughts, entry))


def _released(visible: str, reasoning: str, serving_provider: str | None) -> list[ProcessedChunk]:
    if not visible and not reasoning:
        return []
    thoughts = (ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning),) if reasoning else ()
    return [ProcessedChunk.text(visible, thoughts=thoughts, serving_provider=serving_provider)]


class _Guarded(Generic[_S]):
    """One stream's splitter, and the serving provider its released text is attributed to."""

    __slots__ = ("serving", "splitter")

    def __init__(self, splitter: _S) -> None:
        self.splitter = splitter
        self.serving: str | None = None


def _no_preparation(splitter: ReasoningSplitter, chunk: ProcessedChunk) -> None:
    return None


def reasoning_guard(
    factory: Callable[[], _S],
    prepare: Callable[[_S, ProcessedChunk], None] = _no_preparation,
    name: str = "",
    note_held: bool = False,
) -> Fusable:
    """Thread a fresh splitter per subscription through the chunks (see the module docstring).

    Args:
        factory: Makes the per-stream splitter.
        prepare: Called with each text chunk before its content is fed (the spill
            guard arms itself on a chunk that carries reasoning).
        name: The stage's name.
        note_held: Note on each chunk what the splitter still holds after it, for the stop
            gate to deliver at a graceful stop (``rxcord.operators.reasoning.held_at_stop``; the pipeline
            turns it on).

    Returns:
        A fusable operator on processed chunks (``rxcord.operators.fused``).
    """

    def make() -> _Guarded[_S]:
        return _Guarded(factory())

    def on_text(state: _Guarded[_S], chunk: ProcessedChunk) -> list[ProcessedChunk]:
        if chunk.serving_provider is not None:
            state.serving = chunk.serving_provider
        prepare(state.splitter, chunk)
        out = _with_split(chunk, *state.splitter.feed(chunk.content))
        if not note_held:
            return [out]
        held = state.splitter.held()
        # The common case (nothing held, nothing noted) skips the call.
        return [out if held is NOTHING and not out.metadata else noting_held(out, name, held)]

    def release(state: _Guarded[_S], _before: ProcessedChunk | None) -> list[ProcessedChunk]:
        return _released(*state.splitter.finish(), state.serving)

    return thread_text(make, on_text, release, name)
