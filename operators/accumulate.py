"""Stage 04: the orchestrator's state machine as a scan.

``route`` is the pure step: it takes the previous ``StreamState`` and one
routed item (a ``ProcessedChunk`` or the ``StopSignal`` from the stop gate)
and returns the next state. ``accumulate`` wraps it in ``scan`` and
completes the stream once the outcome is final, which disposes the source
(and so closes the HTTP request).

Routing, by chunk type:

* ``text``: the content goes to the buffer (``delta``), while streaming;
* ``function_call``: status ``function_call``; later calls of the same
  response are still collected (parallel tool calls), as are usage and
  finish metadata; later text is dropped;
* ``error``: status ``error``; final;
* ``done``: finish reason and usage are recorded; routing continues;
* a stop: the stop's status; final.

Any item may carry thoughts and usage; usage is taken at its last report.
"""

from __future__ import annotations

__all__ = ("accumulate", "is_open", "route")

from collections.abc import Callable
from typing import Any

import attrs
from reactivex import Observable, abc

from rxcord.core.state import StreamState
from rxcord.core.types import (
    Batch,
    ChunkType,
    ErrorType,
    FinishReason,
    FunctionCall,
    Operator,
    ProcessedChunk,
    ProviderError,
    StopSignal,
    StreamStatus,
    ThoughtLogEntry,
    Usage,
)
from rxcord.operators.fused import BatchAware
from rxcord.operators.light import Relay, relay

_OPEN = (StreamStatus.STREAMING, StreamStatus.FUNCTION_CALL)


def is_open(state: StreamState) -> bool:
    """Whether routing goes on after *state* (the scan completes at the first final state)."""
    return state.status in _OPEN


def route(state: StreamState, item: ProcessedChunk | StopSignal) -> StreamState:
    """The next state after routing *item* (pure; no I/O, no clock)."""
    if isinstance(item, StopSignal):
        return _with(state, status=StreamStatus.for_stop(item.kind), stop=item)
    status = state.status
    kind = item.type
    finish = state.finish_reason
    raw_finish = state.raw_finish_reason
    call = None
    error = state.error
    request_id = state.request_id
    delta = ""
    if kind is ChunkType.TEXT:
        if status is StreamStatus.STREAMING:
            delta = item.content
    elif kind is ChunkType.FUNCTION_CALL:
        status = StreamStatus.FUNCTION_CALL
        call = item.function_call
        finish = FinishReason.TOOL_CALLS
    elif kind is ChunkType.ERROR:
        if status is StreamStatus.STREAMING:
            status = StreamStatus.ERROR
            error = item.error
            blocked = error is not None and error.type is ErrorType.CONTENT_BLOCKED
            finish = FinishReason.CONTENT_FILTER if blocked else FinishReason.ERROR
    else:
        meta = item.metadata
        reported = meta.get("finish_reason")
        if reported is not None and finish not in (FinishReason.TOOL_CALLS, FinishReason.ERROR):
            finish = FinishReason(reported)
        raw_finish = meta.get("raw_finish_reason", raw_finish)
        request_id = meta.get("request_id", request_id)
    return _state(
        status,
        state.index + 1,
        delta,
        item.thoughts,
        call,
        error,
        state.stop,
        finish,
        raw_finish,
        item.usage if item.usage is not None else state.usage,
        state.serving_provider or item.serving_provider or None,
        request_id,
    )


_FIELDS = (
    "status",
    "index",
    "delta",
    "thoughts",
    "function_call",
    "error",
    "stop",
    "finish_reason",
    "raw_finish_reason",
    "usage",
    "serving_provider",
    "request_id",
)
"""``StreamState``'s fields, in the order ``_state`` takes them."""


