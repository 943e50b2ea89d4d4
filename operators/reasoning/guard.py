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

import functools
from collections.abc import Callable, Sequence
from typing import Generic, Protocol, TypeVar

from rxcord.core.types import ProcessedChunk, ThoughtKind, ThoughtLogEntry
from rxcord.operators.fused import Fusable
from rxcord.operators.reasoning.held_at_stop import NOTHING, Held, noting_held
from rxcord.operators.thread_text import TextThread


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
        return chunk if visible == chunk.content else _evolved(chunk, visible, chunk.thoughts)
    entry = ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning)
    return _evolved(chunk, visible, (*chunk.thoughts, entry))


def _evolved(chunk: ProcessedChunk, content: str, thoughts: tuple[ThoughtLogEntry, ...]) -> ProcessedChunk:
    """``attrs.evolve(chunk, content=..., thoughts=...)`` through the constructor.

    Every other field is kept, without evolve's walk over the fields (a dozen calls per chunk
    the guard changes).
    """
    return chunk.__class__(
        type=chunk.type,
        content=content,
        function_call=chunk.function_call,
        error=chunk.error,
        thoughts=thoughts,
        metadata=chunk.metadata,
        serving_provider=chunk.serving_provider,
        usage=chunk.usage,
    )


def _released(visible: str, reasoning: str, serving_provider: str | None) -> list[ProcessedChunk]:
    if not visible and not reasoning:
        return []
    thoughts = (ThoughtLogEntry(kind=ThoughtKind.RAW, text=reasoning),) if reasoning else ()
    return [ProcessedChunk.text(visible, thoughts=thoughts, serving_provider=serving_provider)]


class _GuardStage(Generic[_S]):
    """The stage's settings (one object, shared by its streams): makes each stream's ``_GuardRun``."""

    __slots__ = ("factory", "name", "note_held", "prepare")

    def __init__(
        self,
        factory: Callable[[], _S],
        prepare: Callable[[_S, ProcessedChunk], None] | None,
        name: str,
        note_held: bool,
    ) -> None:
        self.factory = factory
        self.prepare = prepare
        self.name = name
        self.note_held = note_held

    def __call__(self) -> _GuardRun[_S]:
        return _GuardRun(self, self.factory())


class _GuardRun(TextThread, Generic[_S]):
    """One stream: its splitter, and the serving provider its released text is attributed to."""

    __slots__ = ("serving", "splitter", "stage")

    def __init__(self, stage: _GuardStage[_S], splitter: _S) -> None:
        self.stage = stage
        self.splitter = splitter
        self.serving: str | None = None

    def text(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        if chunk.serving_provider is not None:
            self.serving = chunk.serving_provider
        stage, splitter = self.stage, self.splitter
        if stage.prepare is not None:
            stage.prepare(splitter, chunk)
        out = _with_split(chunk, *splitter.feed(chunk.content))
        if not stage.note_held:
            return [out]
        held = splitter.held()
        # The common case (nothing held, nothing noted) skips the call.
        return [out if held is NOTHING and not out.metadata else noting_held(out, stage.name, held)]

    def release(self, before: ProcessedChunk | None) -> Sequence[ProcessedChunk]:
        return _released(*self.splitter.finish(), self.serving)


def reasoning_guard(
    factory: Callable[[], _S],
    prepare: Callable[[_S, ProcessedChunk], None] | None = None,
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
        A fusable operator on processed chunks (``rxcord.operators.fused``): the same value for
        the same arguments (it holds no stream's state; the chain is built per stream and
        would otherwise hold a copy of it per stream).
    """
    try:
        return _shared_guard(factory, prepare, name, note_held)
    except TypeError:  # an unhashable factory or preparation: a value of its own
        return Fusable(_GuardStage(factory, prepare, name, note_held), name)


@functools.lru_cache(maxsize=64)
def _shared_guard(
    factory: Callable[[], _S],
    prepare: Callable[[_S, ProcessedChunk], None] | None,
    name: str,
    note_held: bool,
) -> Fusable:
    return Fusable(_GuardStage(factory, prepare, name, note_held), name)
