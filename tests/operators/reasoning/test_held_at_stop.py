"""A graceful stop delivers what stage 03 still held (``rxcord.operators.reasoning.held_at_stop``).

Text held only because it *might* turn out to be reasoning (the think-tag start window, the
spill guard's hold) is the answer the user saw being written: delivered. Text the stream
already marked as reasoning (an open ``<think>`` that was seen, a start the chat template
opened) is kept as reasoning, never shown. A kill delivers nothing more.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest
from reactivex.testing.marbles import marbles_testing

from rxcord.compose.pipeline import Pipeline
from rxcord.core.config import StreamConfig
from rxcord.core.state import StreamResult
from rxcord.core.types import (
    DeliveryMode,
    ProcessedChunk,
    RawStreamChunk,
    StopKind,
    StopSignal,
    StreamStatus,
    ThoughtKind,
)
from rxcord.operators.reasoning import held_at_stop
from rxcord.operators.reasoning.held_at_stop import (
    HELD,
    HELD_REASONING,
    Held,
    HeldText,
    held_after,
    noting_held,
)
from rxcord.operators.reasoning.think_strip import WHOLE_REPLY, ThinkStripper
from rxcord.operators.stop_gate import stop_gate
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.nvidia import NvidiaAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from tests.chain_harness import run_reads, wire_events

ANSWER = ["Hello! ", "Here is ", "my answer ", "to your ", "question."]
"""A short answer: all of it sits in the start window of the adapters that hold one."""
REASONING = ["Okay, the user wants a haiku.", " Let me think", " about autumn."]
REST = ["</think>Leaves fall softly down", " on the quiet pond."]

ADAPTERS: dict[str, ProviderAdapter] = {
    "custom": CustomAdapter(),
    "nvidia": NvidiaAdapter(),
    "openai": OpenAIAdapter(),
    "openrouter": OpenRouterAdapter(),
    "anthropic": AnthropicAdapter(),
    "google": GoogleAdapter(),
}
MODES = [DeliveryMode.AGGREGATED, DeliveryMode.LIVE, DeliveryMode.EDIT]


# --------------------------------------------------------------------------------------------- the notes


def test_notes_are_kept_only_while_something_is_held() -> None:
    chunk = ProcessedChunk.text("hi")
    assert noting_held(chunk, "think_strip", Held()) is chunk
    noted = noting_held(
        noting_held(chunk, "think_strip", Held(answer="<thi")), "spill_guard", Held(answer="Hel")
    )
    assert noted.metadata[HELD] == {"think_strip": "<thi", "spill_guard": "Hel"}
    assert held_after(noted) == ("Hel<thi", "")  # the later guard holds the earlier text
    assert held_after(chunk) == ("", "") and held_after(None) == ("", "")
    reasoning = noting_held(chunk, "think_strip", Held(answer="a", reasoning=HeldText(["plan"], "</th")))
    assert held_after(reasoning) == ("a", "plan</th")
    # A guard that holds nothing any more overwrites its earlier note on a later chunk.
    cleared = noting_held(noted, "think_strip", Held())
    assert held_after(cleared) == ("Hel", "")


def test_held_text_is_a_snapshot_taken_in_constant_work() -> None:
    """Parts appended after the snapshot are not in it; the guard starts new lists instead of clearing."""
    parts = ["a", "b"]
    snap = HeldText(parts, "<")
    parts.append("c")
    assert str(snap) == "ab<" and snap and not HeldText([])


def test_marble_the_gate_emits_the_held_text_before_the_stop() -> None:
    noted = noting_held(
        ProcessedChunk.text(""), "think_strip", Held(answer="Hello", reasoning=HeldText(["plan"]))
    )
    stop = StopSignal(kind=StopKind.USER)
    with marbles_testing() as (start, cold, hot, _exp):
        stops = hot("----s-", {"s": stop})
        results = start(
            cold("-a-----b|", {"a": noted, "b": ProcessedChunk.text("late")}).pipe(stop_gate(stops))
        )
    kinds = [
        (message.time, type(message.value.value).__name__) for message in results if message.value.kind == "N"
    ]
    assert [kind for _, kind in kinds] == ["ProcessedChunk", "ProcessedChunk", "StopSignal"]
    released = results[1].value.value
    assert released.content == "Hello"
    assert [(t.kind, t.text) for t in released.thoughts] == [(ThoughtKind.RAW, "plan")]
    assert results[1].time == results[2].time  # just before the stop, at the stop


# ------------------------------------------------------------------------- what each hold is at a stop


def _held(pieces: list[str], window: int) -> tuple[str, str]:
    stripper = ThinkStripper(start_window=window)
    for piece in pieces:
        stripper.feed(piece)
    held = stripper.held()
    return held.answer, str(held.reasoning)


def test_what_the_stripper_holds_is_classified_for_a_stop() -> None:
    assert _held(["Hello! Here is"], 256) == ("Hello! Here is", "")  # the start window: the answer
    assert _held(["Hi <thi"], 0) == ("", "") or _held(["Hi <thi"], 0) == ("<thi", "")
    assert _held(["Hi <thi"], 0) == ("<thi", "")  # a partial tag: text unless it grows into a tag
    assert _held(["Hi <think>plan"], 0) == ("", "plan")  # an opener seen: reasoning
    assert _held(["<think>plan</th"], 0) == ("", "</th")  # streamed as reasoning, the partial too
    assert _held(["Okay, the user"], WHOLE_REPLY) == ("", "Okay, the user")  # the template opened it


def test_noting_a_long_hold_never_joins_it() -> None:
    """A template-opened start is held whole: noting it per chunk must not copy it (linear work)."""
    joins = 0
    original = HeldText.__str__

    def counting(self: HeldText) -> str:
        nonlocal joins
        joins += 1
        return original(self)

    stripper = ThinkStripper(start_window=WHOLE_REPLY)
    HeldText.__str__ = counting  # type: ignore[method-assign]
    try:
        notes = [stripper.held() for _ in range(2000) if stripper.feed("word ") is not None]
        assert joins == 0
        assert str(notes[-1].reasoning) == "word " * 2000 and joins == 1
        assert str(notes[9].reasoning) == "word " * 10  # each note is the hold as it was then
    finally:
        HeldText.__str__ = original  # type: ignore[method-assign]


# ------------------------------------------------------------------------------------------- the chain


def _stopped(
    adapter: ProviderAdapter,
    raws: list[RawStreamChunk],
    *,
    kind: StopKind,
    after: int,
    batched: bool,
    mode: DeliveryMode = DeliveryMode.AGGREGATED,
    pipeline: Pipeline | None = None,
) -> StreamResult:
    """One stream under virtual time: all events in one read (batched) or one event per read."""
    reads = [raws] if batched else [[raw] for raw in raws]
    config = StreamConfig(delivery=mode, typing_interval=0, live_idle_flush=25.0)
    result, _ = run_reads(adapter, reads, config, batched=batched, stop=(kind, after), pipeline=pipeline)
    return result


def _sent(result: StreamResult) -> str:
    """The messages' text (a message's surrounding whitespace is not sent)."""
    return "".join(str(message.payload.get("content", "")) for message in result.messages).strip()


UNGUARDED = Pipeline.default().remove("think_strip").remove("spill_guard")
"""The same chain without the guards that hold text: what the user saw being written."""


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
@pytest.mark.parametrize("name", list(ADAPTERS))
def test_a_user_stop_delivers_what_was_written(name: str, mode: DeliveryMode, batched: bool) -> None:
    """A /stop anywhere in a short answer delivers exactly what an unguarded chain delivers: every
    adapter, every mode, per event and per read. The held start window is the answer, not reasoning."""
    adapter = ADAPTERS[name]
    raws = wire_events(adapter, ANSWER)
    for after in range(1, len(raws)):
        result = _stopped(adapter, raws, kind=StopKind.USER, after=after, batched=batched, mode=mode)
        plain = _stopped(
            adapter, raws, kind=StopKind.USER, after=after, batched=batched, mode=mode, pipeline=UNGUARDED
        )
        assert result.status is StreamStatus.STOPPED_BY_USER
        assert result.accumulated_text == plain.accumulated_text, (after, result.accumulated_text)
        assert result.visible_text == plain.visible_text
        assert result.reasoning is None
        assert plain.accumulated_text  # the stop lands after text was written: the test can fail
        if mode is DeliveryMode.AGGREGATED:
            assert _sent(result) == result.accumulated_text.strip()


def test_the_stop_in_the_window_was_lost_before() -> None:
    """The reported case: NVIDIA, a /stop three deltas in: the three deltas reach Discord."""
    adapter = ADAPTERS["nvidia"]
    result = _stopped(adapter, wire_events(adapter, ANSWER), kind=StopKind.USER, after=3, batched=False)
    assert _sent(result) == "Hello! Here is my answer"
    assert result.reasoning is None


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
@pytest.mark.parametrize("name", ["custom", "nvidia", "openai", "openrouter"])
def test_text_the_spill_guard_holds_is_delivered(name: str, batched: bool) -> None:
    """After reasoning in its field, a lowercase first answer is held by the spill guard: a stop
    delivers it as the answer, and the field's reasoning stays reasoning."""
    adapter = ADAPTERS[name]
    raws = wire_events(adapter, ["sure, here ", "is the answer"], reasoning=["The user asks.", " Easy."])
    result = _stopped(adapter, raws, kind=StopKind.USER, after=3, batched=batched)
    assert _sent(result) == "sure, here"
    assert result.reasoning == "The user asks. Easy."


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
@pytest.mark.parametrize("name", ["custom", "nvidia", "openai", "openrouter"])
def test_an_open_think_block_stays_reasoning(name: str, batched: bool) -> None:
    """Inside a ``<think>`` that was seen open, a stop keeps the block as reasoning, never shown."""
    adapter = ADAPTERS[name]
    raws = wire_events(adapter, ["Sure. ", "<think>the user wants", " a haiku", "</think>Leaves fall."])
    result = _stopped(adapter, raws, kind=StopKind.USER, after=3, batched=batched)
    assert _sent(result) == "Sure."
    assert result.reasoning == "the user wants a haiku"


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
@pytest.mark.parametrize("kind", [StopKind.USER, StopKind.INTERRUPT])
def test_a_template_opened_start_stays_reasoning(kind: StopKind, batched: bool) -> None:
    """``think_opened_by_template``: the held start is inside a block the template opened."""
    adapter = CustomAdapter(think_opened_by_template=True)
    raws = wire_events(adapter, REASONING + REST)
    result = _stopped(adapter, raws, kind=kind, after=2, batched=batched)
    assert result.reasoning == "".join(REASONING[:2])
    assert not any("haiku" in str(message.payload) for message in result.messages)


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
def test_a_stray_closer_in_the_window_after_the_stop_cannot_reclassify(batched: bool) -> None:
    """Stopped before the closer came, the window held text nothing marked as reasoning: delivered."""
    adapter = ADAPTERS["custom"]
    result = _stopped(
        adapter, wire_events(adapter, REASONING + REST), kind=StopKind.USER, after=2, batched=batched
    )
    assert _sent(result) == "".join(REASONING[:2])
    assert result.reasoning is None


