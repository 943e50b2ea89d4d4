"""``python -m bench``: every figure of the benchmark suite, printed as a table and written as Markdown.

Full run (several minutes; figure 5 alone takes about two, because Discord's
limits are real time)::

    .venv/bin/python -m bench

Quick run (seconds; tiny captures, a fast emulator, no results file unless
``--out`` is given)::

    .venv/bin/python -m bench --quick

Captures are generated into ``--captures`` (default ``bench/.captures``, which
git ignores) on first use; the provider server runs in a child process on
127.0.0.1.
"""

from __future__ import annotations

__all__ = ("Config", "main", "run")

import argparse
import asyncio
import contextlib
import datetime
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import aiohttp
import attrs

from bench import cost, discord, linear, live, live_split, reads, sdk_bot, stages
from bench.make_captures import FAMILIES, CaptureSpec, capture_name, ensure_captures
from bench.peer import LiteLLMPeer
from bench.report import Report
from bench.server import ServerProcess, split_random
from rxcord.core.types import DeliveryMode
from rxcord.sinks.ratelimit import DEFAULT_GLOBAL_METER
from rxcord.testing.emulator import EmulatorConfig

HERE = Path(__file__).resolve().parent


@attrs.frozen(kw_only=True)
class Config:
    """What one run measures, and how hard."""

    quick: bool
    runs: int
    """Measured runs per contender (after one warm-up)."""
    headline: int
    """Chunks of figure 1's captures."""
    sizes: tuple[int, int, int]
    """Figure 2's small, middle and large streams."""
    memory_size: int
    latency: tuple[tuple[int, int, float, bool, bool], ...]
    """Figure 3 runs: (streams, chunks, pace in ms, compared with the target, GC tuned)."""
    """Figure 3's scenarios: (streams, chunks per stream, ms between events, checked against the target)."""
    lag_streams: int
    lag_rate: float
    lag_chunks: int
    one_channel: int
    channels: int
    per_channel: int
    emulator: EmulatorConfig
    stage_size: int
    first_message: tuple[int, int, float] = (20, 200, 20.0)
    """Time to the first message: (streams per provider family, chunks, ms between events)."""
    capacity_ladder: tuple[int, ...] = (50, 100, 150, 200, 300, 400, 600, 800, 1000)
    """Stream counts tried for the streams one process carries at ``lag_rate`` (p99 lag < 50 ms)."""
    capacity_chunks: int = 300
    linear_size: int = 1_000_000
    """Figure 6: characters of each adversarial line."""
    peer_streams: int = 50
    """Figure 4's live peer (and the chain beside it): streams at ``lag_rate``."""
    reads_size: int = 2_000
    """Figure 1's set events per read: chunks of its capture (one write per 0.7-6 ms)."""

    @classmethod
    def full(cls, runs: int) -> Config:
        return cls(
            quick=False,
            runs=runs,
            headline=10_000,
            sizes=(1_000, 10_000, 100_000),
            memory_size=100_000,
            latency=(
                (1, 2_000, 5.0, False, False),
                (200, 500, 20.0, True, False),
                (200, 500, 20.0, False, True),
                (200, 500, 50.0, False, False),
            ),
            lag_streams=500,
            lag_rate=50.0,
            lag_chunks=500,
            one_channel=100,
            channels=50,
            per_channel=10,
            emulator=EmulatorConfig(),
            stage_size=10_000,
        )

    @classmethod
    def fast(cls, runs: int) -> Config:
        return cls(
            quick=True,
            runs=runs,
            headline=200,
            sizes=(100, 200, 400),
            memory_size=400,
            latency=((1, 100, 5.0, False, False), (5, 100, 5.0, True, False), (5, 100, 5.0, False, True)),
            lag_streams=10,
            lag_rate=200.0,
            lag_chunks=100,
            one_channel=8,
            channels=4,
            per_channel=8,
            emulator=EmulatorConfig(channel_window=0.2, global_window=0.1),
            stage_size=200,
            first_message=(2, 60, 10.0),
            capacity_ladder=(2, 4),
            capacity_chunks=60,
            linear_size=16_000,
            reads_size=200,
            peer_streams=10,
        )

    def specs(self) -> list[CaptureSpec]:
        sizes = {self.headline, *self.sizes, self.memory_size, self.stage_size, self.reads_size}
        specs = [CaptureSpec(size, reasoning) for size in sorted(sizes) for reasoning in (False, True)]
        specs += [CaptureSpec(size, paragraphs=True) for size in self.sizes]
        live_sizes = {self.lag_chunks, self.capacity_chunks, *(run[1] for run in self.latency)}
        most = max(self.lag_streams, *self.capacity_ladder, *(run[0] for run in self.latency))
        variants = min(live.VARIANTS, most)
        specs += [
            CaptureSpec(size, variant=variant) for size in sorted(live_sizes) for variant in range(variants)
        ]
        streams, chunks, _ = self.first_message
        specs += [
            CaptureSpec(chunks, variant=variant, family=family)
            for family in FAMILIES
            for variant in range(min(live.VARIANTS, streams))
        ]
        return specs


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict[str, str]:
    """Date, versions and the machine."""
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "nproc": str(os.cpu_count()),
        "machine": f"{platform.system()} {platform.machine()}",
        "load average at start": " ".join(f"{value:.2f}" for value in os.getloadavg()),
        "rxcord": _version("rxcord"),
        "reactivex": _version("reactivex"),
        "aiohttp": _version("aiohttp"),
        "orjson": _version("orjson"),
        "openai": _version("openai"),
        "litellm": _version("litellm"),
    }


