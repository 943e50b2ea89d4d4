"""Tests for the stage 03 think-tag stripper (``rxcord.operators.reasoning.think_strip``)."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import cast

import pytest
import reactivex
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reactivex.testing import ReactiveTest

from rxcord.core.types import (
    ErrorType,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    ThoughtKind,
    ThoughtLogEntry,
)
from rxcord.operators.markdown.code_spans import CodeTracker
from rxcord.operators.reasoning.tags import TAG_RE, split_think_blocks
from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW, ThinkStripper, think_strip
from tests.marbles import marbles
from tests.strategies import CUTS, THINK_MARKDOWN, cut


def run(pieces: Sequence[str], start_window: int = DEFAULT_START_WINDOW) -> tuple[str, str]:
    """Feed *pieces* to a fresh stripper, finish, and join everything released."""
    stripper = ThinkStripper(start_window=start_window)
    visible: list[str] = []
    reasoning: list[str] = []
    for piece in pieces:
        v, r = stripper.feed(piece)
        visible.append(v)
        reasoning.append(r)
    v, r = stripper.finish()
    visible.append(v)
    reasoning.append(r)
    return "".join(visible), "".join(reasoning)


def raw(text: str) -> ThoughtLogEntry:
    return ThoughtLogEntry(kind=ThoughtKind.RAW, text=text)


# --- blocks ------------------------------------------------------------------------------------------


def test_complete_block_in_one_delta() -> None:
    """A whole block in one delta goes to reasoning, the text around it stays visible."""
    assert run(["Hi <think>plan</think>there"]) == ("Hi there", "plan")


def test_opener_split_across_deltas() -> None:
    """``<thi`` + ``nk>`` is recognised as an opener."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("Hi <thi") == ("Hi ", "")
    assert stripper.feed("nk>plan</think>there") == ("there", "plan")


def test_closer_split_across_deltas() -> None:
    """``</thi`` + ``nk>`` inside a block closes it; the partial closer is not reasoning."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("<think>plan</thi") == ("", "plan")
    assert stripper.feed("nk>Answer") == ("Answer", "")


def test_namespaced_tags() -> None:
    """``<mm:think>`` and ``</ns:think >`` are tags too."""
    assert run(["<mm:think>a</mm:think>A <ns:think>b</ns:think >B"]) == ("A B", "ab")


def test_namespace_split_across_deltas() -> None:
    """A namespace prefix still being written (``<mm`` + ``:think>``) is held, not released."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("x<mm") == ("x", "")
    assert stripper.feed(":think>plan</mm:think>y") == ("y", "plan")


def test_tag_variants() -> None:
    """Upper case, attributes and the other reasoning names are recognised."""
    assert run(
        ['<THINK>a</Think><think type="x">b</think><thinking>c</thinking><reasoning>d</reasoning>!']
    ) == (
        "!",
        "abcd",
    )


def test_unclosed_starting_block_is_reasoning() -> None:
    """A block that starts the content and is still open at the end is reasoning (a leak cut short)."""
    assert run(["<think>plan", " more</thi"]) == ("", "plan more</thi")
    assert run(["\n <think>plan", " more"], start_window=0) == ("\n ", "plan more")


def test_unclosed_opener_after_shown_text_releases_the_answer() -> None:
    """An opener after shown text that no closer follows was prose: the text after it is the answer."""
    assert run(["Use <think> tags to mark reasoning.", " Done."]) == (
        "Use  tags to mark reasoning. Done.",
        "",
    )
    assert run(["Hi <think>plan", " more</thi"], start_window=0) == ("Hi plan more</thi", "")


