"""The whole chain under virtual time: every status, stops between chunks and during a send, timing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.compose.chain import build_chain
from rxcord.core.config import StreamConfig
from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, TypingPulse
from rxcord.core.stops import StopHandle
from rxcord.core.types import (
    DeliveryMode,
    ErrorType,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    SegmentKind,
    StopKind,
    StreamStatus,
)

SEND_TICKS = 3.0


class _PassThrough:
    """A normalizer whose raw chunks already carry the processed chunk."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        return [raw.data]

    def finish(self) -> Sequence[ProcessedChunk]:
        return []


def _raw(chunk: ProcessedChunk) -> RawStreamChunk:
    return RawStreamChunk(provider="test", data=chunk)


class _Sends:
    """Virtual-time Discord: each send takes SEND_TICKS; records start times and contents."""

    def __init__(self, scheduler: TestScheduler, stops: StopHandle, fail_on: int | None = None) -> None:
        self.scheduler = scheduler
        self.started: list[tuple[float, str]] = []
        self.stops = stops
        self.fail_on = fail_on

    def __call__(self, item: Segment | TypingPulse) -> Observable[Delivery]:
        if isinstance(item, TypingPulse):
            return reactivex.just(Delivery(typing=1))
        if item.kind in (SegmentKind.THOUGHT, SegmentKind.DETAILS):
            return reactivex.just(Delivery(segment=item))
        self.started.append((self.scheduler.clock, item.text))
        if self.fail_on is not None and len(self.started) == self.fail_on:
            self.stops.stop(StopKind.CHANNEL_DELETED)
            return reactivex.just(Delivery(segment=item, stopped=StopKind.CHANNEL_DELETED))
        message = SentMessage(payload={"content": item.text})

        def done(_: Any) -> Delivery:
            return Delivery(segment=item, messages=(message,))

        return reactivex.timer(SEND_TICKS).pipe(ops.map(done))


def _run(
    chunks: list[tuple[float, ProcessedChunk]],
    *,
    config: StreamConfig | None = None,
    stops_at: Sequence[tuple[float, StopKind]] = (),
    fail_on: int | None = None,
    complete_at: float | None = None,
) -> tuple[StreamResult, _Sends, Any]:
    scheduler = TestScheduler()
    handle = StopHandle("1")
    events = [ReactiveTest.on_next(t, _raw(c)) for t, c in chunks]
    end = complete_at if complete_at is not None else (chunks[-1][0] + 1 if chunks else 1)
    source = scheduler.create_cold_observable(*events, ReactiveTest.on_completed(end))
    sends = _Sends(scheduler, handle, fail_on)
    cfg = config or StreamConfig(typing_interval=0)
    for at, kind in stops_at:
        scheduler.schedule_absolute(at, lambda *_, k=kind: handle.stop(k))
    chain = build_chain(
        source,
        normalizer=_PassThrough,
        config=cfg,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=sends,
    )
    observer = scheduler.start(lambda: chain, disposed=10_000)
    [result] = [m.value.value for m in observer.messages if m.value.kind == "N"]
    return result, sends, source


T = ProcessedChunk.text
CALL = FunctionCall(name="lookup", args={"q": 1})
FATAL = ProviderError(type=ErrorType.API_ERROR, message="bad request", retryable=False)
RETRY = ProviderError(type=ErrorType.RATE_LIMIT, message="slow down", retryable=True)


def _contents(result: StreamResult) -> list[str]:
    # Stage 07's split trims the whitespace at a message's ends; the fake send does not split.
    return [str(m.payload.get("content", "")).strip() for m in result.messages]


def test_completed_aggregated_sends_one_batch_at_the_end() -> None:
    """Aggregated: nothing is sent until the source ends, then one message."""
    result, sends, _ = _run([(10, T("Hello ")), (20, T("world."))])
    assert result.status is StreamStatus.COMPLETED and _contents(result) == ["Hello world."]
    assert [t for t, _ in sends.started] == [221.0]


def test_function_call_flushes_then_finishes() -> None:
    """A call flushes the pending text, then the stream ends with status function_call."""
    result, _, _ = _run([(10, T("Let me check.")), (20, ProcessedChunk.call(CALL)), (30, T("ignored"))])
    assert result.status is StreamStatus.FUNCTION_CALL and result.function_calls == (CALL,)
    assert _contents(result) == ["Let me check."]


def test_non_retryable_error_flushes_then_shows_embed() -> None:
    """A fatal error flushes the buffer, then the error embed is delivered."""
    result, _, source = _run([(10, T("Partial answer.")), (20, ProcessedChunk.fail(FATAL)), (30, T("never"))])
    assert result.status is StreamStatus.ERROR and result.error == FATAL
    assert result.messages[0].payload.get("content") == "Partial answer."
    assert len(result.messages) == 2  # the text, then the embed
    assert source.subscriptions[0].unsubscribe == 220  # the source is disposed at the error


