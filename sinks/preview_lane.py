"""Edit mode's previews and the delivery stages a user inserted (stage 07 side of stages 05-06).

In edit mode the flusher emits ``Preview`` markers beside its segments
(``rxcord.sinks.edit_in_place``): a preview's text is computed only when the delivery
actually sends it (most previews are merged away behind an edit in flight), so a preview
cannot carry text through the stages between ``flush`` and ``deliver`` when it is emitted.
Instead, ``around_previews`` takes previews around those stages and hands each one the
*lane*: the same stages (built for this stream, the typing heartbeat left out: its pulses
are about time, not text) that the delivery runs the preview's text through, once per
preview it sends (``EditInPlaceDelivery``). So a user stage sees the text of every create
and every edit, and only those, exactly as it sees the final segments.

Ordering: the stages may take time (an asynchronous moderation call, a ``delay``). A preview
is emitted before the state that ends the stream, so one overtaking a delayed segment is
shown before it or, after the final text, ignored; the marker that ends the previews
(``closing`` / ``abandoned``) is held until the stages have completed, so it always comes
after the final segments they release.
"""

from __future__ import annotations

__all__ = ("around_previews",)

from typing import Any

import attrs
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from rxcord.core.state import Segment
from rxcord.core.types import Operator
from rxcord.sinks.edit_in_place import Preview


def around_previews(
    middle: Operator[Segment, Any], lane: Operator[Segment, Segment]
) -> Operator[Segment, Any]:
    """*middle* for the segments; previews around it, each carrying *lane*.

    .. marble::
        -p--a--q-c|          p, q: previews  a: a segment  c: the closing marker
        [ around_previews(delay(3), lane) ]
        -p----Aq---(c|)      q overtakes A; c waits for the stages to complete

    Args:
        middle: The stages between ``flush`` and ``deliver`` (with the typing heartbeat and taps).
        lane: The same stages without the heartbeat, which the delivery runs each sent preview through.

    Returns:
        An operator emitting what *middle* emits and the previews, the ending marker last.
    """

    def _op(source: Observable[Segment]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            route = _Route(observer, lane)
            entry: Observable[Segment] = Observable(route.attach)
            inner = entry.pipe(middle).subscribe(
                observer.on_next, route.on_error, route.on_middle_completed, scheduler=scheduler
            )
            outer = source.subscribe(route.on_next, route.on_error, route.on_completed, scheduler=scheduler)
            return CompositeDisposable(inner, outer)

        return Observable(subscribe)

    return _op


class _Route:
    """Per-subscription state of ``around_previews``."""

    __slots__ = ("ending", "finished", "head", "lane", "observer")

    def __init__(self, observer: abc.ObserverBase[Any], lane: Operator[Segment, Segment]) -> None:
        self.observer = observer
        self.lane = lane
        self.head: abc.ObserverBase[Segment] | None = None
        self.ending: list[Preview] = []
        self.finished = False

    def attach(
        self, observer: abc.ObserverBase[Segment], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        self.head = observer
        return Disposable()

    def on_next(self, item: Segment) -> None:
        if self.finished:
            return
        if not isinstance(item, Preview):
            if self.head is not None:
                self.head.on_next(item)
        elif item.closing or item.abandoned:
            self.ending.append(item)
        else:
            self.observer.on_next(attrs.evolve(item, lane=self.lane))

    def on_error(self, error: Exception) -> None:
        if not self.finished:
            self.finished = True
            self.observer.on_error(error)

    def on_completed(self) -> None:
        if self.head is not None:
            self.head.on_completed()

    def on_middle_completed(self) -> None:
        if self.finished:
            return
        self.finished = True
        for marker in self.ending:
            self.observer.on_next(marker)
        self.observer.on_completed()