def test_block_after_shown_text_is_held_until_its_closer() -> None:
    """Held, not streamed as reasoning: whether it is reasoning is known at the closer."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("Hi <think>plan") == ("Hi ", "")
    assert stripper.feed(" more") == ("", "")
    assert stripper.feed("</think>there") == ("there", "plan more")


def test_closer_written_as_code_in_a_starting_block() -> None:
    """An odd backtick in leaked reasoning hides its closer; the answer after it is not lost."""
    text = "<think>press the ` key</think>\n\nHello!"
    assert run([text]) == ("\n\nHello!", "press the ` key</think>")
    # With a real closer later, everything up to it is reasoning.
    quoted = "<think>the `</think>` tag ends it</think>Hi"
    assert run([quoted]) == ("Hi", "the `</think>` tag ends it")


def test_nested_opener_does_not_nest() -> None:
    """An opener inside a block is dropped; the first closer ends the block."""
    assert run(["<think>a<think>b</think>c"]) == ("c", "ab")


def test_second_block() -> None:
    """Several blocks in one stream all go to reasoning."""
    assert run(["<think>a</think>X", "<think>b</think>Y"]) == ("XY", "ab")


# --- stray closers ---------------------------------------------------------------------------------


def test_stray_closer_at_stream_start_reclassifies_the_prefix() -> None:
    """DeepSeek-style leak: text before a stray closer at the start of the stream is reasoning."""
    assert run(["Okay, the user says hi.", "\n</think>\n\nHello!"]) == (
        "\n\nHello!",
        "Okay, the user says hi.\n",
    )


def test_stray_closer_split_across_deltas_is_rerouted() -> None:
    """A stray closer cut as ``</thi`` + ``nk>`` still ends the leaked reasoning and is never shown."""
    stripper = ThinkStripper()
    assert stripper.feed("reason</thi") == ("", "")
    assert stripper.feed("nk>Hi") == ("Hi", "reason")


def test_stray_closer_at_offset_zero() -> None:
    """Content that opens with a stray closer (reasoning came in a field) just loses the closer."""
    assert run(["</think>", "\n\nHello"], start_window=0) == ("\n\nHello", "")


def test_stray_closer_after_the_window_is_only_removed() -> None:
    """Once the start window has been released, a stray closer is removed and nothing is reclassified."""
    prefix = "x" * (DEFAULT_START_WINDOW + 1)
    assert run([prefix, "</think>Hi"]) == (prefix + "Hi", "")


def test_stray_closer_just_inside_the_window() -> None:
    """A closer starting exactly at the window edge still reclassifies."""
    assert run(["abcde", "</think>Hi"], start_window=5) == ("Hi", "abcde")
    assert run(["abcdef", "</think>Hi"], start_window=5) == ("abcdefHi", "")


def test_stray_closer_after_a_block_is_only_removed() -> None:
    """After a block has closed, a second closer is removed and the visible text stays visible."""
    assert run(["<think>a</think>Hi</think>!"]) == ("Hi!", "a")


def test_opener_in_window_releases_prefix_as_visible() -> None:
    """An opener decides the start window: the text before it is visible."""
    assert run(["Sure. <think>plan</think>Done"]) == ("Sure. Done", "plan")


# --- holding and releasing -------------------------------------------------------------------------


def test_start_window_holds_then_releases() -> None:
    """Tagless text is held only while it is inside the start window."""
    stripper = ThinkStripper(start_window=10)
    assert stripper.feed("Hello") == ("", "")
    assert stripper.feed(" world!") == ("Hello world!", "")
    assert stripper.feed(" more") == (" more", "")


def test_tagless_text_without_window_is_not_delayed() -> None:
    """With ``start_window=0`` tagless text is released in the same call."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("Hello") == ("Hello", "")
    assert stripper.feed(" world") == (" world", "")


def test_finish_releases_start_window_as_visible() -> None:
    """A short stream with no tag is released as visible at the end."""
    stripper = ThinkStripper()
    assert stripper.feed("Hi!") == ("", "")
    assert stripper.finish() == ("Hi!", "")


def test_dangling_partial_tag_is_text_at_finish() -> None:
    """A partial tag that never completes is released as text at the end."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("a <thi") == ("a ", "")
    assert stripper.finish() == ("<thi", "")


def test_non_tags_are_released() -> None:
    """``<br>``, ``a < b`` and ``</`` followed by a space are text, released without waiting."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("a <br> b") == ("a <br> b", "")
    assert stripper.feed(" if a < b") == (" if a < b", "")
    assert stripper.feed(" x </ y") == (" x </ y", "")


def test_bare_close_prefix_is_held() -> None:
    """A delta ending in ``</`` holds it: it may become a closer."""
    stripper = ThinkStripper(start_window=0)
    assert stripper.feed("<think>a</") == ("", "a")
    assert stripper.feed("think>b") == ("b", "")


def test_junction_never_forms_a_visible_tag() -> None:
    """Fragments joined by removing a block cannot form a tag in the visible text."""
    visible, reasoning = run(["<thi", "<think>x</think>", "nk>ok"], start_window=0)
    assert TAG_RE.search(visible) is None
    assert (visible, reasoning) == ("ok", "x")


