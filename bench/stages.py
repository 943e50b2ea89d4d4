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

__all__ = ("BATCHED", "PER_EVENT", "StageTimes", "batches_of", "interleaved", "time_stages")

import asyncio
import cProfile
import gc
import inspect
import json
import pstats
import time
from collections.abc import Callable
from typing import Any

import attrs
import reactivex
from reactivex import abc
from reactivex.disposable import Disposable
from reactivex.observer.autodetachobserver import AutoDetachObserver

from bench.stats import Spread, spread
from rxcord.compose.chain import build_chain
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Segment, StreamResult, StreamState
from rxcord.core.stops import StopHandle
from rxcord.core.text_buffer import TextBuffer
from rxcord.core.types import Batch, ProcessedChunk, RawStreamChunk, SegmentKind
from rxcord.operators.accumulate import route
from rxcord.operators.aio import drain
from rxcord.operators.clean import SegmentCleaner
from rxcord.operators.collect_result import ResultBuilder
from rxcord.operators.flusher import Flusher
from rxcord.operators.light import LightObserver, Relay
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
    """CPU microseconds per chunk of each part: medians of interleaved rounds, with their spreads.

    Every part runs once per round, in a rotating order, with the collector paused for all of
    them alike (the same GC state on both sides of every difference); the median of the rounds
    is kept. Before, the logic rows were best-of-N with the collector paused and the chain ran
    with it on, so their difference (the plumbing) swung from 0.3 to 11 µs between runs.
    """

    chunks: int
    stages: dict[str, Spread]
    """Stage logic, in chain order."""
    chain: dict[str, Spread]
    """The whole chain fed from memory: ``PER_EVENT`` and ``BATCHED``."""
    reads: int = 0
    """Reads the batched feed groups the events into."""
    counted: dict[str, tuple[float, float]] = attrs.field(factory=dict)
    """Per feed (``PER_EVENT``, ``BATCHED``): Python function calls and observer hops per chunk,
    counted (``count_work``): the same on any machine, however loaded."""

    @property
    def chain_in_memory(self) -> float:
        """The chain fed one event at a time (median)."""
        return self.chain[PER_EVENT].median

    @property
    def chain_batched(self) -> float:
        """The chain fed one batch per read (median)."""
        return self.chain[BATCHED].median

    @property
    def logic_03_07(self) -> float:
        """The sum of the medians of the logic rows of stages 03-07."""
        return sum(self.stages[name].median for name in LOGIC_03_07)

    @property
    def plumbing(self) -> float:
        """What the chain fed per event costs beyond its stages' logic: Rx observers, the fan-out, timers."""
        return self.chain_in_memory - self.logic_03_07

    @property
    def plumbing_batched(self) -> float:
        """The same for the chain fed one batch per read."""
        return self.chain_batched - self.logic_03_07


PER_EVENT = "chain fed from memory, one item per event"
BATCHED = "chain fed from memory, one batch per read"
READ_BYTES = 4096
"""The batched feed's reads: about what aiohttp hands the transport in figure 1 (3-4 KB, a dozen events)."""


