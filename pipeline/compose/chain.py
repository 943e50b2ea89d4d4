"""The ONE observable chain: seven stages composed (top layer).

::

    provider source (RawStreamChunk)                      stage 02   rxcord.providers.transport
      -> routing stages (a Pipeline's, by name):          stages 03-04
         normalize + the adapter's guards (fused)                    operators/normalize.py, reasoning/,
                                                                     verbatim_tools.py
         prefill, speaker_guard, idle_timeout,                       operators/...
         stop_gate (take_until stops), accumulate (scan)
      -> fan out: states  ──────────────────────────┐
                  states -> delivery stages:         │     stages 05-07
                     flush, clean, typing, deliver   │     operators/flush.py, flusher.py, clean.py,
                                                     │     typing_heartbeat.py, sinks/deliver.py
      -> merge ──────────────────────────────────────┘
      -> collect_result (StreamResult; hard kill)          stage 04   operators/collect_result.py

Stage 01 (context assembly) happens before the source exists: the adapter's
``build_request``. Everything here is lazy: nothing runs until the returned
observable is subscribed, and each subscription is an independent stream.

The stages between the source and the result are a ``Pipeline`` value
(``rxcord.compose.pipeline``): users insert, replace or remove stages by name.
Given a ``Timeline`` (``rxcord.operators.timeline``), ``build_chain`` adds its
pass-through taps (after the source, stage 03, the orchestrator, the flusher, the
cleaner and the result); without one it adds none.
"""

from __future__ import annotations

__all__ = ("build_chain",)

from collections.abc import Callable, Sequence
from typing import Any

from reactivex import Observable, abc

from rxcord.compose.pipeline import Merge, Pipeline, Send, StageContext
from rxcord.core.config import Guards, StreamConfig
from rxcord.core.redact import Redactor
from rxcord.core.state import Delivery, SentMessage, StreamResult, StreamState
from rxcord.core.types import Batch, ChunkNormalizer, Operator, ProviderError, RawStreamChunk, StopSignal
from rxcord.operators.collect_result import ResultBuilder, ResultFold
from rxcord.operators.fused import unbatch
from rxcord.operators.light import NO_DISPOSAL, LightObservable, LightOperator, Relay, relay, subscribe_light
from rxcord.operators.timeline import Timeline


def _fan_out_collect(
    branch: Operator[StreamState, Delivery],
    stops: Observable[StopSignal],
    provider: str,
    record: Sequence[SentMessage] | None,
) -> Operator[StreamState, StreamResult]:
    """Each state to the result, then through *branch*; the states and the deliveries folded.

    What ``publish`` + ``merge(states, states.pipe(branch))`` + ``collect_result(stops)`` do,
    without a subject and a merge lock per state and without a subscription between the
    merge and the fold: the result sees each state before the deliveries it causes, the
    stream completes when the states and the branch have both completed, the first error
    ends it, a kill ends it at once, and disposing it disposes the branch, then the source,
    then the stops' subscription. *record*: the delivery's own list of what Discord accepted
    (``ResultBuilder.record``).
    """
    return _FanOut(branch, stops, provider, record)


