"""Hypothesis strategies and helpers shared by the property tests: cutting a text into chunks."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import strategies as st

CUTS = st.lists(st.integers(min_value=0), max_size=30)
"""Cut points for ``cut``: any non-negative integers (taken modulo the text's length plus one)."""


def cut(text: str, points: Sequence[int], *, keep_empty: bool = False) -> list[str]:
    """*text* cut at *points* (code point indices modulo ``len(text) + 1``, possibly inside a tag, a
    token or a grapheme cluster). ``"".join(cut(text, points)) == text``.

    No empty chunk, unless *keep_empty*: then a repeated point (or one at either end) gives an
    empty chunk there, for transducers that must also accept empty deltas.
    """
    if keep_empty:
        edges = [0, *sorted(p % (len(text) + 1) for p in points), len(text)]
        return [text[a:b] for a, b in itertools.pairwise(edges)]
    edges = [0, *sorted({p % (len(text) + 1) for p in points}), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(edges) if b > a]


THINK_MARKDOWN_TOKENS = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<mm:think>",
        "</ns:think >",
        "<thi",
        "nk>",
        "</",
        "<",
        "`",
        "``",
        "```",
        "\n```\n",
        "\n```py\n",
        "\n~~~\n",
        "~~~",
        "\n",
        "\n\n",
        "  ",
        "Hello",
        "a.b",
        "x",
        "👋🏽",
    ]
)
THINK_MARKDOWN = st.lists(
    st.one_of(THINK_MARKDOWN_TOKENS, st.text(alphabet="ab<>/`~ \n", max_size=3)), max_size=24
).map("".join)
"""Content mixing think tags with markdown code (backtick runs, fences, blank lines), for split
invariance of the code-aware think-tag rule: tags in and out of inline spans and fenced blocks."""
