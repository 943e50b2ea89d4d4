"""The one definition of a reasoning tag's shape."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from rxcord.operators.reasoning_tags import TAG_RE, partial_tag_len, split_think_blocks, strip_think_tags


def test_namespaced_and_attributed_tags_match() -> None:
    """<think>, <mm:think>, <ns:think> and attributes are all tags; <div> is not."""
    for tag in ("<think>", "</think>", "<mm:think>", "</ns:think >", '<think type="x">', "<THINKING>"):
        assert TAG_RE.fullmatch(tag), tag
    assert TAG_RE.search("<div>") is None and TAG_RE.search("a < b") is None


def test_partial_tag_len_holds_possible_tag_starts() -> None:
    """A suffix that could still become a tag is held; one that cannot is released."""
    assert partial_tag_len("abc<thi") == 4
    assert partial_tag_len("x</th") == 4
    assert partial_tag_len("<mm:thi") == 7
    assert partial_tag_len("a < b") == 0
    assert partial_tag_len("<b>") == 0
    assert partial_tag_len("a</") == 2  # regression: used to raise IndexError


def test_split_think_blocks_rules() -> None:
    """Closed blocks, an unclosed opener and a stray closer are all routed to reasoning."""
    assert split_think_blocks("a<think>r</think>b") == ("ab", "r")
    assert split_think_blocks("r1</think>vis") == ("vis", "r1")
    assert split_think_blocks("v<mm:think>open") == ("v", "open")


@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_strip_never_leaves_a_tag(a: str, b: str, c: str) -> None:
    """After the cleaning sweep no reasoning tag survives."""
    assert TAG_RE.search(strip_think_tags(f"{a}<think>{b}</think>{c}")) is None


def test_strip_handles_tags_formed_by_removal() -> None:
    """Removing a tag that splits another one does not leave the joined tag behind."""
    assert strip_think_tags("x<thi<think>r</think>nk>y") == "xy"
