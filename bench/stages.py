"""Where the time goes: each stage's logic timed alone, then the chain without I/O.

The chain's per-chunk cost is its stages' logic, plus moving every item through
the operators (reactivex observers, the publish subject, the merge, the
delivery queue), plus the transport's I/O. This module measures, on the bytes
of one capture cut as the server cuts them:

* each stage's logic alone, without Rx and without I/O, in the order the chain
  runs it (the SSE parser, JSON decoding, the normalizer, the scan step, the
  flusher, the cleaner, payload planning and the 2000-character split, the
  result fold);
* the whole chain (``rxcord.compose.chain.build_chain``) fed the same decoded chunks
  from memory on the asyncio scheduler, with aggregated delivery into a
  ``MemorySink``: stages 03-07 with their Rx plumbing, without the transport.

The difference between the in-memory chain and the sum of stages 03-07 is the
plumbing; the difference between the end-to-end figure and the in-memory chain
is the transport (aiohttp, the SSE parser, JSON).
"""

from __future__ import annotations

__all__ = ("StageTimes", "time_stages")

import asyncio
import gc
import json
import time
from collections.abc import Callable
from typing import Any

import attrs
import reactivex
from reactivex import abc
from reactivex.disposable import Disposable
from rxcord.compose.chain import build_chain
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Segment, StreamResult, StreamState
from rxcord.core.stops import StopHandle
from rxcord.core.text_buffer import TextBuffer
from rxcord.core.types import ProcessedChunk, RawStreamChunk, SegmentKind
from rxcord.operators.accumulate import route
from rxcord.operators.aio import drain
from rxcord.operators.clean import SegmentCleaner
from rxcord.operators.collect_result import ResultBuilder
from rxcord.operators.flush import Flusher
from rxcord.providers import transport
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.sse import SseParser
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink

LOGIC_03_07 = (
    "03 normalizer",
    "04 scan step (route)",
    "05 flusher",
    "06 cleaner",
    "07 payloads + 2000-char split",
    "04 result fold",
)
"""The stage rows whose sum the in-memory chain is compared with."""


@attrs.frozen
class StageTimes:
    """Microseconds per chunk (best of several runs, GC paused for the logic rows)."""

    chunks: int
    stages: dict[str, float]
    """Stage logic, in chain order."""
    chain_in_memory: float
    """The whole chain fed from memory (stages 03-07 and their plumbing)."""

    @property
    def logic_03_07(self) -> float:
        """The sum of the logic rows of stages 03-07."""
        return sum(self.stages[name] for name in LOGIC_03_07)

    @property
    def plumbing(self) -> float:
        """What the chain costs beyond its stages' logic: Rx observers, subject, merge, queue, timers."""
        return max(0.0, self.chain_in_memory - self.logic_03_07)


def _best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
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


def _memory_source(raws: list[RawStreamChunk]) -> reactivex.Observable[RawStreamChunk]:
    """Emit *raws* from one loop callback, as the transport emits a network read's events."""

    def subscribe(
        observer: abc.ObserverBase[RawStreamChunk], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def run() -> None:
            for raw in raws:
                observer.on_next(raw)
            observer.on_completed()

        handle = asyncio.get_running_loop().call_soon(run)
        return Disposable(handle.cancel)

    return reactivex.create(subscribe)


async def _chain_once(raws: list[RawStreamChunk], config: StreamConfig) -> StreamResult:
    adapter = OpenAIAdapter()
    stops = StopHandle("1")
    delivery = DiscordDelivery(
        sink=MemorySink(), context=StreamContext(), config=config, stops=stops.subject, nonce_prefix="bench"
    )
    chain = build_chain(
        _memory_source(raws),
        normalizer=adapter.new_normalizer,
        config=config,
        stops=stops.signals,
        stop_sink=stops.subject,
        send=delivery.send,
        provider=adapter.name,
    )
    results = await drain(chain)
    return results[-1]


async def time_chain_in_memory(raws: list[RawStreamChunk], *, runs: int = 5) -> float:
    """Best CPU microseconds per chunk of the whole chain fed *raws* from memory (after one warm-up)."""
    config = StreamConfig()
    await _chain_once(raws, config)
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        await _chain_once(raws, config)
        best = min(best, time.process_time() - start)
    return best / len(raws) * 1e6


async def time_stages(pieces: list[bytes], *, runs: int = 5) -> StageTimes:
    """Time each stage over the capture cut into *pieces*, then the chain fed from memory."""
    adapter = OpenAIAdapter()
    config = StreamConfig()

    def sse() -> list[tuple[bytes, str | None, str | None]]:
        parser = SseParser()
        fields: list[tuple[bytes, str | None, str | None]] = []
        for piece in pieces:
            fields.extend(parser.feed_raw(piece))
        fields.extend(parser.close_raw())
        return [field for field in fields if field[0] != b"[DONE]"]

    t_sse, fields = _best(sse, runs)
    n = len(fields)

    def decode_stdlib() -> list[Any]:
        return [json.loads(data.decode("utf-8", "replace")) for data, _, _ in fields]

    t_json, _ = _best(decode_stdlib, runs)

    def raw_chunks() -> list[RawStreamChunk]:
        # What the transport does per event: decode (its JSON decoder) and wrap.
        make = transport._event_chunk
        return [make("openai", data, event) for data, event, _ in fields]

    t_raw, raws = _best(raw_chunks, runs)

    def normalize() -> list[ProcessedChunk]:
        normalizer = adapter.new_normalizer()
        out: list[ProcessedChunk] = []
        for raw in raws:
            out.extend(normalizer.feed(raw))
        out.extend(normalizer.finish())
        return out

    t_norm, processed = _best(normalize, runs)

    def accumulate() -> list[StreamState]:
        state = StreamState()
        states = []
        for chunk in processed:
            state = route(state, chunk)
            states.append(state)
        return states

    t_route, states = _best(accumulate, runs)

    def flusher() -> list[Segment]:
        # As the flush operator does it in aggregated mode: the deltas kept, pushed as one text.
        flush = Flusher(config)
        kept = TextBuffer()
        for state in states:
            if state.delta:
                kept.append(state.delta)
        out = flush.push(kept.getvalue())
        out.extend(flush.flush(final=True))
        return out

    t_flush, segments = _best(flusher, runs)

    def cleaner() -> list[Segment]:
        clean = SegmentCleaner(config)
        out: list[Segment] = []
        for segment in segments:
            out.extend(clean.feed(segment))
        return out

    t_clean, cleaned = _best(cleaner, runs)

    def payloads() -> int:
        delivery = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config)
        count = 0
        for segment in cleaned:
            if segment.kind is SegmentKind.TEXT:
                count += len(delivery.payloads(segment))
        return count

    t_payloads, _ = _best(payloads, runs)

    def results() -> Any:
        builder = ResultBuilder(provider="openai")
        for state in states:
            builder.add(state)
        return builder.build()

    t_result, _ = _best(results, runs)

    chain = await time_chain_in_memory(raws, runs=runs)
    per = 1e6 / n
    return StageTimes(
        chunks=n,
        stages={
            "02 SSE parser": t_sse * per,
            "02 JSON decode + RawStreamChunk": t_raw * per,
            "02 (stdlib json.loads, for comparison)": t_json * per,
            "03 normalizer": t_norm * per,
            "04 scan step (route)": t_route * per,
            "05 flusher": t_flush * per,
            "06 cleaner": t_clean * per,
            "07 payloads + 2000-char split": t_payloads * per,
            "04 result fold": t_result * per,
        },
        chain_in_memory=chain,
    )
