"""Figures 3 and 4: live-mode latency added by the pipeline, and many concurrent paced streams.

The server writes one SSE event at a time on an absolute schedule (``pace``) and
records when it wrote each one on ``time.monotonic``, which every process on
the machine shares. Streams start spread over one pace interval, as
independent conversations would be.

Figure 3. Each stream runs with a ``rxcord.operators.timeline.Timeline``: the chain's
own recorder of when the source emitted each raw chunk (stage 02), when each
segment left the cleaner (stage 06) and when each sink call started (stage 07).
A text segment released while a chunk was moving through the chain (a
paragraph break completed by that chunk) is attributed to that chunk; its
latency is the start of its sink call minus:

* the moment the source emitted the chunk (``from source``: the chain and the
  hand-off to the delivery coroutine);
* the moment the server wrote it (``from write``: additionally the loopback
  socket, the event loop's queue and the transport: everything on this side of
  the wire).

Segments released by the idle timer (``live_idle_flush``) or by the end of the
stream are deliberate waits and are not counted; paced messages are off.

Figure 4. Each stream's normalizer is wrapped to note when each raw chunk
reached stage 03; a chunk's lag is that moment minus the server's write. CPU
per stream is the client process's CPU time over the run divided by the number
of streams and the run's length. Halfway through the run, the objects the garbage
collector tracks are counted (``gc.get_objects()``, against the count before the
streams started) and divided by the number of streams: the tracked objects per live
stream, which set how long each full collection stops the loop.

Time to the first Discord message, per provider family (``measure_first_message``):
live streams of the same kind of text in the OpenAI-compatible, Anthropic and Gemini
wire formats (``bench.make_captures.FAMILIES``), each through its own adapter; the
time from the server's write of the first event carrying answer text to the start of
the first sink call (the stream's ``Timeline``).
"""

from __future__ import annotations

__all__ = (
    "OPENAI_OWN_HOST",
    "Capacity",
    "FirstMessageResult",
    "LagResult",
    "LatencyResult",
    "measure_capacity",
    "measure_first_message",
    "measure_lag",
    "measure_lag_floor",
    "measure_latency",
)

import asyncio
import gc
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import nullcontext
from typing import Any, Final, Literal

import aiohttp
import attrs
import orjson
from yarl import URL

from bench.clients import _CHAT, _TRANSPORT, REQUEST_BODY, Splitter, rxcord_job
from bench.gcwatch import GcWatch, tuned_gc
from bench.make_captures import FIRST_TEXT, capture_name
from bench.protocol import read_events
from bench.server import ServerProcess
from bench.stats import percentile
from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import Guards, StreamConfig, StreamContext
from rxcord.core.request import ChatRequest
from rxcord.core.state import SentMessage
from rxcord.core.types import ChunkNormalizer, DeliveryMode, ProcessedChunk, ProviderError, RawStreamChunk
from rxcord.operators.timeline import CLEAN, DELIVERY, TRANSPORT, Timeline
from rxcord.providers.base import DegradationPolicy, HttpRequest
from rxcord.providers.openai import OpenAIAdapter
from rxcord.sinks.memory import MemorySink

LIVE = StreamConfig(delivery=DeliveryMode.LIVE, max_messages=100_000, max_flushes=100_000)
"""Live delivery, without the per-turn caps (long benchmark streams are not runaway replies)."""


VARIANTS = 64
"""Distinct texts the live figures spread their streams over."""

TOP_TYPES = 8
"""How many of the most numerous tracked types a live figure names (the measured reason of a miss)."""


def stream_capture(chunks: int, number: int) -> str:
    """The capture stream *number* reads: one of ``VARIANTS`` texts of *chunks* chunks."""
    return capture_name(chunks, variant=number % VARIANTS)


def live_session() -> aiohttp.ClientSession:
    """A session without aiohttp's 100-connection cap (hundreds of streams at once)."""
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


def _paced_url(
    server: ServerProcess, chunks: int, number: int, streams: int, pace_ms: float, stream_id: str
) -> str:
    """Stream *number* of *streams*: one event per *pace_ms*, started at its share of one interval."""
    return server.url(
        stream_capture(chunks, number),
        "event",
        pace_ms=pace_ms,
        phase_ms=pace_ms * number / streams,
        stream_id=stream_id,
    )


