"""The message-cutting policy shared by the live flusher and the splitter (``markdown/cut_policy.py``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import StreamConfig
from rxcord.core.types import DeliveryMode
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.cut_policy import (
    QUOTE,
    TOP_RANK,
    Fence,
    Level,
    choose,
    half_full,
    is_blank_piece,
    join,
    opening,
    rank,
    table_header,
)


def test_long_opening_line_is_reopened_as_bare_marker() -> None:
    """An opening line longer than a quarter of the limit is reopened without its info string."""
    fence = Fence("```" + "x" * 30, "`", 3)
    assert fence.reopen(2000) == "```" + "x" * 30 + "\n"
    assert fence.reopen(64) == "```\n"
    assert Fence("`" * 20, "`", 20).reopen(64) == "```\n"
    assert fence.close == "\n```"


def test_reopen_repeats_a_header_that_fits() -> None:
    """A table header follows the reopened fence line, unless it would take over a quarter of the limit."""
    fence = Fence("```", "`", 3)
    assert fence.reopen(2000, "a | b\n--+--\n") == "```\na | b\n--+--\n"
    assert fence.reopen(32, "a | b\n--+--\n" * 2) == "```\n"


def test_rank_orders_levels_then_outside_a_block_first() -> None:
    """Paragraph > line > sentence > word; at one level a cut outside a block beats one inside."""
    ranks = [rank(level, fenced) for level in Level for fenced in (True, False)]
    assert ranks == sorted(ranks) and len(set(ranks)) == len(ranks)
    assert TOP_RANK == max(ranks) == rank(Level.PARAGRAPH, fenced=False)


def test_choose_takes_the_best_rank_in_the_upper_half_else_the_latest() -> None:
    """The half-full rule: best rank among cuts ending at half or later, latest of that rank."""
    word, line, para = rank(Level.WORD, False), rank(Level.LINE, False), rank(Level.PARAGRAPH, False)
    half = half_full(0, 100)
    assert half == 50
    assert choose([(90, word, "w90"), (70, line, "l70"), (60, line, "l60"), (30, para, "p30")], half) == "l70"
    assert choose([(40, word, "w40"), (30, para, "p30")], half) == "w40"
    assert choose([(80, para, "p80"), (99, word, "never read")], half) == "p80"
    assert choose([], half) is None


def test_opening_adds_the_quote_unless_the_piece_has_one() -> None:
    """After a `>>> ` line a piece starts with `>>> `, then the reopened fence."""
    assert opening(True, "text", "```py\n") == QUOTE + "```py\n"
    assert opening(True, ">>> already", "") == ""
    assert opening(False, "text", "```py\n") == "```py\n"


def test_join_removes_the_close_and_reopen_a_cut_added() -> None:
    """Joining two pieces of a block gives the text back; anything else is concatenated."""
    assert join("```py\na = 1\n\n```", "```py\nb = 2\n```") == "```py\na = 1\nb = 2\n```"
    assert join(">>> ```py\na\n\n```", ">>> ```py\nb\n```") == ">>> ```py\na\nb\n```"
    assert join("text", "more") == "textmore"
    assert join("x\n```", "~~~\ny") == "x\n```~~~\ny"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["x = 1\n", "\n", "    y(2)\n", "# c\n", "z" * 30 + "\n"]), max_size=60))
def test_join_rebuilds_the_block_the_flusher_cut(lines: list[str]) -> None:
    """The live flusher's pieces of a long block, joined, are the block exactly."""
    text = "```python\n" + "".join(lines) + "```\n"
    flusher = Flusher(StreamConfig(delivery=DeliveryMode.LIVE, message_limit=60))
    pieces = [segment.text for segment in flusher.push(text) + flusher.flush(final=True)]
    joined = pieces[0] if pieces else ""
    for piece in pieces[1:]:
        joined = join(joined, piece)
    assert joined == text


def test_blank_pieces_are_fence_lines_and_whitespace_only() -> None:
    """A piece of fences and blank lines is blank; any other character makes it worth sending."""
    assert is_blank_piece("```python\n\n\n```") and is_blank_piece(">>> ~~~\n~~~") and is_blank_piece(" \n")
    assert not is_blank_piece("```\nx\n```") and not is_blank_piece("`x`") and not is_blank_piece("a")


def test_table_header_is_read_from_a_bare_block() -> None:
    """A bare block whose second line is a -+- rule under a non-blank line has a header; others do not."""
    fence = Fence("```", "`", 3)
    text = "```\nName  | Age\n------+----\nAlice |  30\n```"
    assert table_header(text, 4, fence) == "Name  | Age\n------+----\n"
    assert table_header("```\nTitle\n-----\nbody\n```", 4, fence) == "Title\n-----\n"
    assert table_header("```py\nName | Age\n-----+----\n", 6, Fence("```py", "`", 3)) == ""
    assert table_header("```\nx = 1\ny = 2\n", 4, fence) == ""
