"""thread_text: a transducer per subscription; held text goes out before non-text chunks and at the end."""

from __future__ import annotations

from reactivex import operators as ops

from rxcord.core.types import ChunkType, FinishReason, ProcessedChunk
from rxcord.operators.thread_text import thread_text
from tests.marbles import marbles


class _HoldLast:
    """Passes text through but holds each chunk's last character until the next one (or a release)."""

    def __init__(self) -> None:
        self.held = ""

    def feed(self, chunk: ProcessedChunk) -> list[ProcessedChunk]:
        text = self.held + chunk.content
        self.held = text[-1:]
        return [ProcessedChunk.text(text[:-1])]

    def release(self, _before: ProcessedChunk | None) -> list[ProcessedChunk]:
        held, self.held = self.held, ""
        return [ProcessedChunk.text(held)] if held else []


def _label(chunk: ProcessedChunk) -> str:
    return chunk.content if chunk.type is ChunkType.TEXT else chunk.type.value


OPERATOR = thread_text(_HoldLast, _HoldLast.feed, _HoldLast.release)
DONE = ProcessedChunk.done(finish_reason=FinishReason.STOP)


def test_held_text_goes_out_before_a_non_text_chunk_and_at_completion() -> None:
    """ab -> a (b held); cd -> bc (d held); done -> d, then done; completion releases nothing more."""
    with marbles() as m:
        source = m.cold(
            "-x-y-z------w-|",
            {
                "x": ProcessedChunk.text("ab"),
                "y": ProcessedChunk.text("cd"),
                "z": DONE,
                "w": ProcessedChunk.text("ef"),
            },
        )
        results = m.start(source.pipe(OPERATOR, ops.map(_label)))
        assert results == m.exp(
            "-a-b-(c,d)--e-(f,|)", {"a": "a", "b": "bc", "c": "d", "d": "done", "e": "e", "f": "f"}
        )


def test_a_failing_transducer_ends_the_stream_with_its_error() -> None:
    """An exception from the transducer is an on_error, not a crash of the chain."""

    def broken(_state: _HoldLast, _chunk: ProcessedChunk) -> list[ProcessedChunk]:
        raise ValueError("bad")

    error = ValueError("bad")
    with marbles() as m:
        source = m.cold("-x-|", {"x": ProcessedChunk.text("ab")})
        results = m.start(source.pipe(thread_text(_HoldLast, broken, _HoldLast.release)))
        assert len(results) == 1 and results[0].time == m.exp("-x")[0].time
        assert results[0].value.kind == "E" and str(results[0].value.exception) == str(error)


def test_each_subscription_gets_its_own_transducer() -> None:
    """Two subscriptions do not share held text."""
    with marbles() as m:
        source = m.cold("-x-|", {"x": ProcessedChunk.text("ab")})
        piped = source.pipe(OPERATOR, ops.map(_label))
        first = m.start(piped)
    with marbles() as m:
        source = m.cold("-x-|", {"x": ProcessedChunk.text("ab")})
        second = m.start(source.pipe(OPERATOR, ops.map(_label)))
        assert first == second == m.exp("-a-(b,|)", {"a": "a", "b": "b"})
