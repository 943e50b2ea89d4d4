"""The asyncio scheduler of one stream, carrying the one ``contextvars.Context`` its callbacks run in.

Every ``loop.call_later`` and ``create_task`` without ``context=`` copies the current context: a
live stream's timers (its quiet timers, the transport's idle bound) and its pump task would each
hold a copy of the same values, one more object per timer for every full collection to walk.
``drain`` subscribes a chain with a ``StreamScheduler`` made once per stream; stages that arm
loop timers or start the stream's tasks run them in ``context_of(scheduler)``, one context per
stream, made where the stream is subscribed (what each copy held before).
"""

from __future__ import annotations

__all__ = ("StreamScheduler", "context_of")

import asyncio
import contextvars

from reactivex import abc
from reactivex.scheduler.eventloop import AsyncIOScheduler


class StreamScheduler(AsyncIOScheduler):
    """``AsyncIOScheduler`` on *loop*, with the stream's *context* (default: a copy of the current one)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, context: contextvars.Context | None = None) -> None:
        super().__init__(loop)
        self.context = contextvars.copy_context() if context is None else context


def context_of(scheduler: abc.SchedulerBase | None) -> contextvars.Context | None:
    """The stream's context where *scheduler* carries one (``None``: copy one as before)."""
    return scheduler.context if isinstance(scheduler, StreamScheduler) else None
