"""Tests of the speaker guard: the incremental detector and the operator."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import Observer
from reactivex.notification import OnError, OnNext
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.subscription import Subscription

from rxcord.core.types import (
    ChunkType,
    FunctionCall,
    ProcessedChunk,
    StopKind,
    StopSignal,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
)
from rxcord.operators.speaker_guard import SpeakerGuard, speaker_guard
from tests.marbles import marbles

NAMES = ("User", "Alice")


def run(chunks: list[str], names: tuple[str, ...] = NAMES) -> tuple[str, bool]:
    """Feed *chunks*, then finish; return all released text and whether the guard tripped."""
    guard = SpeakerGuard(names)
    released: list[str] = []
    tripped = False
    for chunk in chunks:
        safe, tripped = guard.feed(chunk)
        released.append(safe)
    released.append(guard.finish())
    return "".join(released), tripped


# ---------------------------------------------------------------- SpeakerGuard rules


@pytest.mark.parametrize(
    "turn",
    [
        "User:",
        "user :",
        "**Alice**:",
        "**Alice:**",
        "*Alice*:",
        "__User__:",
        "[Alice]:",
        "  Alice:",
        "\tUser:",
    ],
)
def test_turn_at_a_line_start_trips(turn: str) -> None:
    """Each speaker-turn spelling at a line start trips, releasing only the text before it."""
    assert run([f"Sure thing.\n{turn} thanks"]) == ("Sure thing.\n", True)


def test_turn_at_the_start_of_the_stream_trips() -> None:
    """The stream's start is a line start."""
    assert run(["User: hi"]) == ("", True)


@pytest.mark.parametrize(
    "text",
    [
        "so User: said hi",  # not at a line start
        "x\nAlice's turn",  # no colon
        "x\n> Alice: quoted",  # a quote
        "x\nAlicea: other name",
        "x\n     User: too indented",
        "x\nUser\n: split by a line",
    ],
)
def test_non_turns_pass(text: str) -> None:
    """Mentions of a name that are not a turn are released in full."""
    assert run([text]) == (text, False)


def test_a_possible_turn_is_held_until_decided() -> None:
    """``\\nAl`` is held; it is released when the next chunk shows it is not a turn."""
    guard = SpeakerGuard(NAMES)
    assert guard.feed("Hi\nAl") == ("Hi\n", False)
    assert guard.feed("ice is here") == ("Alice is here", False)


def test_a_held_tail_is_released_at_the_end() -> None:
    """A tail that never became a turn comes out at ``finish``."""
    guard = SpeakerGuard(NAMES)
    assert guard.feed("Hi\n**Us") == ("Hi\n", False)
    assert guard.finish() == "**Us"


def test_a_held_tail_completed_into_a_turn_is_never_released() -> None:
    """When the held tail becomes a turn, none of it is released."""
    guard = SpeakerGuard(NAMES)
    assert guard.feed("Hi\nUs") == ("Hi\n", False)
    assert guard.feed("er: thanks") == ("", True)
    assert guard.turn == "User:"
    assert guard.finish() == ""


def test_after_a_trip_everything_is_swallowed() -> None:
    """Once tripped, the guard releases nothing more."""
    guard = SpeakerGuard(NAMES)
    guard.feed("User: x")
    assert guard.feed("more text") == ("", True)
    assert guard.tripped


def test_empty_names_disable_the_guard() -> None:
    """No names: every text is released at once."""
    assert run(["Hi\nUser: x"], names=()) == ("Hi\nUser: x", False)
    assert run(["Hi\nUser: x"], names=(" ", "")) == ("Hi\nUser: x", False)


def test_names_are_matched_literally() -> None:
    """Regex characters in a name are plain characters."""
    assert run(["x\nA.B: hi"], names=("A.B",)) == ("x\n", True)
    assert run(["x\nAxB: hi"], names=("A.B",)) == ("x\nAxB: hi", False)


def test_held_tail_is_bounded() -> None:
    """A long line that cannot be a turn is never held."""
    guard = SpeakerGuard(NAMES)
    assert guard.feed("x\n" + " " * 10) == ("x\n" + " " * 10, False)


# ---------------------------------------------------------------- SpeakerGuard properties