class _FanOut(LightOperator[StreamState, StreamResult]):
    """``_fan_out_collect``'s parameters: one slots object, not a closure per stream."""

    __slots__ = ("branch", "provider", "record", "stops")

    def __init__(
        self,
        branch: Operator[StreamState, Delivery],
        stops: Observable[StopSignal],
        provider: str,
        record: Sequence[SentMessage] | None,
    ) -> None:
        self.branch = branch
        self.stops = stops
        self.provider = provider
        self.record = record

    def subscribe_to(
        self,
        source: Observable[StreamState],
        observer: abc.ObserverBase[StreamResult],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        fold = ResultFold(ResultBuilder(provider=self.provider, record=self.record), observer)
        fan = _Fan(fold)
        entry: Observable[StreamState] = _Entry(fan)
        fold.add(
            subscribe_light(
                entry.pipe(self.branch), fan.on_delivery, fan.on_branch_error, fan.branch_completed, scheduler
            )
        )
        fold.add(relay(source, fan, scheduler))
        fold.watch_kills(self.stops, scheduler)
        return fold


class _Entry(LightObservable[StreamState]):
    """The branch's head: what the source sends after the result has seen it."""

    __slots__ = ("fan",)

    def __init__(self, fan: _Fan) -> None:
        super().__init__()
        self.fan = fan

    def _subscribe_core(
        self, observer: abc.ObserverBase[StreamState], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        self.fan.branch = observer
        return NO_DISPOSAL


class _Fan(Relay):
    """Per-subscription state of ``_fan_out``: the states' observer (``observer`` is the fold)."""

    __slots__ = ("branch", "branch_done", "finished", "states_done")

    observer: ResultFold

    def __init__(self, observer: ResultFold) -> None:
        super().__init__(observer)
        self.branch: abc.ObserverBase[StreamState] | None = None
        self.states_done = False
        self.branch_done = False
        self.finished = False

    def on_next(self, state: StreamState) -> None:
        if self.stopped:
            return
        fold = self.observer
        if not fold.done:  # ResultFold.on_next written out: one call per state, not three
            fold.builder.add_state(state)
        if self.branch is not None:
            self.branch.on_next(state)

    def on_delivery(self, delivery: Delivery) -> None:
        fold = self.observer
        if not fold.done:
            fold.builder.add_delivery(delivery)

    def on_branch_error(self, error: Exception) -> None:
        if not self.finished:
            self.finished = True
            self.observer.on_error(error)

    def failed(self, error: Exception) -> None:
        self.on_branch_error(error)

    def completed(self) -> None:
        self.states_done = True
        if self.branch is not None:
            self.branch.on_completed()
        self._maybe_done()

    def branch_completed(self) -> None:
        self.branch_done = True
        self._maybe_done()

    def _maybe_done(self) -> None:
        if self.states_done and self.branch_done and not self.finished:
            self.finished = True
            self.observer.on_completed()


def build_chain(
    source: Observable[RawStreamChunk | Batch[RawStreamChunk]],
    *,
    normalizer: Callable[[], ChunkNormalizer],
    config: StreamConfig,
    stops: Observable[StopSignal],
    stop_sink: abc.ObserverBase[StopSignal] | None,
    send: Send,
    provider: str = "",
    guards: Guards | None = None,
    pipeline: Pipeline | None = None,
    timeline: Timeline | None = None,
    describe: Callable[[ProviderError], str] | None = None,
    merge: Merge | None = None,
    batched: bool = False,
    redactor: Redactor | None = None,
    record: Sequence[SentMessage] | None = None,
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
        guards: The stage 03 guards the adapter declares (``adapter.guards``); ``None``: none.
        pipeline: The stages to run (``Pipeline.default()`` when ``None``).
        timeline: Records what each stage does and when (``rxcord.operators.timeline``); without it
            no recording operator is added at all.
        describe: The provider's error description function (the error embed's text).
        merge: Coalesces segments that queued behind a Discord send in flight (live delivery).
        batched: *source* emits one ``Batch`` of raw chunks per socket read
            (``stream_source(batched=True)``); the stages that take batches get them whole
            (``rxcord.compose.pipeline``), the others one chunk at a time. Same results.
        redactor: The stream's secrets: stage 03 redacts them in the text, however the
            deltas cut them (``rxcord.operators.redact_secrets``); ``None``: none known.
        record: The list *send* appends every message Discord accepted to, in order and never
            changed otherwise (``DiscordDelivery.held``): the result lists its messages from it
            instead of keeping a second list per stream. Same results; ``None``: none.

    Returns:
        A cold observable emitting exactly one ``StreamResult``.
    """
    stages = pipeline or Pipeline.default()
    context = StageContext(
        config=config,
        normalizer=normalizer,
        stops=stops,
        stop_sink=stop_sink,
        send=send,
        merge=merge,
        describe=describe,
        guards=guards or Guards(),
        provider=provider,
        redactor=redactor or Redactor(),
    )
    branch = stages.build_delivery(context, timeline)
    items: Observable[Any] = source
    if timeline is not None:
        # The taps record chunk by chunk: a recorded stream's chunks come one by one.
        items = items.pipe(unbatch(), timeline.raw_tap()) if batched else items.pipe(timeline.raw_tap())
        batched = False
    routed: Observable[StreamState] = items.pipe(stages.build_routing(context, timeline, batched=batched))
    result = routed.pipe(_fan_out_collect(branch, stops, provider, record))
    return result.pipe(timeline.result_tap()) if timeline is not None else result
