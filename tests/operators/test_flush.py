"""Stage 05 as an operator: the flush operator under virtual time (ends, embeds, cap, idle timer)."""

from __future__ import annotations

import pytest
import reactivex
from reactivex.subject import Subject
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.core.config import StreamConfig
from rxcord.core.state import Segment, StreamState
from rxcord.core.types import (
    DeliveryMode,
    ErrorType,
    FunctionCall,
    ProviderError,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
)
from rxcord.operators.flush import flush
from rxcord.sinks.error_embed import error_embed
from tests.marbles import marbles
from tests.operators.test_flusher import AGG, LIVE, seg, state

# -- marbles -------------------------------------------------------------------------------------------------


def test_marble_live_releases_at_paragraph_boundaries() -> None:
    """Live mode emits each paragraph when the next starts, and the rest at completion."""
    states = {"a": state("One.\n\nTw"), "b": state("o.\n\nThree")}
    with marbles() as m:
        source = m.cold("-a-b--|", states)
        "                0123456"
        results = m.start(source.pipe(flush(LIVE)))
        expected = {"A": seg("One.\n\n"), "B": seg("Two.\n\n"), "C": seg("Three", final=True)}
        assert results == m.exp("-A-B--(C,|)", expected)


def test_marble_idle_flush_after_two_ticks() -> None:
    """With live_idle_flush=2.0 the safe text leaves exactly 2 ticks after the last delta."""
    states = {"a": state("Hello there. Gen"), "b": state("eral")}
    with marbles() as m:
        source = m.cold("-a---b----|", states)
        "                01234567890"
        results = m.start(source.pipe(flush(LIVE)))
        expected = {"A": seg("Hello there. "), "B": seg("General", final=True)}
        assert results == m.exp("---A------(B,|)", expected)


def test_marble_new_text_restarts_the_idle_timer() -> None:
    """Deltas closer than live_idle_flush postpone the idle flush (debounce)."""
    states = {"a": state("One. "), "b": state("Two. ")}
    with marbles() as m:
        source = m.cold("-a-b------|", states)
        "                01234567890"
        results = m.start(source.pipe(flush(LIVE)))
        assert results == m.exp("-----A----|", {"A": seg("One. Two. ")})


def test_marble_aggregated_single_batch_at_completion() -> None:
    """Aggregated mode emits one batch, all at completion."""
    states = {"a": state("One.\n\n<think>t</think>"), "b": state("Two. "), "c": state("Three")}
    with marbles() as m:
        source = m.cold("-a-b-c-|", states)
        "                01234567"
        results = m.start(source.pipe(flush(AGG)))
        expected = {"T": seg("t", kind=SegmentKind.THOUGHT), "X": seg("One.\n\nTwo. Three", final=True)}
        assert results == m.exp("-------(T,X,|)", expected)


def test_marble_function_call_flushes_once() -> None:
    """A function-call state flushes everything (final); later states are ignored."""
    call = state(status=StreamStatus.FUNCTION_CALL, function_call=FunctionCall(name="lookup"))
    states = {"a": state("Let me check"), "b": state(" that."), "c": call, "d": state("late")}
    with marbles() as m:
        source = m.cold("-a-b-c-d-|", states)
        "                0123456789"
        results = m.start(source.pipe(flush(AGG)))
        assert results == m.exp("-----A---|", {"A": seg("Let me check that.", final=True)})


def test_marble_interrupt_and_internal_stop_discard() -> None:
    """A follow-up interrupt or an internal stop drops the buffer: nothing is emitted after it."""
    for status, kind in [
        (StreamStatus.FOLLOW_UP_INTERRUPT, StopKind.INTERRUPT),
        (StreamStatus.SEND_MESSAGE_LIMIT, StopKind.SEND_MESSAGE_LIMIT),
        (StreamStatus.KILLED, StopKind.KILL),
    ]:
        states = {
            "a": state("One.\n\nTwo"),
            "b": state(" more"),
            "s": state(status=status, stop=StopSignal(kind)),
        }
        with marbles() as m:
            source = m.cold("-a-b-s--|", states)
            "                012345678"
            results = m.start(source.pipe(flush(LIVE)))
            assert results == m.exp("-A------|", {"A": seg("One.\n\n")}), status


def test_marble_speaker_guard_stop_flushes() -> None:
    """The speaker guard's stop flushes the reply before the other speaker's turn (issue 14)."""
    stop = state(status=StreamStatus.SPEAKER_GUARD, stop=StopSignal(StopKind.SPEAKER_GUARD))
    with marbles() as m:
        source = m.cold("-a-b-s--|", {"a": state("One.\n\nTwo"), "b": state(" more\n"), "s": stop})
        "                012345678"
        results = m.start(source.pipe(flush(LIVE)))
        expected = {"A": seg("One.\n\n"), "B": seg("Two more\n", final=True)}
        assert results == m.exp("-A---B--|", expected)


