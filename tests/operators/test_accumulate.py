"""Stage 04 routing: the pure step and the scan operator."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from reactivex import operators as ops

from rxcord.core.state import StreamState
from rxcord.core.types import (
    ErrorType,
    FinishReason,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    StopKind,
    StopSignal,
    StreamStatus,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
)
from rxcord.operators.accumulate import accumulate, route
from tests.marbles import marbles

CALL = FunctionCall(name="lookup", args={"q": "x"}, id="c1")
ERR = ProviderError(type=ErrorType.API_ERROR, message="boom", retryable=False)
BLOCK = ProviderError(type=ErrorType.CONTENT_BLOCKED, message="blocked", retryable=False)


def _fold(items: list[ProcessedChunk | StopSignal]) -> StreamState:
    state = StreamState()
    for item in items:
        state = route(state, item)
    return state


def test_text_routes_to_delta_and_counts() -> None:
    """A text chunk's content becomes the step's delta; the index counts routed chunks."""
    state = route(StreamState(), ProcessedChunk.text("Hi"))
    assert (state.delta, state.index, state.status) == ("Hi", 1, StreamStatus.STREAMING)


def test_function_call_finishes_with_tool_calls_and_drops_later_text() -> None:
    """A call sets status function_call and finish tool_calls; later text is not routed, later calls are."""
    state = _fold([ProcessedChunk.text("a"), ProcessedChunk.call(CALL)])
    assert state.status is StreamStatus.FUNCTION_CALL and state.function_call == CALL
    assert state.finish_reason is FinishReason.TOOL_CALLS
    after = route(state, ProcessedChunk.text("late"))
    assert after.delta == "" and after.function_call is None
    second = route(after, ProcessedChunk.call(FunctionCall(name="b")))
    assert second.function_call is not None and second.function_call.name == "b"


def test_error_is_final_and_content_block_maps_to_content_filter() -> None:
    """An error ends routing; a content block finishes as content_filter, other errors as error."""
    state = _fold([ProcessedChunk.text("a"), ProcessedChunk.fail(ERR)])
    assert state.status is StreamStatus.ERROR and state.error == ERR
    assert state.finish_reason is FinishReason.ERROR
    assert _fold([ProcessedChunk.fail(BLOCK)]).finish_reason is FinishReason.CONTENT_FILTER


def test_done_records_finish_and_usage_last_report_wins() -> None:
    """done chunks record finish metadata; usage is taken at its last report, never summed."""
    state = _fold(
        [
            ProcessedChunk.done(usage=Usage(input_tokens=5, output_tokens=1)),
            ProcessedChunk.done(finish_reason=FinishReason.LENGTH, raw_finish_reason="max_tokens"),
            ProcessedChunk.done(usage=Usage(input_tokens=5, output_tokens=9)),
        ]
    )
    assert state.finish_reason is FinishReason.LENGTH and state.raw_finish_reason == "max_tokens"
    assert state.usage == Usage(input_tokens=5, output_tokens=9)
    assert state.status is StreamStatus.STREAMING


def test_serving_provider_first_non_empty_wins() -> None:
    """The first non-empty serving provider is kept."""
    state = _fold(
        [
            ProcessedChunk.text("a"),
            ProcessedChunk.text("b", serving_provider="DeepInfra"),
            ProcessedChunk.text("c", serving_provider="Other"),
        ]
    )
    assert state.serving_provider == "DeepInfra"


def test_every_stop_kind_maps_to_its_status() -> None:
    """Each stop kind ends the stream with its own status."""
    for kind in StopKind:
        state = route(StreamState(), StopSignal(kind))
        assert state.status is StreamStatus.for_stop(kind)
        assert state.stop == StopSignal(kind)


def test_thoughts_pass_through_on_the_state() -> None:
    """Thoughts carried by a chunk are on that step's state."""
    thought = ThoughtLogEntry(kind=ThoughtKind.RAW, text="hmm")
    state = route(StreamState(), ProcessedChunk.text("", thoughts=(thought,)))
    assert state.thoughts == (thought,)


@given(st.lists(st.text(max_size=5), max_size=30))
def test_deltas_concatenate_to_the_text(parts: list[str]) -> None:
    """While streaming, the deltas concatenate to all text routed."""
    state = StreamState()
    seen = []
    for part in parts:
        state = route(state, ProcessedChunk.text(part))
        seen.append(state.delta)
    assert "".join(seen) == "".join(parts)


def _status(state: StreamState) -> str:
    return f"{state.status.value}:{state.delta}"


def test_marble_error_completes_and_disposes_source() -> None:
    """The scan completes at the error; chunks after it are never routed."""
    lookup = {"a": ProcessedChunk.text("a"), "e": ProcessedChunk.fail(ERR), "c": ProcessedChunk.text("c")}
    with marbles() as m:
        source = m.cold("-a-e-c-|", lookup)
        "                01234567"
        results = m.start(source.pipe(accumulate(), ops.map(_status)))
        assert results == m.exp("-A-(E,|)", {"A": "streaming:a", "E": "error:"})


def test_marble_function_call_keeps_collecting_until_source_ends() -> None:
    """After a call the stream stays open for more calls and usage, then completes with the source."""
    lookup = {"a": ProcessedChunk.text("a"), "f": ProcessedChunk.call(CALL), "u": ProcessedChunk.done()}
    with marbles() as m:
        results = m.start(m.cold("-a-f-u-|", lookup).pipe(accumulate(), ops.map(_status)))
        assert results == m.exp(
            "-a-f-u-|", {"a": "streaming:a", "f": "function_call:", "u": "function_call:"}
        )
