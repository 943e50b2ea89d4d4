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
from rxcord.operators.light import LightObservable, Relay, relay
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
    return _WithDeadline(stops, seconds)


class _WithDeadline(LightObservable[StopSignal]):
    """``merge(stops, timer(seconds).map(signal))`` written out, as one slots observable.

    The merge, its source list, its locks and the timer's disposables were some fifty
    objects every live stream held; a closure per stream a few more. The timer takes the
    subscriber's scheduler (the gate subscribes with the chain's).
    """

    __slots__ = ("seconds", "stops")

    def __init__(self, stops: Observable[StopSignal], seconds: float) -> None:
        super().__init__()
        self.stops = stops
        self.seconds = seconds

    def _subscribe_core(
        self, observer: abc.ObserverBase[StopSignal], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        run = _Deadline(observer, scheduler or TimeoutScheduler.singleton(), self.seconds)
        run.timer.poke()  # armed before the stops are subscribed, as the merge did
        return relay(self.stops, run, scheduler)


class _Deadline(Relay):
    """One subscription of ``with_deadline``: it completes once the stops and the timer both have.

    The stops' observer and the subscription's disposable (disposing it also ends the timer).
    """

    __slots__ = ("fired", "stops_done", "timer")

    def __init__(
        self, observer: abc.ObserverBase[StopSignal], scheduler: abc.SchedulerBase, seconds: float
    ) -> None:
        super().__init__(observer)
        self.fired = False
        self.stops_done = False
        self.timer = QuietTimer(scheduler, seconds, self.fire)

    def fire(self) -> None:
        self.fired = True
        # The signal is made when it fires: most streams end before their deadline.
        self.observer.on_next(deadline_signal(self.timer.seconds))
        if self.stops_done:
            self.observer.on_completed()

    def completed(self) -> None:
        self.stops_done = True
        if self.fired:
            self.observer.on_completed()

    def dispose(self) -> None:
        self.timer.dispose()  # first, as before
        self.release()
