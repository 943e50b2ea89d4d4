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
from typing import TypeAlias, TypeVar

from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, SerialDisposable

from rxcord.core.state import Delivery
from rxcord.core.types import Operator

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
            queue: deque[_T] = deque()
            inner = SerialDisposable()
            state = {"busy": False, "done": False, "failed": False, "draining": False, "again": False}

            def next_item() -> _T:
                item = queue.popleft()
                while merge is not None and queue:
                    merged = merge(item, queue[0])
                    if merged is None:
                        break
                    queue.popleft()
                    item = merged
                return item

            def on_send_error(exc: Exception) -> None:
                state["failed"] = True
                observer.on_error(exc)

            def start() -> None:
                # A send that completes synchronously calls start() again from inside
                # subscribe(): loop instead of recursing, so long queues cannot overflow the stack.
                if state["draining"]:
                    state["again"] = True
                    return
                state["draining"] = True
                try:
                    while not state["failed"]:
                        state["again"] = False
                        if not queue:
                            state["busy"] = False
                            if state["done"]:
                                observer.on_completed()
                            return
                        state["busy"] = True
                        try:
                            observable = send(next_item())
                        except Exception as exc:
                            on_send_error(exc)
                            return
                        inner.disposable = observable.subscribe(
                            observer.on_next, on_send_error, start, scheduler=scheduler
                        )
                        if not state["again"]:
                            return
                finally:
                    state["draining"] = False

            def on_next(item: _T) -> None:
                queue.append(item)
                if not state["busy"]:
                    start()

            def on_error(exc: Exception) -> None:
                state["failed"] = True
                observer.on_error(exc)

            def on_completed() -> None:
                state["done"] = True
                if not state["busy"]:
                    observer.on_completed()

            upstream = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return CompositeDisposable(upstream, inner)

        return Observable(subscribe)

    return _op
