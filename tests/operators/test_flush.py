"""Stage 05 buffer management: the pure Flusher and the flush operator under virtual time."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.subject import Subject
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.core.config import StreamConfig
from rxcord.core.state import Segment, StreamState
from rxcord.core.types import (
    DeliveryMode,
    ErrorType,
    FunctionCall,
    ProviderError,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
)
from rxcord.operators.cut_policy import is_blank_piece
from rxcord.operators.flush import Flusher, error_embed, flush
from rxcord.operators.markdown_scan import MarkdownScanner
from rxcord.operators.md_tables import render_table
from rxcord.operators.reasoning_tags import CLOSE_RE, DETAILS_CLOSE_RE, DETAILS_OPEN_RE, OPEN_RE
from rxcord.sinks.split_message import split_message
from tests.marbles import marbles
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


# -- error embed ---------------------------------------------------------------------------------------------


def test_error_embed_fields() -> None:
    """The embed has a title by type, the message (kept whole up to 4096), a colour and a footer."""
    error = ProviderError(
        type=ErrorType.MODEL_ERROR,
        message="Model x not found. Supported: a-1, b-2, c-3",
        retryable=False,
        status=404,
        code="model_not_found",
    )
    assert error_embed(error) == {
        "title": "Model unavailable",
        "description": "Model x not found. Supported: a-1, b-2, c-3",
        "color": 0xED4245,
        "footer": {"text": "HTTP 404 · model_not_found"},
    }
    long = error_embed(ProviderError(type=ErrorType.API_ERROR, message="x" * 5000, retryable=False))
    assert len(long["description"]) == 4096 and long["description"].endswith("…")
    assert "footer" not in long


# -- marbles -------------------------------------------------------------------------------------------------


def test_marble_live_releases_at_paragraph_boundaries() -> None:
    """Live mode emits each paragraph when the next starts, and the rest at completion."""
    states = {"a": state("One.\n\nTw"), "b": state("o.\n\nThree")}
    with marbles() as m:
        source = m.cold("-a-b--|", states)
        "                0123456"
        results = m.start(source.pipe(flush(LIVE)))
        expected = {"A": seg("One.\n\n"), "B": seg("Two.\n\n"), "C": seg("Three", final=True)}
        assert results == m.exp("-A-B--(C,|)", expected)


def test_marble_idle_flush_after_two_ticks() -> None:
    """With live_idle_flush=2.0 the safe text leaves exactly 2 ticks after the last delta."""
    states = {"a": state("Hello there. Gen"), "b": state("eral")}
    with marbles() as m:
        source = m.cold("-a---b----|", states)
        "                01234567890"
        results = m.start(source.pipe(flush(LIVE)))
        expected = {"A": seg("Hello there. "), "B": seg("General", final=True)}
        assert results == m.exp("---A------(B,|)", expected)


def test_marble_new_text_restarts_the_idle_timer() -> None:
    """Deltas closer than live_idle_flush postpone the idle flush (debounce)."""
    states = {"a": state("One. "), "b": state("Two. ")}
    with marbles() as m:
        source = m.cold("-a-b------|", states)
        "                01234567890"
        results = m.start(source.pipe(flush(LIVE)))
        assert results == m.exp("-----A----|", {"A": seg("One. Two. ")})


def test_marble_aggregated_single_batch_at_completion() -> None:
    """Aggregated mode emits one batch, all at completion."""
    states = {"a": state("One.\n\n<think>t</think>"), "b": state("Two. "), "c": state("Three")}
    with marbles() as m:
        source = m.cold("-a-b-c-|", states)
        "                01234567"
        results = m.start(source.pipe(flush(AGG)))
        expected = {"T": seg("t", kind=SegmentKind.THOUGHT), "X": seg("One.\n\nTwo. Three", final=True)}
        assert results == m.exp("-------(T,X,|)", expected)


def test_marble_function_call_flushes_once() -> None:
    """A function-call state flushes everything (final); later states are ignored."""
    call = state(status=StreamStatus.FUNCTION_CALL, function_call=FunctionCall(name="lookup"))
    states = {"a": state("Let me check"), "b": state(" that."), "c": call, "d": state("late")}
    with marbles() as m:
        source = m.cold("-a-b-c-d-|", states)
        "                0123456789"
        results = m.start(source.pipe(flush(AGG)))
        assert results == m.exp("-----A---|", {"A": seg("Let me check that.", final=True)})


def test_marble_interrupt_and_internal_stop_discard() -> None:
    """A follow-up interrupt or an internal stop drops the buffer: nothing is emitted after it."""
    for status, kind in [
        (StreamStatus.FOLLOW_UP_INTERRUPT, StopKind.INTERRUPT),
        (StreamStatus.SEND_MESSAGE_LIMIT, StopKind.SEND_MESSAGE_LIMIT),
        (StreamStatus.KILLED, StopKind.KILL),
    ]:
        states = {
            "a": state("One.\n\nTwo"),
            "b": state(" more"),
            "s": state(status=status, stop=StopSignal(kind)),
        }
        with marbles() as m:
            source = m.cold("-a-b-s--|", states)
            "                012345678"
            results = m.start(source.pipe(flush(LIVE)))
            assert results == m.exp("-A------|", {"A": seg("One.\n\n")}), status


def test_marble_speaker_guard_stop_flushes() -> None:
    """The speaker guard's stop flushes the reply before the other speaker's turn (issue 14)."""
    stop = state(status=StreamStatus.SPEAKER_GUARD, stop=StopSignal(StopKind.SPEAKER_GUARD))
    with marbles() as m:
        source = m.cold("-a-b-s--|", {"a": state("One.\n\nTwo"), "b": state(" more\n"), "s": stop})
        "                012345678"
        results = m.start(source.pipe(flush(LIVE)))
        expected = {"A": seg("One.\n\n"), "B": seg("Two more\n", final=True)}
        assert results == m.exp("-A---B--|", expected)


def test_marble_user_stop_flushes() -> None:
    """A graceful user stop flushes what is held, marked final."""
    stop = state(" partial", status=StreamStatus.STOPPED_BY_USER, stop=StopSignal(StopKind.USER))
    with marbles() as m:
        source = m.cold("-a-s-|", {"a": state("Some answer"), "s": stop})
        "                012345"
        results = m.start(source.pipe(flush(AGG)))
        assert results == m.exp("---A-|", {"A": seg("Some answer partial", final=True)})


def test_marble_error_embed_follows_the_final_text() -> None:
    """A non-retryable error flushes the text first, then emits the error embed."""
    error = ProviderError(
        type=ErrorType.MODEL_ERROR, message="Unknown model. Supported: m-1, m-2", retryable=False
    )
    states = {"a": state("Partial"), "e": state(status=StreamStatus.ERROR, error=error)}
    embed = Segment(kind=SegmentKind.ERROR_EMBED, embed=error_embed(error))
    with marbles() as m:
        source = m.cold("-a-e-----|", states)
        "                0123456789"
        results = m.start(source.pipe(flush(AGG)))
        assert results == m.exp("---(A,E)-|", {"A": seg("Partial", final=True), "E": embed})


@pytest.mark.parametrize(
    ("retryable", "config"),
    [
        (True, AGG),
        (False, StreamConfig(suppress_user_errors=True)),
        (False, StreamConfig(defer_notice=True)),
    ],
)
def test_marble_no_embed_when_retryable_suppressed_or_deferred(retryable: bool, config: StreamConfig) -> None:
    """No embed for a retryable error, or when errors are suppressed or the notice is deferred."""
    error = ProviderError(type=ErrorType.RATE_LIMIT, message="slow down", retryable=retryable)
    states = {"a": state("Partial"), "e": state(status=StreamStatus.ERROR, error=error)}
    with marbles() as m:
        results = m.start(m.cold("-a-e-|", states).pipe(flush(config)))
        assert results == m.exp("---A-|", {"A": seg("Partial", final=True)})


def test_flush_cap_signals_a_flush_limit_stop_once_after_the_segment() -> None:
    """Reaching max_flushes emits the capping segment, then one FLUSH_LIMIT stop; nothing follows."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=2, live_idle_flush=2.0)
    stops: Subject[StopSignal] = Subject()
    log: list[object] = []
    stops.subscribe(log.append)
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, state("A.\n\nB.\n\nC.\n\nD")),
        ReactiveTest.on_next(20, state("more.\n\nE")),
        ReactiveTest.on_completed(30),
    )
    stream = source.pipe(flush(config, stops))
    stream.subscribe(log.append, scheduler=scheduler)
    scheduler.start()
    assert log == [seg("A.\n\n"), seg("B.\n\n"), StopSignal(StopKind.FLUSH_LIMIT, "flush cap reached")]


