"""Tests of ``TextBuffer``: the compact appender long streams keep their text in."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from rxcord.core.text_buffer import GROUP, SHORT, TextBuffer


@given(st.text(max_size=5), st.lists(st.text(max_size=6), max_size=3 * GROUP + 5))
def test_holds_exactly_what_was_appended(initial: str, pieces: list[str]) -> None:
    """Whatever the number of pieces (across several groups), the text and its length are exact."""
    buffer = TextBuffer(initial)
    for piece in pieces:
        buffer.append(piece)
    expected = initial + "".join(pieces)
    assert buffer.getvalue() == expected
    assert len(buffer) == len(expected)
    assert bool(buffer) is bool(expected)


def test_clear_forgets_everything() -> None:
    """After ``clear`` the buffer is empty and keeps working."""
    buffer = TextBuffer("x")
    for _ in range(GROUP + 1):
        buffer.append("ab")
    buffer.clear()
    assert (buffer.getvalue(), len(buffer), bool(buffer)) == ("", 0, False)
    buffer.append("z")
    assert buffer.getvalue() == "z"


def test_pieces_are_not_kept_one_by_one() -> None:
    """After a full group the buffer holds one joined string, not the pieces (they can be freed)."""
    buffer = TextBuffer("x" * SHORT)
    pieces = [f"p{i}" for i in range(GROUP)]
    for piece in pieces:
        buffer.append(piece)
    assert buffer._parts == ["x" * SHORT, "".join(pieces)]


def _lists_held(buffer: TextBuffer) -> int:
    return sum(isinstance(ref, list) for ref in gc.get_referents(buffer))


def test_one_list_at_most_and_none_while_empty_or_short() -> None:
    """The collector walks what a live stream holds: an empty or short buffer holds no list, a long one one.

    (Counted, not timed: before, every buffer held two lists from its creation on, then one
    from its first piece on.)
    """
    buffer = TextBuffer()
    assert _lists_held(buffer) == 0
    for _ in range(SHORT // 2):
        buffer.append("ab")
        assert _lists_held(buffer) == 0
    assert buffer._parts == "ab" * (SHORT // 2)
    for j in range(3 * GROUP + 7):
        buffer.append(str(j))
        assert _lists_held(buffer) == 1
    # The short text as the first group, then whole groups and the pieces after them, in one list.
    assert isinstance(buffer._parts, list) and len(buffer._parts) == 1 + 3 + 7
    buffer.clear()
    assert _lists_held(buffer) == 0
    assert _lists_held(TextBuffer("x")) == 0
    assert _lists_held(TextBuffer("x" * (SHORT + 1))) == 0  # one long piece: itself
