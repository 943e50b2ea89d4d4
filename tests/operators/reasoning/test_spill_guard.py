"""Tests for the stage 03 reasoning spill guard (``rxcord.operators.reasoning.spill_guard``)."""

from __future__ import annotations

import types
from collections.abc import Sequence
from typing import cast

import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.testing import ReactiveTest

from rxcord.core.types import FunctionCall, ProcessedChunk, ThoughtKind, ThoughtLogEntry
from rxcord.operators.reasoning.spill_guard import DEFAULT_DECISION_LIMIT, SpillGuard, spill_guard
from tests.marbles import marbles
from tests.strategies import cut as _cut


def cut(text: str, points: Sequence[int]) -> list[str]:
    """Empty deltas included: the guard must accept them."""
    return _cut(text, points, keep_empty=True)


def run(
    pieces: Sequence[str], *, reasoning: bool = True, limit: int = DEFAULT_DECISION_LIMIT
) -> tuple[str, str]:
    """Feed *pieces* (after reasoning, unless told otherwise) to a fresh guard, finish, join the releases."""
    guard = SpillGuard(limit=limit)
    if reasoning:
        guard.note_reasoning()
    visible: list[str] = []
    spilled: list[str] = []
    for piece in pieces:
        v, s = guard.feed(piece)
        visible.append(v)
        spilled.append(s)
    v, s = guard.finish()
    visible.append(v)
    spilled.append(s)
    return "".join(visible), "".join(spilled)


def raw(text: str) -> ThoughtLogEntry:
    return ThoughtLogEntry(kind=ThoughtKind.RAW, text=text)


# --- the seed's examples -----------------------------------------------------------------------------


def test_seed_must_do_hello() -> None:
    """Seed: ``must do.Hello!`` spills ``must do.``."""
    assert run(["must do.Hello!"]) == ("Hello!", "must do.")


def test_seed_wait_actually_glued_is_a_seam() -> None:
    """Seed: ``wait.Actually`` is a seam (single word, but an answer start after the boundary)."""
    assert run(["wait.Actually, yes."]) == ("Actually, yes.", "wait.")


def test_seed_wait_actually_spaced_is_prose() -> None:
    """Seed: ``wait. Actually`` has a spaced boundary: two real sentences, untouched."""
    assert run(["wait. Actually, yes."]) == ("wait. Actually, yes.", "")


def test_seed_spaced_boundary_after_multi_word_clause_is_prose() -> None:
    """Seed: a spaced boundary is the model's own prose even after a multi-word clause."""
    assert run(["let me think. Hello there"]) == ("let me think. Hello there", "")


def test_seed_multi_word_clause_glued_to_lowercase_reply() -> None:
    """Seed: ``g it out.hey master 👋`` spills ``g it out.`` although the reply is lowercase."""
    assert run(["g it out.hey master 👋"]) == ("hey master 👋", "g it out.")


def test_seed_single_word_glued_to_lowercase_is_left_alone() -> None:
    """Seed: a single-word fragment glued to a lowercase continuation is left alone."""
    assert run(["wait.actually no"]) == ("wait.actually no", "")


def test_seed_backtick_span_protects_dotted_identifier() -> None:
    """Seed: a boundary inside `` `obj.Method` `` (odd backticks before it) is left intact."""
    assert run(["call `obj.Method` first"]) == ("call `obj.Method` first", "")


def test_seed_open_backtick_span_mid_stream() -> None:
    """Seed: a boundary inside a backtick span that is still open mid-stream is left intact."""
    assert run(["call `obj.Meth", "od()` first"]) == ("call `obj.Method()` first", "")


def test_seed_leading_backtick_is_not_lowercase() -> None:
    """Seed: content starting with code (a backtick) is never touched."""
    assert run(["`obj.Method` works.Yes"]) == ("`obj.Method` works.Yes", "")


def test_seed_only_first_visible_content_after_reasoning() -> None:
    """Seed: once the first visible content was decided, later glued boundaries are prose."""
    assert run(["Sure!", " must do.Hello"]) == ("Sure! must do.Hello", "")


def test_seed_needs_reasoning() -> None:
    """Seed: without reasoning in the stream the guard does nothing."""
    assert run(["must do.Hello!"], reasoning=False) == ("must do.Hello!", "")


def test_visible_text_before_reasoning_disarms() -> None:
    """Issue 14: text streamed before any reasoning disarms the guard; later reasoning cannot arm it."""
    guard = SpillGuard()
    assert guard.feed("The first part is done, ") == ("The first part is done, ", "")
    guard.note_reasoning()
    assert guard.feed("and the second part is easy.Next") == ("and the second part is easy.Next", "")
    assert guard.finish() == ("", "")


def test_whitespace_before_reasoning_does_not_disarm() -> None:
    """Leading whitespace is not visible content: reasoning after it still arms the guard."""
    guard = SpillGuard()
    assert guard.feed("\n ") == ("\n ", "")
    guard.note_reasoning()
    assert guard.feed("must do.Hello!") == ("Hello!", "must do.")