def test_retryable_error_shows_no_embed() -> None:
    """A retryable error leaves the notice to the turn runner: no embed."""
    result, _, _ = _run([(10, T("Hi.")), (20, ProcessedChunk.fail(RETRY))])
    assert result.status is StreamStatus.ERROR and _contents(result) == ["Hi."]


def test_user_stop_between_chunks_flushes() -> None:
    """A user stop between two chunks: the routed text is flushed, later chunks never routed."""
    result, _, source = _run(
        [(10, T("One. ")), (20, T("Two. ")), (30, T("Three."))], stops_at=[(225, StopKind.USER)]
    )
    assert result.status is StreamStatus.STOPPED_BY_USER
    assert result.visible_text == "One. Two. " and _contents(result) == ["One. Two."]
    assert source.subscriptions[0].unsubscribe == 225


def test_interrupt_discards_the_buffer() -> None:
    """A follow-up interrupt discards the buffer at once: nothing is sent."""
    result, sends, _ = _run(
        [(10, T("One. ")), (20, T("Two. ")), (30, T("Three."))], stops_at=[(225, StopKind.INTERRUPT)]
    )
    assert result.status is StreamStatus.FOLLOW_UP_INTERRUPT and sends.started == []


def test_kill_during_a_send_cancels_it() -> None:
    """A kill while a message is in flight cancels the send: status killed, nothing delivered."""
    live = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=2.0)
    result, sends, source = _run(
        [(10, T("First paragraph.\n\n")), (20, T("Second.")), (30, T("Third."))],
        config=live,
        stops_at=[(213, StopKind.KILL)],
    )
    # The idle flush releases the first paragraph at 212; its send is in flight at 213.
    assert sends.started == [(212.0, "First paragraph.\n\n")]
    assert result.status is StreamStatus.KILLED and result.messages == ()
    assert source.subscriptions[0].unsubscribe == 213


def test_user_stop_during_a_send_lets_it_finish_and_flushes() -> None:
    """A user stop while a message is in flight: that send completes, then the rest is flushed."""
    live = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=50.0)
    result, sends, _ = _run(
        [(10, T("First paragraph.\n\n")), (11, T("Second ")), (30, T("never"))],
        config=live,
        stops_at=[(212, StopKind.USER)],
    )
    assert result.status is StreamStatus.STOPPED_BY_USER
    assert _contents(result) == ["First paragraph.", "Second"]
    assert sends.started[1][0] >= sends.started[0][0] + SEND_TICKS


def test_live_idle_flush_timing() -> None:
    """Live mode: after live_idle_flush seconds of silence, text is flushed up to the last safe cut.

    The last word is kept back: the next chunk could still continue it.
    """
    live = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=4.0)
    result, sends, _ = _run([(10, T("no boundary yet")), (40, T(" more"))], config=live)
    assert sends.started[0] == (214.0, "no boundary ")
    assert _contents(result) == ["no boundary", "yet more"]


def test_internal_stop_from_delivery_skips_flushes() -> None:
    """A delivery failure that stops the stream (channel deleted) ends it with that status; no more sends."""
    live = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=2.0)
    result, sends, _ = _run(
        [(10, T("One.\n\n")), (20, T("Two.\n\n")), (30, T("Three.\n\n")), (40, T("Four."))],
        config=live,
        fail_on=2,
    )
    assert result.status is StreamStatus.CHANNEL_DELETED
    assert len(sends.started) == 2 and _contents(result) == ["One."]


def test_idle_provider_times_out() -> None:
    """No chunk within idle_timeout: a retryable timeout error ends the stream."""
    cfg = StreamConfig(typing_interval=0, idle_timeout=30.0)
    result, _, _ = _run([(10, T("Hi."))], config=cfg, complete_at=500)
    assert result.status is StreamStatus.ERROR and result.error is not None
    assert result.error.type is ErrorType.TIMEOUT and result.error.retryable


def test_speaker_guard_stops_before_another_turn() -> None:
    """The model starting another speaker's turn stops with speaker_guard, delivering none of that turn."""
    cfg = StreamConfig(typing_interval=0, speaker_names=("User",))
    result, _, _ = _run([(10, T("Sure thing.\nUs")), (20, T("er: thanks!"))], config=cfg)
    assert result.status is StreamStatus.SPEAKER_GUARD
    assert "thanks" not in "".join(_contents(result))
    assert _contents(result) == ["Sure thing."]  # the reply before the turn still reaches Discord


def test_typing_pulses_until_first_message() -> None:
    """Typing is refreshed while nothing has been sent, and never after the answer."""
    scheduler_cfg = StreamConfig(typing_interval=8.0)
    result, _, _ = _run([(10, T("a")), (30, T("b."))], config=scheduler_cfg)
    assert result.status is StreamStatus.COMPLETED and _contents(result) == ["ab."]
