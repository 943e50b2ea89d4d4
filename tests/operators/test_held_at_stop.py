"""A graceful stop keeps what stage 03 still held as reasoning (``rxcord.operators.held_at_stop``)."""

from __future__ import annotations

from typing import Any

import pytest
import reactivex
from reactivex.testing import ReactiveTest, TestScheduler
from reactivex.testing.marbles import marbles_testing
from rxcord.compose.chain import build_chain
from rxcord.compose.pipeline import Pipeline, Stage
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, TypingPulse
from rxcord.core.stops import StopHandle
from rxcord.core.types import (
    Batch,
    DeliveryMode,
    ProcessedChunk,
    RawStreamChunk,
    SegmentKind,
    StopKind,
    StopSignal,
    ThoughtKind,
)
from rxcord.operators.held_at_stop import HELD, held_after, noting_held
from rxcord.operators.stop_after import stop_after
from rxcord.operators.stop_gate import stop_gate
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink

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
    """One stream under virtual time, one read for all events (batched) or one event per tick."""
    scheduler = TestScheduler()
    raws = _events(pieces)
    notes = (
        [ReactiveTest.on_next(10, Batch(raws))]
        if batched
        else [ReactiveTest.on_next(10 * (n + 1), raw) for n, raw in enumerate(raws)]
    )
    source = scheduler.create_cold_observable(*notes, ReactiveTest.on_completed(10 * len(raws) + 10))
    config = StreamConfig(delivery=DeliveryMode.AGGREGATED, typing_interval=0)
    planner = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config, nonce_prefix="t")
    sent: list[str] = []

    def send(item: Segment | TypingPulse) -> reactivex.Observable[Delivery]:
        if isinstance(item, TypingPulse) or item.kind is not SegmentKind.TEXT:
            return reactivex.just(Delivery(segment=item if isinstance(item, Segment) else None))
        payloads = planner.payloads(item)
        sent.extend(str(p.get("content", "")) for p in payloads)
        return reactivex.just(
            Delivery(segment=item, messages=tuple(SentMessage(payload=p) for p in payloads))
        )

    handle = StopHandle("1")
    stages = Pipeline.default().insert_after(
        "accumulate", Stage.of("stop_after", stop_after(after, kind, handle.subject))
    )
    chain = build_chain(
        source,
        normalizer=adapter.new_normalizer,
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=send,
        provider=adapter.name,
        guards=adapter.guards,
        pipeline=stages,
        batched=batched,
    )
    observer = scheduler.start(lambda: chain, created=0, subscribed=0, disposed=1_000_000)
    [result] = [m.value.value for m in observer.messages if m.value.kind == "N"]
    return result, sent


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
