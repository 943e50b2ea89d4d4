"""What happens in an emulator, as a stream of events (for the gateway, the page, tests).

The store and the REST dispatcher publish plain events (``message_create``, ``message_update``,
``message_delete``, ``typing_start``, ``thread_create``, ``member_add``, ``member_update``,
``interaction_create``, ``interaction_response``, ``rate_limit``, ``bucket_exhausted``); the
gateway turns them into dispatches and ``GET /_emulator/events`` streams them as server-sent
events. Listeners are called
synchronously and must not block (they put into a queue).
"""

from __future__ import annotations

__all__ = ("EmulatorEvent", "EventHub", "Listener")

import asyncio
import collections
from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class EmulatorEvent:
    """One thing that happened: a ``kind``, its JSON ``data`` and its number in the emulator's history."""

    kind: str
    data: dict[str, Any]
    id: int
    """1, 2, 3, ... in publication order (the SSE ``id:``)."""


Listener = Callable[[EmulatorEvent], None]


class EventHub:
    """Fan-out of emulator events to listeners, with a bounded history for late subscribers.

    Args:
        history: How many recent events to keep (``recent()``).
    """

    def __init__(self, history: int = 1000) -> None:
        self._listeners: list[Listener] = []
        self._recent: collections.deque[EmulatorEvent] = collections.deque(maxlen=history)
        self._count = 0

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` for every later event; returns the function that unsubscribes it."""
        self._listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    def publish(self, kind: str, data: dict[str, Any]) -> EmulatorEvent:
        """Record ``kind`` with ``data`` and hand it to every listener, in subscription order."""
        self._count += 1
        event = EmulatorEvent(kind, data, self._count)
        self._recent.append(event)
        for listener in list(self._listeners):
            listener(event)
        return event

    def expect(
        self, kind: str, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> asyncio.Future[EmulatorEvent]:
        """A future of the next event of ``kind`` (whose data satisfies ``where``) published from now on.

        Call it before doing what causes the event. Example::

            created = emulator.events.expect("message_create")
            ...  # the bot is asked something
            event = await asyncio.wait_for(created, 10)
        """
        future: asyncio.Future[EmulatorEvent] = asyncio.get_running_loop().create_future()

        def listener(event: EmulatorEvent) -> None:
            if not future.done() and event.kind == kind and (where is None or where(event.data)):
                future.set_result(event)

        unsubscribe = self.subscribe(listener)
        future.add_done_callback(lambda _: unsubscribe())
        return future

    def recent(self, kinds: frozenset[str] | None = None) -> list[EmulatorEvent]:
        """The retained history, oldest first, optionally only some kinds."""
        return [event for event in self._recent if kinds is None or event.kind in kinds]
