"""Thread a per-stream text transducer through processed chunks (stage 03 wiring).

Several stage 03 guards (the think-tag stripper, the spill guard, the verbatim
tool-call parser) are per-stream transducers over the visible text that may
hold some back. This operator gives each subscription a fresh one and applies
the one rule they share: a text chunk goes through it; anything it holds is
released just *before* a non-text chunk (a call, an error or ``done`` ends the
stream at the orchestrator, so held text must not wait behind it) and at
completion. A transducer that raises ends the stream with ``on_error``;
upstream errors pass through (held text is then dropped).
"""

from __future__ import annotations

__all__ = ("TextThread", "thread_text")

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from rxcord.core.types import ChunkType, ProcessedChunk
from rxcord.operators.fused import Fusable

_S = TypeVar("_S")
_TEXT = ChunkType.TEXT


class TextThread:
    """The rule of the module docstring as a base class: a subclass says what text and a release give.

    A stage whose per-stream state is one object subclasses it (``text``, ``release``) and is
    its own transducer: one slots object per stream, no closures.
    """

    __slots__ = ()

    def text(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        """The chunks one text chunk becomes."""
        raise NotImplementedError

    def release(self, before: ProcessedChunk | None) -> Sequence[ProcessedChunk]:
        """What is still held, before the non-text chunk *before* (``None``: at completion)."""
        raise NotImplementedError

    def feed(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        if chunk.type is _TEXT:
            return self.text(chunk)
        return [*self.release(chunk), chunk]

    def finish(self) -> Sequence[ProcessedChunk]:
        return self.release(None)


def thread_text(
    factory: Callable[[], _S],
    on_text: Callable[[_S, ProcessedChunk], list[ProcessedChunk]],
    release: Callable[[_S, ProcessedChunk | None], list[ProcessedChunk]],
    name: str = "",
) -> Fusable:
    """Apply a fresh transducer per subscription to the text chunks.

    .. marble::
        -t--c-----|        t: text, c: a non-text chunk
        [ thread_text(f, on_text, release) ]
        -T--(R,c)-(E,|)    T = on_text(s, t)   R = release(s, c)   E = release(s, None)

    Args:
        factory: Makes the per-stream transducer.
        on_text: The chunks one text chunk becomes.
        release: What the transducer still holds, before the non-text chunk given
            (``None``: at completion).
        name: The stage's name (shown in reprs of fused stages).

    Returns:
        A fusable operator on processed chunks (``rxcord.operators.fused``).
    """
    return Fusable(_Threading(factory, on_text, release), name)


class _Threading(Generic[_S]):
    """The stage's three functions (one object, not a closure): makes each stream's ``_Threaded``."""

    __slots__ = ("factory", "on_text", "release")

    def __init__(
        self,
        factory: Callable[[], _S],
        on_text: Callable[[_S, ProcessedChunk], list[ProcessedChunk]],
        release: Callable[[_S, ProcessedChunk | None], list[ProcessedChunk]],
    ) -> None:
        self.factory = factory
        self.on_text = on_text
        self.release = release

    def __call__(self) -> _Threaded[_S]:
        return _Threaded(self.factory(), self)


class _Threaded(TextThread, Generic[_S]):
    """The per-subscription transducer of ``thread_text``: its state and the stage's functions."""

    __slots__ = ("_stage", "_state")

    def __init__(self, state: _S, stage: _Threading[_S]) -> None:
        self._state = state
        self._stage = stage

    def text(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        return self._stage.on_text(self._state, chunk)

    def release(self, before: ProcessedChunk | None) -> Sequence[ProcessedChunk]:
        return self._stage.release(self._state, before)

    def feed(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        # TextThread.feed written out: the stage's function is called straight, one call per chunk.
        if chunk.type is _TEXT:
            return self._stage.on_text(self._state, chunk)
        return [*self._stage.release(self._state, chunk), chunk]
