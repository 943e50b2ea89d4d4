"""A graceful stop keeps what stage 03 still held as reasoning (``rxcord.operators.held_at_stop``)."""

from __future__ import annotations

from typing import Any

import pytest
from reactivex.testing.marbles import marbles_testing
from rxcord.core.config import StreamConfig
from rxcord.core.state import StreamResult
from rxcord.core.types import (
    DeliveryMode,
    ProcessedChunk,
    RawStreamChunk,
    StopKind,
    StopSignal,
    ThoughtKind,
)
from rxcord.operators.held_at_stop import HELD, held_after, noting_held
from rxcord.operators.stop_gate import stop_gate
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.openai import OpenAIAdapter

from tests.chain_harness import run_reads

HELD_START = ["Okay, the user wants a haiku.", " Let me think", " about autumn."]
REST = ["</think>Leaves fall softly down", " on the quiet pond."]


def test_notes_are_kept_only_while_something_is_held() -> None:
    chunk = ProcessedChunk.text("hi")
    assert noting_held(chunk, "think_strip", "") is chunk
    noted = noting_held(noting_held(chunk, "think_strip", "<thi"), "spill_guard", "Hel")
    assert noted.metadata[HELD] == {"think_strip": "<thi", "spill_guard": "Hel"}
    assert held_after(noted) == "Hel<thi"  # the later guard holds the earlier text
    assert held_after(chunk) == "" and held_after(None) == ""


def test_marble_the_gate_emits_the_held_text_as_reasoning_before_the_stop() -> None:
    noted = noting_held(ProcessedChunk.text(""), "think_strip", "plan")
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
    assert released.content == "" and [(t.kind, t.text) for t in released.thoughts] == [
        (ThoughtKind.RAW, "plan")
    ]
    assert results[1].time == results[2].time  # just before the stop, at the stop


def _events(pieces: list[str]) -> list[RawStreamChunk]:
    return [
        RawStreamChunk(provider="custom", data={"choices": [{"index": 0, "delta": {"content": piece}}]})
        for piece in pieces
    ]


def _stopped(
    adapter: Any, pieces: list[str], *, kind: StopKind, after: int, batched: bool
) -> tuple[StreamResult, list[str]]:
    """One stream under virtual time: all events in one read (batched) or one event per read."""
    raws = _events(pieces)
    reads = [raws] if batched else [[raw] for raw in raws]
    config = StreamConfig(delivery=DeliveryMode.AGGREGATED, typing_interval=0)
    result, _ = run_reads(adapter, reads, config, batched=batched, stop=(kind, after))
    return result, [str(message.payload.get("content", "")) for message in result.messages]


@pytest.mark.parametrize("batched", [False, True], ids=["per event", "one read"])
@pytest.mark.parametrize("kind", [StopKind.USER, StopKind.INTERRUPT])
def test_a_graceful_stop_in_the_start_window_keeps_the_held_text_as_reasoning(
    kind: StopKind, batched: bool
) -> None:
    """Custom endpoints hold the first 256 characters; a /stop there keeps them, never shown."""
    result, sent = _stopped(CustomAdapter(), HELD_START + REST, kind=kind, after=2, batched=batched)
    assert result.reasoning == "".join(HELD_START[:2])
    assert not any("haiku" in message for message in sent)


def test_the_same_stop_later_loses_nothing_either() -> None:
    """After the closer, the reasoning is classified and the answer so far is delivered."""
    result, sent = _stopped(CustomAdapter(), HELD_START + REST, kind=StopKind.USER, after=4, batched=False)
    assert result.reasoning == "".join(HELD_START)
    assert "Leaves fall softly down" in "".join(sent)


def test_no_hold_no_reasoning_chunk() -> None:
    """OpenAI holds nothing: a stop after chunk 1 delivers it and adds no reasoning."""
    result, sent = _stopped(
        OpenAIAdapter(), ["Hello", " world", "!"], kind=StopKind.USER, after=1, batched=False
    )
    assert result.reasoning is None and "".join(sent) == "Hello"
