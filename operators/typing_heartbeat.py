"""Stage 04 heartbeat: keep Discord's typing indicator alive until the first message.

The indicator lasts 10 s, so while the model generates and nothing has been
sent, a ``TypingPulse`` is emitted at subscription and every ``interval``
seconds. Pulses stop as soon as the first deliverable segment passes: they
travel through the same serialized delivery queue as messages, so no pulse
can reach Discord after the answer (which would show "typing..." for 10 s
after the reply).
"""

from __future__ import annotations

__all__ = ("typing_heartbeat",)

from reactivex import Observable, abc

from rxcord.core.state import Segment, TypingPulse
from rxcord.core.types import Operator, SegmentKind
from rxcord.operators.light import LightOperator, Relay, relay

_VISIBLE = (SegmentKind.TEXT, SegmentKind.ERROR_EMBED, SegmentKind.TABLE)
_PULSE = TypingPulse()


def typing_heartbeat(interval: float) -> Operator[Segment, Segment | TypingPulse]:
    """Interleave typing pulses with segments until the first visible segment.

    .. marble::
        ------------a--b-|      interval=5
        [ typing_heartbeat(5) ]
        p----p----p-a--b-|      p: TypingPulse

    Args:
        interval: Seconds between pulses; 0 or less disables the heartbeat.

    Returns:
        An operator passing segments through and adding pulses.
    """
    return _Typing(interval)


class _Typing(LightOperator[Segment, Segment | TypingPulse]):
    """The ``typing_heartbeat`` operator: its interval (one slots object, not a closure)."""

    __slots__ = ("interval",)

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def subscribe_to(
        self,
        source: Observable[Segment],
        observer: abc.ObserverBase[Segment | TypingPulse],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        if self.interval <= 0:
            return relay(source, Relay(observer), scheduler)
        if scheduler is None:
            raise ValueError("typing_heartbeat needs a subscribe-time scheduler")
        beat = _Heartbeat(observer, scheduler, self.interval)
        # The first pulse is scheduled before the source is subscribed (as it always was).
        beat.hold(scheduler.schedule(_pulse, beat))
        return relay(source, beat, scheduler)


def _pulse(_: abc.SchedulerBase, beat: _Heartbeat | None) -> None:
    # A module function with the state as the action's state: no bound method per pulse.
    assert beat is not None
    beat.observer.on_next(_PULSE)
    beat.hold(beat.scheduler.schedule_relative(beat.interval, _pulse, beat))


class _Heartbeat(Relay):
    """One subscription: pulses until the first visible segment; the pulse timer goes with the end."""

    __slots__ = ("beating", "interval", "pulse", "scheduler")

    def __init__(
        self, observer: abc.ObserverBase[Segment | TypingPulse], scheduler: abc.SchedulerBase, interval: float
    ) -> None:
        super().__init__(observer)
        self.scheduler = scheduler
        self.interval = interval
        self.pulse: abc.DisposableBase | None = None  # the next pulse's timer
        self.beating = True

    def hold(self, pulse: abc.DisposableBase) -> None:
        """The next pulse's timer (``SerialDisposable``'s rule, in a slot)."""
        if not self.beating:
            pulse.dispose()
            return
        previous, self.pulse = self.pulse, pulse
        if previous is not None:
            previous.dispose()

    def quiet(self) -> None:
        """No more pulses."""
        self.beating = False
        pulse, self.pulse = self.pulse, None
        if pulse is not None:
            pulse.dispose()

    def on_next(self, segment: Segment) -> None:
        if self.stopped:
            return
        if segment.kind in _VISIBLE:
            self.quiet()
        self.observer.on_next(segment)

    def failed(self, error: Exception) -> None:
        self.quiet()
        self.observer.on_error(error)

    def completed(self) -> None:
        self.quiet()
        self.observer.on_completed()

    def dispose(self) -> None:
        self.quiet()  # first, as before: a pulse never follows a disposal
        self.release()
