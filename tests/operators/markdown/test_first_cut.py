"""FirstCut: where edit mode's first message ends, and the work it does to find it."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.operators.markdown.first_cut import FirstCut


def _feed(deltas: list[str], limit: int = 2000) -> int | None:
    first = FirstCut(limit)
    end = None
    for delta in deltas:
        end = first.feed(delta)
    return end


def _shown(deltas: list[str]) -> str | None:
    first = FirstCut(2000)
    for delta in deltas:
        if first.feed(delta) is not None:
            return first.shown("".join(deltas))
    return None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("Hello there. More words", "Hello there."),
        ("## Title\nBody", "## Title\n"),
        ("```py\nx = 1. y\n```\nafter", "```py\nx = 1. y\n```\n"),
        ("Use `a. b` and then stop. Next", "Use `a. b` and then stop."),
        ("- item one. two\n- item", "- item one. two\n"),  # a list item line is not cut inside
    ],
)
def test_the_first_boundary(text: str, shown: str) -> None:
    assert _shown(list(text)) == shown
    assert _shown([text]) == shown


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(
        st.sampled_from(["word", "two.", "**b**", "`c.d`", "\n", "```\n", "|x|\n", "é"]), max_size=60
    ),
    cuts=st.lists(st.integers(0, 400), max_size=12),
)
def test_the_boundary_does_not_depend_on_the_chunking(words: list[str], cuts: list[int]) -> None:
    text = " ".join(words)
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in itertools.pairwise(points) if b > a]
    assert _feed(pieces) == _feed([text])
    assert _shown(pieces) == _shown([text])


class _Counting(FirstCut):
    __slots__ = ("tracked",)

    def __init__(self, limit: int) -> None:
        super().__init__(limit)
        self.tracked = 0

    def _track(self, text: str) -> None:
        self.tracked += len(text)
        super()._track(text)


@pytest.mark.parametrize("one_delta", [True, False])
def test_an_open_marker_costs_each_character_once_and_stops_at_a_message(one_delta: bool) -> None:
    text = "**" + "w " * 100_000  # a bold run never closed: no word boundary is ever accepted
    first = _Counting(2000)
    if one_delta:
        end: int | None = first.feed(text)
    else:
        end = None
        for i in range(0, 6000, 3):
            end = first.feed(text[i : i + 3])
            if end is not None:
                break
    assert end is not None and end >= 2000  # shown as it is once a message is full
    assert first.tracked <= 2000 + 3  # the markers read up to the limit, each character once
