"""Stage 04's result: fold states and deliveries into one ``StreamResult``.

The chain's tail merges the orchestrator's states with stage 07's
deliveries; this operator folds both into a ``ResultBuilder`` (created per
subscription, amortized O(1) per item: texts are joined once, at the end)
and emits a single ``StreamResult`` when the stream ends.

It also owns the hard kill: ``take_until(kill)`` here disposes everything
upstream at once (the HTTP request and any in-flight Discord send), and the
result is built from what was seen, with status ``killed``.
"""

from __future__ import annotations

__all__ = ("ResultBuilder", "ResultFold", "collect_result", "compile_thought_log")

from collections.abc import Sequence
from typing import Any, TypeVar

import attrs
from reactivex import Observable, abc

from rxcord.core.state import Delivery, SentMessage, StreamResult, StreamState
from rxcord.core.text_buffer import TextBuffer
from rxcord.core.types import (
    ErrorType,
    FinishReason,
    FunctionCall,
    Operator,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
    ThoughtKind,
    ThoughtLogEntry,
)
from rxcord.operators.light import LightDisposables, subscribe_light, subscribe_target

_I = TypeVar("_I")
_TEXT_THOUGHTS = (ThoughtKind.RAW, ThoughtKind.SUMMARY)
_SHOWN = (SegmentKind.TEXT, SegmentKind.TABLE)
"""Segments whose text is part of the visible text delivered (a table as its markdown)."""
_OVERRIDDEN_BY_DELIVERY_STOP = (StreamStatus.STREAMING, StreamStatus.COMPLETED, StreamStatus.FUNCTION_CALL)


def compile_thought_log(
    thoughts: Sequence[ThoughtLogEntry], serving_provider: str | None, provider: str
) -> str | None:
    """The thought log: summaries first, then raw reasoning, then the serving-provider footer."""
    summary = "".join(t.text for t in thoughts if t.kind is ThoughtKind.SUMMARY).strip()
    raw = "".join(t.text for t in thoughts if t.kind is ThoughtKind.RAW).strip()
    parts = []
    if summary:
        parts.append(f"Summary:\n{summary}")
    if raw:
        parts.append(f"Reasoning:\n{raw}")
    if not parts:
        return None
    if serving_provider:
        parts.append(f"Provider: {provider} via {serving_provider}")
    return "\n\n".join(parts)


@attrs.define
class ResultBuilder:
    """Mutable accumulator of one stream's result (per subscription)."""

    provider: str = ""
    last: StreamState = attrs.field(factory=StreamState)
    visible: TextBuffer = attrs.field(factory=TextBuffer)
    """Visible deltas, held compactly (a long stream's deltas are not all kept alive)."""
    delivered: TextBuffer = attrs.field(factory=TextBuffer)
    # The lists are made when first needed (``None`` until then): most streams have no
    # thought, detail or call, and a stream's builder lives as long as the stream.
    thoughts: list[ThoughtLogEntry] | None = None
    details: list[str] | None = None
    calls: list[FunctionCall] | None = None
    messages: list[SentMessage] | None = None
    delivery_stop: StopKind | None = None
    record: Sequence[SentMessage] | None = attrs.field(default=None, repr=False)
    """The messages Discord accepted, in order, as the delivery appends them (append-only:
    ``DiscordDelivery.held``), or ``None``. While each delivery reports the record's next
    messages, the result lists them from the record (``reported``) and ``messages`` stays
    ``None``: one list of the sent messages per stream, not two. Otherwise (a stage after
    ``deliver`` that drops or makes deliveries) ``messages`` is made, as without a record."""
    reported: int = 0
    """How many of the record's first messages were reported (while ``messages`` is ``None``)."""

    def add(self, item: StreamState | Delivery) -> None:
        """Fold one state or delivery in."""
        if isinstance(item, StreamState):
            self.add_state(item)
        else:
            self.add_delivery(item)

    def add_state(self, state: StreamState) -> None:
        """Fold one state in."""
        self.last = state
        if state.delta:
            self.visible.append(state.delta)
        if state.thoughts:
            self.thoughts = _extended(self.thoughts, state.thoughts)
        if state.function_call is not None:
            self.calls = _extended(self.calls, (state.function_call,))

    def add_delivery(self, delivery: Delivery) -> None:
        """Fold one delivery in."""
        segment = delivery.segment
        if delivery.messages:
            self._report(delivery.messages)
        self.delivery_stop = self.delivery_stop or delivery.stopped
        if segment is None:
            return
        if segment.kind in _SHOWN and delivery.messages:
            if delivery.partial:
                # Cut short by a stop: only what Discord accepted counts as delivered.
                self.delivered.append("\n".join(_content(message) for message in delivery.messages))
            else:
                self.delivered.append(segment.text)
        elif segment.kind is SegmentKind.THOUGHT:
            self.thoughts = _extended(
                self.thoughts, (ThoughtLogEntry(kind=ThoughtKind.RAW, text=segment.text),)
            )
        elif segment.kind is SegmentKind.DETAILS:
            self.details = _extended(self.details, (segment.text,))

    def _report(self, sent: Sequence[SentMessage]) -> None:
        """*sent* reported: counted when they are the record's next messages, else listed."""
        record, start = self.record, self.reported
        if self.messages is None and record is not None:
            end = start + len(sent)
            if len(record) >= end and all(record[start + i] is message for i, message in enumerate(sent)):
                self.reported = end
                return
            self.messages = list(record[:start])  # what was counted so far, then listed from here
        self.messages = _extended(self.messages, sent)

    def sent_messages(self) -> tuple[SentMessage, ...]:
        """Every message reported so far, in order."""
        if self.messages is not None:
            return tuple(self.messages)
        record = self.record
        return tuple(record[: self.reported]) if record is not None else ()

    def build(self, *, killed: StopSignal | None = None) -> StreamResult:
        """The result as it stands (with status ``killed`` when *killed* is given)."""
        state = self.last
        status = state.status
        if killed is not None:
            status = StreamStatus.KILLED
        elif self.delivery_stop is not None and status in _OVERRIDDEN_BY_DELIVERY_STOP:
            # Delivery was cut short after the provider had finished: the stop is the outcome.
            status = StreamStatus.for_stop(self.delivery_stop)
        elif status is StreamStatus.STREAMING:
            status = StreamStatus.COMPLETED
        thoughts = self.thoughts or ()
        calls = self.calls or ()
        reasoning = "".join(t.text for t in thoughts if t.kind in _TEXT_THOUGHTS)
        return StreamResult(
            status=status,
            accumulated_text=self.delivered.getvalue(),
            visible_text=self.visible.getvalue(),
            reasoning=reasoning or None,
            thought_log=compile_thought_log(thoughts, state.serving_provider, self.provider),
            thoughts=tuple(thoughts),
            details_content="\n\n".join(self.details or ()) or None,
            usage=state.usage,
            serving_provider=state.serving_provider,
            function_call=calls[0] if calls else None,
            function_calls=tuple(calls),
            error=state.error,
            finish_reason=self._finish(state),
            raw_finish_reason=state.raw_finish_reason,
            messages=self.sent_messages(),
            chunk_count=state.index,
            request_id=state.request_id,
        )

    def _finish(self, state: StreamState) -> FinishReason | None:
        if self.calls:
            return FinishReason.TOOL_CALLS
        if state.error is not None:
            blocked = state.error.type is ErrorType.CONTENT_BLOCKED
            return FinishReason.CONTENT_FILTER if blocked else FinishReason.ERROR
        return state.finish_reason