def test_long_tag_is_text() -> None:
    """A tag longer than the 64-character hold is text, however it is split."""
    tag = '<think data="' + "y" * 60 + '">'
    whole = run([tag + "a"], start_window=0)
    split = run([tag[:40], tag[40:] + "a"], start_window=0)
    assert whole == split == (tag + "a", "")


def test_empty_delta() -> None:
    """An empty delta releases nothing."""
    assert ThinkStripper().feed("") == ("", "")


# --- properties ------------------------------------------------------------------------------------

TOKENS = st.sampled_from(
    [
        "<think>",
        "</think>",
        "<mm:think>",
        "</mm:think>",
        "<ns:think>",
        "</ns:think >",
        "<thinking>",
        "</reasoning>",
        '<think type="x">',
        "<THINK>",
        "</Think>",
        "<",
        "</",
        "<th",
        "</thi",
        "nk>",
        "ink>",
        ">",
        "<b>",
        "a < b",
        "<mm",
        ":think>",
        "Hello",
        "hi.",
        " ",
        "\n",
        "x",
        "👋🏽",
        "👨‍👩‍👧",
        "你好",
    ]
)
CONTENT = st.lists(st.one_of(TOKENS, st.text(alphabet="ab<>/:k \n", max_size=4)), max_size=24).map("".join)
WINDOWS = st.one_of(st.integers(min_value=0, max_value=24), st.just(DEFAULT_START_WINDOW))


@settings(max_examples=400, deadline=None)
@given(text=CONTENT, points=CUTS, window=WINDOWS)
def test_split_invariance(text: str, points: list[int], window: int) -> None:
    """Cutting the content anywhere (inside tags, inside emoji) gives the same visible text and reasoning."""
    assert run(cut(text, points), window) == run([text], window)


@settings(max_examples=300, deadline=None)
@given(text=CONTENT, points=CUTS, window=WINDOWS)
def test_never_emits_a_tag(text: str, points: list[int], window: int) -> None:
    """No release, and not the joined visible text, contains a think tag (the content has no code)."""
    stripper = ThinkStripper(start_window=window)
    released = [stripper.feed(piece)[0] for piece in cut(text, points)]
    released.append(stripper.finish()[0])
    for piece in [*released, "".join(released)]:
        assert TAG_RE.search(piece) is None


def _prose_tags(text: str) -> list[str]:
    """Tags of *text* outside code, as the code tracker reads it (tags skipped, as stage 03 does)."""
    tracker = CodeTracker()
    found: list[str] = []
    pos = 0
    while (at := text.find("<", pos)) >= 0:
        tracker.feed(text[pos:at])
        match = TAG_RE.match(text, at, at + 64)
        if match is not None and not tracker.in_code():
            found.append(match.group(0))
            pos = match.end()
            continue
        tracker.feed("<")
        pos = at + 1
    return found


@settings(max_examples=400, deadline=None)
@given(text=THINK_MARKDOWN, points=CUTS, window=WINDOWS)
def test_split_invariance_with_code(text: str, points: list[int], window: int) -> None:
    """Tags among backtick runs, fences and blank lines: the same bytes cut anywhere, the same result."""
    assert run(cut(text, points), window) == run([text], window)


@settings(max_examples=300, deadline=None)
@given(text=THINK_MARKDOWN, points=CUTS, window=WINDOWS)
# A removed tag between two backtick runs joins them ("`" + "``": one run of three, which does
# not close the span the first opened): the second tag is prose in the text as released.
@example(text="`<`<think>``<`<think>", points=[], window=256)
def test_no_tag_outside_code_reaches_the_answer(text: str, points: list[int], window: int) -> None:
    """The visible text holds tags only inside its own code (what stage 05 will read as code)."""
    visible, _ = run(cut(text, points), window)
    assert _prose_tags(visible) == []


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(alphabet="ab .\n", max_size=10),
    ticks=st.integers(min_value=1, max_value=4),
    inner=st.text(alphabet="ab ", max_size=6),
    other_run=st.booleans(),
    after=st.text(alphabet="ab .", max_size=10),
    tag=st.sampled_from(["<think>", "</think>", "<mm:think>", "</reasoning>"]),
    points=CUTS,
    window=WINDOWS,
)
def test_a_tag_in_inline_code_is_text(
    before: str,
    ticks: int,
    inner: str,
    other_run: bool,
    after: str,
    tag: str,
    points: list[int],
    window: int,
) -> None:
    """A tag in a code span (a run of any length, closed by a run of that length) is the answer's text."""
    run_ = "`" * ticks
    if other_run:
        inner += "x" + "`" * (ticks + 1) + "x"  # a run of another length does not close the span
    text = f"Yes: {before}{run_}{inner}{tag}{inner}{run_}{after}"
    assert run(cut(text, points), window) == (text, "")


