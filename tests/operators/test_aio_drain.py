"""drain: items in order, errors raised, cancellation disposes; one slots observer per drain."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.disposable import Disposable
from reactivex.observer.autodetachobserver import AutoDetachObserver

from rxcord.operators.aio import drain, first_value


class _Source:
    """A cold source that keeps its observer and counts the disposals of its subscription."""

    def __init__(self) -> None:
        self.observer: abc.ObserverBase[Any] | None = None
        self.disposed = 0

    def subscribe(self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None) -> Any:
        self.observer = observer
        return Disposable(self.dispose)

    def dispose(self) -> None:
        self.disposed += 1

    def observable(self) -> Observable[Any]:
        return Observable(self.subscribe)

    async def drained(self) -> tuple[asyncio.Future[list[Any]], abc.ObserverBase[Any]]:
        """A ``drain`` of this source, started: its task and the observer it subscribed."""
        task = asyncio.ensure_future(drain(self.observable()))
        await asyncio.sleep(0)
        observer = self.observer
        assert observer is not None
        return task, observer


def test_items_in_order() -> None:
    assert asyncio.run(drain(reactivex.of(1, 2, 3))) == [1, 2, 3]


def test_the_outermost_subscribe_runs_on_the_trampoline() -> None:
    """Sources that schedule on the current thread while subscribing (concat) keep their order."""
    source = reactivex.concat(reactivex.of(1, 2), reactivex.from_iterable([3]), reactivex.of(4))
    assert asyncio.run(drain(source.pipe(ops.map(lambda x: x * 10)))) == [10, 20, 30, 40]


def test_the_chains_error_is_raised() -> None:
    source = reactivex.of(1).pipe(ops.concat(reactivex.throw(ValueError("boom"))))
    with pytest.raises(ValueError, match="boom"):
        asyncio.run(drain(source))


def test_an_error_raised_while_subscribing_is_raised() -> None:
    def subscribe(observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None) -> Any:
        raise KeyError("subscribe")

    with pytest.raises(KeyError, match="subscribe"):
        asyncio.run(drain(Observable(subscribe)))


def test_an_error_after_completion_is_ignored() -> None:
    """As reactivex's wrapper: the first terminal event wins, later events are dropped."""
    source = _Source()

    async def main() -> list[Any]:
        task, observer = await source.drained()
        observer.on_next("a")
        observer.on_completed()
        observer.on_error(ValueError("late"))
        observer.on_next("late")
        return await task

    assert asyncio.run(main()) == ["a"]
    assert source.disposed == 1  # disposed by the completion; the finally found nothing more


def test_cancelling_the_awaiting_task_disposes_the_subscription() -> None:
    source = _Source()

    async def main() -> tuple[int, int]:
        task = asyncio.ensure_future(drain(source.observable()))
        await asyncio.sleep(0)
        before = source.disposed
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert source.observer is not None
        source.observer.on_completed()  # after cancellation: nothing to settle, nothing raised
        return before, source.disposed

    assert asyncio.run(main()) == (0, 1)


def test_a_completion_while_subscribing_disposes_the_subscription() -> None:
    """A source that completes before its subscribe returns still gets its disposable disposed."""
    disposed: list[str] = []

    def subscribe(observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None) -> Any:
        observer.on_next(1)
        observer.on_completed()
        return Disposable(lambda: disposed.append("sub"))

    assert asyncio.run(drain(Observable(subscribe))) == [1]
    assert disposed == ["sub"]


def test_first_value() -> None:
    assert asyncio.run(first_value(reactivex.of(7, 8))) == 7
    with pytest.raises(LookupError):
        asyncio.run(first_value(reactivex.empty()))


def _census(kinds: tuple[type, ...]) -> dict[str, int]:
    gc.collect()  # what earlier tests left is garbage: only what lives now is counted
    counts: dict[str, int] = {}
    for obj in gc.get_objects():
        name = type(obj).__qualname__
        if isinstance(obj, kinds):
            counts[name] = counts.get(name, 0) + 1
        elif type(obj).__name__ == "function" and obj.__qualname__.startswith("drain."):
            counts[obj.__qualname__] = counts.get(obj.__qualname__, 0) + 1
    return counts


def test_a_pending_drain_holds_one_observer_and_no_wrapper() -> None:
    """While a drain waits: no AutoDetachObserver, no closures of drain; its observer is one object."""
    source = _Source()

    async def main() -> dict[str, int]:
        task, observer = await source.drained()
        counts = _census((AutoDetachObserver, type(observer)))
        observer.on_completed()
        await task
        return counts

    counts = asyncio.run(main())
    assert counts == {"_Drain": 1}


def test_a_pending_drain_holds_no_list_until_the_first_item() -> None:
    """A chain that emits nothing: no list while waiting, and a fresh [] at the end."""
    source = _Source()

    async def main() -> tuple[list[Any], list[Any]]:
        task, observer = await source.drained()
        assert not [obj for obj in gc.get_referents(observer) if isinstance(obj, list)]
        observer.on_completed()
        first = await task
        second = await drain(reactivex.empty())
        return first, second

    first, second = asyncio.run(main())
    assert first == [] and second == []
    assert first is not second  # each drain's own list: the caller may change it


def test_a_pending_drain_holds_one_list_once_items_come() -> None:
    source = _Source()

    async def main() -> list[Any]:
        task, observer = await source.drained()
        observer.on_next("a")
        observer.on_next("b")
        (items,) = [obj for obj in gc.get_referents(observer) if isinstance(obj, list)]
        observer.on_completed()
        result = await task
        assert result is items
        return result

    assert asyncio.run(main()) == ["a", "b"]
