"""Figure 1 with the events per read set: the chain against the transport floor at 1, 3 and 64.

The server writes *N* whole SSE events per write, one write every *gap* microseconds
(``bench.server.grouped_mode``), with a gap longer than either client needs for a write, so
aiohttp hands over one write per read. The events per read are measured, not assumed: the
transport floor (b) counts its reads. For each level: the client's CPU time per event of the
transport floor (b) and of the chain (interleaved rounds, medians), and the chain's function
calls per event counted by ``cProfile`` on one more stream (counted work: not affected by the
machine's load).
"""

from __future__ import annotations

__all__ = ("LEVELS", "ReadsResult", "measure_reads")

import cProfile
import gc
import pstats
import statistics
import time
from typing import Final

import aiohttp
import attrs

from bench import clients
from bench.server import ServerProcess, grouped_mode

LEVELS: Final = ((1, 700), (3, 1_200), (64, 6_000))
"""(events per write, microseconds between writes): about 1, 3 and 64 events per read."""


@attrs.frozen
class ReadsResult:
    """One level: what aiohttp handed over, and what each event cost."""

    events_per_write: int
    gap_us: int
    events_per_read: float
    floor_us: float
    """Transport floor (b): CPU µs per event (median)."""
    chain_us: float
    """The chain: CPU µs per event (median)."""
    chain_calls: float
    """The chain's function calls per event (``cProfile``)."""

    @property
    def ratio(self) -> float:
        return self.chain_us / self.floor_us


def _calls(profile: cProfile.Profile) -> int:
    stats = pstats.Stats(profile)
    return sum(entry[1] for entry in stats.stats.values())  # type: ignore[attr-defined]


async def measure_reads(
    server: ServerProcess,
    session: aiohttp.ClientSession,
    capture: str,
    chunks: int,
    *,
    runs: int,
    levels: tuple[tuple[int, int], ...] = LEVELS,
) -> list[ReadsResult]:
    """Each level of *levels*: floor (b) and chain, one warm-up then *runs* interleaved rounds."""
    out: list[ReadsResult] = []
    for events, gap in levels:
        url = server.url(capture, grouped_mode(events, gap))
        floor: list[float] = []
        chain: list[float] = []
        reads: list[int] = []
        for round_ in range(1 + runs):
            for name in ("floor", "chain") if round_ % 2 else ("chain", "floor"):
                gc.collect()
                c0 = time.process_time()
                if name == "floor":
                    work = await clients.floor_aiohttp(session, url)
                else:
                    await clients.rxcord_chain(session, url)
                spent = (time.process_time() - c0) / chunks * 1e6
                if round_ == 0:
                    continue
                (floor if name == "floor" else chain).append(spent)
                if name == "floor":
                    reads.append(work.reads)
        profile = cProfile.Profile()
        profile.enable()
        await clients.rxcord_chain(session, url)
        profile.disable()
        out.append(
            ReadsResult(
                events,
                gap,
                chunks / statistics.median(reads),
                statistics.median(floor),
                statistics.median(chain),
                _calls(profile) / chunks,
            )
        )
    return out
