"""The ``flush`` operator: one ``Flusher`` per subscription, threaded through the stream (stage 05).

The flusher itself (what is released when, and where text is cut) is the pure state machine of
``rxcord.operators.flusher``; this module decides the stream's end from the states' statuses, runs
the live idle timer on the subscribe-time scheduler, pushes long live deltas a slice per
scheduler step, and signals the flush cap. The error embed is stage 07's
(``rxcord.sinks.error_embed``): the operator is handed the builder, so stage 05 never imports
upward.
"""

from __future__ import annotations

__all__ = ("ErrorEmbed", "flush")

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeAlias

import attrs
from reactivex import Observable, abc

from rxcord.core.config import StreamConfig
from rxcord.core.state import Segment, StreamState
from rxcord.core.text_buffer import TextBuffer
from rxcord.core.types import (
    DeliveryMode,
    Operator,
    ProviderError,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
)
from rxcord.operators.flusher import YIELD_AT, Flusher
from rxcord.operators.light import LightOperator, LightSerial, Relay, relay
from rxcord.operators.quiet_timer import QuietTimer

ErrorEmbed: TypeAlias = Callable[[ProviderError], Mapping[str, Any]]
"""Builds the Discord embed that reports a provider error (stage 07's ``rxcord.sinks.error_embed``)."""

_DISCARD: Final = frozenset(
    {StreamStatus.FOLLOW_UP_INTERRUPT, StreamStatus.KILLED}
    | {StreamStatus.for_stop(kind) for kind in StopKind if kind.is_internal}
) - {StreamStatus.SPEAKER_GUARD}
"""Statuses that drop the buffer: a follow-up interrupt, a kill, and every internal stop but one.

The speaker guard's stop flushes: the text before the other speaker's turn is the
model's reply (the guard already withheld the turn itself).
"""


def _push_all(flusher: Flusher, parts: TextBuffer | None) -> list[Segment]:
    """Push the kept deltas as one text (aggregated mode); empties *parts*."""
    if not parts:
        return []
    text = parts.getvalue()
    parts.clear()
    return flusher.push(text)


def flush(
    config: StreamConfig,
    stops: abc.ObserverBase[StopSignal] | None = None,
    embed: ErrorEmbed | None = None,
) -> Operator[StreamState, Segment]:
    r"""Turn the orchestrator's states into segments (stage 05).

    Each state's ``delta`` goes to a per-subscription ``Flusher``. The first
    state whose status is not ``STREAMING`` decides the end, once (later states
    are ignored): ``COMPLETED``, ``FUNCTION_CALL``, ``STOPPED_BY_USER`` and
    ``ERROR`` flush everything (``final=True``); ``ERROR`` then adds an
    ``ERROR_EMBED`` segment (built by *embed*) when the error is not retryable
    and neither ``config.suppress_user_errors`` nor ``config.defer_notice`` is
    set; without *embed* the error is reported by the stream's result alone
    (the pipeline always passes stage 07's ``rxcord.sinks.error_embed``).
    ``FOLLOW_UP_INTERRUPT``, ``KILLED`` and internal stops discard the
    buffer, except ``SPEAKER_GUARD``, which flushes the text before the turn.
    Completion of the source flushes if nothing ended the stream.

    Live mode releases segments as they become safe and runs an idle timer on
    the subscribe-time scheduler: ``config.live_idle_flush`` seconds after the
    last text, ``Flusher.idle`` releases what is safe. Aggregated mode releases
    one batch at the end.

    When the released TEXT segments reach ``config.max_flushes``, the operator
    calls ``stops.on_next(StopSignal(StopKind.FLUSH_LIMIT))`` (when *stops* is
    given) after emitting the segment that reached the cap, and releases
    nothing more.

    .. marble::
        -a-b--|         a="One.\n\nTw"  b="o.\n\nThree"   (live)
        [ flush(config) ]
        -A-B--(C,|)     A="One.\n\n"  B="Two.\n\n"  C="Three" (final)

    Args:
        config: The stream's configuration.
        stops: Where to send the ``FLUSH_LIMIT`` stop.
        embed: Builds the error embed (``rxcord.sinks.error_embed``, bound to the provider's
            error description).

    Returns:
        An operator from ``StreamState`` to ``Segment``.

    Raises:
        ValueError: (live mode) subscribed without a scheduler.
    """
    return _Flush(config, stops, embed)


