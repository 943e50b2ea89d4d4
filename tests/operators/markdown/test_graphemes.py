"""Grapheme cluster boundaries and display width (``rxcord.operators.markdown.graphemes``)."""

from __future__ import annotations

import pytest

from rxcord.operators.markdown.graphemes import display_width, is_grapheme_boundary


@pytest.mark.parametrize(
    ("text", "inside"),
    [
        ("e\u0301", [1]),
        ("👨\u200d👩\u200d👧", [1, 2, 3, 4]),
        ("🇫🇷🇩🇪", [1, 3]),
        ("\r\n", [1]),
        ("\u1100\u1161\u11a8", [1, 2]),
        ("❤\ufe0f", [1]),
        ("👍🏽", [1]),
    ],
)
def test_grapheme_clusters_are_not_cut(text: str, inside: list[int]) -> None:
    """Combining marks, ZWJ sequences, flags, CR LF, Hangul jamo, selectors and skin tones stay whole."""
    for i in range(len(text) + 1):
        assert is_grapheme_boundary(text, i) is (i not in inside), i


def test_flag_pairs_count_from_the_start_of_the_run() -> None:
    """Between two flags is a boundary; inside a flag is not."""
    text = "🇫🇷🇩🇪🇯🇵"
    assert [is_grapheme_boundary(text, i) for i in range(1, 6)] == [False, True, False, True, False]


def test_display_width() -> None:
    """Wide characters count two columns, combining marks none."""
    assert display_width("abc") == 3
    assert display_width("日本") == 4
    assert display_width("e\u0301") == 1
