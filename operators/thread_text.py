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

from collections.abc import Callable
from typing import TypeVar

from reactivex import Observable, abc
from rxcord.core.types import ChunkType, Operator, ProcessedChunk

_S = TypeVar("_S")


def thread_text(
    factory: Callable[[], _S],
    on_text: Callable[[_S, ProcessedChunk], list[ProcessedChunk]],
    release: Callable[[_S, ProcessedChunk | None], list[ProcessedChunk]],
) -> Operator[ProcessedChunk, ProcessedChunk]:
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

    Returns:
        An operator on processed chunks.
    """

    def operator(source: Observable[ProcessedChunk]) -> Observable[ProcessedChunk]:
        def subscribe(
            observer: abc.ObserverBase[ProcessedChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            state = factory()

            def on_next(chunk: ProcessedChunk) -> None:
                try:
                    if chunk.type is ChunkType.TEXT:
                        out = on_text(state, chunk)
                    else:
                        out = [*release(state, chunk), chunk]
                except Exception as exc:
                    observer.on_error(exc)
                    return
                for item in out:
                    observer.on_next(item)

            def on_completed() -> None:
                try:
                    out = release(state, None)
                except Exception as exc:
                    observer.on_error(exc)
                    return
                for item in out:
                    observer.on_next(item)
                observer.on_completed()

            return source.subscribe(on_next, observer.on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return operator
