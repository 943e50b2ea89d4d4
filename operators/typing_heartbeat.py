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

from typing import Any

from reactivex import Observable, abc

from rxcord.core.state import Segment, TypingPulse
from rxcord.core.types import Operator, SegmentKind
from rxcord.operators.light import LightDisposables, LightSerial, subscribe_light

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

    def _op(source: Observable[Segment]) -> Observable[Segment | TypingPulse]:
        def subscribe(
            observer: abc.ObserverBase[Segment | TypingPulse], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            if interval <= 0:
                return subscribe_light(
                    source, observer.on_next, observer.on_error, observer.on_completed, scheduler
                )
            if scheduler is None:
                raise ValueError("typing_heartbeat needs a subscribe-time scheduler")
            timer = LightSerial()

            def pulse(_: abc.SchedulerBase, __: Any = None) -> None:
                observer.on_next(_PULSE)
                timer.disposable = scheduler.schedule_relative(interval, pulse)

            def on_next(segment: Segment) -> None:
                if segment.kind in _VISIBLE:
                    timer.dispose()
                observer.on_next(segment)

            def on_error(exc: Exception) -> None:
                timer.dispose()
                observer.on_error(exc)

            def on_completed() -> None:
                timer.dispose()
                observer.on_completed()

            timer.disposable = scheduler.schedule(pulse)
            upstream = subscribe_light(source, on_next, on_error, on_completed, scheduler)
            return LightDisposables(timer, upstream)

        return Observable(subscribe)

    return _op
