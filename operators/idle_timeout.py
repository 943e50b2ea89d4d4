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

__all__ = ("idle_timeout",)

from datetime import datetime

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SingleAssignmentDisposable

from rxcord.core.types import ErrorType, Operator, ProcessedChunk, ProviderError
from rxcord.operators.fused import BatchAware
from rxcord.operators.quiet_timer import QuietTimer


class _Watch:
    """Per-subscription state: when the last chunk arrived, and whether the stream ended."""

    __slots__ = ("finished", "last")

    def __init__(self, last: datetime) -> None:
        self.last = last
        self.finished = False


def _timeout_chunk(seconds: float) -> ProcessedChunk:
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
            upstream = SingleAssignmentDisposable()
            finished = False

            def quiet() -> None:
                nonlocal finished
                if finished:
                    return
                finished = True
                upstream.dispose()
                observer.on_next(_timeout_chunk(seconds))
                observer.on_completed()

            # One armed timer at most, not one per chunk (see rxcord.operators.quiet_timer).
            timer = QuietTimer(scheduler, seconds, quiet)

            def on_next(chunk: ProcessedChunk) -> None:
                if finished:
                    return
                timer.poke()
                observer.on_next(chunk)

            def on_error(exc: Exception) -> None:
                nonlocal finished
                finished = True
                timer.cancel()
                observer.on_error(exc)

            def on_completed() -> None:
                nonlocal finished
                finished = True
                timer.cancel()
                observer.on_completed()

            timer.poke()
            upstream.disposable = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return CompositeDisposable(timer.disposable, upstream)

        return Observable(subscribe)

    return BatchAware(_op, "idle_timeout")
