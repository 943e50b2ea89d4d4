"""Where the time goes: each stage's pure logic timed alone, without Rx and without I/O.

The chain's per-chunk cost is the sum of its stages' logic, the transport's I/O
and the cost of moving each item through the operators (reactivex observers,
subjects, the delivery queue). This module times the logic of each stage on a
capture's bytes in isolation, in the order the chain runs it, so the report can
say how much of the end-to-end cost each part takes; the remainder of the
end-to-end figure is I/O (the transport floor) plus the Rx plumbing.
"""

from __future__ import annotations

__all__ = ("StageTimes", "time_stages")

import gc
import json
import time
from collections.abc import Callable
from typing import Any

import attrs

from operators.accumulate import route
from operators.clean import SegmentCleaner
from operators.collect_result import ResultBuilder
from operators.flush import Flusher
from pipeline.config import StreamConfig, StreamContext
from pipeline.delivery import DiscordDelivery
from pipeline.state import Segment, StreamState
from pipeline.types import ProcessedChunk, RawStreamChunk, SegmentKind
from providers import transport
from providers.openai import OpenAIAdapter
from providers.sse import SseEvent, SseParser
from sinks.memory import MemorySink


@attrs.frozen
class StageTimes:
    """Microseconds per chunk for each stage's logic (best of several runs, GC paused)."""

    chunks: int
    stages: dict[str, float]


def _time(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    """The best of *runs* timings (the least disturbed by other load), with the GC paused."""
    best = float("inf")
    value: Any = None
    for _ in range(runs):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            value = fn()
            best = min(best, time.perf_counter() - start)
        finally:
            gc.enable()
    return best, value


def time_stages(pieces: list[bytes], *, runs: int = 5) -> StageTimes:
    """Time each stage over the capture cut into *pieces* (as the server writes them)."""
    adapter = OpenAIAdapter()
    config = StreamConfig()

    def sse() -> list[SseEvent]:
        parser = SseParser()
        events: list[SseEvent] = []
        for piece in pieces:
            events.extend(parser.feed(piece))
        events.extend(parser.close())
        return [event for event in events if event.data != "[DONE]"]

    t_sse, events = _time(sse, runs)
    n = len(events)

    def decode_stdlib() -> list[Any]:
        return [json.loads(event.data) for event in events]

    t_json, _ = _time(decode_stdlib, runs)

    def raw_chunks() -> list[RawStreamChunk]:
        # What the transport does per event: decode (its JSON decoder) and wrap.
        make = transport._event_chunk
        return [make("openai", event.data, event.event) for event in events]

    t_raw, raws = _time(raw_chunks, runs)

    def normalize() -> list[ProcessedChunk]:
        normalizer = adapter.new_normalizer()
        out: list[ProcessedChunk] = []
        for raw in raws:
            out.extend(normalizer.feed(raw))
        out.extend(normalizer.finish())
        return out

    t_norm, processed = _time(normalize, runs)

    def accumulate() -> list[StreamState]:
        state = StreamState()
        states = []
        for chunk in processed:
            state = route(state, chunk)
            states.append(state)
        return states

    t_route, states = _time(accumulate, runs)

    def flusher() -> list[Segment]:
        flush = Flusher(config)
        out: list[Segment] = []
        for state in states:
            if state.delta:
                out.extend(flush.push(state.delta))
        out.extend(flush.flush(final=True))
        return out

    t_flush, segments = _time(flusher, runs)

    def cleaner() -> list[Segment]:
        clean = SegmentCleaner(config)
        out: list[Segment] = []
        for segment in segments:
            out.extend(clean.feed(segment))
        return out

    t_clean, cleaned = _time(cleaner, runs)

    def payloads() -> int:
        delivery = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config)
        count = 0
        for segment in cleaned:
            if segment.kind is SegmentKind.TEXT:
                count += len(delivery.payloads(segment))
        return count

    t_payloads, _ = _time(payloads, runs)

    def results() -> Any:
        builder = ResultBuilder(provider="openai")
        for state in states:
            builder.add(state)
        return builder.build()

    t_result, _ = _time(results, runs)

    per = 1e6 / n
    return StageTimes(
        chunks=n,
        stages={
            "02 SSE parser": t_sse * per,
            "02 JSON decode + RawStreamChunk": t_raw * per,
            "   (of which stdlib json.loads)": t_json * per,
            "03 normalizer (ChatCompletionsNormalizer)": t_norm * per,
            "04 route (scan step)": t_route * per,
            "05 flusher (aggregated)": t_flush * per,
            "06 cleaner (end of stream)": t_clean * per,
            "07 payloads + 2000-char split (end)": t_payloads * per,
            "04 result fold": t_result * per,
        },
    )