def test_marble_user_stop_flushes() -> None:
    """A graceful user stop flushes what is held, marked final."""
    stop = state(" partial", status=StreamStatus.STOPPED_BY_USER, stop=StopSignal(StopKind.USER))
    with marbles() as m:
        source = m.cold("-a-s-|", {"a": state("Some answer"), "s": stop})
        "                012345"
        results = m.start(source.pipe(flush(AGG)))
        assert results == m.exp("---A-|", {"A": seg("Some answer partial", final=True)})


def test_marble_error_embed_follows_the_final_text() -> None:
    """A non-retryable error flushes the text first, then emits the error embed."""
    error = ProviderError(
        type=ErrorType.MODEL_ERROR, message="Unknown model. Supported: m-1, m-2", retryable=False
    )
    states = {"a": state("Partial"), "e": state(status=StreamStatus.ERROR, error=error)}
    embed = Segment(kind=SegmentKind.ERROR_EMBED, embed=error_embed(error))
    with marbles() as m:
        source = m.cold("-a-e-----|", states)
        "                0123456789"
        results = m.start(source.pipe(flush(AGG, embed=error_embed)))
        assert results == m.exp("---(A,E)-|", {"A": seg("Partial", final=True), "E": embed})


def test_marble_the_embed_is_built_by_the_builder_it_is_handed() -> None:
    """Stage 05 builds no embed itself: the builder it is handed makes it (stage 07's, in the pipeline),
    and without one the error ends the stream with its text flushed (the result reports the error)."""
    error = ProviderError(type=ErrorType.API_ERROR, message="boom", retryable=False)
    states = {"a": state("Partial"), "e": state(status=StreamStatus.ERROR, error=error)}
    built: list[ProviderError] = []

    def builder(error: ProviderError) -> dict[str, str]:
        built.append(error)
        return {"title": "custom"}

    with marbles() as m:
        results = m.start(m.cold("-a-e-----|", states).pipe(flush(AGG, embed=builder)))
        shown = Segment(kind=SegmentKind.ERROR_EMBED, embed={"title": "custom"})
        assert results == m.exp("---(A,E)-|", {"A": seg("Partial", final=True), "E": shown})
    assert built == [error]
    with marbles() as m:
        results = m.start(m.cold("-a-e-|", states).pipe(flush(AGG)))
        assert results == m.exp("---A-|", {"A": seg("Partial", final=True)})


@pytest.mark.parametrize(
    ("retryable", "config"),
    [
        (True, AGG),
        (False, StreamConfig(suppress_user_errors=True)),
        (False, StreamConfig(defer_notice=True)),
    ],
)
def test_marble_no_embed_when_retryable_suppressed_or_deferred(retryable: bool, config: StreamConfig) -> None:
    """No embed for a retryable error, or when errors are suppressed or the notice is deferred."""
    error = ProviderError(type=ErrorType.RATE_LIMIT, message="slow down", retryable=retryable)
    states = {"a": state("Partial"), "e": state(status=StreamStatus.ERROR, error=error)}
    with marbles() as m:
        results = m.start(m.cold("-a-e-|", states).pipe(flush(config, embed=error_embed)))
        assert results == m.exp("---A-|", {"A": seg("Partial", final=True)})


def test_flush_cap_signals_a_flush_limit_stop_once_after_the_segment() -> None:
    """Reaching max_flushes emits the capping segment, then one FLUSH_LIMIT stop; nothing follows."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=2, live_idle_flush=2.0)
    stops: Subject[StopSignal] = Subject()
    log: list[object] = []
    stops.subscribe(log.append)
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, state("A.\n\nB.\n\nC.\n\nD")),
        ReactiveTest.on_next(20, state("more.\n\nE")),
        ReactiveTest.on_completed(30),
    )
    stream = source.pipe(flush(config, stops))
    stream.subscribe(log.append, scheduler=scheduler)
    scheduler.start()
    assert log == [seg("A.\n\n"), seg("B.\n\n"), StopSignal(StopKind.FLUSH_LIMIT, "flush cap reached")]


def test_reentrant_stop_state_discards_once() -> None:
    """A stop state delivered while segments are being emitted discards, and ends the stream once."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=1)
    states: Subject[StreamState] = Subject()
    stops: Subject[StopSignal] = Subject()
    out: list[Segment] = []

    def stop_to_state(signal: StopSignal) -> None:
        states.on_next(state(status=StreamStatus.FLUSH_LIMIT, stop=signal))

    stops.subscribe(stop_to_state)
    states.pipe(flush(config, stops)).subscribe(out.append, scheduler=TestScheduler())
    states.on_next(state("A.\n\nB.\n\nC"))
    states.on_completed()
    assert out == [seg("A.\n\n")]


def test_live_mode_without_scheduler_is_an_error() -> None:
    """Live mode needs the subscribe-time scheduler for its idle timer."""
    errors: list[Exception] = []
    reactivex.of(state("x")).pipe(flush(LIVE)).subscribe(on_error=errors.append)
    assert len(errors) == 1 and isinstance(errors[0], ValueError)


def test_aggregated_mode_runs_without_scheduler() -> None:
    """Aggregated mode needs no timer, so it runs on any scheduler."""
    out: list[Segment] = []
    reactivex.of(state("a. "), state("b")).pipe(flush(AGG)).subscribe(out.append)
    assert out == [seg("a. b", final=True)]