def _memory_source(items: list[Any]) -> reactivex.Observable[Any]:
    """Emit *items* from one loop callback, as the transport emits a network read's events."""

    def subscribe(
        observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        def run() -> None:
            for item in items:
                observer.on_next(item)
            observer.on_completed()

        handle = asyncio.get_running_loop().call_soon(run)
        return Disposable(handle.cancel)

    return reactivex.create(subscribe)


def memory_chain(source: reactivex.Observable[Any], config: StreamConfig, *, batched: bool = False) -> Any:
    """Stages 03-07 (``build_chain``) on *source*, OpenAI-compatible, delivering into a memory sink."""
    adapter = OpenAIAdapter()
    stops = StopHandle("1")
    delivery = DiscordDelivery(
        sink=MemorySink(), context=StreamContext(), config=config, stops=stops.subject, nonce_prefix="bench"
    )
    return build_chain(
        source,
        normalizer=adapter.new_normalizer,
        config=config,
        stops=stops.signals,
        stop_sink=stops.subject,
        send=delivery.send,
        provider=adapter.name,
        batched=batched,
    )


async def _chain_once(items: list[Any], config: StreamConfig, *, batched: bool = False) -> StreamResult:
    results = await drain(memory_chain(_memory_source(items), config, batched=batched))
    return results[-1]


def batches_of(body: bytes, read_bytes: int = READ_BYTES) -> list[Any]:
    """*body*'s event chunks grouped as reads of *read_bytes* give them (a lone chunk as itself)."""
    parser = SseParser()
    items: list[Any] = []
    for start in range(0, len(body), read_bytes):
        chunks, done = transport._event_chunks("openai", parser.feed_raw(body[start : start + read_bytes]))
        if chunks:
            items.append(chunks[0] if len(chunks) == 1 else Batch(chunks))
        if done:
            break
    return items


async def time_stages(pieces: list[bytes], *, runs: int = 5) -> StageTimes:
    """Time each stage over the capture cut into *pieces*, then the chain fed from memory.

    One warm-up round, then *runs* measured rounds; each round runs every part once in a
    rotated order, with the collector paused during each part (collected before it).
    """
    adapter = OpenAIAdapter()
    config = StreamConfig()

    def sse() -> list[tuple[bytes, str | None, str | None]]:
        parser = SseParser()
        fields: list[tuple[bytes, str | None, str | None]] = []
        for piece in pieces:
            fields.extend(parser.feed_raw(piece))
        fields.extend(parser.close_raw())
        return [field for field in fields if field[0] != b"[DONE]"]

    fields = sse()
    n = len(fields)

    def decode_stdlib() -> list[Any]:
        return [json.loads(data.decode("utf-8", "replace")) for data, _, _ in fields]

    def raw_chunks() -> list[RawStreamChunk]:
        # What the transport does per event: decode (its JSON decoder) and wrap.
        make = transport._event_chunk
        return [make("openai", data, event) for data, event, _ in fields]

    raws = raw_chunks()
    batches = batches_of(b"".join(pieces))

    def normalize() -> list[ProcessedChunk]:
        normalizer = adapter.new_normalizer()
        out: list[ProcessedChunk] = []
        for raw in raws:
            out.extend(normalizer.feed(raw))
        out.extend(normalizer.finish())
        return out

    processed = normalize()

    def accumulate() -> list[StreamState]:
        state = StreamState()
        states = []
        for chunk in processed:
            state = route(state, chunk)
            states.append(state)
        return states

    states = accumulate()

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

    segments = flusher()

    def cleaner() -> list[Segment]:
        clean = SegmentCleaner(config)
        out: list[Segment] = []
        for segment in segments:
            out.extend(clean.feed(segment))
        return out

    cleaned = cleaner()

    def payloads() -> int:
        delivery = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config)
        count = 0
        for segment in cleaned:
            if segment.kind is SegmentKind.TEXT:
                count += len(delivery.payloads(segment))
        return count

    def results() -> Any:
        builder = ResultBuilder(provider="openai")
        for state in states:
            builder.add(state)
        return builder.build()

    parts: dict[str, Callable[[], Any]] = {
        "02 SSE parser": sse,
        "02 JSON decode + RawStreamChunk": raw_chunks,
        "02 (stdlib json.loads, for comparison)": decode_stdlib,
        "03 normalizer": normalize,
        "04 scan step (route)": accumulate,
        "05 flusher": flusher,
        "06 cleaner": cleaner,
        "07 payloads + 2000-char split": payloads,
        "04 result fold": results,
        PER_EVENT: lambda: _chain_once(raws, config),
        BATCHED: lambda: _chain_once(batches, config, batched=True),
    }
    counted = {
        PER_EVENT: await count_work(raws, config),
        BATCHED: await count_work(batches, config, batched=True),
    }
    samples = await interleaved(parts, runs=runs)
    per = 1e6 / n
    spreads = {name: spread([value * per for value in values]) for name, values in samples.items()}
    return StageTimes(
        chunks=n,
        stages={name: spreads[name] for name in parts if name not in (PER_EVENT, BATCHED)},
        chain={PER_EVENT: spreads[PER_EVENT], BATCHED: spreads[BATCHED]},
        reads=len(batches),
        counted=counted,
    )


def hop_entries() -> set[tuple[str, int, str]]:
    """Where an item enters a stage: the ``on_next`` of every subscriber type the chain uses.

    reactivex's ``AutoDetachObserver`` (what ``Observable.subscribe`` wraps around a stage's
    callbacks), and the light subscribers of ``rxcord.operators.light``: ``LightObserver`` and
    the stage classes that are ``Relay`` s. One call of one of these is one observer hop.
    """
    classes: list[type] = [
        AutoDetachObserver,
        LightObserver,
        *_subclasses(LightObserver),
        *_subclasses(Relay),
    ]
    entries: set[tuple[str, int, str]] = set()
    for cls in classes:
        code = cls.on_next.__code__  # type: ignore[attr-defined]
        entries.add((code.co_filename, code.co_firstlineno, code.co_name))
    return entries


def _subclasses(cls: type) -> list[type]:
    found: list[type] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


async def count_work(items: list[Any], config: StreamConfig, *, batched: bool = False) -> tuple[float, float]:
    """Python function calls and observer hops (``hop_entries``) per chunk of one in-memory stream.

    Counted with ``cProfile`` (its call counts, not its times) after one uncounted warm-up run.
    """
    chunks = sum(len(item) if isinstance(item, Batch) else 1 for item in items)
    await _chain_once(items, config, batched=batched)
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        await _chain_once(items, config, batched=batched)
    finally:
        profiler.disable()
    stats = pstats.Stats(profiler)
    table: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    entries = hop_entries()
    hops = sum(row[1] for key, row in table.items() if key in entries)
    calls: int = stats.total_calls  # type: ignore[attr-defined]
    return calls / chunks, hops / chunks


async def interleaved(
    parts: dict[str, Callable[[], Any]], *, runs: int, warmup: int = 1
) -> dict[str, list[float]]:
    """CPU seconds of each part over ``warmup + runs`` rounds (the warm-up rounds dropped).

    Each round runs every part once, in an order rotated by one each round; each part runs
    with the collector paused after a full collection, so every part is measured in the
    same GC state. A part returning an awaitable is awaited inside its timing.
    """
    names = list(parts)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(warmup + runs):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                value = parts[name]()
                if inspect.isawaitable(value):
                    await value
                elapsed = time.process_time() - start
            finally:
                gc.enable()
            if round_ >= warmup:
                samples[name].append(elapsed)
    return samples
