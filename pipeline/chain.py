"""The ONE observable chain: seven stages composed (top layer).

::

    provider source (RawStreamChunk)                      stage 02   providers/transport.py
      -> normalize (ProcessedChunk) [+ speaker guard]      stage 03   operators/normalize.py
      -> idle_timeout -> stop_gate (take_until stops)      stage 04   operators/idle_timeout.py,
                                                                      operators/stop_gate.py
      -> accumulate (scan: StreamState)                    stage 04   operators/accumulate.py
      -> publish: states  ──────────────────────────┐
                  states -> flush (Segment)          │     stage 05   operators/flush.py
                         -> clean                    │     stage 06   operators/clean.py
                         -> typing_heartbeat         │     stage 04   operators/typing_heartbeat.py
                         -> deliver (Delivery)       │     stage 07   operators/deliver.py, delivery.py
      -> merge ──────────────────────────────────────┘
      -> collect_result (StreamResult; hard kill)          stage 04   operators/collect_result.py

Stage 01 (context assembly) happens before the source exists: the adapter's
``build_request``. Everything here is lazy: nothing runs until the returned
observable is subscribed, and each subscription is an independent stream.

Given a ``Timeline`` (``pipeline.timeline``), ``build_chain`` adds pass-through
taps after the source, the normalizer, the orchestrator, the flusher, the
cleaner and the result; without one it adds none.
"""

from __future__ import annotations

__all__ = ("build_chain", "delivery_branch", "routing")

from collections.abc import Callable
from typing import TypeVar

import reactivex
from reactivex import Observable, abc
from reactivex import operators as ops

from operators.accumulate import accumulate
from operators.clean import clean
from operators.collect_result import collect_result
from operators.deliver import deliver
from operators.flush import flush
from operators.idle_timeout import idle_timeout
from operators.normalize import normalize
from operators.prefill import prefill
from operators.speaker_guard import speaker_guard
from operators.stop_gate import stop_gate
from operators.typing_heartbeat import typing_heartbeat
from pipeline.config import StreamConfig
from pipeline.state import Delivery, Segment, StreamResult, StreamState, TypingPulse
from pipeline.timeline import CLEAN, FLUSH, Timeline
from pipeline.types import (
    ChunkNormalizer,
    Operator,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    StopSignal,
)

_T = TypeVar("_T")

Send = Callable[[Segment | TypingPulse], Observable[Delivery]]


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
    timeline: Timeline | None = None,
    describe: Callable[[ProviderError], str] | None = None,
) -> Operator[StreamState, Delivery]:
    """Stages 05-07: states to Discord deliveries (*timeline* records the segments of 05 and 06)."""
    if timeline is not None:
        return reactivex.compose(
            flush(config, stop_sink, describe),
            timeline.segment_tap(FLUSH),
            clean(config),
            timeline.segment_tap(CLEAN),
            typing_heartbeat(config.typing_interval),
            deliver(send),
        )
    return reactivex.compose(
        flush(config, stop_sink, describe),
        clean(config),
        typing_heartbeat(config.typing_interval),
        deliver(send),
    )


def _identity(source: Observable[_T]) -> Observable[_T]:
    return source


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
        timeline: Records what each stage does and when (``pipeline.timeline``); without it
            no recording operator is added at all.
        describe: The provider's error description function (the error embed's text).

    Returns:
        A cold observable emitting exactly one ``StreamResult``.
    """
    branch = delivery_branch(config, send, stop_sink, timeline, describe)

    def fan_out(states: Observable[StreamState]) -> Observable[StreamState | Delivery]:
        # States are subscribed first, so the result sees each state before the deliveries it causes.
        deliveries: Observable[StreamState | Delivery] = states.pipe(branch)
        own: Observable[StreamState | Delivery] = states
        return reactivex.merge(own, deliveries)

    if timeline is not None:
        source = source.pipe(timeline.raw_tap())
    routed = source.pipe(routing(normalizer, config, stops, stop_sink, timeline))
    if tap is not None:
        routed = routed.pipe(tap)
    if timeline is not None:
        routed = routed.pipe(timeline.state_tap(stops))
    result = routed.pipe(ops.publish(fan_out), collect_result(stops, provider=provider))
    return result.pipe(timeline.result_tap()) if timeline is not None else result
