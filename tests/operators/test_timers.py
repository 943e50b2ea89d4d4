"""Time-driven stage 04 operators under virtual time: idle timeout and typing heartbeat."""

from __future__ import annotations

from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.core.state import Segment, TypingPulse
from rxcord.core.types import ChunkType, ErrorType, ProcessedChunk, SegmentKind
from rxcord.operators.idle_timeout import idle_timeout
from rxcord.operators.typing_heartbeat import typing_heartbeat
from tests.marbles import marbles

A, B = ProcessedChunk.text("a"), ProcessedChunk.text("b")


def _label(chunk: ProcessedChunk) -> str:
    if chunk.type is ChunkType.ERROR:
        assert chunk.error is not None
        return f"{chunk.error.type.value}:{chunk.error.retryable}"
    return chunk.content


def test_marble_idle_timeout_fires_after_silence() -> None:
    """No chunk for 3 ticks ends the stream with a retryable timeout error."""
    with marbles() as m:
        source = m.cold("-a-b--------b-|", {"a": A, "b": B})
        "                0123456789"
        results = m.start(source.pipe(idle_timeout(3.0), ops.map(_label)))
        assert results == m.exp("-a-b--(T,|)", {"a": "a", "b": "b", "T": "timeout:True"})


def test_marble_idle_timeout_quiet_when_chunks_flow() -> None:
    """A stream with gaps shorter than the timeout is untouched."""
    with marbles() as m:
        results = m.start(m.cold("-a--b--|", {"a": A, "b": B}).pipe(idle_timeout(3.0), ops.map(_label)))
        assert results == m.exp("-a--b--|", {"a": "a", "b": "b"})


def test_idle_timeout_disposes_the_source() -> None:
    """The timeout unsubscribes the source (which closes the HTTP request)."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(ReactiveTest.on_next(1, A), ReactiveTest.on_next(50, B))
    results = scheduler.start(lambda: source.pipe(idle_timeout(5.0)))
    assert source.subscriptions == [ReactiveTest.subscribe(200, 206)]
    error_chunk = results.messages[1].value.value
    assert error_chunk.error.type is ErrorType.TIMEOUT


TEXT = Segment(kind=SegmentKind.TEXT, text="hi")
THOUGHT = Segment(kind=SegmentKind.THOUGHT, text="hmm")


def _kind(item: Segment | TypingPulse) -> str:
    return "p" if isinstance(item, TypingPulse) else item.kind.value


def test_marble_typing_pulses_until_first_visible_segment() -> None:
    """Pulses at start and every interval; a thought segment does not stop them, text does."""
    with marbles() as m:
        source = m.cold("-------t----a--|", {"t": THOUGHT, "a": TEXT})
        "                0123456789012345"
        results = m.start(source.pipe(typing_heartbeat(5.0), ops.map(_kind)))
        assert results == m.exp("p----p-t--p-a--|", {"p": "p", "t": "thought", "a": "text"})


def test_typing_disabled_with_zero_interval() -> None:
    """An interval of 0 turns the heartbeat off."""
    with marbles() as m:
        results = m.start(m.cold("--a|", {"a": TEXT}).pipe(typing_heartbeat(0.0), ops.map(_kind)))
        assert results == m.exp("--a|", {"a": "text"})