def _extended(held: list[_I] | None, items: Sequence[_I]) -> list[_I]:
    """*held* with *items* appended; the list made on first use."""
    if held is None:
        return list(items)
    held.extend(items)
    return held


def _content(message: SentMessage) -> str:
    content = message.payload.get("content")
    return content if isinstance(content, str) else ""


class ResultFold(LightDisposables, abc.ObserverBase[Any]):
    """Per-subscription state of ``collect_result``: the fold, and whether the result went out.

    The chain's fan-out feeds one directly (``rxcord.compose.chain``): the states and the
    deliveries reach the fold by a method call, not through one more subscription. It is
    also the subscription's disposables (what was added, in order, then the kills').
    """

    __slots__ = ("builder", "done", "killed", "kills", "observer")

    def __init__(self, builder: ResultBuilder, observer: abc.ObserverBase[StreamResult]) -> None:
        super().__init__()
        self.builder = builder
        self.observer = observer
        self.done = False
        self.killed: StopSignal | None = None
        self.kills: abc.DisposableBase | None = None

    def on_next(self, item: StreamState | Delivery) -> None:
        if not self.done:
            self.builder.add(item)

    def on_error(self, exc: Exception) -> None:
        if self.done:
            return
        self.done = True
        try:
            self.observer.on_error(exc)
        finally:
            self.dispose()

    def on_completed(self) -> None:
        if self.done:
            return
        self.done = True
        try:
            self.observer.on_next(self.builder.build(killed=self.killed))
            self.observer.on_completed()
        finally:
            # A kill disposes everything upstream at once: the HTTP request, the send in flight.
            self.dispose()

    def dispose(self) -> None:
        super().dispose()
        kills, self.kills = self.kills, None
        if kills is not None:
            kills.dispose()

    def watch_kills(self, stops: Observable[StopSignal], scheduler: abc.SchedulerBase | None) -> None:
        """Subscribe to the stream's stops (after the source, as ``take_until`` does)."""
        if self.done:
            return
        kills = subscribe_light(stops, self.on_stop, self.on_error, None, scheduler)
        if self.is_disposed:
            kills.dispose()
        else:
            self.kills = kills

    def on_stop(self, signal: StopSignal) -> None:
        if signal.kind is StopKind.KILL and not self.done:
            self.killed = signal
            self.on_completed()


def collect_result(
    stops: Observable[StopSignal], *, provider: str = ""
) -> Operator[StreamState | Delivery, StreamResult]:
    """Fold states and deliveries into one ``StreamResult``; a kill ends everything at once.

    .. marble::
        -s-s-d-s-d-|          s: StreamState, d: Delivery
        [ collect_result(stops) ]
        -----------(R,|)

    Args:
        stops: The stream's stop subject; only ``StopKind.KILL`` is acted on here.
        provider: Provider name for the thought-log footer.

    Returns:
        An operator emitting exactly one ``StreamResult``.
    """

    def _op(source: Observable[StreamState | Delivery]) -> Observable[StreamResult]:
        def subscribe(
            observer: abc.ObserverBase[StreamResult], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            run = ResultFold(ResultBuilder(provider=provider), observer)
            # ``source.pipe(take_until(kills))`` written out, as take_until subscribes: the source
            # first, then the kills (``filter(kill)`` + ``take(1)``, without their subscriptions).
            run.add(subscribe_target(source, run, scheduler))
            run.watch_kills(stops, scheduler)
            return run

        return Observable(subscribe)

    return _op
