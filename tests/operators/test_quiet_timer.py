"""QuietTimer: fires exactly `seconds` after the last poke, with at most one timer armed."""

from __future__ import annotations

import asyncio
from typing import Any

from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import TestScheduler

from rxcord.operators.quiet_timer import QuietTimer, seconds_clock


def _timer(scheduler: TestScheduler, fired: list[float], seconds: float = 5.0) -> QuietTimer:
    def quiet() -> None:
        fired.append(scheduler.clock)

    return QuietTimer(scheduler, seconds, quiet)


def test_fires_seconds_after_the_last_poke() -> None:
    """Pokes at 0, 3 and 4 fire once, at 9 (4 + 5), as a timer restarted on every poke would."""
    scheduler = TestScheduler()
    fired: list[float] = []
    timer = _timer(scheduler, fired)
    for at in (0.0, 3.0, 4.0):
        scheduler.schedule_absolute(at, lambda *_: timer.poke())
    scheduler.start()
    assert fired == [9.0]


def test_cancel_prevents_firing_until_next_poke() -> None:
    """Cancelled, it stays quiet; a later poke starts a new period."""
    scheduler = TestScheduler()
    fired: list[float] = []
    timer = _timer(scheduler, fired)
    scheduler.schedule_absolute(0.0, lambda *_: timer.poke())
    scheduler.schedule_absolute(2.0, lambda *_: timer.cancel())
    scheduler.schedule_absolute(20.0, lambda *_: timer.poke())
    scheduler.start()
    assert fired == [25.0]


def test_at_most_one_timer_armed() -> None:
    """A thousand pokes arm one scheduler timer (re-armed once when it fires early)."""
    scheduler = TestScheduler()
    fired: list[float] = []
    timer = _timer(scheduler, fired)
    scheduled: list[Any] = []
    original = scheduler.schedule_relative

    def counting(duetime: Any, action: Any, state: Any = None) -> Any:
        scheduled.append(duetime)
        return original(duetime, action, state)

    scheduler.schedule_relative = counting  # type: ignore[method-assign]
    for i in range(1000):
        scheduler.schedule_absolute(i * 0.001, lambda *_: timer.poke())
    scheduler.start()
    assert len(scheduled) == 2
    assert len(fired) == 1 and abs(fired[0] - 5.999) < 1e-6


def test_dispose_cancels_for_good() -> None:
    """Disposing the timer's disposable cancels the armed timer."""
    scheduler = TestScheduler()
    fired: list[float] = []
    timer = _timer(scheduler, fired)
    timer.poke()
    timer.disposable.dispose()
    scheduler.start()
    assert fired == []


def test_under_asyncio_it_reads_the_event_loops_clock() -> None:
    """The asyncio scheduler's timers run on loop.time(): the quiet period is measured on it too."""

    async def main() -> tuple[list[float], float, float]:
        loop = asyncio.get_running_loop()
        scheduler = AsyncIOScheduler(loop)
        assert seconds_clock(scheduler) == loop.time
        fired: list[float] = []
        timer = QuietTimer(scheduler, 0.05, lambda: fired.append(loop.time()))
        pokes: list[float] = []

        def poke() -> None:
            timer.poke()
            pokes.append(loop.time())

        poke()
        # The second poke is a loop timer due before the quiet period ends: even on a loaded
        # machine where both are late, the loop runs it first (timers run in deadline order).
        loop.call_at(loop.time() + 0.03, poke)
        while not fired or len(pokes) < 2:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)  # a second firing would come within this
        return fired, pokes[-1], loop.time()

    fired, last_poke, _ = asyncio.run(main())
    # Once, and never before the quiet period after the last poke has passed.
    assert len(fired) == 1
    assert fired[0] >= last_poke + 0.05 - 1e-3


def test_other_schedulers_read_their_own_now() -> None:
    """Virtual time: the clock is the scheduler's ``now`` in seconds."""
    scheduler = TestScheduler()
    clock = seconds_clock(scheduler)
    scheduler.advance_to(12.5)
    assert clock() == 12.5
