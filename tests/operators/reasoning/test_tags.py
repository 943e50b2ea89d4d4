"""The one definition of a reasoning tag's shape."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import StreamConfig
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.clean import clean_text
from rxcord.operators.flusher import Flusher
from rxcord.operators.reasoning.tags import (
    TAG_RE,
    partial_tag_len,
    split_think_blocks,
    stray_closer_reroutes,
    strip_think_tags,
)
from rxcord.operators.reasoning.think_strip import ThinkStripper


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
    """Closed blocks, a starting unclosed block and a stray closer at the start are routed to reasoning;
    an opener after shown text that never closes was prose (the unclosed-opener rule)."""
    assert split_think_blocks("a<think>r</think>b") == ("ab", "r")
    assert split_think_blocks("r1</think>vis") == ("vis", "r1")
    assert split_think_blocks("<mm:think>open") == ("", "open")
    assert split_think_blocks("v<mm:think>open") == ("vopen", "")


def test_split_think_blocks_reads_code_as_text() -> None:
    """Tags in inline code (any run length) and in fenced blocks (closed or not) are text."""
    for text in (
        "Use `<think>` tags to mark reasoning. Done.",
        "Write ``</think>`` or `` `<think>` ``.",
        "A transcript:\n```\n<think>plan</think>\nHi\n```\nThat is all.",
        "Unclosed:\n~~~text\n<think>plan",
        "    ```\n</think>\n    ```",
    ):
        assert split_think_blocks(text) == (text, ""), text
    # Outside the code the rule still applies.
    assert split_think_blocks("`<think>` <think>r</think>ok") == ("`<think>` ok", "r")
    # A blank line ends an inline span never closed; a fence line ends one too.
    assert split_think_blocks("a `b\n\n<think>r</think>c") == ("a `b\n\nc", "r")
    assert split_think_blocks("a `b\n```\nx\n```\n<think>r</think>c") == ("a `b\n```\nx\n```\nc", "r")


@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_strip_never_leaves_a_tag(a: str, b: str, c: str) -> None:
    """After the cleaning sweep no reasoning tag survives."""
    assert TAG_RE.search(strip_think_tags(f"{a}<think>{b}</think>{c}")) is None


def test_strip_handles_tags_formed_by_removal() -> None:
    """Removing a tag that splits another one does not leave the joined tag behind."""
    assert strip_think_tags("x<thi<think>r</think>nk>y") == "xy"


# -- the stray-closer rule, one rule for every consumer ---------------------------------------------------


def test_split_think_blocks_stray_closer_rule() -> None:
    """A first-tag closer in the window reroutes what came before it; beyond it, or later, it is removed."""
    assert split_think_blocks("plan</think>Hi", start_window=10) == ("Hi", "plan")
    assert split_think_blocks("plan</think>Hi", start_window=2) == ("planHi", "")
    assert split_think_blocks("a<think>b</think>c</think>d") == ("acd", "b")
    assert stray_closer_reroutes(5, None) and stray_closer_reroutes(5, 5) and not stray_closer_reroutes(6, 5)


def _stage03(text: str, window: int) -> str:
    stripper = ThinkStripper(start_window=window)
    visible, _ = stripper.feed(text)
    return visible + stripper.finish()[0]


def _stage05(text: str) -> str:
    flusher = Flusher(StreamConfig(delivery=DeliveryMode.AGGREGATED))
    flusher.push(text)
    return "".join(s.text for s in flusher.flush(final=True) if s.kind is SegmentKind.TEXT)


@settings(deadline=None)
@given(st.text(alphabet="ab .\n", min_size=1, max_size=30), st.text(alphabet="ab .\n", max_size=30))
def test_every_consumer_removes_a_stray_closer_after_shown_text(before: str, after: str) -> None:
    """Past the start window, the stripper (03), the flusher (05) and the cleaner (06) all keep the text
    before a stray closer and drop only the closer; inside the window stage 03 alone makes it reasoning."""
    text = before + "</think>" + after
    expected = before + after
    assert _stage03(text, window=0) == expected
    assert _stage05(text) == expected
    assert clean_text(text) == expected
    assert strip_think_tags(text) == expected
    assert split_think_blocks(text, start_window=-1) == (expected, "")
    assert _stage03(text, window=len(before)) == after
    assert split_think_blocks(text) == (after, before)
