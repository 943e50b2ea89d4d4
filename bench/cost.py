"""Figures 1 and 2: per-chunk cost against the baselines, flat cost, peak memory.

Every contender reads the same capture from the same server process, in
interleaved rounds (a, b, c, chain, then the next round in a rotated order), so
load from elsewhere on the machine falls on all of them alike. The cost of a
run is the *client process's* CPU time (``time.process_time``: every thread)
divided by the capture's chunks; the server writes from its own process, on
the other core. Wall time per chunk is kept too.
"""

from __future__ import annotations

__all__ = (
    "ContenderRuns",
    "CostResult",
    "MemoryResult",
    "measure_cost",
    "measure_memory",
    "measure_sizes",
)

import gc
import statistics
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import attrs

from bench import clients
from bench.server import ServerProcess, split_events, split_random
from bench.stats import Spread, spread

FLOOR = "floor: SSE split + orjson (a)"
TRANSPORT_FLOOR = "transport floor: aiohttp + orjson (b)"
SDK = "OpenAI SDK stream (c)"
LITELLM = "LiteLLM acompletion stream (d)"
CHAIN = "rxcord full chain"


@attrs.frozen
class ContenderRuns:
    """One contender's runs on one capture."""

    cpu: Spread
    """CPU microseconds per chunk."""
    wall: Spread
    """Wall microseconds per chunk."""


@attrs.frozen
class CostResult:
    """Figure 1 (or one size of figure 2) for one capture and one write mode."""

    capture: str
    mode: str
    chunks: int
    runs: dict[str, ContenderRuns]
    content_chars: int
    floor_reads: float = -1.0
    """Median pieces aiohttp handed the transport floor (b) per stream: the events per read set
    both its cost and how much the chain's batches hold."""

    def ratio(self, slower: str, faster: str) -> float:
        """Median CPU per chunk of *slower* over *faster*."""
        return self.runs[slower].cpu.median / self.runs[faster].cpu.median


Contender = Callable[[], Awaitable[clients.Work]]


async def measure_cost(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    sdk: Any | None,
    capture: str,
    mode: str,
    chunks: int,
    *,
    runs: int,
    warmup: int = 1,
    contenders: tuple[str, ...] = (FLOOR, TRANSPORT_FLOOR, SDK, LITELLM, CHAIN),
    lite: Any | None = None,
) -> CostResult:
    """Run every contender ``warmup + runs`` times on *capture*, interleaved; keep the last *runs*."""
    url = server.url(capture, mode)
    body = (server.captures / capture).read_bytes()
    pieces = split_random(body) if mode == "random" else split_events(body)

    async def floor() -> clients.Work:
        return clients.floor_bytes(pieces)

    table: dict[str, Contender] = {
        FLOOR: floor,
        TRANSPORT_FLOOR: lambda: clients.floor_aiohttp(session, url),
        CHAIN: lambda: clients.rxcord_chain(session, url),
    }
    if sdk is not None:
        table[SDK] = lambda: clients.openai_sdk(sdk, url)
    child_cpu: dict[str, float] = {}
    if lite is not None:
        # A bench.peer.LiteLLMPeer: the stream runs in its child process, which reports its CPU.

        async def peer() -> clients.Work:
            work, child_cpu[LITELLM] = await lite.stream(url)
            return work

        table[LITELLM] = peer
    names = [name for name in contenders if name in table]
    cpu: dict[str, list[float]] = {name: [] for name in names}
    wall: dict[str, list[float]] = {name: [] for name in names}
    content: dict[str, int] = {}
    reads: list[int] = []
    for round_ in range(warmup + runs):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            gc.collect()
            c0, w0 = time.process_time(), time.perf_counter()
            work = await table[name]()
            c1, w1 = time.process_time(), time.perf_counter()
            if name in child_cpu:  # measured in its own process
                c0, c1 = 0.0, child_cpu.pop(name)
            if work.events not in (-1, chunks):
                raise RuntimeError(f"{name} saw {work.events} events in {capture}, expected {chunks}")
            if work.content >= 0:
                content[name] = work.content
            if work.reads >= 0 and round_ >= warmup:
                reads.append(work.reads)
            if round_ >= warmup:
                cpu[name].append((c1 - c0) / chunks * 1e6)
                wall[name].append((w1 - w0) / chunks * 1e6)
    if len(set(content.values())) > 1:
        raise RuntimeError(f"contenders collected different answers from {capture}: {content}")
    return CostResult(
        capture=capture,
        mode=mode,
        chunks=chunks,
        runs={name: ContenderRuns(spread(cpu[name]), spread(wall[name])) for name in names},
        content_chars=next(iter(content.values()), -1),
        floor_reads=statistics.median(reads) if reads else -1.0,
    )


