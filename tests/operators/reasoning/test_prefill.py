"""Assistant prefill: never lost, never duplicated, whatever the chunking."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from reactivex import operators as ops

from rxcord.core.types import FinishReason, ProcessedChunk
from rxcord.operators.reasoning.prefill import PrefillJoiner, prefill
from tests.marbles import marbles


def _feed(prefix: str, pieces: list[str]) -> str:
    joiner = PrefillJoiner(prefix)
    return "".join(joiner.feed(p) for p in pieces) + joiner.finish()


def test_continuation_gets_the_prefill() -> None:
    """A provider that continues after the prefill: the prefill is prepended."""
    assert _feed("Sure,", [" here", " it is"]) == "Sure, here it is"


def test_echo_is_not_duplicated() -> None:
    """A backend that echoes the prefill: passed through once."""
    assert _feed("Sure,", ["Su", "re, here"]) == "Sure, here"


def test_empty_stream_still_shows_the_prefill() -> None:
    """A stream with no text still starts with the prefill."""
    assert _feed("Hm.", []) == "Hm."


def test_no_prefill_is_identity() -> None:
    """An empty prefill changes nothing."""
    assert _feed("", ["a", "b"]) == "ab"


@given(st.text(min_size=1, max_size=10), st.text(max_size=30), st.booleans(), st.lists(st.integers(0, 40)))
def test_split_invariance(prefix: str, rest: str, echo: bool, cuts: list[int]) -> None:
    """Any chunking of the same stream gives the same text, starting with the prefill exactly once."""
    stream = (prefix + rest) if echo else rest
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    out = _feed(prefix, pieces)
    assert out == _feed(prefix, [stream])
    assert out.startswith(prefix)
    if echo:
        assert out == stream


def _content(chunk: ProcessedChunk) -> str:
    return chunk.content if chunk.type.value == "text" else chunk.type.value


def test_marble_prefill_released_before_done() -> None:
    """A held prefix is released before a non-text chunk, in order."""
    lookup = {"a": ProcessedChunk.text("Su"), "d": ProcessedChunk.done(finish_reason=FinishReason.STOP)}
    with marbles() as m:
        results = m.start(m.cold("-a-d-|", lookup).pipe(prefill("Sure,"), ops.map(_content)))
    timeline = [(r.time, r.value.kind, getattr(r.value, "value", None)) for r in results]
    assert timeline == [(201, "N", ""), (203, "N", "Sure,"), (203, "N", "done"), (205, "C", None)]
