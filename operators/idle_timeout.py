"""Stage 04 heartbeat: a stream that goes quiet ends as a retryable ``timeout`` error.

The timer runs on the subscribe-time scheduler, so the same operator works
under asyncio and under the marble test scheduler. When it fires, the
operator emits one ``timeout`` error chunk, completes, and disposes the
source (which closes the HTTP connection).

One timer per stream, not one per chunk: a chunk only records
``scheduler.now``; when the timer fires before the deadline (the last chunk
plus the allowed silence) it is set again for the rest. Re-arming a timer
for every chunk cost more than the rest of stage 04 together.
"""

from __future__ import annotations

__all__ = ("idle_timeout", "timeout_chunk")

from reactivex import Observable, abc

from rxcord.core.types import ErrorType, Operator, ProcessedChunk, ProviderError
from rxcord.operators.fused import BatchAware
from rxcord.operators.light import Relay, relay
from rxcord.operators.quiet_timer import QuietTimer


class _Watch(Relay):
    """Per-subscription state: the quiet timer; ``stopped`` once the stream ended."""

    __slots__ = ("seconds", "timer")

    def __init__(
        self, observer: abc.ObserverBase[ProcessedChunk], scheduler: abc.SchedulerBase, seconds: float
    ) -> None:
        super().__init__(observer)
        self.seconds = seconds
        # One armed timer at most, not one per chunk (see rxcord.operators.quiet_timer).
        self.timer = QuietTimer(scheduler, seconds, self.quiet)

    def quiet(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.dispose()
        self.observer.on_next(timeout_chunk(self.seconds))
        self.observer.on_completed()

    def on_next(self, chunk: ProcessedChunk) -> None:
        if self.stopped:
            return
        self.timer.poke()
        self.observer.on_next(chunk)

    def failed(self, error: Exception) -> None:
        self.timer.cancel()
        self.observer.on_error(error)

    def completed(self) -> None:
        self.timer.cancel()
        self.observer.on_completed()

    def dispose(self) -> None:
        super().dispose()
        self.timer.disposable.dispose()


def timeout_chunk(seconds: float) -> ProcessedChunk:
    """The error chunk a stream quiet for *seconds* ends with (retryable)."""
    return ProcessedChunk.fail(
        ProviderError(
            type=ErrorType.TIMEOUT,
            message=f"the provider sent nothing for {seconds:g} s",
            retryable=True,
            code="idle_timeout",
        )
    )


def idle_timeout(seconds: float) -> Operator[ProcessedChunk, ProcessedChunk]:
    """End the stream with a timeout error chunk after *seconds* without a chunk.

    .. marble::
        -a-b--------c-|       seconds=3
        [ idle_timeout(3) ]
        -a-b--(T,|)           T: timeout error chunk, source disposed

    Args:
        seconds: The allowed silence, measured from subscription and from each chunk.

    Returns:
        An operator that passes chunks through unchanged; a ``Batch`` (one socket read's
        chunks) passes whole and counts as one arrival (``rxcord.operators.fused.BatchAware``).
    """

    def _op(source: Observable[ProcessedChunk]) -> Observable[ProcessedChunk]:
        def subscribe(
            observer: abc.ObserverBase[ProcessedChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            if scheduler is None:
                raise ValueError("idle_timeout needs a subscribe-time scheduler")
            watch = _Watch(observer, scheduler, seconds)
            watch.timer.poke()
            return relay(source, watch, scheduler)

        return Observable(subscribe)

    return BatchAware(_op, "idle_timeout", args=(seconds,))