@given(
    text=st.one_of(st.text(), CONTENT).filter(lambda t: TAG_RE.search(t) is None), points=CUTS, window=WINDOWS
)
def test_tagless_text_passes_unchanged(text: str, points: list[int], window: int) -> None:
    """Content without a tag comes out unchanged, with no reasoning."""
    assert run(cut(text, points), window) == (text, "")


@given(text=st.one_of(st.text(), CONTENT).filter(lambda t: TAG_RE.search(t) is None), points=CUTS)
def test_tagless_text_is_not_delayed_beyond_a_partial_tag(text: str, points: list[int]) -> None:
    """Without a start window, all that is ever held back is a short suffix starting with ``<``."""
    stripper = ThinkStripper(start_window=0)
    seen = ""
    released = ""
    for piece in cut(text, points):
        seen += piece
        released += stripper.feed(piece)[0]
        held = seen[len(released) :]
        assert seen.startswith(released)
        assert held == "" or (held.startswith("<") and len(held) <= 64)


BLOCK_TEXT = st.text(alphabet="ab .\n!你👋", max_size=8)


@given(
    parts=st.lists(st.tuples(BLOCK_TEXT, st.booleans()), max_size=6),
    tail=st.one_of(st.none(), BLOCK_TEXT),
    points=CUTS,
)
def test_agrees_with_split_think_blocks(
    parts: list[tuple[str, bool]], tail: str | None, points: list[int]
) -> None:
    """For text and well-formed blocks, the result equals the shared ``split_think_blocks``."""
    text = "".join(f"<think>{body}</think>" if is_block else body for body, is_block in parts)
    if tail is not None:
        text += "<mm:think>" + tail  # an unclosed block at the end
    assert run(cut(text, points), 0) == split_think_blocks(text)


# --- operator ----------------------------------------------------------------------------------------

CALL = ProcessedChunk.call(FunctionCall(name="lookup"))
DONE = ProcessedChunk.done()


def test_marble_held_partial_tag_released_at_completion() -> None:
    """A held partial tag leaves as its own text chunk just before completion."""
    lookup = {"a": ProcessedChunk.text("Hi <thi")}
    with marbles() as m:
        results = m.start(m.cold("-a-|", lookup).pipe(think_strip(start_window=0)))
        "                         0123"
        expected = m.exp("-A-(X,|)", {"A": ProcessedChunk.text("Hi "), "X": ProcessedChunk.text("<thi")})
    assert results == expected


def test_marble_non_text_chunks_keep_order() -> None:
    """Held text is released before a non-text chunk, which then passes unchanged and in order."""
    lookup = {
        "a": ProcessedChunk.text("Hi <thi"),
        "b": ProcessedChunk.text("nk>plan</thi"),
        "c": CALL,
        "d": DONE,
    }
    expected_lookup = {
        "A": ProcessedChunk.text("Hi "),
        "B": ProcessedChunk.text(""),
        "X": ProcessedChunk.text("plan</thi"),  # an opener after shown text, never closed
        "c": CALL,
        "d": DONE,
    }
    with marbles() as m:
        results = m.start(m.cold("-a-b-c-----d-|", lookup).pipe(think_strip(start_window=0)))
        "                         01234567890123"
        expected = m.exp("-A-B-(X,c)-d-|", expected_lookup)
    assert results == expected


def test_marble_start_window_released_at_completion() -> None:
    """With the default window a short tagless answer is held and released whole at completion."""
    lookup = {"a": ProcessedChunk.text("Hel"), "b": ProcessedChunk.text("lo")}
    empty = ProcessedChunk.text("")
    with marbles() as m:
        results = m.start(m.cold("-a-b-|", lookup).pipe(think_strip()))
        expected = m.exp("-E-E-(X,|)", {"E": empty, "X": ProcessedChunk.text("Hello")})
    assert results == expected


