"""Resent text (Gemini): overlapping, cumulative and whole resends give the text once; real repeats stay."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.types import ChunkType, ProcessedChunk, RawStreamChunk, ThoughtKind, ThoughtLogEntry
from rxcord.providers import resend
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.resend import MIN_RESENT_CHARS, ResendFilter, resent_overlap
from tests.work import assert_linear

ADAPTER = GoogleAdapter()


def _event(parts: list[dict[str, Any]], finish: str | None = None) -> RawStreamChunk:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return RawStreamChunk(provider="google", data={"candidates": [candidate]})


def _run(raws: Sequence[RawStreamChunk]) -> list[ProcessedChunk]:
    normalizer = ADAPTER.new_normalizer()
    out: list[ProcessedChunk] = []
    for raw in raws:
        out.extend(normalizer.feed(raw))
    out.extend(normalizer.finish())
    return out


def _text(chunks: Sequence[ProcessedChunk]) -> str:
    return "".join(c.content for c in chunks if c.type is ChunkType.TEXT)


def _visible(parts: Sequence[str]) -> str:
    return _text(_run([_event([{"text": p}]) for p in parts] + [_event([], "STOP")]))


# --------------------------------------------------------------------------- thought summaries


def test_thought_summary_beside_an_empty_text_is_kept() -> None:
    """``{"text": "", "thoughtSummary": ...}``: the summary is extracted (was lost to the empty text)."""
    chunks = _run([_event([{"text": "", "thoughtSummary": "weighing the options"}])])
    summaries = [t for c in chunks for t in c.thoughts if t.kind is ThoughtKind.SUMMARY]
    assert summaries == [ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text="weighing the options")]
    assert _text(chunks) == ""


def test_a_summary_only_event_is_meaningful() -> None:
    """An event whose only part is a thought summary is content (it commits the stream)."""
    assert ADAPTER.is_meaningful(_event([{"text": "", "thoughtSummary": "thinking"}]))
    assert not ADAPTER.is_meaningful(_event([{"text": ""}]))


# --------------------------------------------------------------------------- resends


def test_a_partly_overlapping_resend_is_given_once() -> None:
    """The seed's "adapters also remove overlapping text": the restated start is dropped."""
    parts = ["Step one: preheat the oven to 200 degrees.", "oven to 200 degrees. Step two: mix."]
    assert _visible(parts) == "Step one: preheat the oven to 200 degrees. Step two: mix."


def test_cumulative_parts_are_given_once() -> None:
    """Parts that restate everything so far add only their new end."""
    text = "Step one: preheat the oven. Step two: mix the dry ingredients. Step three: bake."
    parts = [text[:30], text[:55], text]
    assert _visible(parts) == text


def test_thought_summaries_drop_their_own_overlap() -> None:
    """Summaries follow the same rule on their own channel."""
    first = "Considering the user's question about ovens"
    chunks = _run(
        [
            _event([{"text": first, "thought": True}]),
            _event([{"text": "question about ovens, and temperatures", "thought": True}]),
        ]
    )
    summaries = [t.text for c in chunks for t in c.thoughts if t.kind is ThoughtKind.SUMMARY]
    assert "".join(s or "" for s in summaries) == first + ", and temperatures"


def test_real_repeats_are_kept() -> None:
    """Laughter, table rules, short repeats and repeats away from the boundary are the model's text."""
    laughter = ["ha ha ha ha ha ha ha ha ", "ha ha ha ha ha ha ha ha ha!"]
    table = ["| a | b | c | d | e |\n|---|---|---|---|---|---|", "---|---|---|---|---|---|\n| 1 | 2 |"]
    short = ["I said no. ", "I said no. "]
    elsewhere = ["The quick brown fox jumps over it. Then", " it rests. The quick brown fox jumps over it."]
    for parts in (laughter, table, short, elsewhere):
        assert _visible(parts) == "".join(parts), parts


def test_short_and_empty_parts_are_never_resends() -> None:
    """A part shorter than the minimum (the empty one too) restates nothing, whatever was emitted."""
    tail = "0123456789abcdefghijklmnopqrstuvwxyz"
    assert resent_overlap(tail, "") == 0
    assert resent_overlap(tail, tail[-(MIN_RESENT_CHARS - 1) :]) == 0