def _sdk_client(server: ServerProcess) -> Any | None:
    try:
        import openai
    except ImportError:
        return None
    return openai.AsyncOpenAI(api_key="bench-key", base_url=server.url("none", "event"), max_retries=0)


async def run(config: Config, captures: Path, report: Report, only: set[int]) -> None:
    """Measure every figure in *only* into *report*."""
    ensure_captures(captures, config.specs())
    with ServerProcess(captures) as server:
        async with aiohttp.ClientSession() as session:
            sdk = _sdk_client(server)
            with LiteLLMPeer() if 1 in only else contextlib.nullcontext() as peer:
                lite = peer if peer is not None and peer.available else None
                report.note_sdk(sdk is not None, lite is not None)
                if 1 in only or 2 in only:
                    await _figures_1_2(config, server, session, sdk, report, only, lite)
            if 1 in only:
                await _stages(config, captures, report)
        if 3 in only or 4 in only:
            async with live.live_session() as session:
                if 3 in only:
                    for streams, chunks, pace_ms, checked, tuned in config.latency:
                        note = ", GC tuned" if tuned else ""
                        report.progress(
                            f"figure 3: {streams} live stream(s), one event per {pace_ms:g} ms{note}"
                        )
                        result = await live.measure_latency(
                            server, session, chunks, streams=streams, pace_ms=pace_ms, tuned=tuned
                        )
                        report.latency(result, checked=checked)
                if 3 in only:
                    streams, chunks, pace_ms = config.first_message
                    # Every family live and in edit mode (OpenAI also with the guards of its own
                    # host); aggregated on the first family's wire format.
                    runs = [
                        (family, mode)
                        for mode in (DeliveryMode.LIVE, DeliveryMode.EDIT)
                        for family in (*FAMILIES, live.OPENAI_OWN_HOST)
                    ]
                    runs.append((FAMILIES[0], DeliveryMode.AGGREGATED))
                    for family, mode in runs:
                        report.progress(
                            f"figure 3: time to the first message, {streams} {family} streams, {mode.value}"
                        )
                        report.first_message(
                            await live.measure_first_message(
                                server, session, family, chunks, streams=streams, pace_ms=pace_ms, mode=mode
                            )
                        )
                if 4 in only:
                    report.progress(f"figure 4: {config.lag_streams} streams at {config.lag_rate:g} chunks/s")
                    # The pool's connections opened first: the chain, the first to run at this
                    # count, would count their objects as its streams' (the floor after it not).
                    await live.warm_pool(session, server, config.lag_streams)
                    chain = await live.measure_lag(
                        server,
                        session,
                        config.lag_chunks,
                        streams=config.lag_streams,
                        rate=config.lag_rate,
                    )
                    report.progress("figure 4: the chain read by the socket reader at the same load")
                    socket_chain = await live.measure_lag(
                        server,
                        session,
                        config.lag_chunks,
                        streams=config.lag_streams,
                        rate=config.lag_rate,
                        reader="socket",
                    )
                    report.reader(chain, socket_chain)
                    peer_client = sdk_bot.live_sdk_client(server)
                    if peer_client is not None:
                        await _live_peer(config, server, session, peer_client, report, chain)
                    report.progress("figure 4: the transport floor at the same load")
                    floor = await live.measure_lag_floor(
                        server,
                        session,
                        config.lag_chunks,
                        streams=config.lag_streams,
                        rate=config.lag_rate,
                    )
                    report.progress("figure 4: a socket-driven reader (asyncio protocol) at the same load")
                    socket_floor = await live.measure_lag_floor(
                        server,
                        session,
                        config.lag_chunks,
                        streams=config.lag_streams,
                        rate=config.lag_rate,
                        socket_driven=True,
                    )
                    report.progress("figure 4: where the live CPU goes (transport alone, stages from memory)")
                    report.split(
                        await live_split.measure_live_split(
                            server,
                            session,
                            config.lag_chunks,
                            streams=config.lag_streams,
                            rate=config.lag_rate,
                        )
                    )
                    report.lag(chain, floor, socket_floor)
                    capacities = []
                    for is_floor, tuned in ((False, False), (True, False), (False, True)):
                        who = "the transport floor" if is_floor else "the chain"
                        report.progress(
                            f"figure 4: streams carried at {config.lag_rate:g}/s, {who}"
                            + (", GC tuned" if tuned else "")
                        )
                        capacities.append(
                            await live.measure_capacity(
                                server,
                                session,
                                config.capacity_chunks,
                                ladder=config.capacity_ladder,
                                rate=config.lag_rate,
                                floor=is_floor,
                                tuned=tuned,
                            )
                        )
                    report.capacity(capacities[0], capacities[1])
                    report.capacity(capacities[2], capacities[1])
    if 5 in only:
        report.progress(f"figure 5: {config.one_channel} messages to one channel")
        report.delivery(
            await discord.measure_delivery(
                "one channel", config.emulator, channels=1, per_channel=config.one_channel
            )
        )
        report.progress(f"figure 5: {config.per_channel} messages to each of {config.channels} channels")
        report.delivery(
            await discord.measure_delivery(
                f"many channels, default meter ({DEFAULT_GLOBAL_METER}/s)",
                config.emulator,
                channels=config.channels,
                per_channel=config.per_channel,
                global_limit=DEFAULT_GLOBAL_METER * config.emulator.global_limit // 50,
            )
        )
        no_margin = await discord.measure_delivery(
            "many channels, meter at Discord's exact 50/s (no margin)",
            config.emulator,
            channels=config.channels,
            per_channel=config.per_channel,
        )
        report.delivery(no_margin, headline=False)
    if 6 in only:
        report.progress(f"figure 6: one {config.linear_size:,}-character line of each adversarial shape")
        # Pure CPU on one thread: two runs bound a full run's time (a 1 MB line per shape, twice).
        report.linear(linear.measure_linear(config.linear_size, runs=min(config.runs, 2)))