def _make_state_builder() -> Callable[..., StreamState]:
    """A positional ``StreamState`` builder: one per chunk, the scan's hottest line.

    attrs' frozen ``__init__`` binds twelve keywords and sets each field through
    ``object.__setattr__``; this sets the slots through their descriptors. Used only while
    ``StreamState`` has exactly ``_FIELDS`` with no validator, converter or factory default
    (checked here, once); otherwise the constructor itself.
    """
    fields = attrs.fields(StreamState)
    plain = all(
        field.validator is None and field.converter is None and not isinstance(field.default, attrs.Factory)  # type: ignore[arg-type]
        for field in fields
    )
    if tuple(field.name for field in fields) != _FIELDS or not plain:

        def constructed(*values: Any) -> StreamState:
            return StreamState(**dict(zip(_FIELDS, values, strict=True)))

        return constructed
    slots: Any = StreamState
    new: Any = object.__new__
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11 = (getattr(slots, name).__set__ for name in _FIELDS)

    def built(  # noqa: PLR0917 - positional on purpose: keyword binding is what this avoids
        status: StreamStatus,
        index: int,
        delta: str,
        thoughts: tuple[ThoughtLogEntry, ...],
        call: FunctionCall | None,
        error: ProviderError | None,
        stop: StopSignal | None,
        finish: FinishReason | None,
        raw_finish: str | None,
        usage: Usage | None,
        serving: str | None,
        request_id: str | None,
    ) -> StreamState:
        state: StreamState = new(StreamState)
        s0(state, status)
        s1(state, index)
        s2(state, delta)
        s3(state, thoughts)
        s4(state, call)
        s5(state, error)
        s6(state, stop)
        s7(state, finish)
        s8(state, raw_finish)
        s9(state, usage)
        s10(state, serving)
        s11(state, request_id)
        return state

    return built


_state = _make_state_builder()


def _with(state: StreamState, *, status: StreamStatus, stop: StopSignal) -> StreamState:
    return StreamState(
        status=status,
        index=state.index,
        stop=stop,
        error=state.error,
        finish_reason=state.finish_reason,
        raw_finish_reason=state.raw_finish_reason,
        usage=state.usage,
        serving_provider=state.serving_provider,
        request_id=state.request_id,
    )


def accumulate() -> Operator[ProcessedChunk | StopSignal, StreamState]:
    """Route each item through the state machine; complete once the outcome is final.

    .. marble::
        -a-b-e-c-|            a, b: text; e: error
        [ accumulate() ]
        -A-B-(E,|)            E.status == error; c is never routed

    Returns:
        An operator emitting one ``StreamState`` per routed item; it takes ``Batch`` es too
        (one state per chunk of the batch: ``rxcord.operators.fused.BatchAware``).
    """

    def _op(source: Observable[ProcessedChunk | StopSignal]) -> Observable[StreamState]:
        def subscribe(
            observer: abc.ObserverBase[StreamState], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            # ``scan(route, StreamState())`` then ``take_while(open, inclusive=True)``, as one
            # operator: one hop and no lock per chunk instead of two hops and a lock.
            return relay(source, _Scan(observer), scheduler)

        return Observable(subscribe)

    return BatchAware(_op, "accumulate", keeps=False)


class _Scan(Relay):
    """Per-subscription state of ``accumulate``: the latest state; ``stopped`` once it is final."""

    __slots__ = ("state",)

    def __init__(self, observer: abc.ObserverBase[StreamState]) -> None:
        super().__init__(observer)
        self.state = StreamState()

    def step(self, item: ProcessedChunk | StopSignal) -> bool:
        """Route one item; whether the stream is still open."""
        try:
            state = route(self.state, item)
        except Exception as exc:  # a routing bug becomes on_error, as in ops.scan
            self.on_error(exc)
            return False
        self.state = state
        if state.status in _OPEN:
            self.observer.on_next(state)
            return True
        # Final: the last state, then the end (which disposes the source: the HTTP request).
        self.stopped = True
        try:
            self.observer.on_next(state)
            self.observer.on_completed()
        finally:
            self.dispose()
        return False

    def on_next(self, item: ProcessedChunk | StopSignal | Batch[ProcessedChunk]) -> None:
        if self.stopped:
            return
        if isinstance(item, Batch):
            # One socket read's chunks: a state each, in order; the stop gate's batch
            # ends early when a stop is pending (it then arrives as the next item).
            for one in item:
                if not self.step(one):
                    return
            return
        self.step(item)
