"""QuietTimer: fires exactly `seconds` after the last poke, with at most one timer armed."""

from __future__ import annotations

import asyncio
import contextvars
import heapq
from typing import Any

from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.testing import TestScheduler

from rxcord.core.stream_scheduler import StreamScheduler
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


# Under asyncio, counted on the loop's own heap: a loop whose clock the test sets (the loop
# never runs; the test fires its due handles in deadline order, as the loop would).


class _Clocked:
    """A new event loop with a settable clock, and its timers fired by hand."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.now = 0.0
        self.loop.time = lambda: self.now  # type: ignore[method-assign]
        self.scheduler = AsyncIOScheduler(self.loop)

    def heap(self) -> list[asyncio.TimerHandle]:
        return list(self.loop._scheduled)  # type: ignore[attr-defined]

    def run_until(self, until: float) -> None:
        """Fire every handle due up to *until*, in deadline order (cancelled ones dropped)."""
        scheduled: list[asyncio.TimerHandle] = self.loop._scheduled  # type: ignore[attr-defined]
        while scheduled and scheduled[0].when() <= until:
            handle = heapq.heappop(scheduled)
            handle._scheduled = False  # type: ignore[attr-defined]  # as the loop does
            if not handle.cancelled():
                self.now = handle.when()
                handle._run()  # type: ignore[attr-defined]
        self.now = until

    def close(self) -> None:
        self.loop.close()


def _asyncio_timer(clocked: _Clocked, fired: list[float], seconds: float = 5.0) -> QuietTimer:
    return QuietTimer(clocked.scheduler, seconds, lambda: fired.append(clocked.now))


def test_cancel_leaves_no_cancelled_handle_in_the_loops_heap() -> None:
    """A hundred poke/cancel cycles: one handle of the timer in the heap, none cancelled."""
    clocked = _Clocked()
    try:
        timer = _asyncio_timer(clocked, [])
        for i in range(100):
            clocked.now = i * 0.01
            timer.poke()
            timer.cancel()
        heap = clocked.heap()
        assert [handle.cancelled() for handle in heap] == [False]
        assert heap[0]._callback is timer  # type: ignore[attr-defined]
    finally:
        clocked.close()


def test_cancel_then_poke_fires_seconds_after_the_poke() -> None:
    """Poke at 0, cancel at 2, poke at 20: fires once at 25, the kept handle re-armed once."""
    clocked = _Clocked()
    try:
        fired: list[float] = []
        timer = _asyncio_timer(clocked, fired)
        timer.poke()
        clocked.run_until(2.0)
        timer.cancel()
        clocked.run_until(20.0)  # the idle handle fired at 5 into nothing, and disarmed
        assert fired == [] and clocked.heap() == []
        timer.poke()
        clocked.run_until(100.0)
        assert fired == [25.0]
        assert clocked.heap() == []
    finally:
        clocked.close()


def test_a_poke_while_the_idle_handle_is_armed_reuses_it() -> None:
    """Poke at 0, cancel at 1, poke at 3: no second handle; the one due at 5 re-arms to 8."""
    clocked = _Clocked()
    try:
        fired: list[float] = []
        timer = _asyncio_timer(clocked, fired)
        timer.poke()
        first = clocked.heap()
        clocked.run_until(1.0)
        timer.cancel()
        clocked.run_until(3.0)
        timer.poke()
        assert clocked.heap() == first
        clocked.run_until(100.0)
        assert fired == [8.0]
    finally:
        clocked.close()


def test_one_context_copied_for_every_arm() -> None:
    """The first arm copies the poking context; re-arms give that same context (no copy each)."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("stream", default="none")
    clocked = _Clocked()
    try:
        seen: list[str] = []
        timer = QuietTimer(clocked.scheduler, 5.0, lambda: seen.append(var.get()))
        stream = contextvars.copy_context()
        stream.run(var.set, "stream-1")
        stream.run(timer.poke)
        (first,) = clocked.heap()
        context = first._context  # type: ignore[attr-defined]
        assert context is not stream and context[var] == "stream-1"
        clocked.run_until(1.0)
        timer.poke()  # the handle due at 5 re-arms for 1 more second
        clocked.run_until(5.0)
        (second,) = clocked.heap()
        assert second is not first and second._context is context  # type: ignore[attr-defined]
        clocked.run_until(100.0)
        timer.poke()  # a new period after firing: the same context again
        (third,) = clocked.heap()
        assert third._context is context  # type: ignore[attr-defined]
        assert seen == ["stream-1"]
    finally:
        clocked.close()


