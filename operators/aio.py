"""The asyncio <-> reactivex bridge (see the design findings, section 2).

``from_coro`` turns a coroutine factory into a *lazy* observable (the
coroutine starts at subscription, so ``concat_map`` keeps one in flight);
``drain`` awaits a chain on the running loop with one ``StreamScheduler`` (the
asyncio scheduler carrying the stream's one context) injected once, and disposes it
if the awaiting task is cancelled.
"""

from __future__ import annotations

__all__ = ("TaskStart", "choose_task_start", "drain", "first_value", "from_coro")

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeAlias, TypeVar, cast

from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.scheduler import CurrentThreadScheduler

from rxcord.core.stream_scheduler import StreamScheduler
from rxcord.operators.light import Relay, relay

_T = TypeVar("_T")

TaskStart: TypeAlias = Callable[[asyncio.AbstractEventLoop, Coroutine[Any, Any, Any]], "asyncio.Future[Any]"]
"""Starts a coroutine as a task on a loop (``asyncio.eager_task_factory``'s signature)."""


def _lazy_start(loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]) -> asyncio.Future[Any]:
    return loop.create_task(coro)


def choose_task_start(eager: TaskStart | None) -> TaskStart:
    """*eager* when the Python has one (3.12+: ``asyncio.eager_task_factory``), else a plain task.

    An eager task runs its coroutine at once, up to its first suspension, instead of one loop
    hop later: a segment's send starts as the segment is released, and a send that never
    suspends (a memory sink) is delivered before ``subscribe`` returns, with no hop at all.
    """
    return eager if eager is not None else _lazy_start


_START: TaskStart = choose_task_start(getattr(asyncio, "eager_task_factory", None))


class _CoroRun(abc.DisposableBase):
    """One subscription of ``from_coro``: the task; disposing it cancels the task."""

    __slots__ = ("observer", "task")

    def __init__(self, observer: abc.ObserverBase[Any]) -> None:
        self.observer = observer
        self.task: asyncio.Future[Any] | None = None

    def finished(self, task: asyncio.Future[Any]) -> None:
        if self.task is None:  # disposed meanwhile
            return
        self.task = None
        if task.cancelled():
            # Cancelled from outside (not by disposal): reported as from_future reports it.
            self.observer.on_error(cast(Any, asyncio.CancelledError()))
            return
        error = task.exception()
        if error is not None:
            self.observer.on_error(cast(Any, error))
            return
        self.observer.on_next(task.result())
        self.observer.on_completed()

    def dispose(self) -> None:
        task, self.task = self.task, None
        if task is not None:
            task.cancel()


def from_coro(factory: Callable[[], Awaitable[_T]], *, start: TaskStart | None = None) -> Observable[_T]:
    """An observable that runs ``factory()`` when subscribed and emits its result.

    The coroutine runs as a task started by *start* (default: eager tasks where Python has
    them, see ``choose_task_start``). Disposing the subscription cancels the running coroutine.
    """

    def subscribe(
        observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        run = _CoroRun(observer)
        begin = start or _START
        task = run.task = begin(asyncio.get_running_loop(), _as_coroutine(factory()))
        if task.done():
            run.finished(task)  # an eager task that never suspended: delivered at once
        else:
            task.add_done_callback(run.finished)
        return run

    return Observable(subscribe)


async def _awaited(awaitable: Awaitable[_T]) -> _T:
    return await awaitable


def _as_coroutine(awaitable: Awaitable[_T]) -> Coroutine[Any, Any, _T]:
    return awaitable if isinstance(awaitable, Coroutine) else _awaited(awaitable)


class _Drain(Relay):
    """One ``drain``: its source's observer and subscription, the items and the future they settle.

    ``Observable.subscribe`` would wrap the callbacks in reactivex's ``AutoDetachObserver``
    (with its disposables, locks and a bound ``dispose``) and ``drain`` add two closures
    with their cells: some eight objects a live stream holds for the collector to walk.
    As a ``Relay`` it keeps the same rules: nothing after the first terminal event, which
    disposes the upstream subscription (also when it happens while subscribing). Its end
    settles ``done`` instead of calling a downstream observer (``observer`` stays unset).

    ``items`` is made at the first item: a chain that emits only at its end (or never) holds
    no list while the stream is live; it completes with a fresh empty list.
    """

    __slots__ = ("done", "items")

    def __init__(self, done: asyncio.Future[list[Any]]) -> None:
        self.done = done
        self.items: list[Any] | None = None  # made at the first item
        self.stopped = False
        self.upstream = None

    def on_next(self, value: Any) -> None:
        if self.stopped:
            return
        items = self.items
        if items is None:
            self.items = [value]
        else:
            items.append(value)

    def failed(self, error: Exception) -> None:
        if not self.done.done():  # cancelled with the awaiting task
            self.done.set_exception(error)

    def completed(self) -> None:
        if not self.done.done():
            self.done.set_result([] if self.items is None else self.items)


def _subscribe_drain(
    _: abc.SchedulerBase, state: tuple[Observable[Any], _Drain, abc.SchedulerBase] | None
) -> None:
    assert state is not None  # the trampoline's action: always given its state
    source, run, scheduler = state
    relay(source, run, scheduler)


def _subscribe_outermost(source: Observable[Any], run: _Drain, scheduler: abc.SchedulerBase) -> None:
    """Subscribe *run* on the current-thread trampoline, as ``Observable.subscribe`` does.

    ``relay`` skips the trampoline (it is meant for a subscribe inside another one); the
    outermost subscribe sets it up, so that work a source puts on the current thread while
    subscribing runs after the subscribe, not nested in it.
    """
    trampoline = CurrentThreadScheduler.singleton()
    if trampoline.schedule_required():
        trampoline.schedule(_subscribe_drain, (source, run, scheduler))
    else:
        relay(source, run, scheduler)


async def drain(source: Observable[_T]) -> list[_T]:
    """Subscribe on the running loop and collect every item until completion.

    Raises the chain's error, if any. Cancelling the awaiting task disposes
    the subscription (which cancels HTTP requests and sends in flight).

    The chain is subscribed with a ``StreamScheduler``: the context it copies here, in the
    awaiting task, is the one every timer and task of the stream runs in (``context_of``),
    what each of their own copies held before.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[_T]] = loop.create_future()
    run = _Drain(done)
    try:
        _subscribe_outermost(source, run, StreamScheduler(loop))
        return await done
    finally:
        run.dispose()  # a terminal event disposed it already; cancellation or an error here did not


async def first_value(source: Observable[_T]) -> _T:
    """Await the first item of *source* (which must emit one)."""
    items: list[_T] = await drain(source.pipe(ops.take(1)))
    if not items:
        raise LookupError("the observable completed without a value")
    return items[0]
