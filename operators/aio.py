"""The asyncio <-> reactivex bridge (see the design findings, section 2).

``from_coro`` turns a coroutine factory into a *lazy* observable (the
coroutine starts at subscription, so ``concat_map`` keeps one in flight);
``drain`` awaits a chain on the running loop with the ``AsyncIOScheduler``
injected once, and disposes it if the awaiting task is cancelled.
"""

from __future__ import annotations

__all__ = ("drain", "first_value", "from_coro")

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.scheduler.eventloop import AsyncIOScheduler

_T = TypeVar("_T")


def from_coro(factory: Callable[[], Awaitable[_T]]) -> Observable[_T]:
    """An observable that runs ``factory()`` when subscribed and emits its result.

    Disposing the subscription cancels the running coroutine.
    """

    def defer(_: abc.SchedulerBase) -> Observable[_T]:
        return reactivex.from_future(asyncio.ensure_future(factory()))

    return reactivex.defer(defer)


async def drain(source: Observable[_T]) -> list[_T]:
    """Subscribe on the running loop and collect every item until completion.

    Raises the chain's error, if any. Cancelling the awaiting task disposes
    the subscription (which cancels HTTP requests and sends in flight).
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[_T]] = loop.create_future()
    items: list[_T] = []

    def on_error(exc: Exception) -> None:
        if not done.done():
            done.set_exception(exc)

    def on_completed() -> None:
        if not done.done():
            done.set_result(items)

    subscription = source.subscribe(items.append, on_error, on_completed, scheduler=AsyncIOScheduler(loop))
    try:
        return await done
    finally:
        subscription.dispose()


async def first_value(source: Observable[_T]) -> _T:
    """Await the first item of *source* (which must emit one)."""
    items: list[_T] = await drain(source.pipe(ops.take(1)))
    if not items:
        raise LookupError("the observable completed without a value")
    return items[0]
