"""Tests of ``TextBuffer``: the compact appender long streams keep their text in."""

from __future__ import annotations

import gc

from hypothesis import given
from hypothesis import strategies as st

from rxcord.core.text_buffer import GROUP, TextBuffer


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
    buffer = TextBuffer()
    pieces = [f"p{i}" for i in range(GROUP)]
    for piece in pieces:
        buffer.append(piece)
    assert buffer._parts == ["".join(pieces)]


def _lists_held(buffer: TextBuffer) -> int:
    return sum(isinstance(ref, list) for ref in gc.get_referents(buffer))


def test_one_list_at_most_and_none_while_empty() -> None:
    """The collector walks what a live stream holds: an empty buffer holds no list, a full one one.

    (Counted, not timed: before, every buffer held two lists from its creation on.)
    """
    buffer = TextBuffer()
    assert _lists_held(buffer) == 0
    for k in range(3 * GROUP + 7):
        buffer.append(str(k))
        assert _lists_held(buffer) == 1
    # Joined in groups: three group strings and the seven pieces after them, in one list.
    assert buffer._parts is not None and len(buffer._parts) == 3 + 7
    buffer.clear()
    assert _lists_held(buffer) == 0
    assert _lists_held(TextBuffer("x")) == 1
