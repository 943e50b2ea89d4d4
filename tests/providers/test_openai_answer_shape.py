"""Chat Completions: a refusal is the answer; with several choices the answer is choice 0 (issue 14)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.types import ChunkType, ProcessedChunk, RawStreamChunk
from rxcord.providers.openai import OpenAIAdapter


def _run(events: Iterable[Any], *, complete: bool = False) -> list[ProcessedChunk]:
    normalizer = OpenAIAdapter().new_normalizer()
    out: list[ProcessedChunk] = []
    for data in events:
        metadata = {"complete": True} if complete else {}
        out.extend(normalizer.feed(RawStreamChunk(provider="openai", data=data, metadata=metadata)))
    out.extend(normalizer.finish())
    return out


def _text(chunks: Iterable[ProcessedChunk]) -> str:
    return "".join(c.content for c in chunks if c.type is ChunkType.TEXT)


def _done(chunks: Iterable[ProcessedChunk]) -> ProcessedChunk:
    (done,) = [c for c in chunks if c.type is ChunkType.DONE]
    return done


def _delta(index: int, finish: str | None = None, **delta: Any) -> dict[str, Any]:
    return {"choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def test_streamed_refusal_is_delivered_as_the_answer() -> None:
    """``delta.refusal`` pieces are the visible answer, in order; never dropped."""
    chunks = _run(
        [
            _delta(0, role="assistant", content=None, refusal=""),
            _delta(0, refusal="I can't help"),
            _delta(0, refusal=" with that."),
            _delta(0, "stop"),
        ]
    )
    assert _text(chunks) == "I can't help with that."
    assert not [c for c in chunks if c.type is ChunkType.ERROR]


def test_complete_response_refusal_is_delivered() -> None:
    """A complete ``chat.completion`` whose message carries ``refusal`` (content null)."""
    body = {
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": None, "refusal": "No."},
                "finish_reason": "stop",
            }
        ],
    }
    assert _text(_run([body], complete=True)) == "No."


PIECES = st.lists(st.sampled_from(["Hel", "lo", " wor", "ld", "!", " é", "\n"]), min_size=1, max_size=8)


@settings(max_examples=60, deadline=None)
@given(PIECES, PIECES, st.randoms(use_true_random=False))
def test_other_choices_never_interleave(first: list[str], second: list[str], rng: Any) -> None:
    """n = 2, deltas of both choices interleaved in any order: the text is choice 0's, whole."""
    events = [_delta(0, content=p) for p in first]
    others = [_delta(1, content=p) for p in second]
    for event in others:
        events.insert(rng.randint(0, len(events)), event)
    events += [_delta(1, "length"), _delta(0, "stop")]
    chunks = _run(events)
    assert _text(chunks) == "".join(first)
    assert _done(chunks).metadata["raw_finish_reason"] == "stop"


def test_one_chunk_with_both_choices_keeps_choice_zero() -> None:
    """Both choices in one chunk, choice 1 listed first: choice 0 is the answer."""
    event = {
        "choices": [
            {"index": 1, "delta": {"content": "B"}, "finish_reason": None},
            {"index": 0, "delta": {"content": "A"}, "finish_reason": None},
        ]
    }
    assert _text(_run([event, _delta(0, "stop")])) == "A"
