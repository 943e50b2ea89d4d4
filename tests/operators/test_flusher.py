"""Stage 05 buffer management: the pure Flusher (what is released when, and where text is cut)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import StreamConfig
from rxcord.core.state import Segment, StreamState
from rxcord.core.types import (
    DeliveryMode,
    SegmentKind,
    StreamStatus,
)
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.cut_policy import is_blank_piece
from rxcord.operators.markdown.scan import MarkdownScanner
from rxcord.operators.markdown.tables import render_table
from rxcord.operators.reasoning.tags import CLOSE_RE, DETAILS_CLOSE_RE, DETAILS_OPEN_RE, OPEN_RE
from rxcord.sinks.split_message import split_message
from tests.sinks.test_split_message import fences_balanced, reconstruct
from tests.strategies import CUTS, cut
from tests.work import assert_linear

LIVE = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=2.0)
AGG = StreamConfig(delivery=DeliveryMode.AGGREGATED)
TEXT = SegmentKind.TEXT


def state(delta: str = "", status: StreamStatus = StreamStatus.STREAMING, **kw: Any) -> StreamState:
    return StreamState(delta=delta, status=status, **kw)


def seg(text: str, *, final: bool = False, kind: SegmentKind = TEXT) -> Segment:
    return Segment(kind=kind, text=text, final=final)


def run(
    config: StreamConfig, chunks: list[str], *, idle_after: frozenset[int] = frozenset()
) -> list[Segment]:
    """Push *chunks*, calling idle() after the chunks whose index is in *idle_after*, then flush."""
    flusher = Flusher(config)
    out: list[Segment] = []
    for i, chunk in enumerate(chunks):
        out += flusher.push(chunk)
        if i in idle_after:
            out += flusher.idle()
    out += flusher.flush(final=True)
    return out


def texts(segments: list[Segment], kind: SegmentKind = TEXT) -> list[str]:
    return [s.text for s in segments if s.kind is kind]


# -- properties ----------------------------------------------------------------------------------------------

ATOMS = [
    "\n",
    "\n\n",
    " ",
    ". ",
    "! ",
    "Hello",
    "world",
    "e\u0301",
    "👨\u200d👩\u200d👧",
    "日本語。",
    "`code span`",
    "`",
    "```py\n",
    "```\n",
    "~~~\n",
    "<@123456789012345678>",
    "</ping sub:123>",
    "https://example.com/a/b",
    "[a masked link](https://e.com/p)",
    "- ",
    "1. ",
    ">>> ",
    "**bold**",
    "||spoiler||",
    "<",
    "<th",
    "<det",
    "<div>",
]
TAG_ATOMS = [
    "<think>",
    "</think>",
    "<mm:think>",
    "<details>",
    "<details open>",
    "</details>",
    "<summary>s</summary>",
    "| a | b |\n",
    "|---|--:|\n",
    "| 1 | 2 |\n",
    "|",
]
PLAIN = st.lists(
    st.one_of(st.sampled_from(ATOMS), st.text(alphabet="ab .,\n", max_size=12)), max_size=60
).map("".join)
RICH = st.lists(
    st.one_of(st.sampled_from(ATOMS + TAG_ATOMS), st.text(alphabet="ab .,\n", max_size=12)), max_size=60
).map("".join)


def has_tags_or_tables(text: str) -> bool:
    if any(p.search(text) for p in (OPEN_RE, CLOSE_RE, DETAILS_OPEN_RE, DETAILS_CLOSE_RE)):
        return True
    scanner = MarkdownScanner()
    scanner.feed(text)
    scanner.finish()
    return any(render_table(text[t.start : t.end]) is not None for t in scanner.tables)


@settings(max_examples=200, deadline=None)
@given(RICH, CUTS)
def test_aggregated_output_does_not_depend_on_chunking(text: str, cuts: list[int]) -> None:
    """Aggregated mode yields identical segments for any chunking of the same text."""
    assert run(AGG, cut(text, cuts)) == run(AGG, [text])


@settings(max_examples=200, deadline=None)
@given(RICH, CUTS, st.sampled_from([60, 2000]))
def test_live_output_without_idle_does_not_depend_on_chunking(text: str, cuts: list[int], limit: int) -> None:
    """Live mode (no idle gaps) cuts at the same places for any chunking."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=limit)
    assert run(config, cut(text, cuts)) == run(config, [text])