def test_dispose_cancels_the_kept_handle_for_good() -> None:
    """Disposed after a lazy cancel: the handle is cancelled, a later poke arms nothing."""
    clocked = _Clocked()
    try:
        fired: list[float] = []
        timer = _asyncio_timer(clocked, fired)
        timer.poke()
        timer.cancel()
        (handle,) = clocked.heap()
        timer.dispose()
        assert handle.cancelled()
        timer.poke()
        clocked.run_until(100.0)
        assert fired == [] and clocked.heap() == []
    finally:
        clocked.close()


def test_on_a_running_loop_cycles_keep_one_handle() -> None:
    """The same count on a running loop: poke/cancel cycles add no cancelled handle."""

    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        timer = QuietTimer(AsyncIOScheduler(loop), 60.0, lambda: None)
        scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]
        cancelled_before = sum(handle.cancelled() for handle in scheduled)
        for _ in range(50):
            timer.poke()
            timer.cancel()
        mine = sum(handle._callback is timer for handle in scheduled)  # type: ignore[attr-defined]
        cancelled = sum(handle.cancelled() for handle in scheduled) - cancelled_before
        timer.dispose()
        return mine, cancelled

    assert asyncio.run(main()) == (1, 0)


# On drain's StreamScheduler every timer of the stream runs in the stream's one context.


def test_timers_on_one_stream_scheduler_arm_with_its_context() -> None:
    """Three timers of one stream: every handle, first arm and re-arm, holds the scheduler's context."""
    clocked = _Clocked()
    scheduler = StreamScheduler(clocked.loop)
    try:
        fired: list[float] = []
        timers = [
            QuietTimer(scheduler, seconds, lambda: fired.append(clocked.now)) for seconds in (1.0, 2.0, 3.0)
        ]
        other = contextvars.copy_context()
        for timer in timers:
            other.run(timer.poke)  # the poking context is not what the handle gets
        handles = clocked.heap()
        assert len(handles) == 3
        assert all(handle._context is scheduler.context for handle in handles)  # type: ignore[attr-defined]
        clocked.run_until(0.5)
        for timer in timers:
            timer.poke()  # each first handle fires early and re-arms for the time left
        clocked.run_until(1.2)
        rearmed = clocked.heap()
        assert rearmed and all(handle._context is scheduler.context for handle in rearmed)  # type: ignore[attr-defined]
        clocked.run_until(100.0)
        assert fired == [1.5, 2.5, 3.5]
    finally:
        clocked.close()


def test_a_timer_callback_runs_in_the_stream_context() -> None:
    """What the callback sets lands in the scheduler's context (it ran there, not in a copy)."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("seen", default="none")
    clocked = _Clocked()
    scheduler = StreamScheduler(clocked.loop)
    try:
        timer = QuietTimer(scheduler, 1.0, lambda: var.set("fired"))
        timer.poke()
        clocked.run_until(10.0)
        assert scheduler.context[var] == "fired"
        assert var.get() == "none"
    finally:
        clocked.close()


def test_a_disposed_timer_drops_the_stream_context() -> None:
    clocked = _Clocked()
    scheduler = StreamScheduler(clocked.loop)
    try:
        timer = QuietTimer(scheduler, 1.0, lambda: None)
        timer.poke()
        timer.dispose()
        assert timer._context is None  # type: ignore[attr-defined]
        timer.poke()
        assert [h for h in clocked.heap() if not h.cancelled()] == []
    finally:
        clocked.close()
