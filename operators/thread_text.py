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

__all__ = ("thread_text",)

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from rxcord.core.types import ChunkType, ProcessedChunk
from rxcord.operators.fused import Fusable

_S = TypeVar("_S")


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

    def make() -> _Threaded[_S]:
        return _Threaded(factory(), on_text, release)

    return Fusable(make, name)


class _Threaded(Generic[_S]):
    """The per-subscription transducer of ``thread_text``."""

    __slots__ = ("_on_text", "_release", "_state")

    def __init__(
        self,
        state: _S,
        on_text: Callable[[_S, ProcessedChunk], list[ProcessedChunk]],
        release: Callable[[_S, ProcessedChunk | None], list[ProcessedChunk]],
    ) -> None:
        self._state = state
        self._on_text = on_text
        self._release = release

    def feed(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        if chunk.type is ChunkType.TEXT:
            return self._on_text(self._state, chunk)
        return [*self._release(self._state, chunk), chunk]

    def finish(self) -> Sequence[ProcessedChunk]:
        return self._release(self._state, None)
