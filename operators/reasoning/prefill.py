"""Assistant prefill: the delivered answer starts with the prefill, exactly once.

When a request ends with an assistant prefill (``ChatRequest.prefill``), most
providers continue *after* it and never send it back, while some backends
echo it at the start of the stream. Users expect to read the prefill as the
start of the answer either way. ``PrefillJoiner`` holds back the start of
the visible text only until it either matches the prefill (an echo: passed
through as is) or diverges from it (the prefill is prepended): the prefill
is neither lost nor duplicated, whatever the chunking.
"""

from __future__ import annotations

__all__ = ("PrefillJoiner", "prefill")

from collections.abc import Sequence

import attrs
from reactivex import Observable, abc

from rxcord.core.types import ChunkType, Operator, ProcessedChunk


@attrs.define
class PrefillJoiner:
    """Incremental, per stream."""

    prefill: str
    _held: str = attrs.field(default="", init=False)
    _decided: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        self._decided = not self.prefill

    def feed(self, text: str) -> str:
        """The visible text to release for *text*."""
        if self._decided:
            return text
        held = self._held + text
        if self.prefill.startswith(held):
            self._held = held  # still an echo candidate: wait
            return ""
        self._decided = True
        self._held = ""
        return held if held.startswith(self.prefill) else self.prefill + held

    def finish(self) -> str:
        """The stream ended: release what is held (the prefill, echoed in part or not at all)."""
        if self._decided:
            return ""
        self._decided = True
        self._held = ""
        return self.prefill


def prefill(text: str) -> Operator[ProcessedChunk, ProcessedChunk]:
    """Make the visible text start with *text*, exactly once.

    .. marble::
        -a-b-|          a="Sure", b=", here"     prefill="Sure,"
        [ prefill("Sure,") ]
        -x-y-|          x="" (held), y="Sure, here"

    Args:
        text: The assistant prefill sent with the request ("" disables the operator).

    Returns:
        An operator on processed chunks.
    """

    def _op(source: Observable[ProcessedChunk]) -> Observable[ProcessedChunk]:
        if not text:
            return source

        def subscribe(
            observer: abc.ObserverBase[ProcessedChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            joiner = PrefillJoiner(text)

            def release(chunks: Sequence[ProcessedChunk]) -> None:
                for chunk in chunks:
                    observer.on_next(chunk)

            def on_next(chunk: ProcessedChunk) -> None:
                if chunk.type is ChunkType.TEXT:
                    observer.on_next(attrs.evolve(chunk, content=joiner.feed(chunk.content)))
                    return
                rest = joiner.finish()
                release([ProcessedChunk.text(rest)] if rest else [])
                observer.on_next(chunk)

            def on_completed() -> None:
                rest = joiner.finish()
                release([ProcessedChunk.text(rest)] if rest else [])
                observer.on_completed()

            return source.subscribe(on_next, observer.on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return _op