class CountingSink:
    """A Discord sink that keeps what ``RestSink`` keeps of a sent message: nothing but a count.

    The live figures count the objects a live stream keeps alive; ``MemorySink`` (a test
    double) keeps every payload, context and result it was given, objects no bot's sink holds.
    """

    __slots__ = ("created", "edited", "typing")

    def __init__(self) -> None:
        self.created = 0
        self.edited = 0
        self.typing = 0

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        self.created += 1
        return SentMessage(payload=payload, message_id=str(self.created), channel_id=context.channel_id)

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        self.edited += 1
        return SentMessage(payload=payload, message_id=message_id, channel_id=context.channel_id)

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        return None

    async def trigger_typing(self, context: StreamContext) -> None:
        self.typing += 1


def _live_job(session: aiohttp.ClientSession, url: str, config: StreamConfig, number: int) -> StreamJob:
    """A stream into a counting sink, on a channel of its own."""
    channel_id = str(100000000000000001 + number)
    return rxcord_job(session, url, CountingSink(), config=config, channel_id=channel_id)


async def _writes(session: aiohttp.ClientSession, server: ServerProcess) -> dict[str, list[float]]:
    async with session.get(f"{server.root}/writes") as response:
        data: dict[str, list[float]] = await response.json()
        return data


async def _reset(session: aiohttp.ClientSession, server: ServerProcess) -> None:
    async with session.post(f"{server.root}/reset") as response:
        await response.read()


async def warm_pool(session: aiohttp.ClientSession, server: ServerProcess, streams: int) -> None:
    """Open *streams* pooled connections at once, so that a live figure's streams find them open.

    A live figure counts the objects the collector tracks against the count before its streams:
    the first figure on a session would count the pool's new connections (aiohttp keeps each
    connection's protocol, parser and socket transport after its response) as its streams'
    objects, and the figures after it would not.
    """

    async def one() -> None:
        async with session.post(f"{server.root}/reset") as response:
            await response.read()

    await asyncio.gather(*(one() for _ in range(streams)))


# -- figure 3 ---------------------------------------------------------------------------------------------


@attrs.frozen
class LatencyResult:
    """Figure 3 for one number of streams."""

    streams: int
    pace_ms: float
    chunks: int
    from_source_ms: list[float]
    from_write_ms: list[float]
    excluded: int
    """Segments released by the idle timer or the stream's end (deliberate waits)."""
    unmatched: int
    """Streams whose sends could not be paired with their segments (not counted)."""
    cpu_seconds: float = 0.0
    wall_seconds: float = 1.0
    gc_full_ms: list[float] = attrs.field(factory=list)
    """Milliseconds of each full garbage collection during the run (each one stops the loop)."""
    tuned: bool = False
    """Run with ``bench.gcwatch.tuned_gc`` (frozen start-up heap, fewer collections)."""

    @property
    def cpu_share(self) -> float:
        """The client's CPU time over the run's wall time (1.0: one core busy)."""
        return self.cpu_seconds / self.wall_seconds

    def p(self, which: str, q: float) -> float:
        """Percentile *q* of ``from_source`` or ``from_write`` (milliseconds)."""
        return percentile(self.from_source_ms if which == "source" else self.from_write_ms, q)


@attrs.frozen
class _Stream:
    stream_id: str
    timeline: Timeline
    offset: float
    """``time.monotonic() - timeline.now()``: converts timeline seconds to the monotonic clock."""


