"""StreamScheduler: the asyncio scheduler of one stream, with the one context its timers run in."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

from reactivex import Observable, abc
from reactivex.disposable import Disposable
from reactivex.scheduler import CurrentThreadScheduler, ImmediateScheduler
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import TestScheduler

from rxcord.core.stream_scheduler import StreamScheduler, context_of
from rxcord.operators.aio import drain
from rxcord.operators.quiet_timer import QuietTimer

_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("stream", default="none")
_FIRED: contextvars.ContextVar[int] = contextvars.ContextVar("fired", default=0)


def test_context_of_other_schedulers_is_none() -> None:
    loop = asyncio.new_event_loop()
    try:
        others: list[abc.SchedulerBase | None] = [
            None,
            AsyncIOScheduler(loop),
            TestScheduler(),
            CurrentThreadScheduler(),
            ImmediateScheduler(),
        ]
        assert [context_of(scheduler) for scheduler in others] == [None] * len(others)
    finally:
        loop.close()


def test_a_stream_scheduler_copies_the_current_context_once() -> None:
    loop = asyncio.new_event_loop()
    try:
        token = _VAR.set("made")
        try:
            scheduler = StreamScheduler(loop)
        finally:
            _VAR.reset(token)
        context = context_of(scheduler)
        assert context is scheduler.context and context is context_of(scheduler)
        assert context[_VAR] == "made"  # the values when made, not what is set later
        given = contextvars.Context()
        assert context_of(StreamScheduler(loop, given)) is given
    finally:
        loop.close()


def _stream_of_timers(count: int, seen: list[tuple[str, contextvars.Context | None]]) -> Observable[str]:
    """A source that arms *count* quiet timers on its subscription's scheduler, completing at the last."""

    def subscribe(observer: abc.ObserverBase[str], scheduler: abc.SchedulerBase | None = None) -> Any:
        assert scheduler is not None
        left = [count]

        def quiet() -> None:
            seen.append((_VAR.get(), context_of(scheduler)))
            _FIRED.set(_FIRED.get() + 1)  # lands in the context the callback runs in
            left[0] -= 1
            if not left[0]:
                observer.on_next(_VAR.get())
                observer.on_completed()

        timers = [QuietTimer(scheduler, 0.0, quiet) for _ in range(count)]
        for timer in timers:
            timer.poke()

        def dispose() -> None:
            for timer in timers:
                timer.dispose()

        return Disposable(dispose)

    return Observable(subscribe)


def test_drain_gives_the_stream_one_context_holding_what_was_set_before() -> None:
    """A contextvar set before drain is seen by the timers' callbacks, all run in the one context."""
    seen: list[tuple[str, contextvars.Context | None]] = []

    async def main() -> list[str]:
        _VAR.set("before drain")
        items = await drain(_stream_of_timers(3, seen))
        assert _FIRED.get() == 0  # the awaiting task's own context is not the stream's
        return items

    assert asyncio.run(main()) == ["before drain"]
    assert [value for value, _ in seen] == ["before drain"] * 3
    (context,) = {id(context): context for _, context in seen}.values()
    assert context is not None and context[_FIRED] == 3  # all three callbacks ran in it


def test_drain_subscribes_with_a_stream_scheduler_on_the_running_loop() -> None:
    schedulers: list[abc.SchedulerBase | None] = []

    def subscribe(observer: abc.ObserverBase[int], scheduler: abc.SchedulerBase | None = None) -> Any:
        schedulers.append(scheduler)
        observer.on_completed()
        return Disposable()

    async def main() -> asyncio.AbstractEventLoop:
        await drain(Observable(subscribe))
        await drain(Observable(subscribe))
        return asyncio.get_running_loop()

    loop = asyncio.run(main())
    first, second = schedulers
    assert isinstance(first, StreamScheduler) and isinstance(second, StreamScheduler)
    assert first._loop is loop  # type: ignore[attr-defined]
    assert first.context is not second.context  # one context per stream