class _Flush(LightOperator[StreamState, Segment]):
    """The ``flush`` operator: its parameters (one slots object, not a closure per stream)."""

    __slots__ = ("config", "embed", "stops")

    def __init__(
        self, config: StreamConfig, stops: abc.ObserverBase[StopSignal] | None, embed: ErrorEmbed | None
    ) -> None:
        self.config = config
        self.stops = stops
        self.embed = embed

    def subscribe_to(
        self,
        source: Observable[StreamState],
        observer: abc.ObserverBase[Segment],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        if self.config.delivery is DeliveryMode.LIVE and scheduler is None:
            raise ValueError("flush() in live mode needs a subscribe-time scheduler")
        return relay(source, _FlushRun(self.config, self.stops, self.embed, observer, scheduler), scheduler)


class _FlushRun(Relay):
    """One subscription of ``flush``: its flusher, the live backlog, and how the stream ended.

    It is the source's observer and the subscription's disposable: ``stopped`` says the
    source has ended (or was released), ``ended`` that the stream's end was decided; a
    backlog can still be pushed after the source completed, so a terminal event releases
    the source only and ``dispose`` also ends the timer and the backlog's step.
    """

    __slots__ = (
        "backlog",
        "completed_source",
        "config",
        "discarded",
        "embed",
        "ended",
        "flusher",
        "live",
        "pending",
        "scheduler",
        "signalled",
        "step",
        "stops",
        "timer",
    )

    def __init__(
        self,
        config: StreamConfig,
        stops: abc.ObserverBase[StopSignal] | None,
        embed: ErrorEmbed | None,
        observer: abc.ObserverBase[Segment],
        scheduler: abc.SchedulerBase | None,
    ) -> None:
        super().__init__(observer)
        self.config = config
        self.stops = stops
        self.embed = embed
        self.scheduler = scheduler
        self.live = config.delivery is DeliveryMode.LIVE
        self.flusher = Flusher(config)
        # Aggregated mode keeps the deltas to scan once at the end; live mode never does.
        self.pending: TextBuffer | None = None if self.live else TextBuffer()
        self.ended = False
        self.discarded = False
        self.signalled = False
        # Live states waiting behind a long delta pushed a slice per scheduler step:
        # (state, characters of its delta already pushed).
        # Made for the first long live delta (most streams never have one).
        self.backlog: deque[tuple[StreamState, int]] | None = None
        self.step: LightSerial | None = None  # made for the first backlog (a long live delta)
        self.completed_source = False
        # One armed timer at most, not one per chunk (see rxcord.operators.quiet_timer).
        self.timer = (
            QuietTimer(scheduler, config.live_idle_flush, self.on_idle) if self.live and scheduler else None
        )

    def emit(self, segments: list[Segment]) -> None:
        for segment in segments:
            if self.discarded:
                # A re-entrant stop (caused by an earlier segment) dropped the rest.
                return
            self.observer.on_next(segment)
        if self.flusher.capped and not self.signalled:
            self.signalled = True
            if self.stops is not None:
                self.stops.on_next(StopSignal(StopKind.FLUSH_LIMIT, "flush cap reached"))

    def on_idle(self) -> None:
        if not self.ended:
            self.emit(self.flusher.idle())

    def stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()

    def on_next(self, state: StreamState) -> None:
        if self.stopped or self.ended:
            return
        if state.status in _DISCARD:
            if self.backlog is not None:
                self.backlog.clear()
            if self.step is not None:
                self.step.dispose()
            self.handle(state)
        elif self.backlog or (self.live and self.scheduler is not None and len(state.delta) > YIELD_AT):
            if self.backlog is None:
                self.backlog = deque()
            self.backlog.append((state, 0))
            if len(self.backlog) == 1:
                self.schedule_slice()
        else:
            self.handle(state)

    def schedule_slice(self) -> None:
        assert self.scheduler is not None
        if self.step is None:
            self.step = LightSerial()
        self.step.disposable = self.scheduler.schedule(self.push_slice)

    def push_slice(self, _scheduler: abc.SchedulerBase, _state: Any = None) -> None:
        """One step of the backlog: the next slice of its first state's delta."""
        backlog = self.backlog
        if backlog is None:
            return
        if backlog and not self.ended:
            state, done = backlog[0]
            if done + YIELD_AT < len(state.delta):
                backlog[0] = (state, done + YIELD_AT)
                self.handle(StreamState(delta=state.delta[done : done + YIELD_AT]))
            else:
                backlog.popleft()
                self.handle(attrs.evolve(state, delta=state.delta[done:]) if done else state)
        if backlog and not self.ended:
            self.schedule_slice()
            return
        backlog.clear()
        if self.completed_source:
            self.finish()

    def handle(self, state: StreamState) -> None:
        if self.ended:
            return
        status = state.status
        if status in _DISCARD:
            self.ended = self.discarded = True
            self.stop_timer()
            self.flusher.discard()
            return
        if not self.live:
            # Aggregated mode releases nothing before the end, and the flusher's output
            # is the same for any chunking: keep the deltas and scan the text once.
            assert self.pending is not None
            if state.delta:
                self.pending.append(state.delta)
            if status is StreamStatus.STREAMING:
                return
            segments = _push_all(self.flusher, self.pending)
        else:
            segments = self.flusher.push(state.delta) if state.delta else []
            if status is StreamStatus.STREAMING:
                if self.timer is not None and state.delta:
                    self.timer.poke()
                if segments or (self.flusher.capped and not self.signalled):  # most deltas: nothing
                    self.emit(segments)
                return
        self.end(state, segments)

    def end(self, state: StreamState, segments: list[Segment]) -> None:
        """The state that ends the stream: everything flushed, then the error embed it calls for."""
        # Mark the end before emitting, so a re-entrant state is ignored.
        self.ended = True
        self.stop_timer()
        segments += self.flusher.flush(final=True)
        error = state.error if state.status is StreamStatus.ERROR else None
        config = self.config
        shown = error is not None and not (
            error.retryable or config.suppress_user_errors or config.defer_notice
        )
        if shown and error is not None and self.embed is not None:
            segments.append(Segment(kind=SegmentKind.ERROR_EMBED, embed=self.embed(error)))
        self.emit(segments)

    def failed(self, error: Exception) -> None:
        self.stop_timer()
        if self.step is not None:
            self.step.dispose()
        self.observer.on_error(error)

    def completed(self) -> None:
        if self.backlog and not self.ended:
            self.completed_source = True  # the last slice completes
            return
        self.finish()

    def dispose(self) -> None:
        self.release()
        if self.timer is not None:
            self.timer.dispose()
        if self.step is not None:
            self.step.dispose()

    def finish(self) -> None:
        if not self.ended:
            self.ended = True
            self.stop_timer()
            self.emit(_push_all(self.flusher, self.pending) + self.flusher.flush(final=True))
        self.observer.on_completed()