def _samples(
    stream: _Stream, writes: Sequence[float], idle_flush: float
) -> tuple[list[float], list[float], int] | None:
    """(from source, from write, excluded) for one stream; ``None`` when sends do not pair with segments."""
    raws: list[float] = []
    ended = False
    pending: list[tuple[int, float] | None] = []
    sends: list[float] = []
    excluded = 0
    for event in stream.timeline.events:
        if event.lane == TRANSPORT:
            if event.kind in ("raw", "transport_error"):
                raws.append(event.t)
            elif event.kind in ("end", "cancelled"):
                ended = True
        elif event.lane == CLEAN and event.kind in ("text", "error_embed"):
            if ended or not raws or event.t - raws[-1] > idle_flush / 2:
                pending.append(None)
                excluded += 1
            else:
                pending.append((len(raws) - 1, raws[-1]))
        elif event.lane == DELIVERY and event.kind in ("send", "refused"):
            sends.append(event.t)
    if len(sends) != len(pending):
        return None
    from_source: list[float] = []
    from_write: list[float] = []
    for trigger, sent in zip(pending, sends, strict=True):
        if trigger is None:
            continue
        index, emitted = trigger
        from_source.append((sent - emitted) * 1000)
        if index < len(writes):
            from_write.append((sent + stream.offset - writes[index]) * 1000)
    return from_source, from_write, excluded


async def measure_latency(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    chunks: int,
    *,
    streams: int,
    pace_ms: float,
    config: StreamConfig = LIVE,
    tuned: bool = False,
) -> LatencyResult:
    """Run *streams* live streams of *chunks* chunks at once, one event per *pace_ms* each.

    *tuned*: with ``tuned_gc`` (see ``bench.gcwatch``); every run records its full collections.
    """
    await _reset(session, server)

    async def one(number: int) -> _Stream:
        stream_id = f"lat{number}"
        url = _paced_url(server, chunks, number, streams, pace_ms, stream_id)
        timeline = Timeline()
        job = _live_job(session, url, config, number)
        await run_stream(job, timeline=timeline, nonce_prefix="bench")
        return _Stream(stream_id, timeline, time.monotonic() - timeline.now())

    # Tuning first: its own collection (before freezing) is set-up, not a pause of the run.
    with tuned_gc() if tuned else nullcontext(), GcWatch() as watch:
        c0, w0 = time.process_time(), time.perf_counter()
        done = await asyncio.gather(*(one(number) for number in range(streams)))
        c1, w1 = time.process_time(), time.perf_counter()
    writes = await _writes(session, server)
    from_source: list[float] = []
    from_write: list[float] = []
    excluded = unmatched = 0
    for stream in done:
        samples = _samples(stream, writes.get(stream.stream_id, []), config.live_idle_flush)
        if samples is None:
            unmatched += 1
            continue
        source, write, skipped = samples
        from_source += source
        from_write += write
        excluded += skipped
    return LatencyResult(
        streams,
        pace_ms,
        chunks,
        from_source,
        from_write,
        excluded,
        unmatched,
        c1 - c0,
        w1 - w0,
        gc_full_ms=watch.full(),
        tuned=tuned,
    )


# -- figure 4 ---------------------------------------------------------------------------------------------


class _StampedNormalizer:
    """Notes ``time.monotonic()`` as each raw chunk reaches stage 03, then normalizes it."""

    __slots__ = ("inner", "stamps")

    def __init__(self, inner: ChunkNormalizer, stamps: list[float]) -> None:
        self.inner = inner
        self.stamps = stamps

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        self.stamps.append(time.monotonic())
        return self.inner.feed(raw)

    def finish(self) -> Sequence[ProcessedChunk]:
        return self.inner.finish()


class _StampedAdapter:
    """``OpenAIAdapter`` whose normalizers note arrival times (one adapter per stream)."""

    def __init__(self) -> None:
        self.inner = OpenAIAdapter()
        self.stamps: list[float] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def policy(self) -> DegradationPolicy:
        return self.inner.policy

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        return self.inner.build_request(request, base_url=base_url, api_key=api_key, stream=stream)

    def new_normalizer(self) -> ChunkNormalizer:
        return _StampedNormalizer(self.inner.new_normalizer(), self.stamps)

    @property
    def guards(self) -> Guards:
        return self.inner.guards

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        return self.inner.is_meaningful(raw)

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        return self.inner.rejection(raw)

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        return self.inner.ends_stream(chunks)

    def describe_error(self, error: ProviderError) -> str:
        return self.inner.describe_error(error)


