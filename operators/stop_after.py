"""Fire a stop right after the N-th chunk has been routed (``rxcord replay --stop KIND@N``).

The stop is raised *after* the state has been forwarded downstream, so the
N-th chunk is fully routed (and buffered) before the stop takes effect at
the stop gate, between chunk N and chunk N+1.
"""

from __future__ import annotations

__all__ = ("stop_after",)

from reactivex import Observable, abc

from rxcord.core.state import StreamState
from rxcord.core.types import Operator, StopKind, StopSignal


def stop_after(
    count: int, kind: StopKind, stops: abc.ObserverBase[StopSignal]
) -> Operator[StreamState, StreamState]:
    """Pass states through; after the one whose ``index`` is *count*, send a stop of *kind*.

    .. marble::
        -a-b-c-|        count=2
        [ stop_after(2, user, stops) ]
        -a-b-c-|        stops receives "user" right after b was forwarded

    Args:
        count: The 1-based number of the routed chunk after which to stop.
        kind: The stop kind.
        stops: Where to send the stop (the stream's stop subject).

    Returns:
        A pass-through operator.
    """

    def _op(source: Observable[StreamState]) -> Observable[StreamState]:
        def subscribe(
            observer: abc.ObserverBase[StreamState], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            fired = False

            def on_next(state: StreamState) -> None:
                nonlocal fired
                observer.on_next(state)
                if not fired and state.index >= count:
                    fired = True
                    stops.on_next(StopSignal(kind, f"after chunk {count}"))

            return source.subscribe(on_next, observer.on_error, observer.on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return _op