async def _live_peer(
    config: Config,
    server: ServerProcess,
    session: aiohttp.ClientSession,
    client: Any,
    report: Report,
    chain: live.LagResult,
) -> None:
    """Figure 4's user alternative (the OpenAI SDK into a hand-written bot) beside the chain, at one load.

    At ``peer_streams``: the SDK costs several times the chain per chunk, so figure 4's full
    count would need several cores; the chain runs again at that count when it differs.
    """
    streams = config.peer_streams
    if streams != config.lag_streams:
        report.progress(f"figure 4: the chain at {streams} streams, beside the live peer")
        chain = await live.measure_lag(
            server, session, config.lag_chunks, streams=streams, rate=config.lag_rate
        )
    report.progress(f"figure 4: the OpenAI SDK into a hand-written bot, {streams} streams")
    peer = await sdk_bot.measure_sdk_bot(
        server, session, client, config.lag_chunks, streams=streams, rate=config.lag_rate
    )
    await client.close()
    report.live_peer(peer, chain)


async def _figures_1_2(
    config: Config,
    server: ServerProcess,
    session: aiohttp.ClientSession,
    sdk: Any | None,
    report: Report,
    only: set[int],
    lite: Any | None = None,
) -> None:
    headline = config.headline
    if 1 in only:
        for reasoning in (False, True):
            for mode in ("random", "event"):
                name = capture_name(headline, reasoning=reasoning)
                report.progress(f"figure 1: {name}, {mode} writes")
                main = not reasoning and mode == "random"
                result = await cost.measure_cost(
                    server, session, sdk, name, mode, headline, runs=config.runs, lite=lite if main else None
                )
                report.cost(result, headline=main)
    if 1 in only:
        name = capture_name(config.reads_size)
        report.progress(f"figure 1: {name}, about 1, 3 and 64 events per read")
        report.reads(
            await reads.measure_reads(server, session, name, config.reads_size, runs=config.runs), name
        )
    if 2 in only:
        report.progress(f"figure 2: {', '.join(capture_name(size) for size in config.sizes)}, interleaved")
        by_size = await cost.measure_sizes(
            server, session, {size: capture_name(size) for size in config.sizes}, runs=config.runs
        )
        report.flat(by_size)
        names = {size: capture_name(size, paragraphs=True) for size in config.sizes}
        report.progress(f"figure 2: {', '.join(names.values())} (paragraph-heavy), interleaved")
        report.flat(
            await cost.measure_sizes(server, session, names, runs=config.runs), kind="paragraph-heavy"
        )
        for size in sorted({config.sizes[0], config.memory_size}):
            report.progress(f"figure 2: peak memory, {capture_name(size)}")
            report.memory(await cost.measure_memory(server, session, capture_name(size)))


