"""The idle bound between two pieces of a response body, re-armed lazily.

aiohttp's ``sock_read`` timeout re-arms a loop timer on every read: a ``call_later``,
the old timer's cancellation and a heap push, about 2-4 µs per read, and in live mode
every SSE event arrives in a read of its own. ``IdleWatch`` instead records when the
latest piece arrived (one clock read, ``touch``) and keeps one timer armed per bound:
when the timer fires early, it re-arms for the time left; once the bound has passed
with no piece, it expires the enclosing ``asyncio.timeout``, which cancels the reading
task and turns that cancellation into ``TimeoutError`` (the transport reports a
retryable ``timeout`` error, as it did for aiohttp's ``ServerTimeoutError``).

The bound is measured on the event loop's clock, the one its timers run on.
"""

from __future__ import annotations

__all__ = ("IdleWatch",)

import asyncio
from collections.abc import Callable
from types import TracebackType


class IdleWatch:
    """``async with IdleWatch(seconds) as watch:`` raises ``TimeoutError`` after *seconds* without ``touch``.

    *seconds* ``None``: no bound (the block runs as if unwatched).
    """

    __slots__ = ("_clock", "_handle", "_loop", "_timeout", "last", "seconds")

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.last = 0.0
        """The loop time of the latest ``touch`` (or of entering the block)."""
        self._timeout = asyncio.timeout(None)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._clock: Callable[[], float] = _not_entered
        self._handle: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> IdleWatch:
        await self._timeout.__aenter__()
        loop = self._loop = asyncio.get_running_loop()
        self._clock = loop.time  # bound once: ``touch`` runs on every read
        self.last = loop.time()
        if self.seconds is not None:
            self._handle = loop.call_at(self.last + self.seconds, self._check)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        # Turns the cancellation of an expired bound into TimeoutError; never swallows one.
        await self._timeout.__aexit__(exc_type, exc, traceback)

    def touch(self) -> None:
        """A piece arrived: the idle period starts again now."""
        self.last = self._clock()

    def _check(self) -> None:
        loop, seconds = self._loop, self.seconds
        assert loop is not None and seconds is not None
        due = self.last + seconds
        now = loop.time()
        if now < due:
            # Pieces arrived meanwhile: wait for the rest of the bound from the latest one.
            self._handle = loop.call_at(due, self._check)
            return
        self._handle = None
        self._timeout.reschedule(now)


def _not_entered() -> float:
    raise RuntimeError("IdleWatch.touch outside its async with block")
