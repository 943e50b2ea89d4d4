"""Stage 07 as an operator: one Discord side effect at a time, in order.

``send`` returns an observable (production wraps a coroutine; marble tests
pass virtual-time fakes). It is deferred, so a send starts only when the
previous one has finished: exactly one request is in flight and messages
keep their order. Disposing the chain cancels the one in flight.
"""

from __future__ import annotations

__all__ = ("deliver",)

from collections.abc import Callable
from typing import TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops

from pipeline.state import Delivery
from pipeline.types import Operator

_T = TypeVar("_T")


def deliver(send: Callable[[_T], Observable[Delivery]]) -> Operator[_T, Delivery]:
    """Run *send* for each item, serially, and emit what it delivered.

    .. marble::
        -a-b-----|             send takes 3 ticks
        [ deliver(send) ]
        ----A--B-|             B starts only after A finished

    Args:
        send: Makes the observable that performs one delivery.

    Returns:
        An operator from items to ``Delivery`` records.
    """

    def _deferred(item: _T) -> Observable[Delivery]:
        def factory(_: abc.SchedulerBase) -> Observable[Delivery]:
            return send(item)

        return reactivex.defer(factory)

    return ops.concat_map(_deferred)
