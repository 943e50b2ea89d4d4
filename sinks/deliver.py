"""Stage 07 as an operator: one Discord side effect at a time, in order.

``send`` returns an observable (production wraps a coroutine; marble tests
pass virtual-time fakes). Sends are serialized: a send starts only when the
previous one has finished, so exactly one request is in flight and messages
keep their order. Disposing the chain cancels the one in flight.

While a send is in flight (a rate-limit wait, a slow network), later items
queue. With a ``merge`` function, the queue is coalesced before the next
send: adjacent text segments become one segment, which stage 07 then splits
into as few Discord messages as the 2000-code-point limit allows. A live
answer that outruns Discord's rate limit thus arrives in fewer, fuller
messages instead of one message per paragraph, each a second apart.
"""

from __future__ import annotations

__all__ = ("deliver",)

from collections import deque
from collections.abc import Callable
from typing import Generic, TypeAlias, TypeVar

from reactivex import Observable, abc

from rxcord.core.state import Delivery
from rxcord.core.types import Operator
from rxcord.operators.light import LightDisposables, LightSerial, subscribe_target

_T = TypeVar("_T")

Merge: TypeAlias = Callable[[_T, _T], _T | None]
"""Merges two queued items into one, or returns ``None`` when they must stay apart."""


def deliver(
    send: Callable[[_T], Observable[Delivery]], merge: Merge[_T] | None = None
) -> Operator[_T, Delivery]:
    """Run *send* for each item, serially, and emit what it delivered.

    .. marble::
        -a-b-----|             send takes 3 ticks
        [ deliver(send) ]
        ----A--B-|             B starts only after A finished

        -a-b-c------|          with merge: b and c queued while a was sent
        [ deliver(send, merge) ]
        ----A--(BC)-|

    Args:
        send: Makes the observable that performs one delivery (subscribed only when its turn comes).
        merge: Coalesces items that queued up while a send was in flight.

    Returns:
        An operator from items to ``Delivery`` records.
    """

    def _op(source: Observable[_T]) -> Observable[Delivery]:
        def subscribe(
            observer: abc.ObserverBase[Delivery], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            run = _DeliverRun(send, merge, observer, scheduler)
            upstream = subscribe_target(source, run, scheduler)
            return LightDisposables(upstream, run.inner)

        return Observable(subscribe)

    return _op


class _DeliverRun(Generic[_T]):
    """One subscription of ``deliver``: its queue, the send in flight, and how the source ended."""

    __slots__ = (
        "again",
        "busy",
        "done",
        "draining",
        "failed",
        "inner",
        "merge",
        "observer",
        "queue",
        "scheduler",
        "send",
    )

    def __init__(
        self,
        send: Callable[[_T], Observable[Delivery]],
        merge: Merge[_T] | None,
        observer: abc.ObserverBase[Delivery],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        self.send = send
        self.merge = merge
        self.observer = observer
        self.scheduler = scheduler
        self.queue: deque[_T] = deque()
        self.inner = LightSerial()
        self.busy = False  # a send is in flight
        self.done = False  # the source completed
        self.failed = False  # an error went downstream: nothing more is sent
        self.draining = False  # start() is running (a synchronous send re-enters it)
        self.again = False  # a send completed synchronously inside start()

    def next_item(self) -> _T:
        queue, merge = self.queue, self.merge
        item = queue.popleft()
        while merge is not None and queue:
            merged = merge(item, queue[0])
            if merged is None:
                break
            queue.popleft()
            item = merged
        return item

    def on_send_error(self, exc: Exception) -> None:
        self.failed = True
        self.observer.on_error(exc)

    def start(self) -> None:
        # A send that completes synchronously calls start() again from inside
        # subscribe(): loop instead of recursing, so long queues cannot overflow the stack.
        if self.draining:
            self.again = True
            return
        self.draining = True
        try:
            while not self.failed:
                self.again = False
                if not self.queue:
                    self.busy = False
                    if self.done:
                        self.observer.on_completed()
                    return
                self.busy = True
                try:
                    observable = self.send(self.next_item())
                except Exception as exc:
                    self.on_send_error(exc)
                    return
                self.inner.disposable = observable.subscribe(
                    self.observer.on_next, self.on_send_error, self.start, scheduler=self.scheduler
                )
                if not self.again:
                    return
        finally:
            self.draining = False

    def on_next(self, item: _T) -> None:
        self.queue.append(item)
        if not self.busy:
            self.start()

    def on_error(self, exc: Exception) -> None:
        self.failed = True
        self.observer.on_error(exc)

    def on_completed(self) -> None:
        self.done = True
        if not self.busy:
            self.observer.on_completed()
