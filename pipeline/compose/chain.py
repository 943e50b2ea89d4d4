"""The ONE observable chain: seven stages composed (top layer).

::

    provider source (RawStreamChunk)                      stage 02   providers/transport.py
      -> normalize (ProcessedChunk) [+ speaker guard]      stage 03   operators/normalize.py
      -> idle_timeout -> stop_gate (take_until stops)      stage 04   operators/idle_timeout.py,
                                                                      operators/stop_gate.py
      -> accumulate (scan: StreamState)                    stage 04   operators/accumulate.py
      -> fan out: states  ──────────────────────────┐
                  states -> flush (Segment)          │     stage 05   operators/flush.py
                         -> clean                    │     stage 06   operators/clean.py
                         -> typing_heartbeat         │     stage 04   operators/typing_heartbeat.py
                         -> deliver (Delivery)       │     stage 07   operators/deliver.py, delivery.py
      -> merge ──────────────────────────────────────┘
      -> collect_result (StreamResult; hard kill)          stage 04   operators/collect_result.py

Stage 01 (context assembly) happens before the source exists: the adapter's
``build_request``. Everything here is lazy: nothing runs until the returned
observable is subscribed, and each subscription is an independent stream.

Given a ``Timeline`` (``rxcord.operators.timeline``), ``build_chain`` adds pass-through
taps after the source, the normalizer, the orchestrator, the flusher, the
cleaner and the result; without one it adds none.
"""

from __future__ import annotations

__all__ = ("build_chain", "delivery_branch", "routing")

from collections.abc import Callable
from typing import TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable
from rxcord.core.config import StreamConfig
from rxcord.core.state import Delivery, Segment, StreamResult, StreamState, TypingPulse
from rxcord.core.types import (
    ChunkNormalizer,
    Operator,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    StopSignal,
)
from rxcord.operators.accumulate import accumulate
from rxcord.operators.clean import clean
from rxcord.operators.collect_result import collect_result
from rxcord.operators.flush import flush
from rxcord.operators.idle_timeout import idle_timeout
from rxcord.operators.normalize import normalize
from rxcord.operators.prefill import prefill
from rxcord.operators.speaker_guard import speaker_guard
from rxcord.operators.stop_gate import stop_gate
from rxcord.operators.timeline import CLEAN, FLUSH, Timeline
from rxcord.operators.typing_heartbeat import typing_heartbeat
from rxcord.sinks.deliver import deliver

_T = TypeVar("_T")

Send = Callable[[Segment | TypingPulse], Observable[Delivery]]
Merge = Callable[[Segment | TypingPulse, Segment | TypingPulse], Segment | TypingPulse | None]

# deliver() is generic; pinned to this chain's items here, where mypy cannot infer them.
_deliver: Callable[[Send, Merge | None], Operator[Segment | TypingPulse, Delivery]] = deliver


def routing(
    normalizer: Callable[[], ChunkNormalizer],
    config: StreamConfig,
    stops: Observable[StopSignal],
    stop_sink: abc.ObserverBase[StopSignal] | None = None,
    timeline: Timeline | None = None,
) -> Operator[RawStreamChunk, StreamState]:
    """Stages 03-04: raw chunks to orchestrator states (*timeline* records each processed chunk)."""
    speaker: Operator[ProcessedChunk, ProcessedChunk] = (
        speaker_guard(config.speaker_names, stop_sink) if config.speaker_names else _identity
    )
    guarded: Operator[ProcessedChunk, ProcessedChunk] = reactivex.compose(prefill(config.prefill), speaker)
    return reactivex.compose(
        normalize(normalizer),
        timeline.chunk_tap() if timeline is not None else _identity,
        guarded,
        idle_timeout(config.idle_timeout),
        stop_gate(stops),
        accumulate(),
    )


def delivery_branch(
    config: StreamConfig,
    send: Send,
    stop_sink: abc.ObserverBase[StopSignal] | None = None,
    *,
    timeline: Timeline | None = None,
    describe: Callable[[ProviderError], str] | None = None,
    merge: Merge | None = None,
) -> Operator[StreamState, Delivery]:
    """Stages 05-07: states to Discord deliveries (*timeline* records the segments of 05 and 06)."""
    if timeline is not None:
        return reactivex.compose(
            flush(config, stop_sink, describe),
            timeline.segment_tap(FLUSH),
            clean(config),
            timeline.segment_tap(CLEAN),
            typing_heartbeat(config.typing_interval),
            _deliver(send, merge),
        )
    return reactivex.compose(
        flush(config, stop_sink, describe),
        clean(config),
        typing_heartbeat(config.typing_interval),
        _deliver(send, merge),
    )