@attrs.frozen
class LagResult:
    """Figure 4."""

    streams: int
    rate: float
    """Chunks per second per stream."""
    chunks: int
    lag_ms: list[float]
    cpu_seconds: float
    wall_seconds: float
    completed: int
    """Streams that ended with status ``completed``."""
    gc_full_ms: list[float] = attrs.field(factory=list)
    """Milliseconds of each full garbage collection during the run."""
    tracked_per_stream: float = float("nan")
    """Objects the collector tracks per live stream, halfway through the run."""
    tracked_types: tuple[tuple[str, float], ...] = ()
    """The most numerous types among them: (type name, objects per stream)."""

    @property
    def cpu_per_stream(self) -> float:
        """Fraction of one core per stream."""
        return self.cpu_seconds / self.wall_seconds / self.streams

    @property
    def cpu_per_chunk_us(self) -> float:
        """CPU microseconds per chunk."""
        return self.cpu_seconds / (self.streams * self.chunks) * 1e6


async def measure_lag(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    chunks: int,
    *,
    streams: int,
    rate: float,
    config: StreamConfig = LIVE,
    skip: int = 1,
    reader: Literal["auto", "socket", "aiohttp"] = "auto",
) -> LagResult:
    """Run *streams* live streams at *rate* chunks per second each, in this process, all at once.

    *reader*: who reads the responses (``TransportConfig.reader``; ``auto`` with the bench's
    shared session on 127.0.0.1 is aiohttp).

    *skip*: the first chunks of each stream left out of the lag (chunk 0, the role delta, is held
    by the transport until chunk 1 commits the stream; the capacity ladder skips its first second).
    """
    await _reset(session, server)
    pace_ms = 1000.0 / rate
    stamps: dict[str, list[float]] = {}

    async def one(number: int) -> bool:
        stream_id = f"lag{number}"
        adapter = _StampedAdapter()
        stamps[stream_id] = adapter.stamps
        url = _paced_url(server, chunks, number, streams, pace_ms, stream_id)
        job = attrs.evolve(_live_job(session, url, config, number), adapter=adapter)
        job = attrs.evolve(job, transport=attrs.evolve(job.transport, reader=reader))
        result = await run_stream(job, nonce_prefix="bench")
        return result.status.value == "completed"

    return await paced_lag(session, server, one, stamps, chunks=chunks, streams=streams, rate=rate, skip=skip)


def _tracked() -> Counter[str]:
    """Objects the collector tracks now, by type (after a collection, so garbage is not counted)."""
    gc.collect()
    return _census()


async def _tracked_later(seconds: float) -> Counter[str]:
    await asyncio.sleep(seconds)
    return _census()


def _census() -> Counter[str]:
    return Counter(type(item).__qualname__ for item in gc.get_objects())


def _per_stream(
    base: Counter[str], later: Counter[str], streams: int
) -> tuple[float, tuple[tuple[str, float], ...]]:
    """Tracked objects per stream, and the most numerous types among them (per stream)."""
    grown = later - base
    top = tuple((name, count / streams) for name, count in grown.most_common(TOP_TYPES))
    return (later.total() - base.total()) / streams, top


async def measure_lag_floor(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    chunks: int,
    *,
    streams: int,
    rate: float,
    socket_driven: bool = False,
    skip: int = 1,
) -> LagResult:
    """Figure 4's baseline: the same streams read by aiohttp, split and decoded with orjson, nothing else.

    *socket_driven*: read with ``bench.protocol`` instead (events handled in ``data_received``,
    no task wake-up per read): what a socket-driven transport could save against aiohttp's reader.
    """
    await _reset(session, server)
    pace_ms = 1000.0 / rate
    stamps: dict[str, list[float]] = {}

    async def one(number: int) -> bool:
        stream_id = f"floor{number}"
        seen = stamps[stream_id] = []
        url = _paced_url(server, chunks, number, streams, pace_ms, stream_id)
        if socket_driven:

            def on_event(data: bytes) -> None:
                if data != b"[DONE]":
                    orjson.loads(data)
                    seen.append(time.monotonic())

            await read_events(f"{url}/chat/completions", REQUEST_BODY, on_event)
            return len(seen) == chunks
        splitter = Splitter()
        async with session.post(f"{url}/chat/completions", json=REQUEST_BODY) as response:
            async for piece in response.content.iter_any():
                for data in splitter.feed(piece):
                    if data != b"[DONE]":
                        orjson.loads(data)
                        seen.append(time.monotonic())
        return len(seen) == chunks

    return await paced_lag(session, server, one, stamps, chunks=chunks, streams=streams, rate=rate, skip=skip)