def test_the_overlap_must_be_long_enough() -> None:
    """One character short of the minimum is kept; at the minimum it is dropped."""
    base = "0123456789abcdefghijklmnopqrstuvwxyz"
    kept = base[-(MIN_RESENT_CHARS - 1) :] + "!"
    dropped = base[-MIN_RESENT_CHARS:] + "!"
    assert resent_overlap(base, kept) == 0
    assert resent_overlap(base, dropped) == MIN_RESENT_CHARS


def _unique_text(draw: st.DrawFn) -> str:
    """Text in which no window of MIN_RESENT_CHARS characters repeats (every segment has its own mark).

    Any repeat in it at a part boundary would be a resend, so the three forms must agree exactly.
    """
    pieces = draw(st.lists(st.text(alphabet="ha -|=\n.xy", max_size=5), min_size=1, max_size=40))
    return "".join(piece + chr(0x4E00 + i) for i, piece in enumerate(pieces))


@st.composite
def _forms(draw: st.DrawFn) -> tuple[str, list[str], list[str], list[str]]:
    text = _unique_text(draw)
    cuts = sorted(set(draw(st.lists(st.integers(1, len(text)), max_size=10))) | {len(text)})
    plain = [text[a:b] for a, b in zip([0, *cuts], cuts, strict=False)]
    # Cumulative parts restate at least MIN_RESENT_CHARS (shorter is indistinguishable from a repeat).
    cumulative = [text[:cut] for cut in cuts if cut >= MIN_RESENT_CHARS] or [text]
    overlapping = []
    previous = 0
    for cut in cuts:
        back = draw(st.integers(0, previous))
        start = previous - back if back >= MIN_RESENT_CHARS else previous
        overlapping.append(text[start:cut])
        if draw(st.booleans()) and cut - start >= MIN_RESENT_CHARS:
            overlapping.append(text[start:cut])  # the whole part again
        previous = cut
    return text, plain, cumulative, overlapping


@settings(max_examples=200, deadline=None)
@given(forms=_forms())
def test_plain_cumulative_and_overlapping_forms_give_the_same_text(
    forms: tuple[str, list[str], list[str], list[str]],
) -> None:
    """Whatever form the backend streams the answer in, the text comes out once, as written."""
    text, plain, cumulative, overlapping = forms
    assert _visible(plain) == text
    assert _visible(cumulative) == text
    assert _visible(overlapping) == text


@settings(max_examples=100, deadline=None)
@given(
    unit=st.text(alphabet="ab-|= \n", min_size=1, max_size=6),
    repeats=st.integers(2, 30),
    cuts=st.lists(st.integers(0, 200), max_size=8),
)
def test_periodic_text_is_never_deduplicated(unit: str, repeats: int, cuts: list[int]) -> None:
    """Text that repeats a unit, cut anywhere, comes out whole (a repeat is not a resend)."""
    text = unit * repeats
    points = sorted({c % (len(text) + 1) for c in cuts})
    parts = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    assert _visible(parts) == text


# --------------------------------------------------------------------------- linear work


def _feed(parts: Sequence[str]) -> None:
    channel = ResendFilter()
    for part in parts:
        channel.fresh(part)


def test_the_check_is_linear_on_periodic_parts() -> None:
    """Every periodic part hits the fast path's find and runs the prefix pass: work stays linear."""
    assert_linear(lambda n: _feed(["ab" * 40] * n), 50)


def test_a_check_reads_no_more_emitted_text_than_the_part(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small parts after one huge part are checked against their own length of it, not the whole."""
    seen: list[tuple[int, int]] = []

    def counting(tail: str, part: str) -> int:
        seen.append((len(tail), len(part)))
        return resent_overlap(tail, part)

    monkeypatch.setattr(resend, "resent_overlap", counting)
    parts = ["x" * 200_000, *(f"{i:025d}" for i in range(50)), "y" * 10, "z"]
    _feed(parts)
    assert len(seen) == len(parts)
    assert all(tail <= part for tail, part in seen)
    assert sum(tail for tail, _ in seen) <= sum(len(p) for p in parts[1:])


def test_the_check_is_linear_in_one_huge_cumulative_resend() -> None:
    """A cumulative part as long as the whole answer is read once, not once per character."""

    def run(n: int) -> None:
        text = "".join(f"<{i}>" for i in range(n))
        _feed([text[: len(text) // 2], text])

    assert_linear(run, 2000)