@settings(max_examples=250, deadline=None)
@given(PLAIN, CUTS, st.frozensets(st.integers(0, 25)), st.sampled_from([40, 60, 2000]))
def test_live_text_segments_join_back_to_the_input(
    text: str, cuts: list[int], idle: frozenset[int], limit: int
) -> None:
    """Live TEXT segments rebuild the input exactly once added fence/quote text is removed.

    Every segment but the last has visible text and is not final.
    """
    if has_tags_or_tables(text):
        return
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=limit, max_flushes=10**6)
    segments = run(config, cut(text, cuts), idle_after=idle)
    pieces = texts(segments)
    assert "".join(pieces) == text or reconstruct(text, pieces, drop_whitespace=False) is not None, pieces
    assert all(s.kind is TEXT for s in segments)
    for segment in segments[:-1]:
        assert segment.text.strip() and not segment.final
    for piece in pieces:
        for message in split_message(piece, 2000) + split_message(piece, 40):
            assert len(message) <= 2000 and fences_balanced(message)


@settings(max_examples=200, deadline=None)
@given(RICH, CUTS, st.frozensets(st.integers(0, 25)))
def test_live_and_aggregated_agree_on_text_thoughts_and_details(
    text: str, cuts: list[int], idle: frozenset[int]
) -> None:
    """Live TEXT joins to the aggregated TEXT (tables rendered, tags removed); blocks are the same."""
    live = run(StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=10**6), cut(text, cuts), idle_after=idle)
    agg = run(AGG, [text])
    assert texts(live, SegmentKind.THOUGHT) == texts(agg, SegmentKind.THOUGHT)
    assert texts(live, SegmentKind.DETAILS) == texts(agg, SegmentKind.DETAILS)
    (whole,) = texts(agg) or [""]
    pieces = texts(live)
    assert "".join(pieces) == whole or reconstruct(whole, pieces, drop_whitespace=False) is not None
    for piece in pieces:
        for message in split_message(piece, 2000):
            assert len(message) <= 2000 and fences_balanced(message)


# -- unit: live boundaries -----------------------------------------------------------------------------------


def _steps(config: StreamConfig, chunks: list[str], idle_after: frozenset[int]) -> list[list[Segment]]:
    """What each call returns: every push, the idle() calls, then the final flush."""
    flusher = Flusher(config)
    steps: list[list[Segment]] = []
    for i, chunk in enumerate(chunks):
        steps.append(flusher.push(chunk))
        if i in idle_after:
            steps.append(flusher.idle())
    steps.append(flusher.flush(final=True))
    return steps


@settings(max_examples=300, deadline=None)
@given(RICH, CUTS, st.frozensets(st.integers(0, 25)), st.sampled_from([40, 60, 2000]))
def test_holding_text_unscanned_changes_no_release(
    text: str, cuts: list[int], idle_after: frozenset[int], limit: int
) -> None:
    """Live text that waits to be scanned is released by the same call, as the same segments."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=limit, max_flushes=10**6)
    chunks = cut(text, cuts)
    deferring = _steps(config, chunks, idle_after)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Flusher, "_defers", lambda self, text: False)
        scanning = _steps(config, chunks, idle_after)
    assert deferring == scanning


def test_live_releases_each_paragraph_once_the_next_one_starts() -> None:
    """A paragraph is released when the first character after the blank line arrives."""
    flusher = Flusher(LIVE)
    assert flusher.push("One.\n\n") == []
    assert flusher.push("Two") == [seg("One.\n\n")]
    assert flusher.push(".\n\nThree.\n\nFo") == [seg("Two.\n\n"), seg("Three.\n\n")]
    assert flusher.flush(final=True) == [seg("Fo", final=True)]


def test_live_min_chars_merges_short_paragraphs() -> None:
    """Paragraphs shorter than live_min_chars wait for the next break."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, live_min_chars=10)
    assert run(config, ["Hi.\n\nOk.\n\nA longer one.\n\nEnd"]) == [
        seg("Hi.\n\nOk.\n\n"),
        seg("A longer one.\n\n"),
        seg("End", final=True),
    ]