def test_the_same_stop_after_the_closer_loses_nothing_either() -> None:
    """After the closer, the reasoning is classified and the answer so far is delivered."""
    adapter = ADAPTERS["custom"]
    result = _stopped(
        adapter, wire_events(adapter, REASONING + REST), kind=StopKind.USER, after=4, batched=False
    )
    assert result.reasoning == "".join(REASONING)
    assert _sent(result) == "Leaves fall softly down"


def test_an_interrupt_discards_the_held_text_with_the_rest() -> None:
    """A follow-up interrupt discards the buffer: the held answer is not sent either."""
    adapter = ADAPTERS["custom"]
    result = _stopped(adapter, wire_events(adapter, ANSWER), kind=StopKind.INTERRUPT, after=3, batched=False)
    assert result.status is StreamStatus.FOLLOW_UP_INTERRUPT
    assert result.messages == () and result.reasoning is None


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
def test_a_kill_delivers_nothing_more(batched: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kill does not go through the gate's release: the held window is not delivered."""
    released: list[Any] = []
    original = held_at_stop.released_at_stop

    def spy(chunk: ProcessedChunk | None) -> ProcessedChunk | None:
        released.append(chunk)
        return original(chunk)

    # By the module, not a dotted string: rxcord.operators.stop_gate is the operator (the façade's name).
    monkeypatch.setattr(importlib.import_module("rxcord.operators.stop_gate"), "released_at_stop", spy)
    adapter = ADAPTERS["custom"]
    result = _stopped(adapter, wire_events(adapter, ANSWER), kind=StopKind.KILL, after=3, batched=batched)
    assert result.messages == () and released == []


def test_a_held_reasoning_chunk_is_noted_in_its_own_key() -> None:
    """The notes keep the answer (plain text, short) and the reasoning (a snapshot) apart."""
    noted = noting_held(ProcessedChunk.text(""), "think_strip", Held(reasoning=HeldText(["a"])))
    assert HELD not in noted.metadata and str(noted.metadata[HELD_REASONING]["think_strip"]) == "a"


# ------------------------------------------------------------------------ tags written as code, end to end

CODE_ANSWERS = [
    ["Use `<think>`", " tags to mark reasoning.", " Done."],
    ["A transcript:\n```\n<think>plan</thi", "nk>\nHi\n```\n", "That is all."],
    ["Write ``</think>``", " to close one."],
]


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])
@pytest.mark.parametrize("name", list(ADAPTERS))
def test_a_tag_written_as_code_reaches_discord_as_text(name: str, mode: DeliveryMode, batched: bool) -> None:
    """Every adapter, every mode: a ``<think>`` in inline code or a fenced block is the answer's text."""
    adapter = ADAPTERS[name]
    config = StreamConfig(delivery=mode, typing_interval=0, live_idle_flush=25.0)
    for pieces in CODE_ANSWERS:
        raws = wire_events(adapter, pieces)
        reads = [raws] if batched else [[raw] for raw in raws]
        result, _ = run_reads(adapter, reads, config, batched=batched)
        assert result.status is StreamStatus.COMPLETED, result.error
        assert result.accumulated_text.strip() == "".join(pieces).strip(), pieces
        assert result.reasoning is None
