"""A timer that fires once its owner has been quiet for a while, cheaply.

Restarting a scheduler timer on every chunk costs about 8 µs on the asyncio
scheduler (a ``call_later`` plus its cancellation and disposables), more than
the rest of a stage's work per chunk. ``QuietTimer`` instead records the time
of the latest activity (one clock read) and keeps at most one timer armed:
when it fires early because activity happened meanwhile, it re-arms for the
remaining time. It fires exactly ``seconds`` after the last activity, as a
timer restarted on every chunk would, under any scheduler (asyncio or the
marble test scheduler).

Time is read in seconds: under asyncio from the event loop's monotonic clock,
the one its timers run on (``scheduler.now`` builds a wall-clock ``datetime``
on every read, several times the cost); under any other scheduler from
``scheduler.now``, so virtual time stays exact.
"""

from __future__ import annotations

__all__ = ("QuietTimer", "seconds_clock")

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

from reactivex import abc
from reactivex.scheduler.eventloop import AsyncIOScheduler

from rxcord.core.stream_scheduler import context_of
from rxcord.operators.light import LightSerial, unbound


def seconds_clock(scheduler: abc.SchedulerBase) -> Callable[[], float]:
    """A clock in seconds that agrees with *scheduler*'s timers (cheap under asyncio)."""
    loop = _loop_of(scheduler)
    if loop is not None:
        # AsyncIOScheduler schedules with loop.call_later: loop.time() is its clock.
        return loop.time

    def now() -> float:
        return scheduler.to_seconds(scheduler.now)

    return now


def _loop_of(scheduler: abc.SchedulerBase) -> asyncio.AbstractEventLoop | None:
    loop = getattr(scheduler, "_loop", None)
    if isinstance(scheduler, AsyncIOScheduler) and isinstance(loop, asyncio.AbstractEventLoop):
        return loop
    return None


class QuietTimer(abc.DisposableBase):
    """Calls ``on_quiet`` after ``seconds`` without ``poke``; one timer armed at most.

    Under asyncio the timer is the loop's own ``call_later`` handle (the loop the
    scheduler runs on), with this object as its callback: the scheduler's
    ``schedule_relative`` would add two disposables, two locks and two closures per armed
    timer, and a bound method as callback one more object, all held by every live stream
    for the collector to walk. The clock is read through the loop (no bound ``loop.time``
    kept), and a bound method given as ``on_quiet`` is kept as its function and object
    (``rxcord.operators.light.unbound``). Under any other scheduler (the marble test
    scheduler) the timer is the scheduler's.

    Two more things a live stream would otherwise hold for every full collection to walk:

    - ``cancel`` is lazy under asyncio. A cancelled ``TimerHandle`` stays in the loop's
      heap until its deadline (asyncio drops cancelled handles lazily), so cancelling and
      re-arming leaves one dead handle behind per cycle. Instead the armed handle is kept
      and only the timer is marked idle: the handle, when it fires with nothing to do,
      just disarms, and a ``poke`` meanwhile re-uses it (the firing re-arms for the time
      left, as for any poke). Only ``dispose`` cancels the handle, for good.
    - One context for all the timer's handles. ``call_later`` without ``context=`` copies
      the current ``contextvars.Context`` per call. On a ``StreamScheduler`` (``drain``'s)
      the timer runs in the stream's context (``context_of``), shared by every timer of
      the stream: no copy at all. On any other asyncio scheduler the context is copied
      once, at the first arm, and given to every later one. Either way the callback runs in
      the context of the stream, as before, without a copy per arm. (The stream's context
      is only given to loop handles, each run on its own, never entered while it runs.)
    """

    __slots__ = (
        "_armed",
        "_context",
        "_dead",
        "_handle",
        "_last",
        "_loop",
        "_quiet_fn",
        "_quiet_of",
        "_scheduler",
        "_serial",
        "seconds",
    )

    def __init__(self, scheduler: abc.SchedulerBase, seconds: float, on_quiet: Callable[[], None]) -> None:
        self._scheduler = scheduler
        self._loop = _loop_of(scheduler)
        self.seconds = seconds
        self._quiet_fn, self._quiet_of = unbound(on_quiet)
        self._serial: LightSerial | None = None
        self._handle: asyncio.TimerHandle | None = None
        # The stream's (a StreamScheduler's), else copied at the first arm (asyncio).
        self._context: contextvars.Context | None = context_of(scheduler)
        self._armed = False
        self._dead = False
        self._last: float | None = None

    @property
    def disposable(self) -> abc.DisposableBase:
        """Dispose this to cancel the armed timer for good."""
        return self

    def dispose(self) -> None:
        self._last = None
        self._dead = True  # never armed again
        self._armed = False
        self._context = None
        if self._handle is not None:  # the one place a loop handle is cancelled
            self._handle.cancel()
            self._handle = None
        if self._serial is not None:
            self._serial.dispose()

    def _now(self) -> float:
        loop = self._loop
        if loop is not None:
            return loop.time()
        scheduler = self._scheduler
        return scheduler.to_seconds(scheduler.now)

    def poke(self) -> None:
        """Activity: the quiet period starts again now."""
        loop = self._loop  # the clock read written out: a poke per chunk, a call less each
        self._last = loop.time() if loop is not None else self._now()
        if not self._armed:
            self._arm(self.seconds)

    def cancel(self) -> None:
        """Stop waiting (until the next ``poke``).

        Under asyncio the armed handle stays (see the class docstring): idle, it fires into
        nothing; a ``poke`` before it fires re-uses it.
        """
        self._last = None
        if self._serial is not None:  # another scheduler: its timer disposed, as ever
            self._armed = False
            self._serial.disposable = None

    def _arm(self, delay: float) -> None:
        if self._dead:
            return
        self._armed = True
        loop = self._loop
        if loop is not None:
            context = self._context
            if context is None:
                context = self._context = contextvars.copy_context()
            self._handle = loop.call_later(delay, self, context=context)
        else:
            if self._serial is None:  # made when first armed: most timers of a test never are
                self._serial = LightSerial()
            self._serial.disposable = self._scheduler.schedule_relative(delay, self._fire)

    def __call__(self) -> None:
        """The loop's timer fired."""
        self._handle = None
        self._fire(self._scheduler)

    def _fire(self, scheduler: abc.SchedulerBase, state: Any = None) -> None:
        self._armed = False
        if self._last is None:
            return
        remaining = self._last + self.seconds - self._now()
        if remaining > 1e-6:
            self._arm(remaining)
            return
        self._last = None
        self._quiet_fn(self._quiet_of)