def test_marble_error_passes_through() -> None:
    """An upstream error is forwarded (its type kept)."""
    lookup = {"a": ProcessedChunk.text("Hi")}
    with marbles() as m:
        results = m.start(m.cold("-a-#", lookup, ValueError("boom")).pipe(think_strip(start_window=0)))
    assert [
        ReactiveTest.on_next(201, ProcessedChunk.text("Hi")),
        ReactiveTest.on_error(203, IS_VALUE_ERROR),
    ] == results


def is_value_error(exc: Exception) -> bool:
    return isinstance(exc, ValueError)


# ReactiveTest.on_error takes a predicate typed as FunctionType; a def is one at runtime.
IS_VALUE_ERROR = cast(types.FunctionType, is_value_error)


def test_operator_appends_reasoning_and_keeps_other_fields() -> None:
    """Existing thoughts and the serving provider survive; the reasoning is appended as a RAW entry."""
    given_thought = ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text="s")
    chunk = ProcessedChunk.text(
        "<think>plan</think>Hi", thoughts=(given_thought,), serving_provider="minimax"
    )
    out = collect([chunk], start_window=0)
    assert out == [
        ProcessedChunk.text("Hi", thoughts=(given_thought, raw("plan")), serving_provider="minimax")
    ]


def test_operator_error_chunk_releases_first() -> None:
    """An error chunk is preceded by the released start-window text."""
    error = ProcessedChunk.fail(ProviderError(type=ErrorType.API_ERROR, message="x", retryable=False))
    out = collect([ProcessedChunk.text("Hi"), error])
    assert out == [ProcessedChunk.text(""), ProcessedChunk.text("Hi"), error]


def test_operator_state_is_per_subscription() -> None:
    """Two subscriptions to one stripped stream give the same results (no shared stripper)."""
    chunks = [ProcessedChunk.text("the user said hi</thi"), ProcessedChunk.text("nk>Hello!")]
    stream = reactivex.from_iterable(chunks).pipe(think_strip())
    first: list[ProcessedChunk] = []
    second: list[ProcessedChunk] = []
    stream.subscribe(first.append)
    stream.subscribe(second.append)
    assert first == second
    assert first[-1] == ProcessedChunk.text("Hello!", thoughts=(raw("the user said hi"),))


def collect(
    chunks: Sequence[ProcessedChunk], start_window: int = DEFAULT_START_WINDOW
) -> list[ProcessedChunk]:
    out: list[ProcessedChunk] = []
    reactivex.from_iterable(chunks).pipe(think_strip(start_window=start_window)).subscribe(out.append)
    return out


@pytest.mark.parametrize("window", [0, DEFAULT_START_WINDOW])
def test_reasoning_only_chunk_stays_text(window: int) -> None:
    """A chunk that is all reasoning stays a text chunk with empty content."""
    out = collect([ProcessedChunk.text("<think>plan</think>")], start_window=window)
    assert out == [ProcessedChunk.text("", thoughts=(raw("plan"),))]


@pytest.mark.parametrize(
    ("text", "released"),
    [
        ("`<`<think>``<`<think>", "`<```<`"),  # the runs joined across the removed opener
        ("`a`<think>b</think>`` x", "`a``` x"),  # the same across a removed block
        ("`<think>` tags", "`<think>` tags"),  # a tag written as code stays text
    ],
)
def test_the_code_state_reads_backtick_runs_joined_across_a_removed_tag(text: str, released: str) -> None:
    """Stage 03 reads the visible text's code as it is released, tags removed (as stage 05 reads it)."""
    for points in ([], list(range(1, len(text)))):
        visible, _ = run(cut(text, points))
        assert visible == released
        assert _prose_tags(visible) == []


def test_a_tag_query_leaves_the_run_before_it_open() -> None:
    """``tag_in_code`` answers as ``in_code`` but the run goes on with the next backticks fed."""
    queried, settled = CodeTracker(), CodeTracker()
    for tracker in (queried, settled):
        tracker.feed("`a`")
    assert queried.tag_in_code() is settled.in_code() is False
    for tracker in (queried, settled):
        tracker.feed("``b")
    assert queried.in_code() is True  # "`a```b": the span of one is still open
    assert settled.in_code() is True  # "`a`" closed, then "``" opened a span of two
    queried.feed("`")
    settled.feed("`")
    assert queried.in_code() is False  # closed by the single backtick
    assert settled.in_code() is True  # a run of one does not close a span of two
