"""Collects the figures of one run; prints the table and writes ``RESULTS.md``."""

from __future__ import annotations

__all__ = ("Report", "Row")

import math
import sys
from collections.abc import Callable
from pathlib import Path

import attrs

from bench import cost as costs
from bench import stages as stages_mod
from bench.discord import DeliveryResult
from bench.linear import PROSE, LinearResult
from bench.live import Capacity, FirstMessageResult, LagResult, LatencyResult
from bench.live_split import LiveSplit
from bench.reads import ReadsResult
from bench.stages import LOGIC_03_07, StageTimes
from bench.stats import percentile
from rxcord.core.types import DeliveryMode

FIRST_EDIT_MS = 300.0
"""Target: edit mode's first Discord message at most this long after the first text byte (p50)."""

LIVE_CPU_RATIO = 1.5
"""Figure 4's target: live CPU per chunk, chain / the floor's reader at the same load."""

OBJECTS_PER_STREAM = 150
"""Figure 4's target: tracked objects per live stream (what each full collection walks)."""

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
    why: Callable[[], str] | None = attrs.field(default=None, eq=False, repr=False)
    """The measured reason, when the target is missed (evaluated at the end of the run, when every
    figure it may cite has been measured)."""

    @property
    def verdict(self) -> str:
        return "" if self.ok is None else ("yes" if self.ok else "NO")

    def reason(self) -> str:
        """Why the target was missed (empty when met, or when no reason was recorded)."""
        if self.ok is not False or self.why is None:
            return ""
        try:
            return self.why()
        except (KeyError, TypeError, ZeroDivisionError, AttributeError) as exc:  # a figure not measured
            return f"(no reason: {type(exc).__name__} {exc})"


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
    lite: bool = False
    chain_e2e: float | None = None
    """Figure 1's headline chain CPU per chunk, for the time breakdown."""
    transport_floor: float | None = None
    stage_times: StageTimes | None = None
    live_split: LiveSplit | None = None
    """Figure 4's live CPU split (``bench.live_split``), for the live CPU target's reason."""

    def progress(self, text: str) -> None:
        """Say what runs now (stderr, so the table stays clean on stdout)."""
        print(f"... {text}", file=sys.stderr, flush=True)

    def note_sdk(self, present: bool, lite: bool = False) -> None:
        self.sdk = present
        self.lite = lite

    # -- figures -------------------------------------------------------------------------------------------

    def reads(self, results: list[ReadsResult], capture: str) -> None:
        """Figure 1 with the events per read set by the server: chain / transport floor at each."""
        for level in results:
            self.rows.append(
                Row(
                    f"1 ({capture}, ~{level.events_per_write} events per read)",
                    "chain / transport floor (b), calls per event",
                    f"{level.ratio:.2f}x ({level.chain_us:.2f} / {level.floor_us:.2f} µs; "
                    f"{level.events_per_read:.1f} per read; {level.chain_calls:.0f} calls)",
                    "printed",
                )
            )
        lines = [
            f"**{capture}, events per read set** (``bench.reads``: N whole events per write, one write "
            "per gap, so aiohttp hands over one write per read): CPU µs per event, medians",
            "",
            "| events per write | gap µs | events per read (measured) | floor (b) | chain | chain / (b) "
            "| chain calls per event |",
            "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        lines += [
            f"| {r.events_per_write} | {r.gap_us:,} | {r.events_per_read:.1f} | {r.floor_us:.2f} | "
            f"{r.chain_us:.2f} | {r.ratio:.2f}x | {r.chain_calls:.0f} |"
            for r in results
        ]
        self.sections.append("\n".join(lines))

    def cost(self, result: costs.CostResult, *, headline: bool) -> None:
        """Figure 1 for one capture and write mode."""
        runs = result.runs
        reads = ""
        if result.floor_reads > 0:
            reads = (
                f"; aiohttp handed the transport floor {result.floor_reads:,.0f} pieces per stream "
                f"({result.chunks / result.floor_reads:.1f} events per read)"
            )
        lines = [
            f"**{result.capture}**, {result.mode} writes ({result.chunks:,} chunks, "
            f"{result.content_chars:,} characters of answer{reads}): CPU µs per chunk, median (min-max); "
            "wall µs",
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
        to_b = result.ratio(costs.CHAIN, costs.TRANSPORT_FLOOR)
        self.rows += [
            Row(label, "chain CPU per chunk", runs[costs.CHAIN].cpu.show(unit=" µs")),
            Row(label, "transport floor (b) CPU per chunk", runs[costs.TRANSPORT_FLOOR].cpu.show(unit=" µs")),
            Row(
                label,
                "chain / transport floor (b)",
                f"{to_b:.2f}x ({result.chunks / result.floor_reads:.1f} events per read)"
                if result.floor_reads > 0
                else f"{to_b:.2f}x",
                "<= 1.5x",
                to_b <= 1.5,
                why=lambda: self._why_floor(result),
            ),
            Row(label, "chain / floor (a)", f"{result.ratio(costs.CHAIN, costs.FLOOR):.1f}x"),
        ]
        if costs.SDK in runs:
            speedup = result.ratio(costs.SDK, costs.CHAIN)
            self.rows.append(
                Row(
                    label,
                    "OpenAI SDK / chain",
                    f"{speedup:.1f}x faster",
                    ">= 15x",
                    speedup >= 15,
                    why=lambda: self._why_sdk(result),
                )
            )
        else:
            self.rows.append(Row(label, "OpenAI SDK / chain", "openai not installed", ">= 15x"))
        if costs.LITELLM in runs:
            lite = result.ratio(costs.LITELLM, costs.CHAIN)
            self.rows.append(Row(label, "LiteLLM / chain", f"{lite:.1f}x faster", "printed"))
        else:
            self.rows.append(Row(label, "LiteLLM / chain", "litellm not installed", "printed"))

    def _why_floor(self, result: costs.CostResult) -> str:
        chain = result.runs[costs.CHAIN].cpu.median
        floor = result.runs[costs.TRANSPORT_FLOOR].cpu.median
        budget = 0.5 * floor
        text = (
            f"the chain costs {chain:.2f} µs per chunk against the transport floor's {floor:.2f}; 1.5x "
            f"leaves {budget:.2f} µs per chunk beyond aiohttp + split + orjson for the SSE parser's "
            "generality, the RawStreamChunk and all seven stages."
        )
        times = self.stage_times
        if times is not None:
            extra = (
                times.stages["02 SSE parser"].median + times.stages["02 JSON decode + RawStreamChunk"].median
            )
            text += (
                f" Measured alone (stage table): stages 03-07's logic takes {times.logic_03_07:.2f} µs per "
                f"chunk, the SSE parser and the chunk decoding {extra:.2f} (the floor's split and orjson are "
                f"part of that), and the chain fed from memory in batches {times.chain_batched:.2f}: the "
                f"stages' logic alone is {times.logic_03_07 / budget:.1f}x the budget."
            )
        return text

    def _why_sdk(self, result: costs.CostResult) -> str:
        sdk = result.runs[costs.SDK].cpu.median
        chain = result.runs[costs.CHAIN].cpu.median
        floor = result.runs[costs.TRANSPORT_FLOOR].cpu.median
        return (
            f"15x the SDK's {sdk:.2f} µs per chunk is {sdk / 15:.2f} µs; the chain costs {chain:.2f}, and "
            f"reading the same bytes with aiohttp and orjson alone (the transport floor) costs {floor:.2f}."
        )

    def flat(self, by_size: dict[int, costs.CostResult], kind: str = "plain") -> None:
        """Figure 2: per-chunk cost across sizes (*kind*: the captures' text, plain or paragraph-heavy)."""
        sizes = sorted(by_size)
        small, large = by_size[sizes[0]], by_size[sizes[-1]]
        note = "" if kind == "plain" else f" ({kind})"
        lines = [
            f"Per-chunk CPU of the chain by stream length ({kind} captures, random writes):",
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
                f"chain per chunk at {sizes[-1]:,} / at {sizes[0]:,}{note}",
                f"{ratio:.2f}x ({_us(large.runs[costs.CHAIN].cpu.median)} / "
                f"{_us(small.runs[costs.CHAIN].cpu.median)})",
                "<= 1.2x",
                ratio <= 1.2,
                why=lambda: (
                    f"the chain's per-chunk CPU at {sizes[-1]:,} chunks is {ratio:.2f}x the one at "
                    f"{sizes[0]:,}, while the floor (a) on the same captures moves "
                    f"{large.runs[costs.FLOOR].cpu.median / small.runs[costs.FLOOR].cpu.median:.2f}x; "
                    "the end-of-stream scans (the flusher's and split_message's of the whole answer) "
                    "grow with the answer"
                ),
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
                why=lambda: (
                    f"the chain peaked at {_mb(peaks[costs.CHAIN])} against "
                    f"{_mb(peaks[floor_name])} for the floor keeping the answer "
                    f"(the decode-only floor: {_mb(peaks[costs.TRANSPORT_FLOOR])})"
                ),
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
                why=lambda: _why_latency(result),
            ),
            Row(
                label,
                "latency from server write p50 / p99",
                f"{_ms(result.p('write', 50))} / {_ms(result.p('write', 99))}",
                "p99 < 2 ms" if big else "",
                result.p("write", 99) < 2 if big else None,
                why=lambda: _why_latency(result),
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

    def reader(self, aiohttp_chain: LagResult, socket_chain: LagResult) -> None:
        """Figure 4's chain read by aiohttp (the default) and by the socket reader, same load."""
        label = f"4 ({socket_chain.streams} streams x {socket_chain.rate:g}/s)"
        a99, s99 = percentile(aiohttp_chain.lag_ms, 99), percentile(socket_chain.lag_ms, 99)
        ratio = socket_chain.cpu_per_chunk_us / aiohttp_chain.cpu_per_chunk_us
        self.rows.append(
            Row(
                label,
                "chain, socket reader / aiohttp: CPU per chunk",
                f"{ratio:.2f}x ({_us(socket_chain.cpu_per_chunk_us)} vs "
                f"{_us(aiohttp_chain.cpu_per_chunk_us)}; "
                f"p99 {_ms(s99)} vs {_ms(a99)}; tracked objects per stream "
                f"{socket_chain.tracked_per_stream:.0f}"
                f" vs {aiohttp_chain.tracked_per_stream:.0f}; "
                f"completed {socket_chain.completed} / {socket_chain.streams})",
            )
        )

    def lag(
        self, result: LagResult, floor: LagResult | None = None, socket_floor: LagResult | None = None
    ) -> None:
        """Figure 4 (and the transport floor under the same load)."""
        p50, p99, top = (percentile(result.lag_ms, q) for q in (50, 99, 100))
        label = f"4 ({result.streams} streams x {result.rate:g}/s)"
        self.rows += [
            Row(
                label,
                "lag p50 / p99 / max",
                f"{_ms(p50)} / {_ms(p99)} / {_ms(top)}",
                "p99 < 50 ms",
                p99 < 50,
                why=lambda: _why_lag(result, floor),
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
            live_ratio = result.cpu_per_chunk_us / floor.cpu_per_chunk_us
            self.rows += [
                Row(
                    label,
                    "transport floor (b) at the same load: CPU, lag p99",
                    f"{floor.cpu_seconds / floor.wall_seconds * 100:.0f}% of a core "
                    f"({_us(floor.cpu_per_chunk_us)} per chunk), {_ms(f99)}",
                ),
                Row(
                    label,
                    "live CPU per chunk: chain / floor's reader",
                    f"{live_ratio:.2f}x ({_us(result.cpu_per_chunk_us)} / {_us(floor.cpu_per_chunk_us)})",
                    f"<= {LIVE_CPU_RATIO:g}x",
                    live_ratio <= LIVE_CPU_RATIO,
                    why=lambda: self._why_live_cpu(result, floor),
                ),
                Row(
                    label,
                    "tracked objects per live stream: chain / floor's reader",
                    f"{result.tracked_per_stream:,.0f} / {floor.tracked_per_stream:,.0f}",
                    f"<= {OBJECTS_PER_STREAM}",
                    result.tracked_per_stream <= OBJECTS_PER_STREAM,
                    why=lambda: self._why_objects(result, floor),
                ),
            ]
            if socket_floor is not None:
                s99 = percentile(socket_floor.lag_ms, 99)
                saved = floor.cpu_per_chunk_us - socket_floor.cpu_per_chunk_us
                self.rows.append(
                    Row(
                        label,
                        "socket-driven reader (asyncio protocol) at the same load: CPU, lag p99",
                        f"{socket_floor.cpu_seconds / socket_floor.wall_seconds * 100:.0f}% of a core "
                        f"({_us(socket_floor.cpu_per_chunk_us)} per chunk, {saved:.2f} µs less than "
                        f"aiohttp's reader), {_ms(s99)}",
                    )
                )
                self.sections.append(
                    "A reader driven by the socket (`bench/protocol.py`: an asyncio protocol parsing the "
                    "response, the chunked framing and the events in `data_received`, no task wake-up "
                    "per read; plain HTTP/1.1 on 127.0.0.1 only) under the same load: client CPU "
                    f"{socket_floor.cpu_seconds:.1f} s over {socket_floor.wall_seconds:.1f} s "
                    f"({_us(socket_floor.cpu_per_chunk_us)} per chunk against aiohttp's "
                    f"{_us(floor.cpu_per_chunk_us)}: {saved:.2f} µs, "
                    f"{saved / floor.cpu_per_chunk_us * 100:.0f}% of the floor), lag p99 {_ms(s99)}."
                )
            self.sections.append(
                f"The transport floor (aiohttp + SSE split + orjson, nothing kept) under the same load: "
                f"client CPU {floor.cpu_seconds:.1f} s over {floor.wall_seconds:.1f} s "
                f"({floor.cpu_seconds / floor.wall_seconds * 100:.0f}% of one core, "
                f"{_us(floor.cpu_per_chunk_us)} per chunk), lag p50 {_ms(f50)}, p99 {_ms(f99)}."
            )

    def split(self, split: LiveSplit) -> None:
        """Figure 4's live CPU per chunk, split into the transport and the stages (``bench.live_split``)."""
        self.live_split = split
        label = f"4 ({split.streams} streams x {split.rate:g}/s)"
        self.rows.append(
            Row(
                label,
                "live CPU per chunk split: transport alone / stages back to back / stages at the live pace",
                f"{_us(split.transport_us)} / {_us(split.back_to_back_us)} / {_us(split.paced_us)}",
                "printed",
            )
        )
        self.sections.append(
            f"Where the live CPU goes, {split.streams} streams at {split.rate:g} chunks/s each "
            f"(`bench/live_split.py`): rxcord's transport alone (`stream_source` into a counting "
            f"observer, the same paced server) {_us(split.transport_us)} per chunk; stages 03-07 "
            f"(`build_chain`, live delivery into a memory sink) fed the same decoded chunks from memory: "
            f"{_us(split.back_to_back_us)} per chunk with the streams' events interleaved back to back, "
            f"{_us(split.paced_us)} with each stream's events on the loop's timers at the live pace "
            f"(the pacing timers' own {_us(split.pacing_us)} subtracted). The same calls either way; "
            "at the live pace each event finds its stream's objects out of the CPU's caches."
        )

    def _why_live_cpu(self, result: LagResult, floor: LagResult) -> str:
        extra = result.cpu_per_chunk_us - floor.cpu_per_chunk_us
        text = (
            f"in live mode the floor's reader (aiohttp's StreamReader, a loop wake-up per read, one "
            f"event per read) costs {floor.cpu_per_chunk_us:.2f} µs per chunk and the chain "
            f"{result.cpu_per_chunk_us:.2f}: {extra:.2f} µs more, where {LIVE_CPU_RATIO:g}x allows "
            f"{(LIVE_CPU_RATIO - 1) * floor.cpu_per_chunk_us:.2f}."
        )
        split = self.live_split
        if split is not None:
            allowed = LIVE_CPU_RATIO * floor.cpu_per_chunk_us
            text += (
                f" Split at the same load, each part measured on its own: rxcord's transport alone "
                f"(aiohttp, the read loop, the events decoded into chunks) costs {split.transport_us:.2f} µs "
                f"per chunk, {split.transport_us / floor.cpu_per_chunk_us:.2f}x the floor's reader by "
                f"itself; stages 03-07 fed the same chunks from memory cost {split.back_to_back_us:.2f} µs "
                f"with the streams' events back to back and {split.paced_us:.2f} µs at the live pace (the "
                "same calls; at the live pace every event arrives after all the other streams have run, "
                "its stream's objects out of the CPU's caches), against the "
                f"{allowed - split.transport_us:.2f} µs that {LIVE_CPU_RATIO:g}x ({allowed:.2f} µs) leaves "
                "after the transport. Each stage costs one event at a time: every event is a read of its "
                "own, so batching does not apply."
            )
        return text

    @staticmethod
    def _why_objects(result: LagResult, floor: LagResult) -> str:
        top = ", ".join(f"{count:.0f} {name}" for name, count in result.tracked_types)
        return (
            f"a live stream holds {result.tracked_per_stream:,.0f} tracked objects halfway through, "
            f"the floor's reader {floor.tracked_per_stream:,.0f} (aiohttp's response and one task). "
            f"The most numerous, per stream: {top}. Beyond the floor they are rxcord's transport "
            "(its read task, the retry and idle bound), one subscription and one state object per "
            "stage, the stop subject's subscribers and the text buffers"
        )

    def live_peer(self, peer: LagResult, chain: LagResult) -> None:
        """Figure 4's user alternative: the OpenAI SDK into a hand-written bot, beside the chain."""
        label = f"4 (live peer, {peer.streams} x {peer.rate:g}/s)"
        self.rows.append(
            Row(
                label,
                "CPU/chunk and p99 lag: SDK + hand-written bot vs chain",
                f"{peer.cpu_per_chunk_us:.1f} vs {chain.cpu_per_chunk_us:.1f} µs; "
                f"{_ms(percentile(peer.lag_ms, 99))} vs {_ms(percentile(chain.lag_ms, 99))}",
                "printed",
            )
        )
        self.sections.append(
            f"Figure 4's live peer (``bench.sdk_bot``): the OpenAI SDK's streaming loop into a "
            "hand-written discord.py-style bot (accumulate, send at a paragraph break or 2,000 "
            f"characters to a memory sink), {peer.streams} streams at {peer.rate:g} chunks/s, the same "
            f"load as the chain: CPU {peer.cpu_per_chunk_us:.1f} µs per chunk against the chain's "
            f"{chain.cpu_per_chunk_us:.1f}; lag from the server's write to the bot's loop p50 "
            f"{_ms(percentile(peer.lag_ms, 50))}, p99 {_ms(percentile(peer.lag_ms, 99))} (chain: p50 "
            f"{_ms(percentile(chain.lag_ms, 50))}, p99 {_ms(percentile(chain.lag_ms, 99))}); "
            f"{peer.completed} of {peer.streams} streams complete; tracked objects per stream "
            f"{peer.tracked_per_stream:.0f} (chain: {chain.tracked_per_stream:.0f})."
        )

    def first_message(self, result: FirstMessageResult) -> None:
        """Time to the first Discord message for one provider family in one delivery mode."""
        mode = result.mode.value
        label = f"3 (first message, {result.family}, {mode})"
        edit = result.mode is DeliveryMode.EDIT
        p50 = result.p(50)
        ok = (p50 <= FIRST_EDIT_MS) if edit and result.ttfm_ms else None
        self.rows.append(
            Row(
                label,
                "from the first text byte p50 / p99",
                f"{_ms(p50)} / {_ms(result.p(99))} ({len(result.ttfm_ms)} streams)",
                f"p50 <= {FIRST_EDIT_MS:g} ms" if edit else "printed",
                ok,
                why=(lambda: self._first_edit_reason(result)) if edit else None,
            )
        )
        waits = {
            DeliveryMode.LIVE: "the live flusher's first safe boundary (a paragraph) or its idle timer",
            DeliveryMode.EDIT: (
                "the first safe boundary of the first words (a sentence or line end outside code, or a "
                "word boundary past 40 characters: rxcord.operators.markdown.cut_policy.first_message_cut)"
            ),
            DeliveryMode.AGGREGATED: "the end of the stream",
        }[result.mode]
        if result.start_window and result.mode is not DeliveryMode.AGGREGATED:
            waits += (
                f", after stage 03's think-tag start window ({result.start_window} characters held in "
                "case a stray </think> turns them into reasoning: about "
                f"{result.start_window / 3.5 * result.pace_ms:.0f} ms of events)"
            )
        self.sections.append(
            f"Time to the first Discord message, {result.family} wire format, {mode} delivery: "
            f"{result.streams} streams at once, one event per {result.pace_ms:g} ms; from the server's "
            f"write of the first event carrying answer text to the start of the first message create: "
            f"p50 {_ms(p50)}, p90 {_ms(result.p(90))}, p99 {_ms(result.p(99))}, max {_ms(result.p(100))} "
            f"({len(result.ttfm_ms)} of {result.streams} streams sent a message). The first message "
            f"waits for {waits}."
        )

    @staticmethod
    def _first_edit_reason(result: FirstMessageResult) -> str:
        if result.start_window:
            return (
                f"stage 03 holds the first {result.start_window} characters of an OpenAI-compatible "
                "stream whose host may serve an open-weight model (the think-tag start window: a stray "
                "</think> in them makes them reasoning); at one event of 1-6 code points per "
                f"{result.pace_ms:g} ms they take about {result.start_window / 3.5 * result.pace_ms:.0f} "
                f"ms of events; p50 {_ms(result.p(50))} over {len(result.ttfm_ms)} streams. OpenAI's own "
                "API holds none (the row with its host's guards)"
            )
        return (
            f"the first message waits for the first words' boundary: at one event of 1-6 code points per "
            f"{result.pace_ms:g} ms, 40 characters (the word-boundary fallback) take about "
            f"{40 / 3.5 * result.pace_ms:.0f} ms of events; p50 {_ms(result.p(50))} over "
            f"{len(result.ttfm_ms)} streams"
        )

    def capacity(self, chain: Capacity, floor: Capacity) -> None:
        """Figure 4: how many streams one process carries at the rate, chain against the floor's reader."""
        tuned = ", chain GC tuned" if chain.tuned else ""
        label = f"4 (streams at {chain.rate:g}/s, p99 lag < {chain.limit_ms:g} ms{tuned})"
        share = chain.carried / floor.carried if floor.carried else math.nan
        shown = "n/a" if math.isnan(share) else f"{share * 100:.0f}%"
        self.rows.append(
            Row(
                label,
                "streams carried: chain / floor's reader",
                f"{shown} ({chain.carried} / {floor.carried})",
                ">= 70%",
                None if math.isnan(share) else share >= 0.7,
                why=lambda: _why_capacity(chain, floor),
            )
        )
        self.sections.append(
            f"Streams one process carries{tuned} at {chain.rate:g} chunks/s each with a lag p99 under "
            f"{chain.limit_ms:g} ms, climbing a ladder of stream counts: the chain {chain.carried} "
            f"({_trials(chain)}), the transport floor's reader {floor.carried} ({_trials(floor)})."
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
                    why=lambda: (
                        f"{result.seconds:.2f} s against a bound of {result.bound:.2f} s; the client meters "
                        "below Discord's limits (a margin against 429s), and short runs weigh the first "
                        "window's burst more"
                    ),
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
            f"Each stage's logic alone on the same capture ({times.chunks:,} chunks), then the chain fed "
            f"from memory, one item per event and one batch per {stages_mod.READ_BYTES:,}-byte read "
            f"({times.reads:,} reads): CPU µs per chunk, medians of {self.runs} interleaved rounds "
            "(min-max), every part with the collector paused:",
            "",
            "| part | µs per chunk |",
            "| --- | ---: |",
        ]
        lines += [f"| {name} | {value.show()} |" for name, value in times.stages.items()]
        lines += [
            f"| **stages 03-07, logic only** | {times.logic_03_07:.2f} |",
            f"| **{stages_mod.PER_EVENT}** | {times.chain[stages_mod.PER_EVENT].show()} |",
            f"| Rx plumbing, one item per event (the difference) | {times.plumbing:.2f} |",
            f"| **{stages_mod.BATCHED}** | {times.chain[stages_mod.BATCHED].show()} |",
            f"| Rx plumbing, one batch per read (the difference) | {times.plumbing_batched:.2f} |",
        ]
        for feed, (calls, hops) in times.counted.items():
            lines.append(f"| {feed}: counted per chunk | {calls:.1f} calls, {hops:.2f} observer hops |")
        if self.chain_e2e is not None:
            lines.append(
                f"| transport: aiohttp, SSE, JSON (end-to-end {self.chain_e2e:.2f} minus the batched chain "
                f"in memory) | {max(0.0, self.chain_e2e - times.chain_batched):.2f} |"
            )
        self.sections.append("\n".join(lines))
        self.stage_times = times
        _ = LOGIC_03_07

    def linear(self, result: LinearResult) -> None:
        """Figure 6: one long line of each adversarial shape through the splitter and the flusher."""
        figure = "6 (linear scanning)"
        line = f"{result.size / 1e6:g} MB line" if result.size >= 100_000 else f"{result.size:,}-char line"
        shapes = [name for name in result.times if name != PROSE]
        for index, part in enumerate(("splitter", "flusher")):
            worst = max(shapes, key=lambda name: result.ratio(name)[index])
            self.rows.append(
                Row(
                    figure,
                    f"{part}: slowest shape / prose, {line}",
                    f"{result.ratio(worst)[index]:.1f}x ({worst})",
                )
            )
        growth = {
            (name, part): result.growth(name)[i]
            for name in result.times
            for i, part in enumerate(("splitter", "flusher"))
        }
        (name, part), worst_growth = max(growth.items(), key=lambda item: item[1])
        self.rows.append(
            Row(
                figure,
                "time for the line / for a quarter of it, worst shape",
                f"{worst_growth:.1f}x ({part}, {name})",
                "<= 8x (4x is linear, 16x quadratic)",
                ok=worst_growth <= 8.0,
                why=lambda part=part, name=name: f"{part} on {name} grew {worst_growth:.1f}x for 4x the text",
            )
        )
        lines = [
            f"One line of each shape ({result.size:,} characters; the flusher live, fed 64-character "
            "deltas), CPU ms per 1,000 characters, the best of the runs, against plain prose in the same "
            f"run, and the time for the line against a quarter of it ({result.size // 4:,} characters):",
            "",
            "| shape | splitter ms/KB | x prose | x for 4x | flusher ms/KB | x prose | x for 4x |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name in result.times:
            (split_kb, flush_kb), (split_x, flush_x) = result.per_kb(name), result.ratio(name)
            split_g, flush_g = result.growth(name)
            shown = name.replace("|", "\\|")
            lines.append(
                f"| {shown} | {split_kb:.3f} | {split_x:.1f} | {split_g:.1f} "
                f"| {flush_kb:.3f} | {flush_x:.1f} | {flush_g:.1f} |"
            )
        self.sections.append("\n".join(lines))

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
        missed = self.missed()
        if missed:
            out += ["", "Missed targets, and the measured reason:"]
            out += [f"- {figure}, {measure}: {reason}" for figure, measure, reason in missed]
        return "\n".join(out)

    def missed(self) -> list[tuple[str, str, str]]:
        """(figure, measure, reason) of every missed target."""
        return [
            (row.figure, row.measure, row.reason() or "no reason recorded")
            for row in self.rows
            if row.ok is False
        ]

    def _missed_markdown(self) -> str:
        missed = self.missed()
        if not missed:
            return ""
        items = "\n".join(f"- **{figure}, {measure}**: {reason}" for figure, measure, reason in missed)
        return f"### Missed targets: the measured reasons\n\n{items}\n\n"

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
            f"{self._missed_markdown()}"
            "## Details\n\n"
            f"{details}\n\n"
            f"{notes}"
        )


def _trials(capacity: Capacity) -> str:
    return ", ".join(
        f"{n}: {p99:.1f} ms, {cpu * 100:.0f}%, {len(pauses)} full GC"
        for n, p99, cpu, pauses in capacity.trials
    )


def _why_capacity(chain: Capacity, floor: Capacity) -> str:
    text = f"the ladder's trials (streams: p99 lag, CPU share, full collections): chain {_trials(chain)}; "
    text += f"floor {_trials(floor)}."
    if floor.carried == floor.trials[-1][0]:
        text += f" The floor carried the ladder's top ({floor.carried}): its real figure is higher."
    if chain.carried < chain.trials[-1][0]:
        streams, p99, cpu, pauses = chain.trials[-1]
        if pauses:
            cause = (
                f"full garbage collections stopping the loop ({len(pauses)}, the longest "
                f"{max(pauses):.0f} ms) over the live streams' tracked objects"
            )
        elif cpu >= 0.8:
            cause = "queueing: the client is near one core (it carries one core over the CPU per stream)"
        else:
            cause = (
                "neither a full collection nor a saturated core: the young-generation collections and "
                "the loop's queue at that many wake-ups per second"
                + (
                    ""
                    if chain.tuned
                    else " (the run with the collector tuned shows how much is the collector)"
                )
            )
        text += f" At {streams} streams the chain's client used {cpu * 100:.0f}% of a core; "
        text += f"the p99 of {p99:.0f} ms: {cause}."
    return text


def _why_latency(result: LatencyResult) -> str:
    return (
        f"the client ran at {result.cpu_share * 100:.0f}% of one core ({result.streams} streams x "
        f"{1000 / result.pace_ms:g} events/s, each a loop wake-up), so events queue behind each other; "
        f"{_collections(result.gc_full_ms)} stopped the loop"
    )


def _why_lag(result: LagResult, floor: LagResult | None) -> str:
    need = result.streams * result.rate * result.cpu_per_chunk_us / 1e6
    text = (
        f"{result.streams * result.rate:,.0f} chunks/s at {result.cpu_per_chunk_us:.1f} µs each need "
        f"{need:.2f} cores; one process has one"
    )
    if floor is not None:
        text += (
            f", and the transport floor alone took {floor.cpu_seconds / floor.wall_seconds * 100:.0f}% "
            "of it at this load"
        )
    return text + f"; {_collections(result.gc_full_ms)}"


def _collections(pauses: list[float]) -> str:
    """How many full garbage collections stopped the loop, and the longest."""
    if not pauses:
        return "no full garbage collection"
    return f"{len(pauses)} full garbage collection(s), the longest {max(pauses):.0f} ms"
