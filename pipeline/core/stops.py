"""The stop registry: one stop subject per channel's active stream (stage 04).

A bot's command handlers call ``registry.stop(channel_id, StopKind.USER)``
(or ``INTERRUPT`` when a follow-up message arrives, ``KILL`` for /kill); the
stream running in that channel sees it through its ``ReplaySubject(1)``, so
a stop sent between ``open`` and the chain's subscription is not lost. A
stop for a channel where nothing streams is a no-op.
"""

from __future__ import annotations

__all__ = ("StopHandle", "StopRegistry")

import attrs
from loguru import logger
from reactivex import Observable
from reactivex.scheduler import ImmediateScheduler
from reactivex.subject import ReplaySubject
from rxcord.core.types import StopKind, StopSignal

_log = logger.bind(stage="04-stops")


def _new_subject() -> ReplaySubject[StopSignal]:
    # Immediate scheduling: a stop reaches the gate synchronously, wherever it is raised
    # (the default CurrentThreadScheduler would defer it while a trampoline runs).
    return ReplaySubject(1, scheduler=ImmediateScheduler())


@attrs.define
class StopHandle:
    """The stop subject of one stream."""

    channel_id: str
    subject: ReplaySubject[StopSignal] = attrs.field(factory=_new_subject)

    @property
    def signals(self) -> Observable[StopSignal]:
        """The stop signals, as the chain consumes them."""
        return self.subject

    def stop(self, kind: StopKind, reason: str = "") -> None:
        """Ask this stream to stop (safe from inside the chain: the gate defers it to the next chunk)."""
        self.subject.on_next(StopSignal(kind, reason))


@attrs.define
class StopRegistry:
    """Active streams by channel id."""

    _handles: dict[str, StopHandle] = attrs.field(factory=dict)

    def open(self, channel_id: str) -> StopHandle:
        """Register a new stream for *channel_id* (replacing a finished one)."""
        handle = StopHandle(channel_id)
        self._handles[channel_id] = handle
        return handle

    def close(self, handle: StopHandle) -> None:
        """Forget *handle* once its stream ended (only if it is still the channel's current one)."""
        if self._handles.get(handle.channel_id) is handle:
            del self._handles[handle.channel_id]

    def stop(self, channel_id: str, kind: StopKind, reason: str = "") -> bool:
        """Stop the stream in *channel_id*; return whether one was running."""
        handle = self._handles.get(channel_id)
        if handle is None:
            _log.debug(
                "stop {kind} for channel {channel}: nothing streams there",
                kind=kind.value,
                channel=channel_id,
            )
            return False
        handle.stop(kind, reason)
        return True

    def active(self) -> tuple[str, ...]:
        """Channels with a running stream."""
        return tuple(self._handles)
