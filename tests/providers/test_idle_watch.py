"""``IdleWatch``: the idle bound between body pieces, with one timer per bound (counted, not timed)."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from rxcord.providers.idle_watch import IdleWatch


class _CountingCallAt:
    """Wraps ``loop.call_at`` to count the timers armed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.real = loop.call_at
        self.calls = 0

    def __call__(self, when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        self.calls += 1
        return self.real(when, callback, *args, **kwargs)


async def test_touches_arm_no_timer_of_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thousand pieces inside the bound: one timer armed in all (aiohttp's sock_read arms one per read)."""
    loop = asyncio.get_running_loop()
    counter = _CountingCallAt(loop)
    monkeypatch.setattr(loop, "call_at", counter)
    async with IdleWatch(3600.0) as watch:
        for _ in range(1000):
            watch.touch()
            await asyncio.sleep(0)
    assert counter.calls == 1


async def test_an_early_check_re_arms_for_the_time_left() -> None:
    """The timer fires while pieces still arrive: it waits again from the latest piece, no timeout."""
    loop = asyncio.get_running_loop()
    async with IdleWatch(3600.0) as watch:
        watch.last = loop.time() - 3000.0  # the latest piece came 3000 s into the bound
        watch._check()
        handle = watch._handle
        assert handle is not None
        assert handle.when() == pytest.approx(watch.last + 3600.0)
        await asyncio.sleep(0)
    assert watch._handle is None  # cancelled on exit


async def test_a_bound_passed_without_a_piece_raises_timeout_error() -> None:
    loop = asyncio.get_running_loop()
    reached = False
    with pytest.raises(TimeoutError):
        async with IdleWatch(10.0) as watch:
            watch.last = loop.time() - 11.0
            watch._check()
            await asyncio.sleep(3600)  # cancelled by the expired bound at once
            reached = True
    assert not reached


async def test_a_real_stall_times_out() -> None:
    """End to end on the loop's own timers: 50 ms without a piece ends the block."""
    with pytest.raises(TimeoutError):
        async with IdleWatch(0.05):
            await asyncio.Event().wait()


async def test_no_bound_arms_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()
    counter = _CountingCallAt(loop)
    monkeypatch.setattr(loop, "call_at", counter)
    async with IdleWatch(None) as watch:
        watch.touch()
        await asyncio.sleep(0)
    assert counter.calls == 0


async def test_other_exceptions_pass_through_and_disarm() -> None:
    watch = IdleWatch(3600.0)
    with pytest.raises(KeyError):
        async with watch:
            raise KeyError("downstream")
    assert watch._handle is None


async def test_a_later_bound_keeps_the_armed_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first-byte bound, then an idle bound ending later: one timer armed in all, none cancelled."""
    loop = asyncio.get_running_loop()
    counter = _CountingCallAt(loop)
    monkeypatch.setattr(loop, "call_at", counter)
    watch = IdleWatch(10.0).start()
    handle = watch._handle
    watch.rebound(10.0)  # later than the armed timer: it fires early and re-arms then
    assert counter.calls == 1 and watch._handle is handle
    assert handle is not None and not handle.cancelled()
    assert watch.stop(None) is False
    assert handle.cancelled() and watch._handle is None


async def test_a_sooner_bound_re_arms() -> None:
    loop = asyncio.get_running_loop()
    watch = IdleWatch(3600.0).start()
    first = watch._handle
    watch.rebound(5.0)
    assert first is not None and first.cancelled()
    assert watch._handle is not None and watch._handle.when() == pytest.approx(loop.time() + 5.0, abs=1.0)
    watch.rebound(None)  # no bound any more: nothing armed
    assert watch._handle is None
    watch.stop(None)


async def test_the_timer_runs_in_the_context_given() -> None:
    """The transport gives its task's context: the timer copies none of its own."""
    mark: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="none")
    context = contextvars.copy_context()
    context.run(mark.set, "the task's")
    watch = IdleWatch(3600.0, context=context).start()
    handle = watch._handle
    assert handle is not None and handle._context is context
    seen: list[str] = []
    context.run(lambda: seen.append(mark.get()))
    assert seen == ["the task's"]
    watch.stop(None)


async def test_a_cancellation_of_someone_else_stays_a_cancellation() -> None:
    """As asyncio.timeout: an expired bound becomes TimeoutError only if nobody else cancelled too."""
    loop = asyncio.get_running_loop()

    async def block() -> None:
        async with IdleWatch(10.0) as watch:
            watch.last = loop.time() - 11.0
            watch._check()  # expired: the task is cancelled once by the watch
            task = asyncio.current_task()
            assert task is not None
            task.cancel()  # and once by someone else
            await asyncio.sleep(3600)

    task = asyncio.ensure_future(block())
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_touch_and_rebound_before_start_are_refused() -> None:
    watch = IdleWatch(1.0)
    with pytest.raises(RuntimeError):
        watch.touch()
    with pytest.raises(RuntimeError):
        watch.rebound(1.0)