def test_reentrant_stop_state_discards_once() -> None:
    """A stop state delivered while segments are being emitted discards, and ends the stream once."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=1)
    states: Subject[StreamState] = Subject()
    stops: Subject[StopSignal] = Subject()
    out: list[Segment] = []

    def stop_to_state(signal: StopSignal) -> None:
        states.on_next(state(status=StreamStatus.FLUSH_LIMIT, stop=signal))

    stops.subscribe(stop_to_state)
    states.pipe(flush(config, stops)).subscribe(out.append, scheduler=TestScheduler())
    states.on_next(state("A.\n\nB.\n\nC"))
    states.on_completed()
    assert out == [seg("A.\n\n")]


def test_live_mode_without_scheduler_is_an_error() -> None:
    """Live mode needs the subscribe-time scheduler for its idle timer."""
    errors: list[Exception] = []
    reactivex.of(state("x")).pipe(flush(LIVE)).subscribe(on_error=errors.append)
    assert len(errors) == 1 and isinstance(errors[0], ValueError)


def test_aggregated_mode_runs_without_scheduler() -> None:
    """Aggregated mode needs no timer, so it runs on any scheduler."""
    out: list[Segment] = []
    reactivex.of(state("a. "), state("b")).pipe(flush(AGG)).subscribe(out.append)
    assert out == [seg("a. b", final=True)]


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