def test_idle_flush_prefers_paragraph_then_line_then_sentence_then_word() -> None:
    """idle() releases up to the best safe cut and keeps the unfinished word."""
    cases = [
        ("Line one\nline two. more wor", "Line one\n", "line two. more wor"),
        ("One. Two and thr", "One. ", "Two and thr"),
        ("just some wor", "just some ", "wor"),
        ("Ends with a space. ", "Ends with a space. ", ""),
        ("Para.\n\n", "Para.\n\n", ""),
    ]
    for text, released, kept in cases:
        flusher = Flusher(LIVE)
        flusher.push(text)
        assert flusher.idle() == [seg(released)], text
        assert flusher.flush(final=True) == ([seg(kept, final=True)] if kept else [])


def test_idle_does_nothing_in_aggregated_mode_or_without_a_safe_cut() -> None:
    """idle() never releases in aggregated mode, nor inside a single word."""
    agg = Flusher(AGG)
    agg.push("Some text. More")
    assert agg.idle() == []
    live = Flusher(LIVE)
    live.push("Supercalifragilistic")
    assert live.idle() == []


@pytest.mark.parametrize(
    ("text", "released"),
    [
        ("see <@123456789012345678", "see "),
        ("see </deploy app now:1", "see "),
        ("see [the docs here](https://x.y/z", "see "),
        ("see [the docs here", "see "),
        ("run `npm install now", "run "),
        ("visit https://example.com/a/b", "visit "),
        ("emoji <:blob:123", "emoji "),
        ("a list:\n- first item goes on", "a list:\n"),
        ("text\n| a | b |\n|---|---|\n| 1 ", "text\n"),
    ],
)
def test_idle_never_cuts_tokens_links_code_lists_or_tables(text: str, released: str) -> None:
    """An idle flush stops before an unfinished mention, link, inline code, list item or table."""
    flusher = Flusher(LIVE)
    flusher.push(text)
    assert flusher.idle() == [seg(released)]


@pytest.mark.parametrize(
    ("opener", "closer"), [("```", "```"), ("```python", "```"), ("~~~", "~~~"), ("~~~js", "~~~")]
)
def test_fenced_block_is_held_until_closed(opener: str, closer: str) -> None:
    """Nothing inside a fenced block is released, not even at a blank line or on idle."""
    flusher = Flusher(LIVE)
    assert flusher.push(f"Code:\n\n{opener}\nx = 1\n\ny = 2\n") == [seg("Code:\n\n")]
    assert flusher.idle() == []
    assert flusher.push(f"{closer}\n") == []
    assert flusher.push("Done") == [seg(f"{opener}\nx = 1\n\ny = 2\n{closer}\n")]
    assert flusher.flush(final=True) == [seg("Done", final=True)]


@pytest.mark.parametrize("opener", ["```", "```python", "~~~", "~~~ js"])
def test_long_code_block_is_released_in_message_sized_pieces(opener: str) -> None:
    """A block longer than a message is cut at line starts, closed and reopened with its language."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=80)
    code = "".join(f"value_{i} = {i}\n" for i in range(25))
    marker = opener.split(maxsplit=1)[0].rstrip("pythonjs")
    text = f"{opener}\n{code}{marker}\nafter"
    segments = run(config, [text[i : i + 7] for i in range(0, len(text), 7)])
    pieces = texts(segments)
    assert len(pieces) > 3
    for piece in pieces[:-1]:
        assert len(piece) <= 80 and fences_balanced(piece)
        assert piece.startswith(opener + "\n")
    assert reconstruct(text, pieces, drop_whitespace=False) is not None


def test_long_prose_paragraph_is_released_near_the_limit() -> None:
    """A paragraph longer than a message goes out in pieces cut at sentences or words."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=50)
    text = "This is a sentence. " * 10
    pieces = texts(run(config, [text]))
    assert all(len(p) <= 50 for p in pieces)
    assert "".join(pieces) == text
    assert all(p.endswith(". ") for p in pieces)


def test_quote_all_is_reopened_in_later_segments() -> None:
    """After a `>>> ` line, each later live segment starts with `>>> `."""
    segments = run(LIVE, [">>> Quoted one.\n\nQuoted two.\n\n>>> Three"])
    assert texts(segments) == [">>> Quoted one.\n\n", ">>> Quoted two.\n\n", ">>> Three"]


# -- unit: tables --------------------------------------------------------------------------------------------


