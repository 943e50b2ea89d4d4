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
from typing import Any, Generic, TypeAlias, TypeVar

from reactivex import Observable, abc

from rxcord.core.state import Delivery
from rxcord.core.types import Operator
from rxcord.operators.light import LightOperator, Relay, relay, unbound

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
    return _Deliver(send, merge)


class _Deliver(LightOperator[_T, Delivery]):
    """The ``deliver`` operator: its send and merge functions (one slots object, not a closure)."""

    __slots__ = ("merge_fn", "merge_of", "send_fn", "send_of")

    def __init__(self, send: Callable[[_T], Observable[Delivery]], merge: Merge[_T] | None) -> None:
        # Bound methods (``DiscordDelivery.send``, ``.merge``) are held as function and object,
        # each in two slots: the operator is built per stream, a (function, object) tuple would
        # be one more object per stream for the collector to walk.
        self.send_fn, self.send_of = unbound(send)
        self.merge_fn: Callable[..., _T | None] | None = None
        self.merge_of: Any = None
        if merge is not None:
            self.merge_fn, self.merge_of = unbound(merge)

    def subscribe_to(
        self,
        source: Observable[_T],
        observer: abc.ObserverBase[Delivery],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        return relay(source, _DeliverRun(self, observer, scheduler), scheduler)


class _DeliverRun(Relay, Generic[_T]):
    """One subscription of ``deliver``: its queue, the send in flight, and how the source ended.

    It is the source's observer and the subscription's disposable: the source's end
    releases the source only (the queue is still sent); ``dispose`` also cancels the send
    in flight.
    """

    __slots__ = (
        "again",
        "busy",
        "closed",
        "done",
        "draining",
        "failed_",
        "inner",
        "operator",
        "queue",
        "scheduler",
    )

    def __init__(
        self,
        operator: _Deliver[_T],
        observer: abc.ObserverBase[Delivery],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        super().__init__(observer)
        self.operator = operator  # its send and merge functions (read from it, not copied per stream)
        self.scheduler = scheduler
        # Made for the first item queued, dropped once sent: a stream waiting for its next
        # segment holds no queue.
        self.queue: deque[_T] | None = None
        self.inner: abc.DisposableBase | None = None  # the send in flight (or the last one)
        self.closed = False  # disposed: nothing more is sent
        self.busy = False  # a send is in flight
        self.done = False  # the source completed
        self.failed_ = False  # an error went downstream: nothing more is sent
        self.draining = False  # start() is running (a synchronous send re-enters it)
        self.again = False  # a send completed synchronously inside start()

    def next_item(self, queue: deque[_T]) -> _T:
        merge, of = self.operator.merge_fn, self.operator.merge_of
        item = queue.popleft()
        while merge is not None and queue:
            merged = merge(of, item, queue[0])
            if merged is None:
                break
            queue.popleft()
            item = merged
        return item

    def on_send_error(self, exc: Exception) -> None:
        self.failed_ = True
        self.observer.on_error(exc)

    def start(self) -> None:
        # A send that completes synchronously calls start() again from inside
        # subscribe(): loop instead of recursing, so long queues cannot overflow the stack.
        if self.draining:
            self.again = True
            return
        self.draining = True
        try:
            while not self.failed_:
                self.again = False
                queue = self.queue
                if not queue:
                    self.queue = None
                    self.busy = False
                    if self.done:
                        self.observer.on_completed()
                    return
                self.busy = True
                try:
                    operator = self.operator
                    item = self.next_item(queue)
                    if not queue:
                        self.queue = None  # a send in flight with nothing behind it holds no queue
                    observable = operator.send_fn(operator.send_of, item)
                except Exception as exc:
                    self.on_send_error(exc)
                    return
                self.hold(relay(observable, _Sending(self), self.scheduler))
                if not self.again:
                    return
        finally:
            self.draining = False

    def hold(self, sending: Relay) -> None:
        """The send just subscribed replaces the last (``SerialDisposable``'s rule, in a slot)."""
        if self.closed or sending.stopped:  # a send that already ended is not kept
            sending.dispose()
            return
        previous, self.inner = self.inner, sending
        if previous is not None:
            previous.dispose()

    def on_next(self, item: _T) -> None:
        if self.stopped:
            return
        queue = self.queue
        if queue is None:
            self.queue = queue = deque()
        queue.append(item)
        if not self.busy:
            self.start()

    def failed(self, exc: Exception) -> None:
        self.failed_ = True
        self.observer.on_error(exc)

    def completed(self) -> None:
        self.done = True
        if not self.busy:
            self.observer.on_completed()

    def dispose(self) -> None:
        self.release()
        self.closed = True
        inner, self.inner = self.inner, None
        if inner is not None:
            inner.dispose()


class _Sending(Relay):
    """One send's subscriber: its deliveries go downstream, its end starts the next send."""

    __slots__ = ("run",)

    def __init__(self, run: _DeliverRun[Any]) -> None:
        super().__init__(run.observer)
        self.run = run

    def failed(self, error: Exception) -> None:
        self.run.on_send_error(error)

    def completed(self) -> None:
        run = self.run
        if run.inner is self:  # ended: nothing to cancel, not kept until the next send
            run.inner = None
        run.start()