def _identity(source: Observable[_T]) -> Observable[_T]:
    return source


def _fan_out(branch: Operator[StreamState, Delivery]) -> Operator[StreamState, StreamState | Delivery]:
    """Each state to the result, then through *branch*; the states and the deliveries as one stream.

    What ``publish`` + ``merge(states, states.pipe(branch))`` do, without a subject and a
    merge lock per state: the result sees each state before the deliveries it causes, the
    stream completes when the states and the branch have both completed, the first error
    ends it, and disposing it disposes the branch, then the source.
    """

    def _op(source: Observable[StreamState]) -> Observable[StreamState | Delivery]:
        def subscribe(
            observer: abc.ObserverBase[StreamState | Delivery], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            fan = _Fan(observer)
            entry: Observable[StreamState] = Observable(fan.attach)
            branch_subscription = entry.pipe(branch).subscribe(
                fan.on_delivery, fan.on_error, fan.on_branch_completed, scheduler=scheduler
            )
            source_subscription = source.subscribe(
                fan.on_next, fan.on_error, fan.on_completed, scheduler=scheduler
            )
            return CompositeDisposable(branch_subscription, source_subscription)

        return Observable(subscribe)

    return _op


class _Fan:
    """Per-subscription state of ``_fan_out``."""

    __slots__ = ("branch", "branch_done", "finished", "observer", "states_done")

    def __init__(self, observer: abc.ObserverBase[StreamState | Delivery]) -> None:
        self.observer = observer
        self.branch: abc.ObserverBase[StreamState] | None = None
        self.states_done = False
        self.branch_done = False
        self.finished = False

    def attach(
        self, observer: abc.ObserverBase[StreamState], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        # The branch's head: what the source sends after the result has seen it.
        self.branch = observer
        return Disposable()

    def on_next(self, state: StreamState) -> None:
        self.observer.on_next(state)
        if self.branch is not None:
            self.branch.on_next(state)

    def on_delivery(self, delivery: Delivery) -> None:
        self.observer.on_next(delivery)

    def on_error(self, error: Exception) -> None:
        if not self.finished:
            self.finished = True
            self.observer.on_error(error)

    def on_completed(self) -> None:
        self.states_done = True
        if self.branch is not None:
            self.branch.on_completed()
        self._maybe_done()

    def on_branch_completed(self) -> None:
        self.branch_done = True
        self._maybe_done()

    def _maybe_done(self) -> None:
        if self.states_done and self.branch_done and not self.finished:
            self.finished = True
            self.observer.on_completed()


def build_chain(
    source: Observable[RawStreamChunk],
    *,
    normalizer: Callable[[], ChunkNormalizer],
    config: StreamConfig,
    stops: Observable[StopSignal],
    stop_sink: abc.ObserverBase[StopSignal] | None,
    send: Send,
    provider: str = "",
    tap: Operator[StreamState, StreamState] | None = None,
    timeline: Timeline | None = None,
    describe: Callable[[ProviderError], str] | None = None,
    merge: Merge | None = None,
) -> Observable[StreamResult]:
    """Compose the whole chain for one stream.

    Args:
        source: The provider source (stage 02).
        normalizer: Makes the per-stream stage 03 normalizer.
        config: Stream behaviour.
        stops: The stream's stop signals (a ``ReplaySubject(1)``).
        stop_sink: Where internal stops are raised (the same subject); ``None`` disables them.
        send: Delivers one segment or typing pulse (stage 07).
        provider: Provider name (thought-log footer).
        tap: An optional pass-through operator on the states (``--stop KIND@N``, progress).
        timeline: Records what each stage does and when (``rxcord.operators.timeline``); without it
            no recording operator is added at all.
        describe: The provider's error description function (the error embed's text).
        merge: Coalesces segments that queued behind a Discord send in flight (live delivery).

    Returns:
        A cold observable emitting exactly one ``StreamResult``.
    """
    branch = delivery_branch(config, send, stop_sink, timeline=timeline, describe=describe, merge=merge)
    if timeline is not None:
        source = source.pipe(timeline.raw_tap())
    routed = source.pipe(routing(normalizer, config, stops, stop_sink, timeline))
    if tap is not None:
        routed = routed.pipe(tap)
    if timeline is not None:
        routed = routed.pipe(timeline.state_tap(stops))
    result = routed.pipe(_fan_out(branch), collect_result(stops, provider=provider))
    return result.pipe(timeline.result_tap()) if timeline is not None else result
