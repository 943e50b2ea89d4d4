"""Figure 4, where the live CPU goes: rxcord's transport alone, and the stages fed from memory.

Under figure 4's load (the same streams, the same pace), three more runs split the
chain's live CPU per chunk:

* **the transport alone**: ``stream_source`` (aiohttp, the pump's read loop, the SSE
  parser, the events' decoding into ``RawStreamChunk``) reading the same paced server
  into an observer that only counts;
* **the stages back to back**: stages 03-07 (``build_chain`` into a ``MemorySink``,
  live delivery) fed the same decoded chunks from memory, the streams' events
  interleaved one by one with no pause in between;
* **the stages at the live pace**: the same chains and chunks, each stream's events
  fed on the loop's timers at the figure's rate (one ``call_at`` per event, the
  streams spread over one interval); the cost of that pacing alone (the same timers
  feeding nothing) is measured too and subtracted.

Both memory runs make the same calls per chunk; what the paced one adds is the cost of
each event arriving after every other stream has run meanwhile, its stream's objects
no longer in the CPU's caches.
"""

from __future__ import annotations

__all__ = ("LiveSplit", "measure_live_split")

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import attrs
from reactivex.subject import Subject

from bench.clients import _ADAPTER, _CHAT, _TRANSPORT
from bench.live import LIVE, _paced_url, _reset, stream_capture
from bench.server import ServerProcess
from bench.stages import memory_chain
from rxcord.core.types import Batch, RawStreamChunk
from rxcord.operators.aio import drain
from rxcord.providers import transport
from rxcord.providers.sse import SseParser
from rxcord.providers.transport import stream_source


@attrs.frozen
class LiveSplit:
    """CPU microseconds per chunk of each part, under figure 4's load."""

    streams: int
    rate: float
    transport_us: float
    """``stream_source`` alone, reading the paced server."""
    back_to_back_us: float
    """Stages 03-07 fed from memory, the streams' events interleaved without pauses."""
    paced_us: float
    """Stages 03-07 fed from memory at the live pace (the pacing's own cost subtracted)."""
    pacing_us: float
    """The pacing timers alone, feeding nothing (subtracted from ``paced_us``)."""


def capture_chunks(captures: Path, chunks: int, number: int) -> list[RawStreamChunk]:
    """The decoded chunks of the capture stream *number* reads (one per event, up to ``[DONE]``)."""
    body = (captures / stream_capture(chunks, number)).read_bytes()
    parsed, _ = transport._event_chunks("openai", SseParser().feed_raw(body))
    return parsed


async def _transport_alone(
    server: ServerProcess, session: aiohttp.ClientSession, chunks: int, streams: int, rate: float
) -> float:
    await _reset(session, server)
    pace_ms = 1000.0 / rate
    loop = asyncio.get_running_loop()

    async def one(number: int) -> int:
        url = _paced_url(server, chunks, number, streams, pace_ms, f"transport{number}")
        request = _ADAPTER.build_request(_CHAT, base_url=url, api_key="bench-key", stream=True)
        done: asyncio.Future[None] = loop.create_future()
        count = 0

        def on_next(item: Any) -> None:
            nonlocal count
            count += len(item) if isinstance(item, Batch) else 1

        source = stream_source(_ADAPTER, request, session=session, config=_TRANSPORT, batched=True)
        source.subscribe(on_next, done.set_exception, lambda: done.set_result(None))
        await done
        return count

    c0 = time.process_time()
    counts = await asyncio.gather(*(one(number) for number in range(streams)))
    elapsed = time.process_time() - c0
    return elapsed / max(1, sum(counts)) * 1e6


async def _fed_from_memory(
    feeds: list[list[RawStreamChunk]], rate: float | None, *, chains: bool = True
) -> float:
    """CPU µs per chunk of feeding every stream's chunks to its own chain.

    *rate* ``None``: back to back, one event of each stream in turn; else each stream's events
    on the loop's timers at *rate* per second. *chains* ``False``: the same feeding, no chain.
    """
    loop = asyncio.get_running_loop()
    subjects: list[Subject[Any]] = [Subject() for _ in feeds]
    tasks = (
        [asyncio.ensure_future(drain(memory_chain(subject, LIVE))) for subject in subjects] if chains else []
    )
    await asyncio.sleep(0)  # every chain subscribed
    total = sum(len(feed) for feed in feeds)
    c0 = time.process_time()
    if rate is None:
        for k in range(max(len(feed) for feed in feeds)):
            for subject, feed in zip(subjects, feeds, strict=True):
                if k < len(feed):
                    subject.on_next(feed[k])
    else:
        interval = 1.0 / rate
        finished = [loop.create_future() for _ in feeds]
        start = loop.time() + interval
        for number, (subject, feed) in enumerate(zip(subjects, feeds, strict=True)):
            emit: Callable[[Any], None] = subject.on_next if chains else _ignore
            _pace(loop, feed, emit, start + interval * number / len(feeds), interval, finished[number])
        await asyncio.gather(*finished)
    elapsed = time.process_time() - c0
    for subject in subjects:
        subject.on_completed()
    await asyncio.gather(*tasks)
    return elapsed / max(1, total) * 1e6


def _ignore(_: Any) -> None:
    pass


def _pace(
    loop: asyncio.AbstractEventLoop,
    feed: list[RawStreamChunk],
    emit: Callable[[Any], None],
    start: float,
    interval: float,
    finished: asyncio.Future[None],
) -> None:
    """Emit *feed* one item per *interval* from *start*: each step arms the next (one timer per stream)."""

    def step(k: int) -> None:
        emit(feed[k])
        if k + 1 < len(feed):
            loop.call_at(start + interval * (k + 1), step, k + 1)
        else:
            finished.set_result(None)

    loop.call_at(start, step, 0)


async def measure_live_split(
    server: ServerProcess, session: aiohttp.ClientSession, chunks: int, *, streams: int, rate: float
) -> LiveSplit:
    """The three parts of figure 4's live CPU per chunk (see the module docstring)."""
    transport_us = await _transport_alone(server, session, chunks, streams, rate)
    feeds = [capture_chunks(server.captures, chunks, number) for number in range(streams)]
    await _fed_from_memory(feeds[: min(streams, 8)], None)  # warm-up
    back_to_back = await _fed_from_memory(feeds, None)
    paced = await _fed_from_memory(feeds, rate)
    pacing = await _fed_from_memory(feeds, rate, chains=False)
    return LiveSplit(
        streams=streams,
        rate=rate,
        transport_us=transport_us,
        back_to_back_us=back_to_back,
        paced_us=max(0.0, paced - pacing),
        pacing_us=pacing,
    )