def test_table_is_held_whole_and_rendered_as_code_block() -> None:
    """A complete table is released as an aligned monospace block, in both modes."""
    table = "| Name | Age |\n|------|----:|\n| Alice | 30 |\n| Bo | 4 |\n"
    rendered = "```\nName  | Age\n------+----\nAlice |  30\nBo    |   4\n```\n"
    text = "Intro.\n\n" + table + "\nAfter."
    live = run(LIVE, [text[i : i + 5] for i in range(0, len(text), 5)])
    assert texts(live) == ["Intro.\n\n", rendered + "\n", "After."]
    assert texts(run(AGG, [text])) == ["Intro.\n\n" + rendered + "\nAfter."]


def test_pipe_lines_without_delimiter_row_are_sent_as_written() -> None:
    """Consecutive `|` lines that are not a table are held together but not rendered."""
    text = "| not | a table |\n| just | pipes |\n\nnext"
    assert texts(run(LIVE, [text])) == ["| not | a table |\n| just | pipes |\n\n", "next"]


def test_table_at_the_end_is_rendered_by_the_final_flush() -> None:
    """A table still open when the stream ends is completed and rendered."""
    assert texts(run(LIVE, ["x\n|a|b|\n|-|-|\n|1|2|"])) == ["x\n```\na | b\n--+--\n1 | 2\n```"]


# -- unit: lists, tokens -------------------------------------------------------------------------------------


def test_list_items_are_released_whole() -> None:
    """A list item is never cut while written; complete items can go on idle."""
    flusher = Flusher(LIVE)
    flusher.push("Steps:\n- open the file\n- edit the")
    assert flusher.idle() == [seg("Steps:\n- open the file\n")]
    flusher.push(" line\n")
    assert flusher.idle() == [seg("- edit the line\n")]


def test_mentions_urls_and_links_survive_paragraph_and_overflow_cuts() -> None:
    """Tokens are never split across segments, even by message-sized cuts."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=40)
    tokens = [
        "<@123456789012345678>",
        "https://example.com/x/y",
        "[masked link](https://e.com)",
        "<t:1700000000:R>",
    ]
    text = " ".join(f"word {t}" for t in tokens * 3)
    pieces = texts(run(config, [text[i : i + 3] for i in range(0, len(text), 3)]))
    assert "".join(pieces) == text
    for piece in pieces:
        assert piece.count("<") == piece.count(">") and piece.count("[") == piece.count("]")


# -- unit: think and details ---------------------------------------------------------------------------------


def test_think_block_becomes_a_thought_segment() -> None:
    """An in-band think block is a THOUGHT segment, never text; the text continues around it."""
    segments = run(LIVE, ["Before <thi", "nk>secret\n\nplan</th", "ink> after.\n\nNext"])
    assert segments == [
        seg("secret\n\nplan", kind=SegmentKind.THOUGHT),
        seg("Before  after.\n\n"),
        seg("Next", final=True),
    ]


def test_namespaced_and_attribute_think_tags() -> None:
    """`<mm:think>` and `<think type="x">` open reasoning blocks too."""
    agg = run(AGG, ['<mm:think>a</mm:think>x<think type="r">b</think>y'])
    assert agg == [
        seg("a", kind=SegmentKind.THOUGHT),
        seg("b", kind=SegmentKind.THOUGHT),
        seg("xy", final=True),
    ]


def test_details_block_becomes_a_details_segment_with_nesting() -> None:
    """A details block (nested ones included) is one DETAILS segment holding its inner text."""
    text = "A <details><summary>S</summary>x <details>y</details> z</details> B"
    for chunks in ([text], [text[i : i + 4] for i in range(0, len(text), 4)]):
        assert run(AGG, chunks) == [
            seg("<summary>S</summary>x <details>y</details> z", kind=SegmentKind.DETAILS),
            seg("A  B", final=True),
        ]


def test_tags_inside_code_are_text() -> None:
    """Think and details tags inside fenced or inline code stay in the text."""
    text = "Use `<think>` like this:\n```html\n<details>x</details>\n```\n"
    assert run(AGG, [text]) == [seg(text, final=True)]


def test_unclosed_block_and_partial_tag_at_the_end() -> None:
    """An unclosed think block is released at the final flush; a partial tag is then text."""
    assert run(LIVE, ["Hi <think>still thinking"]) == [
        seg("still thinking", kind=SegmentKind.THOUGHT),
        seg("Hi ", final=True),
    ]
    assert run(LIVE, ["a <thi"]) == [seg("a <thi", final=True)]


def test_stray_closing_tags_and_empty_blocks_are_dropped() -> None:
    """A closing tag without an opener is removed; whitespace-only blocks produce nothing."""
    assert run(AGG, ["a</think>b<think>\n</think>c</details>"]) == [seg("abc", final=True)]


# -- unit: final, discard, cap -------------------------------------------------------------------------------


def test_final_flag_on_last_segment_and_nothing_when_empty() -> None:
    """flush(final=True) marks its last segment final and returns nothing when nothing is held."""
    flusher = Flusher(LIVE)
    assert flusher.push("A.\n\nB") == [seg("A.\n\n")]
    assert flusher.flush(final=True) == [seg("B", final=True)]
    assert flusher.push("more") == []
    empty = Flusher(LIVE)
    empty.push("A.\n\nB")
    empty.idle()
    assert empty.flush(final=True) == [seg("B", final=True)]
    assert Flusher(AGG).flush(final=True) == []


def test_flush_not_final_keeps_going_and_reopens_a_block() -> None:
    """flush(final=False) releases everything held, closing an open block, and the stream continues."""
    flusher = Flusher(AGG)
    flusher.push("Text\n```py\nx = 1\n")
    assert flusher.flush(final=False) == [seg("Text\n```py\nx = 1\n\n```")]
    flusher.push("y = 2\n```\n")
    assert flusher.flush(final=True) == [seg("```py\ny = 2\n```\n", final=True)]


def test_discard_drops_everything() -> None:
    """discard() drops held text and blocks; later calls release nothing."""
    flusher = Flusher(AGG)
    flusher.push("Some text <think>x")
    flusher.discard()
    assert flusher.flush(final=True) == []
    assert flusher.push("more") == []


def test_flush_cap_stops_releasing() -> None:
    """The max_flushes-th TEXT segment is released, then nothing more."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=2)
    flusher = Flusher(config)
    assert flusher.push("A.\n\nB.\n\nC.\n\nD") == [seg("A.\n\n"), seg("B.\n\n")]
    assert flusher.capped
    assert flusher.push("more.\n\nx") == []
    assert flusher.flush(final=True) == []