async def _stages(config: Config, captures: Path, report: Report) -> None:
    name = capture_name(config.stage_size)
    report.progress(f"where the time goes: {name}")
    pieces = split_random((captures / name).read_bytes())
    report.stages(await stages.time_stages(pieces, runs=max(3, config.runs)))


async def profile(config: Config, captures: Path) -> int:
    """Profile three streams of the headline capture through the whole chain (pyinstrument)."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("pyinstrument is not installed (pip install pyinstrument)", file=sys.stderr)
        return 2
    from bench.clients import rxcord_chain

    ensure_captures(captures, [CaptureSpec(config.headline)])
    out = captures / "profile.txt"
    with ServerProcess(captures) as server:
        async with aiohttp.ClientSession() as session:
            url = server.url(capture_name(config.headline), "random")
            await rxcord_chain(session, url)
            profiler = Profiler(interval=0.0002, async_mode="disabled")
            profiler.start()
            for _ in range(3):
                await rxcord_chain(session, url)
            profiler.stop()
    text = profiler.output_text(unicode=False, color=False, show_all=False)
    out.write_text(text, encoding="utf-8")
    print(text)
    print(f"wrote {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description="rxcord's benchmark suite")
    parser.add_argument("--quick", action="store_true", help="tiny captures and a fast emulator (seconds)")
    parser.add_argument("--runs", type=int, default=None, help="measured runs per contender (default 7; 2)")
    parser.add_argument("--captures", default=str(HERE / ".captures"), help="where captures are generated")
    parser.add_argument("--out", default=None, help="results file (default bench/RESULTS.md; quick: none)")
    parser.add_argument("--only", default="1,2,3,4,5,6", help="figures to run, e.g. 1,2")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="profile the chain on the 10k capture with pyinstrument (to <captures>/profile.txt) and stop",
    )
    args = parser.parse_args(argv)
    runs = args.runs or (2 if args.quick else 7)
    config = Config.fast(runs) if args.quick else Config.full(runs)
    only = {int(part) for part in args.only.split(",") if part.strip()}
    out = Path(args.out) if args.out else (None if args.quick else HERE / "RESULTS.md")
    if args.profile:
        return asyncio.run(profile(config, Path(args.captures)))
    report = Report(environment(), quick=args.quick, runs=runs)
    started = time.perf_counter()
    asyncio.run(run(config, Path(args.captures), report, only))
    report.elapsed = time.perf_counter() - started
    print(report.table())
    if out is not None:
        out.write_text(report.markdown(), encoding="utf-8")
        print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
