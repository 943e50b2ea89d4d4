"""A timer that fires once its owner has been quiet for a while, cheaply.

Restarting a scheduler timer on every chunk costs about 8 µs on the asyncio
scheduler (a ``call_later`` plus its cancellation and disposables), more than
the rest of a stage's work per chunk. ``QuietTimer`` instead records the time
of the latest activity (one clock read) and keeps at most one timer armed:
when it fires early because activity happened meanwhile, it re-arms for the
remaining time. It fires exactly ``seconds`` after the last activity, as a
timer restarted on every chunk would, under any scheduler (asyncio or the
marble test scheduler).
"""

from __future__ import annotations

__all__ = ("QuietTimer",)

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from reactivex import abc
from reactivex.disposable import SerialDisposable


class QuietTimer:
    """Calls ``on_quiet`` after ``seconds`` without ``poke``; one timer armed at most."""

    __slots__ = ("_armed", "_last", "_on_quiet", "_period", "_scheduler", "_serial", "seconds")

    def __init__(self, scheduler: abc.SchedulerBase, seconds: float, on_quiet: Callable[[], None]) -> None:
        self._scheduler = scheduler
        self.seconds = seconds
        self._period = timedelta(seconds=seconds)
        self._on_quiet = on_quiet
        self._serial = SerialDisposable()
        self._armed = False
        self._last: datetime | None = None

    @property
    def disposable(self) -> abc.DisposableBase:
        """Dispose this to cancel the armed timer for good."""
        return self._serial

    def poke(self) -> None:
        """Activity: the quiet period starts again now."""
        self._last = self._scheduler.now
        if not self._armed:
            self._arm(self.seconds)

    def cancel(self) -> None:
        """Stop waiting (until the next ``poke``)."""
        self._last = None
        self._armed = False
        self._serial.disposable = None

    def _arm(self, delay: float) -> None:
        self._armed = True
        self._serial.disposable = self._scheduler.schedule_relative(delay, self._fire)

    def _fire(self, scheduler: abc.SchedulerBase, state: Any = None) -> None:
        self._armed = False
        if self._last is None:
            return
        remaining = (self._last + self._period - self._scheduler.now).total_seconds()
        if remaining > 1e-6:
            self._arm(remaining)
            return
        self._last = None
        self._on_quiet()