def test_push_is_linear_in_the_number_of_chunks() -> None:
    """Four times the tiny chunks cost about four times the work, not sixteen (no rescanning).

    Work is counted in bytecode instructions (``tests.work``), not timed: the bound holds on
    a loaded machine.
    """
    text = "Word `code` [link](https://x.y) <@1234>.\n\n- item\n```py\nx = 1\n```\n" * 40
    chunks = [text[i : i + 5] for i in range(0, len(text), 5)]
    for config in (StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=10**6), AGG):

        def run(copies: int, config: StreamConfig = config) -> None:
            flusher = Flusher(config)
            for chunk in chunks * copies:
                flusher.push(chunk)
            flusher.flush(final=True)

        assert_linear(run, 1)


def test_a_long_block_never_releases_a_piece_of_blank_lines_alone() -> None:
    """Blank code lines before a line too long to fit are not released as a block of fences alone."""
    code = "first = 1\n    x = 1\n# c\n\n\n\n" + "long line of code here " * 2 + "\n# c\nlast = 2\n"
    text = f"Intro.\n\n```python\n{code}```\n\nAfter."
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=40)
    pieces = texts(run(config, list(text)))
    for piece in pieces:
        assert not is_blank_piece(piece), pieces
    assert reconstruct(text, pieces, drop_whitespace=False) is not None


def test_aggregated_text_is_scanned_only_when_read() -> None:
    """Aggregated mode scans text once, when a "<" must be decided or a table may be in it; plain
    text without either is never scanned (its cut points would be thrown away)."""
    fed: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        original = MarkdownScanner.feed

        def counting(self: MarkdownScanner, text: str) -> None:
            fed.append(text)
            original(self, text)

        patch.setattr(MarkdownScanner, "feed", counting)
        plain = "One.\n\nTwo, with `code` and\n```py\nx = 1\n```\n"
        assert run(AGG, [plain[i : i + 3] for i in range(0, len(plain), 3)]) == [seg(plain, final=True)]
        assert fed == []
        table = "Hi <b>\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        assert texts(run(AGG, [table[i : i + 4] for i in range(0, len(table), 4)])) == [
            "Hi <b>\n```\na | b\n--+--\n1 | 2\n```\n"
        ]
        assert "".join(fed) == table and len(fed) == 2