def test_seed_only_when_starting_lowercase() -> None:
    """Seed: content starting with an uppercase letter is untouched."""
    assert run(["Must do.Hello!"]) == ("Must do.Hello!", "")


# --- what counts as an answer start ------------------------------------------------------------------


def test_caseless_letter_after_boundary() -> None:
    """A caseless letter (CJK) after a glued boundary is an answer start."""
    assert run(["ok.你好"]) == ("你好", "ok.")


def test_emoji_after_boundary() -> None:
    """An emoji after a glued boundary is an answer start, and stays whole."""
    assert run(["ok.👋🏽 hi"]) == ("👋🏽 hi", "ok.")


def test_quote_and_bracket_after_boundary() -> None:
    """A quote or an opening bracket after a glued boundary is an answer start."""
    assert run(['ok."Hi"']) == ('"Hi"', "ok.")
    assert run(["ok.“Hi”"]) == ("“Hi”", "ok.")
    assert run(["ok.(hi)"]) == ("(hi)", "ok.")


def test_digit_after_single_word_is_left_alone() -> None:
    """A digit is not an answer start: a single-word fragment before it stays."""
    assert run(["step.2 done"]) == ("step.2 done", "")


def test_question_and_exclamation_boundaries() -> None:
    """``?`` and ``!`` are boundaries too, and a run of them is one boundary."""
    assert run(["really?Yes"]) == ("Yes", "really?")
    assert run(["hmm...Okay"]) == ("Okay", "hmm...")
    assert run(["what?!No"]) == ("No", "what?!")
    assert run(["hmm...ok"]) == ("hmm...ok", "")


# --- decision rules and the hold ---------------------------------------------------------------------


def test_decimal_number_is_not_a_boundary() -> None:
    """Extension: a ``.`` between digits (``3.14``) is not a sentence boundary."""
    assert run(["it costs 3.14 dollars"]) == ("it costs 3.14 dollars", "")


def test_boundary_after_a_decimal_number_still_counts() -> None:
    """The decimal point is skipped, and the first real boundary is inspected."""
    assert run(["version 1.2 is out.Great"]) == ("Great", "version 1.2 is out.")


def test_first_boundary_decides() -> None:
    """Only the first boundary is inspected: a spaced one ends the inspection."""
    assert run(["ok. then it was fine.Hello"]) == ("ok. then it was fine.Hello", "")


def test_leading_whitespace_passes_through() -> None:
    """Leading whitespace is released at once and does not disarm the guard."""
    guard = SpillGuard()
    guard.note_reasoning()
    assert guard.feed("\n\n") == ("\n\n", "")
    assert guard.feed("must do.Hello") == ("Hello", "must do.")


def test_held_until_decided_then_pass_through() -> None:
    """The start is held until the boundary and the character after it arrive; then pass-through."""
    guard = SpillGuard()
    guard.note_reasoning()
    assert guard.feed("must d") == ("", "")
    assert guard.feed("o.") == ("", "")
    assert guard.feed("Hello") == ("Hello", "must do.")
    assert guard.feed(" and.Then") == (" and.Then", "")
    assert guard.finish() == ("", "")


def test_finish_releases_held_text() -> None:
    """Undecided text is released untouched when the stream ends, a trailing boundary included."""
    guard = SpillGuard()
    guard.note_reasoning()
    assert guard.feed("hey there.") == ("", "")
    assert guard.finish() == ("hey there.", "")


def test_hold_is_bounded() -> None:
    """With no boundary in the first ``limit`` characters the text is released untouched."""
    guard = SpillGuard(limit=10)
    guard.note_reasoning()
    assert guard.feed("abcdefghi") == ("", "")
    assert guard.feed("jk.Hello") == ("abcdefghijk.Hello", "")


def test_boundary_inside_the_limit_still_counts() -> None:
    """A boundary starting just inside the limit is still inspected."""
    assert run(["abcdefghi", ".Hello"], limit=10) == ("Hello", "abcdefghi.")


def test_reasoning_noted_while_holding_changes_nothing() -> None:
    """More reasoning while the start is held does not re-arm or reset the guard."""
    guard = SpillGuard()
    guard.note_reasoning()
    guard.feed("must d")
    guard.note_reasoning()
    assert guard.feed("o.Hello") == ("Hello", "must do.")


# --- properties ----------------------------------------------------------------------------------------

TOKENS = st.sampled_from(
    [
        "must",
        "do",
        "wait",
        "Actually",
        "hey",
        "Hello",
        " ",
        "\n",
        ".",
        "!",
        "?",
        "`",
        "obj",
        "3",
        "14",
        "你好",
        "👋",
        "👋🏽",
        "👨‍👩‍👧",
        "🇺🇸",
        '"',
        "(",
        "a",
    ]
)
CONTENT = st.lists(TOKENS, max_size=30).map("".join)
CUTS = st.lists(st.integers(min_value=0, max_value=10_000), max_size=8)
LIMITS = st.one_of(st.integers(min_value=0, max_value=30), st.just(DEFAULT_DECISION_LIMIT))