_TURN_RE = re.compile(
    r"(?:^|(?<=\n))[ \t]{0,4}(?:\*\*\*|\*\*|\*|__|_)?\[?(?:user|alice)\]?(?:\*\*\*|\*\*|\*|__|_)?[ \t]{0,3}:",
    re.IGNORECASE,
)
_PIECES = st.sampled_from(
    ["User", "user", "Alice", "Al", "ice", "Us", "er", ":", " ", "  ", "\t", "\n", "\n\n", "*", "**", "_",
     "[", "]", ">", "hi", "x", "'s"]
)  # fmt: skip
transcripts = st.lists(_PIECES, max_size=30).map("".join)


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A text and an arbitrary split of it into chunks (empty chunks included)."""
    text = draw(transcripts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=12)))
    bounds = [0, *cuts, len(text)]
    return text, [text[a:b] for a, b in itertools.pairwise(bounds)]


@given(chunkings())
@settings(max_examples=400)
def test_any_chunking_gives_the_same_result(case: tuple[str, list[str]]) -> None:
    """Split invariance: same released text and same trip decision for every chunking."""
    text, chunks = case
    assert run(chunks) == run([text])


@given(transcripts)
@settings(max_examples=400)
def test_guard_agrees_with_a_whole_text_search(text: str) -> None:
    """The guard releases exactly the text before the first turn (an independent regex oracle)."""
    match = _TURN_RE.search(text)
    expected = (text[: match.start()], True) if match else (text, False)
    assert run(list(text)) == expected


# ---------------------------------------------------------------- speaker_guard operator


def t(content: str) -> ProcessedChunk:
    return ProcessedChunk.text(content)


def test_held_tail_is_released_with_the_next_chunk() -> None:
    """A possible turn is held, then released with the chunk that decides it."""
    lookup = {"a": t("Hi\nAl"), "b": t("ice is here")}
    with marbles() as m:
        results = m.start(m.cold("-a-b-|", lookup).pipe(speaker_guard(NAMES)))
        assert results == m.exp("-a-b-|", {"a": t("Hi\n"), "b": t("Alice is here")})


def test_trip_stops_and_completes_the_stream() -> None:
    """A turn: the text before it is emitted, the stop observer is told, the stream completes."""
    stops: list[StopSignal] = []
    lookup = {"a": t("Hi\nUs"), "b": t("er: hello"), "c": t("more")}
    with marbles() as m:
        source = m.cold("-a-b-c-|", lookup)
        "                01234567"
        results = m.start(source.pipe(speaker_guard(NAMES, Observer(stops.append))))
        assert results == m.exp("-a-|", {"a": t("Hi\n")})
    assert [s.kind for s in stops] == [StopKind.SPEAKER_GUARD]


def test_held_tail_goes_out_before_a_non_text_chunk() -> None:
    """A function call ends the text: the held tail is emitted first, then the call."""
    call = ProcessedChunk.call(FunctionCall(name="lookup"))
    lookup = {"a": t("Hi\nAl"), "c": call}
    with marbles() as m:
        source = m.cold("-a-c-----|", lookup)
        "                0123456789"
        results = m.start(source.pipe(speaker_guard(NAMES)))
        assert results == m.exp("-a-(t,c)-|", {"a": t("Hi\n"), "t": t("Al"), "c": call})


def test_held_tail_goes_out_at_completion() -> None:
    """Completion releases the held tail first."""
    with marbles() as m:
        results = m.start(m.cold("-a-|", {"a": t("Hi\nAl")}).pipe(speaker_guard(NAMES)))
        assert results == m.exp("-a-(t,|)", {"a": t("Hi\n"), "t": t("Al")})


def test_held_tail_goes_out_before_an_error() -> None:
    """An upstream error releases the held tail, then passes the error on."""
    with marbles() as m:
        results = m.start(m.cold("-a-#", {"a": t("Hi\nAl")}, ValueError("x")).pipe(speaker_guard(NAMES)))
    values = [r.value for r in results]
    assert [v.value for v in values[:2] if isinstance(v, OnNext)] == [t("Hi\n"), t("Al")]
    assert isinstance(values[2], OnError)
    assert isinstance(values[2].exception, ValueError)


def test_chunks_carrying_more_than_text_are_kept() -> None:
    """A chunk whose text is all held is dropped, unless it carries reasoning."""
    thought = (ThoughtLogEntry(kind=ThoughtKind.RAW, text="hmm"),)
    lookup = {
        "a": t("Hi\n"),
        "b": t("Al"),
        "c": ProcessedChunk.text("ice", thoughts=thought),
        "d": t(" rocks"),
    }
    expected = {"a": t("Hi\n"), "c": ProcessedChunk.text("", thoughts=thought), "d": t("Alice rocks")}
    with marbles() as m:
        results = m.start(m.cold("-a-b-c-d-|", lookup).pipe(speaker_guard(NAMES)))
        assert results == m.exp("-a---c-d-|", expected)


def test_empty_text_chunk_passes() -> None:
    """An empty text chunk (a reasoning-only or usage delta) passes unchanged."""
    chunk = ProcessedChunk(type=ChunkType.TEXT, usage=Usage(input_tokens=1))
    with marbles() as m:
        results = m.start(m.cold("-a-|", {"a": chunk}).pipe(speaker_guard(NAMES)))
        assert results == m.exp("-a-|", {"a": chunk})


def test_trip_disposes_the_source() -> None:
    """The upstream subscription ends at the trip (the HTTP response closes)."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, t("Hi\n")),
        ReactiveTest.on_next(20, t("User: x")),
        ReactiveTest.on_next(30, t("more")),
        ReactiveTest.on_completed(40),
    )
    results = scheduler.start(lambda: source.pipe(speaker_guard(NAMES)))
    assert source.subscriptions == [Subscription(200, 220)]
    assert [r.time for r in results.messages] == [210, 220]


def test_guard_state_is_per_subscription() -> None:
    """A second subscription starts with a fresh guard."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, t("User: x")), ReactiveTest.on_completed(20)
    )
    guarded = source.pipe(speaker_guard(NAMES))
    stopped: list[bool] = []

    def completed() -> None:
        stopped.append(True)

    guarded.subscribe(on_completed=completed, scheduler=scheduler)
    guarded.subscribe(on_completed=completed, scheduler=scheduler)
    scheduler.start()
    assert stopped == [True, True]
