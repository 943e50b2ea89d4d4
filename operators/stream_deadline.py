"""Stage 04: the whole stream's deadline, as one more stop signal for the stop gate.

``idle_timeout`` bounds the silence between chunks, so a provider that trickles one
delta a second never trips it. ``with_deadline`` adds a ``STREAM_DEADLINE`` stop
*seconds* after the gate subscribes (the stream's start): the gate treats it as it
treats a graceful user stop, so the source is disposed (the HTTP request closes), what
stage 03 still held is kept, and the text so far is flushed and delivered; the result's
status is ``stream_deadline``.

The timer runs on the subscribe-time scheduler the gate passes on (asyncio in a run,
the marble test scheduler in tests): no clock is read here.
"""

from __future__ import annotations

__all__ = ("deadline_signal", "with_deadline")

from reactivex import Observable, abc
from reactivex.scheduler import TimeoutScheduler

from rxcord.core.types import StopKind, StopSignal
from rxcord.operators.light import LightDisposables, subscribe_light
from rxcord.operators.quiet_timer import QuietTimer


def deadline_signal(seconds: float) -> StopSignal:
    """The stop raised when a stream runs past *seconds* (the reason names the setting)."""
    return StopSignal(StopKind.STREAM_DEADLINE, f"the stream ran past max_stream_seconds ({seconds:g} s)")


def with_deadline(stops: Observable[StopSignal], seconds: float | None) -> Observable[StopSignal]:
    """*stops*, and a ``STREAM_DEADLINE`` stop *seconds* after subscription.

    .. marble::
        -a-b-c-d-e-f-g-|      a chunk a second; seconds=4
        [ stop_gate(with_deadline(stops, 4)) ]
        -a-b-c-(S,|)          S: the deadline stop, source disposed

    Args:
        stops: The stream's stop signals (the registry's subject).
        seconds: The deadline; ``None``: none (*stops* as they are).

    Returns:
        The stop signals the gate consumes.
    """
    if seconds is None:
        return stops
    signal = deadline_signal(seconds)

    def subscribe(
        observer: abc.ObserverBase[StopSignal], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        # ``merge(stops, timer(seconds).map(signal))`` written out: the merge, its source list,
        # its locks and the timer's disposables were some fifty objects every live stream held.
        # The timer takes the subscriber's scheduler (the gate subscribes with the chain's).
        run = _Deadline(observer, signal)
        timer = QuietTimer(scheduler or TimeoutScheduler.singleton(), seconds, run.fire)
        timer.poke()
        upstream = subscribe_light(stops, observer.on_next, observer.on_error, run.stops_completed, scheduler)
        return LightDisposables(timer, upstream)

    return Observable(subscribe)


class _Deadline:
    """One subscription of ``with_deadline``: it completes once the stops and the timer both have."""

    __slots__ = ("fired", "observer", "signal", "stops_done")

    def __init__(self, observer: abc.ObserverBase[StopSignal], signal: StopSignal) -> None:
        self.observer = observer
        self.signal = signal
        self.fired = False
        self.stops_done = False

    def fire(self) -> None:
        self.fired = True
        self.observer.on_next(self.signal)
        if self.stops_done:
            self.observer.on_completed()

    def stops_completed(self) -> None:
        self.stops_done = True
        if self.fired:
            self.observer.on_completed()
