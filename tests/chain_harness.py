"""One harness for chain-level tests: text in as raw chunks, real Discord payloads planned, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import reactivex
from reactivex.testing import ReactiveTest, TestScheduler
from rxcord.compose.chain import build_chain
from rxcord.core.config import Guards, StreamConfig, StreamContext
from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, TypingPulse
from rxcord.core.stops import StopHandle
from rxcord.core.types import ChunkNormalizer, ProcessedChunk, RawStreamChunk, SegmentKind
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink


class TextFeed:
    """A normalizer whose raw chunks are the visible text itself."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        return [ProcessedChunk.text(raw.data)]

    def finish(self) -> Sequence[ProcessedChunk]:
        return []


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
    planner = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config)

    def send(item: Segment | TypingPulse) -> reactivex.Observable[Delivery]:
        if isinstance(item, TypingPulse) or item.kind is not SegmentKind.TEXT:
            return reactivex.just(Delivery(segment=item if isinstance(item, Segment) else None))
        sent = tuple(SentMessage(payload=p) for p in planner.payloads(item))
        return reactivex.just(Delivery(segment=item, messages=sent))

    handle = StopHandle("1")
    chain = build_chain(
        source,
        normalizer=normalizer,
        guards=guards,  # the guards stage 03 runs after this normalizer
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=send,
    )
    observer = scheduler.start(lambda: chain, disposed=100_000)
    [result] = [m.value.value for m in observer.messages if m.value.kind == "N"]
    return result, [str(m.payload["content"]) for m in result.messages]