@settings(max_examples=400)
@given(text=CONTENT, points=CUTS, limit=LIMITS)
def test_split_invariance(text: str, points: list[int], limit: int) -> None:
    """Cutting the content anywhere (inside emoji too) gives the same visible text and spill."""
    assert run(cut(text, points), limit=limit) == run([text], limit=limit)


@given(text=st.one_of(CONTENT, st.text()), points=CUTS)
def test_without_reasoning_is_identity(text: str, points: list[int]) -> None:
    """With no reasoning in the stream, content passes unchanged."""
    assert run(cut(text, points), reasoning=False) == (text, "")


@given(text=st.one_of(CONTENT, st.text()))
def test_spill_shape(text: str) -> None:
    """A spill is a glued, lowercase-led fragment at the start of the content, ending in a boundary."""
    visible, spilled = run([text])
    body = text.lstrip()
    lead = text[: len(text) - len(body)]
    if not spilled:
        assert visible == text
        return
    assert body.startswith(spilled)
    assert visible == lead + body[len(spilled) :]
    assert spilled[0].islower()
    assert spilled[-1] in ".!?"
    assert not body[len(spilled)].isspace()


# --- operator --------------------------------------------------------------------------------------------

THINKING = ProcessedChunk.text("", thoughts=(raw("the user wants a greeting"),))
CALL = ProcessedChunk.call(FunctionCall(name="lookup"))


def test_marble_spill_moved_to_thoughts() -> None:
    """The held start leaves as an empty chunk; the deciding chunk carries the spill as a RAW thought."""
    lookup = {"r": THINKING, "a": ProcessedChunk.text("must d"), "b": ProcessedChunk.text("o.Hello!")}
    expected_lookup = {
        "r": THINKING,
        "A": ProcessedChunk.text(""),
        "B": ProcessedChunk.text("Hello!", thoughts=(raw("must do."),)),
    }
    with marbles() as m:
        results = m.start(m.cold("-r-a-b-|", lookup).pipe(spill_guard()))
        "                         01234567"
        expected = m.exp("-r-A-B-|", expected_lookup)
    assert results == expected


def test_marble_held_text_released_at_completion() -> None:
    """Undecided text leaves as its own text chunk just before completion."""
    lookup = {"r": THINKING, "a": ProcessedChunk.text("hey there")}
    expected_lookup = {"r": THINKING, "A": ProcessedChunk.text(""), "X": ProcessedChunk.text("hey there")}
    with marbles() as m:
        results = m.start(m.cold("-r-a-|", lookup).pipe(spill_guard()))
        expected = m.exp("-r-A-(X,|)", expected_lookup)
    assert results == expected


def test_marble_non_text_chunk_keeps_order() -> None:
    """Held text is released before a non-text chunk, which passes unchanged and in order."""
    lookup = {"r": THINKING, "a": ProcessedChunk.text("hey there"), "c": CALL}
    expected_lookup = {
        "r": THINKING,
        "A": ProcessedChunk.text(""),
        "X": ProcessedChunk.text("hey there"),
        "c": CALL,
    }
    with marbles() as m:
        results = m.start(m.cold("-r-a-c-----|", lookup).pipe(spill_guard()))
        "                         012345678901"
        expected = m.exp("-r-A-(X,c)-|", expected_lookup)
    assert results == expected


def test_marble_error_passes_through() -> None:
    """An upstream error is forwarded (its type kept)."""
    lookup = {"a": ProcessedChunk.text("Hi")}
    with marbles() as m:
        results = m.start(m.cold("-a-#", lookup, ValueError("boom")).pipe(spill_guard()))
    assert [
        ReactiveTest.on_next(201, ProcessedChunk.text("Hi")),
        ReactiveTest.on_error(203, IS_VALUE_ERROR),
    ] == results


def is_value_error(exc: Exception) -> bool:
    return isinstance(exc, ValueError)


# ReactiveTest.on_error takes a predicate typed as FunctionType; a def is one at runtime.
IS_VALUE_ERROR = cast(types.FunctionType, is_value_error)


def test_operator_same_chunk_thoughts_arm_before_content() -> None:
    """A chunk carrying both reasoning and content arms the guard before its content is fed."""
    chunk = ProcessedChunk.text("must do.Hello!", thoughts=(raw("plan"),), serving_provider="minimax")
    out = collect([chunk])
    assert out == [
        ProcessedChunk.text("Hello!", thoughts=(raw("plan"), raw("must do.")), serving_provider="minimax")
    ]


def test_operator_state_is_per_subscription() -> None:
    """Two subscriptions to one guarded stream give the same results (no shared guard)."""
    stream = reactivex.from_iterable([THINKING, ProcessedChunk.text("must do.Hello!")]).pipe(spill_guard())
    first: list[ProcessedChunk] = []
    second: list[ProcessedChunk] = []
    stream.subscribe(first.append)
    stream.subscribe(second.append)
    assert first == second
    assert first[-1] == ProcessedChunk.text("Hello!", thoughts=(raw("must do."),))


def collect(chunks: Sequence[ProcessedChunk]) -> list[ProcessedChunk]:
    out: list[ProcessedChunk] = []
    reactivex.from_iterable(chunks).pipe(spill_guard()).subscribe(out.append)
    return out