async def measure_sizes(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    captures: dict[int, str],
    *,
    runs: int,
    warmup: int = 1,
) -> dict[int, CostResult]:
    """Figure 2: the chain (and the floor) on captures of several sizes, interleaved round by round.

    Each round runs every size once, so a slow spell of the machine falls on all sizes alike.
    """
    sizes = sorted(captures)
    cpu: dict[int, dict[str, list[float]]] = {size: {FLOOR: [], CHAIN: []} for size in sizes}
    wall: dict[int, dict[str, list[float]]] = {size: {FLOOR: [], CHAIN: []} for size in sizes}
    pieces = {size: split_random((server.captures / captures[size]).read_bytes()) for size in sizes}
    content: dict[int, int] = {}
    for round_ in range(warmup + runs):
        order = sizes[round_ % len(sizes) :] + sizes[: round_ % len(sizes)]
        for size in order:
            url = server.url(captures[size], "random")
            for name in (FLOOR, CHAIN):
                gc.collect()
                c0, w0 = time.process_time(), time.perf_counter()
                if name == FLOOR:
                    clients.floor_bytes(pieces[size])
                else:
                    content[size] = (await clients.rxcord_chain(session, url)).content
                c1, w1 = time.process_time(), time.perf_counter()
                if round_ >= warmup:
                    cpu[size][name].append((c1 - c0) / size * 1e6)
                    wall[size][name].append((w1 - w0) / size * 1e6)
    return {
        size: CostResult(
            capture=captures[size],
            mode="random",
            chunks=size,
            runs={
                name: ContenderRuns(spread(cpu[size][name]), spread(wall[size][name]))
                for name in (FLOOR, CHAIN)
            },
            content_chars=content[size],
        )
        for size in sizes
    }


@attrs.frozen
class MemoryResult:
    """Figure 2's memory half: traced peak bytes of one stream."""

    capture: str
    peaks: dict[str, int]
    """Contender -> peak bytes allocated during the stream (tracemalloc)."""


async def measure_memory(
    server: ServerProcess, session: aiohttp.ClientSession, capture: str, mode: str = "random"
) -> MemoryResult:
    """Peak Python memory (tracemalloc) of one stream: the chain against the collecting floor.

    The floor that returns what rxcord returns (the answer and the reasoning,
    read with aiohttp and orjson) is the reference; the decode-only floor is
    listed too. Each contender runs once untraced first (warm caches, pooled
    connection), then once traced.
    """
    url = server.url(capture, mode)
    contenders: dict[str, Contender] = {
        TRANSPORT_FLOOR: lambda: clients.floor_aiohttp(session, url),
        "floor keeping the answer (b')": lambda: clients.floor_collect(session, url),
        CHAIN: lambda: clients.rxcord_chain(session, url),
    }
    peaks: dict[str, int] = {}
    for name, run in contenders.items():
        await run()
        gc.collect()
        tracemalloc.start()
        try:
            tracemalloc.reset_peak()
            start, _ = tracemalloc.get_traced_memory()
            work = await run()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        del work
        peaks[name] = peak - start
    return MemoryResult(capture=capture, peaks=peaks)
