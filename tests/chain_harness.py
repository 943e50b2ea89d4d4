"""One harness for chain-level tests: text in as raw chunks, real Discord payloads planned, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import reactivex
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.compose.chain import build_chain
from rxcord.compose.pipeline import Pipeline, Stage
from rxcord.core.config import Guards, StreamConfig, StreamContext
from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, TypingPulse
from rxcord.core.stops import StopHandle
from rxcord.core.types import (
    Batch,
    ChunkNormalizer,
    ProcessedChunk,
    RawStreamChunk,
    SegmentKind,
    StopKind,
)
from rxcord.operators.stop_after import stop_after
from rxcord.providers.base import ProviderAdapter
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink


class TextFeed:
    """A normalizer whose raw chunks are the visible text itself."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        return [ProcessedChunk.text(raw.data)]

    def finish(self) -> Sequence[ProcessedChunk]:
        return []


def _planning_send(config: StreamConfig) -> Callable[[Segment | TypingPulse], reactivex.Observable[Delivery]]:
    """A send that plans the real payloads (mentions, the split, fences) and "sends" them at once."""
    planner = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config, nonce_prefix="t")

    def send(item: Segment | TypingPulse) -> reactivex.Observable[Delivery]:
        if isinstance(item, TypingPulse) or item.kind is not SegmentKind.TEXT:
            return reactivex.just(Delivery(segment=item if isinstance(item, Segment) else None))
        sent = tuple(SentMessage(payload=p) for p in planner.payloads(item))
        return reactivex.just(Delivery(segment=item, messages=sent))

    return send


def run_reads(
    adapter: ProviderAdapter,
    reads: Sequence[Sequence[RawStreamChunk]],
    config: StreamConfig,
    *,
    batched: bool,
    stop: tuple[StopKind, int] | None = None,
    pipeline: Pipeline | None = None,
) -> tuple[StreamResult, list[tuple[str, str]]]:
    """One stream of *adapter* under virtual time, each read one tick (10 apart).

    *batched*: a read's chunks come as one ``Batch`` (a lone chunk as itself), else one by one.
    *stop*: ``(kind, n)`` raises that stop after the n-th routed chunk (``rxcord replay --stop``).
    Returns the result and the timeline of notifications (time, kind).
    """
    scheduler = TestScheduler()
    notes = []
    for tick, group in enumerate(reads, start=1):
        if batched:
            notes.append(ReactiveTest.on_next(tick * 10, group[0] if len(group) == 1 else Batch(list(group))))
        else:
            notes.extend(ReactiveTest.on_next(tick * 10, raw) for raw in group)
    source = scheduler.create_cold_observable(*notes, ReactiveTest.on_completed(len(reads) * 10 + 10))
    handle = StopHandle("1")
    stages = pipeline or Pipeline.default()
    if stop is not None:
        kind, count = stop
        stages = stages.insert_after(
            "accumulate", Stage.of("stop_after", stop_after(count, kind, handle.subject))
        )
    chain = build_chain(
        source,
        normalizer=adapter.new_normalizer,
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=_planning_send(config),
        provider=adapter.name,
        guards=adapter.guards,
        pipeline=stages,
        batched=batched,
    )
    observer = scheduler.start(lambda: chain, created=0, subscribed=0, disposed=1_000_000)
    values = [m.value.value for m in observer.messages if m.value.kind == "N"]
    kinds = [m.value.kind for m in observer.messages]
    assert kinds[-1] == "C", kinds
    [result] = values
    return result, [(str(m.time), m.value.kind) for m in observer.messages]


def run_planned(
    data: Sequence[Any],
    config: StreamConfig,
    *,
    normalizer: Callable[[], ChunkNormalizer] = TextFeed,
    guards: Guards | None = None,
    provider: str = "t",
) -> tuple[StreamResult, list[str]]:
    """Run the chain on *data* (one raw chunk per tick) under virtual time.

    Delivery plans the real payloads (``DiscordDelivery.payloads``: mentions, the split,
    fences) and "sends" them at once. Returns the result and the messages' contents.
    """
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        *[ReactiveTest.on_next(1 + i, RawStreamChunk(provider=provider, data=d)) for i, d in enumerate(data)],
        ReactiveTest.on_completed(len(data) + 2),
    )
    handle = StopHandle("1")
    chain = build_chain(
        source,
        normalizer=normalizer,
        guards=guards,  # the guards stage 03 runs after this normalizer
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=_planning_send(config),
    )
    observer = scheduler.start(lambda: chain, disposed=100_000)
    [result] = [m.value.value for m in observer.messages if m.value.kind == "N"]
    return result, [str(m.payload["content"]) for m in result.messages]


def wire_events(
    adapter: ProviderAdapter, pieces: Sequence[str], reasoning: Sequence[str] = ()
) -> list[RawStreamChunk]:
    """*pieces* as the adapter's own wire events (reasoning first, in its field where it has one)."""
    name = adapter.name
    if name == "anthropic":
        head = [
            {
                "type": "message_start",
                "message": {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "usage": {"input_tokens": 1},
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ]
        body = [
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ]
        return [RawStreamChunk(provider=name, data=d) for d in head + body]
    if name == "google":
        body = [
            {"candidates": [{"content": {"parts": [{"text": p}], "role": "model"}, "index": 0}]}
            for p in pieces
        ]
        return [RawStreamChunk(provider=name, data=d) for d in body]
    thinking = [{"choices": [{"index": 0, "delta": {"reasoning": r}}]} for r in reasoning]
    body = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return [RawStreamChunk(provider=name, data=d) for d in thinking + body]
