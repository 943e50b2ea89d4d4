"""The stop registry: one stop subject per channel's active stream (stage 04).

A bot's command handlers call ``registry.stop(channel_id, StopKind.USER)``
(or ``INTERRUPT`` when a follow-up message arrives, ``KILL`` for /kill); the
stream running in that channel sees it through its stop subject, which
replays the last stop to a late subscriber (``ReplaySubject(1)``'s behaviour,
``rxcord.core.replay_last``), so a stop sent between ``open`` and the chain's
subscription is not lost. A stop for a channel where nothing streams is a
no-op; one for a channel where several streams run reaches each of them.

Stops are raised on the event loop's thread (every caller in rxcord does: the
bot's commands and follow-ups, the Redis stop bus's reader task, the chain's
own stages); a stop from another thread goes through
``loop.call_soon_threadsafe(handle.stop, kind)``.
"""

from __future__ import annotations

__all__ = ("StopHandle", "StopRegistry")

import attrs
from loguru import logger
from reactivex import Observable

from rxcord.core.replay_last import ReplayLast
from rxcord.core.types import StopKind, StopSignal

_log = logger.bind(stage="04-stops")


def _new_subject() -> ReplayLast[StopSignal]:
    # What ReplaySubject(1, scheduler=ImmediateScheduler()) did: a stop reaches the gate
    # synchronously, wherever it is raised; a late subscriber gets the last stop at once. Light:
    # the subject and one link per subscriber, not ReplaySubject's locks, queues and wrappers.
    return ReplayLast()


@attrs.define
class StopHandle:
    """The stop subject of one stream."""

    channel_id: str
    subject: ReplayLast[StopSignal] = attrs.field(factory=_new_subject)

    @property
    def signals(self) -> Observable[StopSignal]:
        """The stop signals, as the chain consumes them."""
        return self.subject

    def stop(self, kind: StopKind, reason: str = "") -> None:
        """Ask this stream to stop (safe from inside the chain: the gate defers it to the next chunk).

        Call it on the stream's event loop thread (the subject holds no lock).
        """
        self.subject.on_next(StopSignal(kind, reason))


@attrs.define
class StopRegistry:
    """Active streams by channel id (several may run in one channel).

    ``open`` never replaces a running stream's handle: each stream gets its own,
    and a channel stop reaches every stream still open in that channel.
    ``close`` forgets exactly the handle it is given; closing twice, or in any
    order, is harmless.
    """

    _handles: dict[str, list[StopHandle]] = attrs.field(factory=dict)

    def open(self, channel_id: str) -> StopHandle:
        """Register a new stream for *channel_id*, beside any stream already running there."""
        handle = StopHandle(channel_id)
        self._handles.setdefault(channel_id, []).append(handle)
        return handle

    def close(self, handle: StopHandle) -> None:
        """Forget *handle* once its stream ended (idempotent; other streams stay registered)."""
        handles = self._handles.get(handle.channel_id)
        if handles is None:
            return
        for index, registered in enumerate(handles):
            if registered is handle:
                del handles[index]
                break
        if not handles:
            del self._handles[handle.channel_id]

    def stop(self, channel_id: str, kind: StopKind, reason: str = "") -> bool:
        """Stop every stream in *channel_id*; return whether one was running."""
        handles = self._handles.get(channel_id)
        if not handles:
            _log.debug(
                "stop {kind} for channel {channel}: nothing streams there",
                kind=kind.value,
                channel=channel_id,
            )
            return False
        for handle in tuple(handles):  # a stop may close a stream synchronously
            handle.stop(kind, reason)
        return True

    def handles(self, channel_id: str) -> tuple[StopHandle, ...]:
        """The open streams' handles in *channel_id*, oldest first."""
        return tuple(self._handles.get(channel_id, ()))

    def active(self) -> tuple[str, ...]:
        """Channels with a running stream."""
        return tuple(self._handles)