# -- time to the first Discord message ---------------------------------------------------------------------


@attrs.frozen
class FirstMessageResult:
    """Time to the first Discord message of streams of one provider family, in one delivery mode."""

    family: str
    streams: int
    pace_ms: float
    ttfm_ms: list[float]
    """Per stream: the first message create's start minus the server's write of the first text event."""
    mode: DeliveryMode = DeliveryMode.LIVE
    start_window: int = 0
    """Characters stage 03 holds at the start for a stray ``</think>`` (the guards ``run_stream``
    gave the family's requests; 0: none): no message can come before them."""

    def p(self, q: float) -> float:
        return percentile(self.ttfm_ms, q)


class _FirstCreate(MemorySink):
    """A memory sink that notes when its first message create starts (``time.monotonic``)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: float | None = None

    async def create_message(self, context: Any, payload: Any) -> Any:
        if self.first is None:
            self.first = time.monotonic()
        return await super().create_message(context, payload)


MODES: dict[DeliveryMode, StreamConfig] = {
    DeliveryMode.LIVE: LIVE,
    DeliveryMode.EDIT: attrs.evolve(LIVE, delivery=DeliveryMode.EDIT),
    DeliveryMode.AGGREGATED: attrs.evolve(LIVE, delivery=DeliveryMode.AGGREGATED),
}
"""The first-message figure's configurations, one per delivery mode (the benchmark's caps off)."""


OPENAI_OWN_HOST: Final = "openai (api.openai.com's guards)"
"""A first-message family: the openai streams with the guards the OpenAI adapter has at its own
host (no think-tag start window), their requests still sent to the bench server on 127.0.0.1."""

_WIRE_FAMILY: Final = {OPENAI_OWN_HOST: "openai"}
"""The capture family (``bench.make_captures.FAMILIES``) of a family that is not one itself."""


class _OwnHostGuards(OpenAIAdapter):
    """The OpenAI adapter sending to the bench server with the guards it has at ``api.openai.com``."""

    def guards_for(self, url: str | URL | None) -> Guards:
        return super().guards_for(None)  # the default host's, whatever the (127.0.0.1) request URL


def _family_adapter(family: str) -> Any:
    from rxcord.providers.anthropic import AnthropicAdapter
    from rxcord.providers.google import GoogleAdapter

    adapters = {
        "openai": OpenAIAdapter,
        OPENAI_OWN_HOST: _OwnHostGuards,
        "anthropic": AnthropicAdapter,
        "google": GoogleAdapter,
    }
    return adapters[family]()


def _request_window(adapter: Any, url: str) -> int:
    """The start window ``run_stream`` gives a request to *url* (``guards_for`` where the adapter has it)."""
    guards_for = getattr(adapter, "guards_for", None)
    guards: Guards = adapter.guards if guards_for is None else guards_for(url)
    return guards.think_start_window if guards.think_tags else 0


async def measure_first_message(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    family: str,
    chunks: int,
    *,
    streams: int,
    pace_ms: float,
    mode: DeliveryMode = DeliveryMode.LIVE,
) -> FirstMessageResult:
    """*streams* streams of *family* at once in *mode*, one event per *pace_ms*: their first messages."""
    await _reset(session, server)
    config = MODES[mode]
    wire = _WIRE_FAMILY.get(family, family)
    slug = wire if wire == family else f"{wire}-own"  # the stream ids are URL path segments
    windows: set[int] = set()

    async def one(number: int) -> tuple[str, float | None]:
        stream_id = f"first-{slug}{number}"
        url = server.url(
            capture_name(chunks, variant=number % VARIANTS, family=wire),
            "event",
            pace_ms=pace_ms,
            phase_ms=pace_ms * number / streams,
            stream_id=stream_id,
        )
        adapter = _family_adapter(family)
        request = adapter.build_request(
            attrs.evolve(_CHAT, model="gemini-2.5-flash" if family == "google" else "bench-model"),
            base_url=url,
            api_key="bench-key",
            stream=True,
        )
        windows.add(_request_window(adapter, request.url))
        sink = _FirstCreate()
        job = StreamJob(
            adapter=adapter,
            request=request,
            sink=sink,
            context=_live_job(session, url, config, number).context,
            config=config,
            transport=_TRANSPORT,
            session=session,
        )
        await run_stream(job, nonce_prefix="bench")
        return stream_id, sink.first

    done = await asyncio.gather(*(one(number) for number in range(streams)))
    writes = await _writes(session, server)
    first = FIRST_TEXT[wire]
    ttfm: list[float] = []
    for stream_id, created in done:
        written = writes.get(stream_id, [])
        if created is not None and len(written) > first:
            ttfm.append((created - written[first]) * 1000)
    return FirstMessageResult(family, streams, pace_ms, ttfm, mode, max(windows, default=0))


# -- streams per process ----------------------------------------------------------------------------------


@attrs.frozen
class Capacity:
    """The most streams one process carried at *rate* with a lag p99 under *limit_ms*, of a ladder."""

    name: str
    rate: float
    limit_ms: float
    carried: int
    """The largest count of the ladder that stayed under the limit (0: not even the first)."""
    trials: list[tuple[int, float, float, list[float]]]
    """(streams, lag p99 ms, CPU share of one core, full collections' ms) of each count tried, in order."""
    tuned: bool = False
    """Each trial ran with ``bench.gcwatch.tuned_gc``."""


async def measure_capacity(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    chunks: int,
    *,
    ladder: Sequence[int],
    rate: float,
    floor: bool,
    limit_ms: float = 50.0,
    tuned: bool = False,
) -> Capacity:
    """Climb *ladder* (stream counts) until the lag p99 reaches *limit_ms* (the chain, or the floor)."""
    trials: list[tuple[int, float, float, list[float]]] = []
    carried = 0
    for streams in ladder:
        measure = measure_lag_floor if floor else measure_lag
        # The first second left out: all streams start at once, which a running bot does not do.
        with tuned_gc() if tuned else nullcontext():
            result = await measure(
                server, session, chunks, streams=streams, rate=rate, skip=min(int(rate), chunks // 3)
            )
        p99 = percentile(result.lag_ms, 99)
        trials.append((streams, p99, result.cpu_seconds / result.wall_seconds, result.gc_full_ms))
        if not p99 < limit_ms:
            break
        carried = streams
    name = "transport floor (b)" if floor else "rxcord chain"
    return Capacity(name, rate, limit_ms, carried, trials, tuned)


async def paced_lag(
    session: aiohttp.ClientSession,
    server: ServerProcess,
    one: Callable[[int], Awaitable[bool]],
    stamps: Mapping[str, list[float]],
    *,
    chunks: int,
    streams: int,
    rate: float,
    skip: int,
) -> LagResult:
    """Run *one* for every stream at once and measure each chunk's lag behind the server's write.

    *one* (stream number -> whether it read every chunk) appends the time it saw each chunk to
    ``stamps[stream_id]``; CPU, wall time, full collections and tracked objects are taken around
    the streams, as for every live contender.
    """
    base = _tracked()
    with GcWatch() as watch:
        c0, w0 = time.process_time(), time.perf_counter()
        sampler = asyncio.ensure_future(_tracked_later(chunks / rate / 2))
        done = await asyncio.gather(*(one(number) for number in range(streams)))
        c1, w1 = time.process_time(), time.perf_counter()
    tracked, types = _per_stream(base, await sampler, streams)
    writes = await _writes(session, server)
    lag: list[float] = []
    for stream_id, seen in stamps.items():
        written = writes.get(stream_id, [])
        lag += [(at - sent) * 1000 for at, sent in zip(seen[skip:], written[skip:], strict=False)]
    return LagResult(
        streams,
        rate,
        chunks,
        lag,
        c1 - c0,
        w1 - w0,
        sum(done),
        gc_full_ms=watch.full(),
        tracked_per_stream=tracked,
        tracked_types=types,
    )
