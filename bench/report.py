"""Collects the figures of one run; prints the table and writes ``RESULTS.md``."""

from __future__ import annotations

__all__ = ("Report", "Row")

import math
import sys
from pathlib import Path

import attrs

from bench import cost as costs
from bench.discord import DeliveryResult
from bench.live import LagResult, LatencyResult
from bench.stages import LOGIC_03_07, StageTimes
from bench.stats import percentile

NOTES = Path(__file__).resolve().parent / "notes.md"
"""Hand-written analysis appended to ``RESULTS.md`` (profile, optimizations, misses)."""


@attrs.frozen
class Row:
    """One line of the summary table."""

    figure: str
    measure: str
    value: str
    target: str = ""
    ok: bool | None = None

    @property
    def verdict(self) -> str:
        return "" if self.ok is None else ("yes" if self.ok else "NO")


def _us(value: float) -> str:
    return f"{value:.2f} µs"


def _ms(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.2f} ms"


def _mb(value: int) -> str:
    return f"{value / 1e6:.1f} MB"


@attrs.define
class Report:
    """Everything measured in one run."""

    env: dict[str, str]
    quick: bool
    runs: int
    rows: list[Row] = attrs.field(factory=list)
    sections: list[str] = attrs.field(factory=list)
    elapsed: float = 0.0
    sdk: bool = False
    chain_e2e: float | None = None
    """Figure 1's headline chain CPU per chunk, for the time breakdown."""
    transport_floor: float | None = None

    def progress(self, text: str) -> None:
        """Say what runs now (stderr, so the table stays clean on stdout)."""
        print(f"... {text}", file=sys.stderr, flush=True)

    def note_sdk(self, present: bool) -> None:
        self.sdk = present

    # -- figures -------------------------------------------------------------------------------------------

    def cost(self, result: costs.CostResult, *, headline: bool) -> None:
        """Figure 1 for one capture and write mode."""
        runs = result.runs
        lines = [
            f"**{result.capture}**, {result.mode} writes ({result.chunks:,} chunks, "
            f"{result.content_chars:,} characters of answer): CPU µs per chunk, median (min-max); wall µs",
            "",
            "| contender | CPU µs/chunk | wall µs/chunk | chain is |",
            "| --- | ---: | ---: | ---: |",
        ]
        chain = runs[costs.CHAIN].cpu.median
        for name, data in runs.items():
            relation = ""
            if name != costs.CHAIN:
                factor = data.cpu.median / chain
                relation = f"{1 / factor:.1f}x its cost" if factor < 1 else f"{factor:.1f}x faster"
            lines.append(f"| {name} | {data.cpu.show()} | {data.wall.median:.2f} | {relation} |")
        self.sections.append("\n".join(lines))
        if not headline:
            return
        self.chain_e2e = chain
        self.transport_floor = runs[costs.TRANSPORT_FLOOR].cpu.median
        label = f"1 ({result.capture}, {result.mode})"
        self.rows += [
            Row(label, "chain CPU per chunk", runs[costs.CHAIN].cpu.show(unit=" µs")),
            Row(label, "floor (a) CPU per chunk", runs[costs.FLOOR].cpu.show(unit=" µs")),
            Row(
                label,
                "chain / floor (a)",
                f"{result.ratio(costs.CHAIN, costs.FLOOR):.1f}x",
                "<= 6x",
                result.ratio(costs.CHAIN, costs.FLOOR) <= 6,
            ),
            Row(
                label,
                "chain / transport floor (b)",
                f"{result.ratio(costs.CHAIN, costs.TRANSPORT_FLOOR):.1f}x",
            ),
        ]
        if costs.SDK in runs:
            speedup = result.ratio(costs.SDK, costs.CHAIN)
            self.rows.append(
                Row(label, "OpenAI SDK / chain", f"{speedup:.1f}x faster", ">= 5x", speedup >= 5)
            )
        else:
            self.rows.append(Row(label, "OpenAI SDK / chain", "openai not installed", ">= 5x"))

    def flat(self, by_size: dict[int, costs.CostResult]) -> None:
        """Figure 2: per-chunk cost across sizes."""
        sizes = sorted(by_size)
        small, large = by_size[sizes[0]], by_size[sizes[-1]]
        lines = [
            "Per-chunk CPU of the chain by stream length (plain captures, random writes):",
            "",
            "| chunks | chain µs/chunk | floor (a) µs/chunk |",
            "| ---: | ---: | ---: |",
        ]
        for size in sizes:
            runs = by_size[size].runs
            lines.append(f"| {size:,} | {runs[costs.CHAIN].cpu.show()} | {runs[costs.FLOOR].cpu.show()} |")
        self.sections.append("\n".join(lines))
        ratio = large.runs[costs.CHAIN].cpu.median / small.runs[costs.CHAIN].cpu.median
        self.rows.append(
            Row(
                "2",
                f"chain per chunk at {sizes[-1]:,} / at {sizes[0]:,}",
                f"{ratio:.2f}x ({_us(large.runs[costs.CHAIN].cpu.median)} / "
                f"{_us(small.runs[costs.CHAIN].cpu.median)})",
                "<= 1.2x",
                ratio <= 1.2,
            )
        )

    def memory(self, result: costs.MemoryResult) -> None:
        """Figure 2: peak memory."""
        peaks = result.peaks
        floor_name = "floor keeping the answer (b')"
        ratio = peaks[costs.CHAIN] / peaks[floor_name]
        self.rows.append(
            Row(
                "2",
                f"peak memory, {result.capture}: chain / floor (b')",
                f"{ratio:.2f}x ({_mb(peaks[costs.CHAIN])} / {_mb(peaks[floor_name])})",
                "<= 1.5x",
                ratio <= 1.5,
            )
        )
        lines = [
            f"Peak memory of one stream of {result.capture} "
            "(tracemalloc: the most bytes allocated at once during the stream):",
            "",
            "| contender | peak |",
            "| --- | ---: |",
        ]
        lines += [f"| {name} | {_mb(peak)} |" for name, peak in peaks.items()]
        self.sections.append("\n".join(lines))

    def latency(self, result: LatencyResult, *, checked: bool) -> None:
        """Figure 3 for one scenario (*checked*: compared with the target)."""
        rate = 1000 / result.pace_ms
        tuned = ", GC tuned" if result.tuned else ""
        label = f"3 ({result.streams} stream{'s' if result.streams > 1 else ''} x {rate:g}/s{tuned})"
        big = checked
        self.rows += [
            Row(
                label,
                "latency from source emission p50 / p99",
                f"{_ms(result.p('source', 50))} / {_ms(result.p('source', 99))}",
                "p99 < 2 ms" if big else "",
                result.p("source", 99) < 2 if big else None,
            ),
            Row(
                label,
                "latency from server write p50 / p99",
                f"{_ms(result.p('write', 50))} / {_ms(result.p('write', 99))}",
                "p99 < 2 ms" if big else "",
                result.p("write", 99) < 2 if big else None,
            ),
        ]
        self.sections.append(
            f"Live latency, {result.streams} stream(s) of {result.chunks:,} chunks at one event per "
            f"{result.pace_ms:g} ms{tuned} (client CPU {result.cpu_share * 100:.0f}% of one core; "
            f"{_collections(result.gc_full_ms)}): "
            f"{len(result.from_source_ms):,} segments measured, "
            f"{result.excluded} released by the idle timer or the stream's end (not counted), "
            f"{result.unmatched} stream(s) unpaired. "
            f"From source emission: p50 {_ms(result.p('source', 50))}, "
            f"p90 {_ms(result.p('source', 90))}, p99 {_ms(result.p('source', 99))}, max "
            f"{_ms(result.p('source', 100))}. From the server's write: p50 {_ms(result.p('write', 50))}, "
            f"p90 {_ms(result.p('write', 90))}, p99 {_ms(result.p('write', 99))}, max "
            f"{_ms(result.p('write', 100))}."
        )

    def lag(self, result: LagResult, floor: LagResult | None = None) -> None:
        """Figure 4 (and the transport floor under the same load)."""
        p50, p99, top = (percentile(result.lag_ms, q) for q in (50, 99, 100))
        label = f"4 ({result.streams} streams x {result.rate:g}/s)"
        self.rows += [
            Row(
                label, "lag p50 / p99 / max", f"{_ms(p50)} / {_ms(p99)} / {_ms(top)}", "p99 < 50 ms", p99 < 50
            ),
            Row(
                label,
                "streams completed",
                f"{result.completed} / {result.streams}",
                "all",
                result.completed == result.streams,
            ),
            Row(
                label,
                "CPU per stream",
                f"{result.cpu_per_stream * 100:.3f}% of a core ({_us(result.cpu_per_chunk_us)} per chunk)",
            ),
        ]
        self.sections.append(
            f"{result.streams} live streams of {result.chunks:,} chunks at {result.rate:g} chunks/s each "
            f"({result.streams * result.rate:,.0f} chunks/s in all) in one process: "
            f"{len(result.lag_ms):,} chunks measured, lag p50 {_ms(p50)}, p99 {_ms(p99)}, max {_ms(top)}; "
            f"client CPU {result.cpu_seconds:.1f} s over {result.wall_seconds:.1f} s "
            f"({result.cpu_seconds / result.wall_seconds * 100:.0f}% of one core); "
            f"{_collections(result.gc_full_ms)}."
        )
        if floor is not None:
            f50, f99 = (percentile(floor.lag_ms, q) for q in (50, 99))
            self.rows.append(
                Row(
                    label,
                    "transport floor (b) at the same load: CPU, lag p99",
                    f"{floor.cpu_seconds / floor.wall_seconds * 100:.0f}% of a core "
                    f"({_us(floor.cpu_per_chunk_us)} per chunk), {_ms(f99)}",
                )
            )
            self.sections.append(
                f"The transport floor (aiohttp + SSE split + orjson, nothing kept) under the same load: "
                f"client CPU {floor.cpu_seconds:.1f} s over {floor.wall_seconds:.1f} s "
                f"({floor.cpu_seconds / floor.wall_seconds * 100:.0f}% of one core, "
                f"{_us(floor.cpu_per_chunk_us)} per chunk), lag p50 {_ms(f50)}, p99 {_ms(f99)}."
            )

    def delivery(self, result: DeliveryResult, *, headline: bool = True) -> None:
        """Figure 5 for one scenario."""
        label = f"5 ({result.channels} x {result.per_channel})"
        if headline:
            self.rows += [
                Row(
                    label,
                    "time / rate-limit bound",
                    f"{result.ratio:.3f}x ({result.seconds:.2f} s / {result.bound:.2f} s)",
                    "<= 1.1x",
                    result.ratio <= 1.1,
                ),
                Row(label, "429 responses", str(result.rate_limited), "0", result.rate_limited == 0),
                Row(
                    label,
                    "delivered once, in order",
                    "yes" if result.delivered_once_in_order else "no",
                    "yes",
                    result.delivered_once_in_order,
                ),
            ]
        self.sections.append(
            f"{result.name}: {result.channels} channel(s) x {result.per_channel} messages in "
            f"{result.seconds:.2f} s against a bound of {result.bound:.2f} s ({result.ratio:.3f}x), "
            f"{result.rate_limited} 429 response(s) ({result.global_rate_limited} global), "
            f"duplicates {result.duplicates}, "
            f"missing {result.missing}, "
            f"in order: {'yes' if result.delivered_once_in_order else 'no'}."
        )

    def stages(self, times: StageTimes) -> None:
        """Where the time goes."""
        lines = [
            f"Each stage's logic alone on the same capture ({times.chunks:,} chunks; best of "
            f"{self.runs} runs, GC paused), then the chain fed from memory:",
            "",
            "| part | µs per chunk |",
            "| --- | ---: |",
        ]
        lines += [f"| {name} | {value:.2f} |" for name, value in times.stages.items()]
        lines += [
            f"| **stages 03-07, logic only** | {times.logic_03_07:.2f} |",
            f"| **chain fed from memory (03-07 with Rx plumbing)** | {times.chain_in_memory:.2f} |",
            f"| Rx plumbing (the difference) | {times.plumbing:.2f} |",
        ]
        if self.chain_e2e is not None:
            lines.append(
                f"| transport: aiohttp, SSE, JSON, batches (end-to-end {self.chain_e2e:.2f} minus in-memory) "
                f"| {max(0.0, self.chain_e2e - times.chain_in_memory):.2f} |"
            )
        self.sections.append("\n".join(lines))
        _ = LOGIC_03_07

    # -- output --------------------------------------------------------------------------------------------

    def table(self) -> str:
        """The summary as a plain-text table."""
        headers = ("figure", "measure", "value", "target", "met")
        body = [(row.figure, row.measure, row.value, row.target, row.verdict) for row in self.rows]
        widths = [
            max(len(h), *(len(line[i]) for line in body)) if body else len(h) for i, h in enumerate(headers)
        ]
        out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)) for line in body]
        return "\n".join(out)

    def markdown(self) -> str:
        """``RESULTS.md``."""
        env = "\n".join(f"- {key}: {value}" for key, value in self.env.items())
        rows = "\n".join(
            f"| {row.figure} | {row.measure} | {row.value} | {row.target} | {row.verdict} |"
            for row in self.rows
        )
        details = "\n\n".join(self.sections)
        notes = NOTES.read_text(encoding="utf-8") if NOTES.exists() else ""
        mode = "quick" if self.quick else "full"
        return (
            "# rxcord benchmark results\n\n"
            f"Written by `python -m bench` ({mode} run, {self.runs} measured runs per contender after one "
            f"warm-up, {self.elapsed:.0f} s). Values are medians with the min-max spread in parentheses; "
            "every ratio compares contenders measured in the same run, interleaved.\n\n"
            f"{env}\n\n"
            "## Figures\n\n"
            "| figure | measure | value | target | met |\n| --- | --- | --- | --- | --- |\n"
            f"{rows}\n\n"
            "## Details\n\n"
            f"{details}\n\n"
            f"{notes}"
        )


def _collections(pauses: list[float]) -> str:
    """How many full garbage collections stopped the loop, and the longest."""
    if not pauses:
        return "no full garbage collection"
    return f"{len(pauses)} full garbage collection(s), the longest {max(pauses):.0f} ms"
