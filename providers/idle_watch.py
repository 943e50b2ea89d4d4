"""The idle bound between two pieces of a response body, re-armed lazily.

aiohttp's ``sock_read`` timeout re-arms a loop timer on every read: a ``call_later``,
the old timer's cancellation and a heap push, about 2-4 µs per read, and in live mode
every SSE event arrives in a read of its own. ``IdleWatch`` instead records when the
latest piece arrived (one clock read, ``touch``) and keeps one timer armed per bound:
when the timer fires early, it re-arms for the time left; once the bound has passed
with no piece, it cancels the watched task, and ``stop`` (the end of the block) turns
that cancellation into ``TimeoutError`` (the transport reports a retryable ``timeout``
error, as it did for aiohttp's ``ServerTimeoutError``), as ``asyncio.timeout`` does.

It is one object for as long as a stream reads: the timer's callback is the watch itself
(no bound method), the timer runs in the context the caller gives (the transport's task
context: no context copied per timer), and it does ``asyncio.timeout``'s cancel and
uncancel bookkeeping itself instead of holding one. ``rebound`` moves a watch from one
bound to the next (the socket reader's connect bound, the first-byte bound, then the idle
bound) on the same timer: a later deadline re-arms from the early firing, so no cancelled
timer is left in the loop's heap.

The bound is measured on the event loop's clock, the one its timers run on.
"""

from __future__ import annotations

__all__ = ("IdleWatch",)

import asyncio
import contextvars
from types import TracebackType


class IdleWatch:
    """``async with IdleWatch(seconds) as watch:`` raises ``TimeoutError`` after *seconds* without ``touch``.

    *seconds* ``None``: no bound (the block runs as if unwatched). Without ``async with``:
    ``start()`` in the task to watch, then ``stop(exc_type)`` at the end of the block, raising
    ``TimeoutError`` when it says ``True``. *context*: the one the timer's callback runs in.
    """

    __slots__ = ("_cancelling", "_context", "_expired", "_handle", "_loop", "_task", "last", "seconds")

    def __init__(self, seconds: float | None, *, context: contextvars.Context | None = None) -> None:
        self.seconds = seconds
        self.last = 0.0
        """The loop time of the latest ``touch`` (or of entering the block)."""
        self._context = context
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[object] | None = None
        self._cancelling = 0
        self._expired = False
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> IdleWatch:
        """Watch the current task from now."""
        self._task = asyncio.current_task()
        if self._task is None:
            raise RuntimeError("IdleWatch must be used inside a task")
        self._cancelling = self._task.cancelling()
        loop = self._loop = asyncio.get_running_loop()
        self.last = loop.time()
        if self.seconds is not None:
            self._arm(self.last + self.seconds)
        return self

    def rebound(self, seconds: float | None, *, since: float | None = None) -> None:
        """A new bound of *seconds* from now (or from *since*), on the same timer where it fires no later.

        *since* (a loop time): the transport's first-byte bound after its connect bound, both from the
        attempt's start (``since=watch.last`` before any ``touch``).
        """
        loop = self._loop
        if loop is None:
            raise RuntimeError("IdleWatch.rebound before start")
        self.seconds = seconds
        self.last = loop.time() if since is None else since
        handle = self._handle
        if seconds is None:
            self._disarm()
        elif handle is None or handle.when() > self.last + seconds:
            # Sooner than the armed timer: re-armed (the rare case; equal bounds never get here).
            self._disarm()
            self._arm(self.last + seconds)

    def stop(self, exc_type: type[BaseException] | None) -> bool:
        """End the watch; ``True``: the block's cancellation is the expired bound's (raise TimeoutError)."""
        self._disarm()
        if not self._expired:
            return False
        self._expired = False
        task = self._task
        assert task is not None
        # As asyncio.timeout: only a cancellation nobody else asked for becomes TimeoutError.
        return task.uncancel() <= self._cancelling and exc_type is asyncio.CancelledError

    async def __aenter__(self) -> IdleWatch:
        return self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.stop(exc_type):
            raise TimeoutError from exc

    def touch(self) -> None:
        """A piece arrived: the idle period starts again now."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("IdleWatch.touch outside its block")
        self.last = loop.time()

    def _arm(self, when: float) -> None:
        assert self._loop is not None
        # The watch is the callback (``__call__``): no bound method held by the timer.
        self._handle = self._loop.call_at(when, self, context=self._context)

    def _disarm(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        loop, seconds = self._loop, self.seconds
        assert loop is not None and seconds is not None
        due = self.last + seconds
        now = loop.time()
        if now < due:
            # Pieces arrived meanwhile: wait for the rest of the bound from the latest one.
            self._arm(due)
            return
        self._handle = None
        self._expired = True
        assert self._task is not None
        self._task.cancel()

    __call__ = _check
