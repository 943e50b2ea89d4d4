"""The benchmark suite runs (quick mode, tiny captures); its helpers are right. No timing assertions."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.discord import lower_bound
from bench.gcwatch import TUNED_THRESHOLDS, GcWatch, tuned_gc
from bench.make_captures import FAMILIES, FIRST_TEXT, CaptureSpec, capture_name, make_capture
from bench.protocol import read_events
from bench.report import Report, Row
from bench.sdk_bot import LIMIT, HandWrittenBot
from bench.server import grouped_mode, parse_grouped, split_events, split_grouped, split_random
from bench.stages import batches_of, interleaved
from bench.stats import percentile
from rxcord.compose.pipeline import stage03
from rxcord.core.types import Batch
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.sse import SseParser
from rxcord.providers.transport import _event_chunk, _event_chunks
from rxcord.testing.emulator import EmulatorConfig
from rxcord.testing.replay import Chunking, ReplayServer

ROOT = Path(__file__).resolve().parent.parent


def _events(body: bytes) -> list[dict[str, object]]:
    parser = SseParser()
    events = parser.feed(body) + parser.close()
    return [json.loads(event.data) for event in events if event.data != "[DONE]"]


def test_quick_run_prints_the_table_and_writes_results(tmp_path: Path) -> None:
    """``python -m bench --quick`` completes, prints every figure's row and writes the Markdown file."""
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench",
            "--quick",
            "--runs",
            "1",
            "--captures",
            str(tmp_path),
            "--out",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "figure" in done.stdout and "measure" in done.stdout and "target" in done.stdout
    for figure in ("1 (", "2 ", "3 (", "4 (", "5 (", "6 ("):
        assert f"\n{figure}" in done.stdout, f"no row for figure {figure!r}"
    assert "GC tuned" in done.stdout
    for row in (
        "LiteLLM / chain",
        "first message, anthropic",
        "tracked objects per live stream",
        "live CPU per chunk split: transport alone",
        "(paragraph-heavy)",
        "splitter: slowest shape / prose",
        "~64 events per read",
        "first message, anthropic, edit",
        "first message, openai, aggregated",
    ):
        assert row in done.stdout, f"no row {row!r}"
    if openai_installed():
        assert "live peer" in done.stdout
    assert "one batch per read" in out.read_text(encoding="utf-8")
    text = out.read_text(encoding="utf-8")
    assert "## Figures" in text and "nproc" in text and "| chain / floor (a) |" in text


def test_capture_has_the_requested_chunks_and_shape() -> None:
    """A capture of N chunks is N JSON events then [DONE]: role, deltas of 1-6 code points, finish, usage."""
    body = make_capture(CaptureSpec(200))
    chunks = _events(body)
    assert len(chunks) == 200 and body.endswith(b"data: [DONE]\n\n")
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks[1:-2]]  # type: ignore[index]
    assert all(1 <= len(delta["content"]) <= 6 for delta in deltas)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"  # type: ignore[index]
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]
    assert b"```python" in body.replace(b"\\n", b"\n") or any("`" in delta["content"] for delta in deltas)


def test_reasoning_capture_starts_with_30_percent_reasoning() -> None:
    """The reasoning variant streams its first 30% of deltas as reasoning_content, then content."""
    chunks = _events(make_capture(CaptureSpec(1000, reasoning=True)))
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks[1:-2]]  # type: ignore[index]
    thinking = [delta for delta in deltas if delta.get("reasoning_content")]
    assert len(thinking) == int(997 * 0.3)
    assert deltas.index(thinking[-1]) == len(thinking) - 1


def test_capture_names() -> None:
    """Sizes in thousands are written with k."""
    assert capture_name(100_000) == "plain-100k.sse"
    assert capture_name(250, reasoning=True) == "reasoning-250.sse"


def test_server_pieces_rebuild_the_body() -> None:
    """Random pieces and per-event pieces both join back to the exact body."""
    body = make_capture(CaptureSpec(50))
    assert b"".join(split_random(body)) == body
    events = split_events(body)
    assert b"".join(events) == body and len(events) == 51


def test_lower_bound_of_sliding_windows() -> None:
    """100 messages to a 5/5 s channel: 95 s; 500 messages at 50/s global: 9 s."""
    config = EmulatorConfig()
    assert lower_bound(config, 1, 100) == 95.0
    assert lower_bound(config, 50, 10) == 9.0


def test_percentile_nearest_rank() -> None:
    """Nearest-rank percentiles."""
    assert percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert percentile([1.0, 2.0], 99) == 2.0


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)  # no timing: a loaded machine pauses any example
@given(_json_values, st.booleans())
def test_transport_decodes_like_the_standard_library(value: object, ascii_only: bool) -> None:
    """The transport's fast decoder returns what json.loads returns (big integers and NaN included)."""
    data = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    expected = json.loads(data.decode("utf-8", errors="replace"))
    assert repr(_event_chunk("p", data, None).data) == repr(expected)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_transport_rejects_what_the_standard_library_rejects(data: bytes) -> None:
    """Bytes json.loads cannot read become a malformed_response error chunk, never a guess."""
    text = data.decode("utf-8", errors="replace")
    try:
        expected: object = json.loads(text)
    except ValueError:
        chunk = _event_chunk("p", data, None)
        assert chunk.error is not None and chunk.error.code == "malformed_response"
        return
    assert repr(_event_chunk("p", data, None).data) == repr(expected)


def test_gc_watch_records_collections_and_tuning_is_undone() -> None:
    """GcWatch sees a full collection; tuned_gc changes the thresholds only while it is active."""
    before = gc.get_threshold()
    with GcWatch() as watch:
        gc.collect()
        with tuned_gc():
            assert gc.get_threshold() == TUNED_THRESHOLDS
            assert gc.get_freeze_count() > 0
    assert watch.full() and all(ms >= 0 for ms in watch.full())
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize("family", FAMILIES)
def test_family_captures_have_the_requested_events_and_their_first_text_where_said(family: str) -> None:
    """Each provider family's capture: N events, read by its own adapter into text, the first text at
    ``FIRST_TEXT[family]``."""
    body = make_capture(CaptureSpec(120, family=family))
    parser = SseParser()
    fields = parser.feed_raw(body) + parser.close_raw()
    raws, _ = _event_chunks(family, fields)
    assert len(raws) == 120
    adapter = {"openai": OpenAIAdapter, "anthropic": AnthropicAdapter, "google": GoogleAdapter}[family]()
    make = stage03(adapter)
    texts = []
    for raw in raws:
        normalizer = make()  # each event alone: does it carry text?
        texts.append("".join(c.content for c in [*normalizer.feed(raw), *normalizer.finish()]))
    first = next(index for index, text in enumerate(texts) if text)
    assert first == FIRST_TEXT[family]
    whole = make()
    out = [chunk for raw in raws for chunk in whole.feed(raw)] + list(whole.finish())
    assert len("".join(c.content for c in out)) > 100
    assert capture_name(120, family=family).startswith("" if family == "openai" else family)


def test_batches_of_flatten_to_the_events() -> None:
    """The stage table's batched feed holds exactly the capture's chunks, in order."""
    body = make_capture(CaptureSpec(300))
    items = batches_of(body, read_bytes=1000)
    flat = [one for item in items for one in (item if isinstance(item, Batch) else [item])]
    parser = SseParser()
    expected, _ = _event_chunks("openai", parser.feed_raw(body))
    assert flat == expected
    assert len(items) < len(expected) and any(isinstance(item, Batch) for item in items)


async def test_interleaved_rotates_the_order_and_drops_the_warm_up() -> None:
    """Every part runs once per round, in an order rotated by one each round; the warm-up is dropped."""
    calls: list[str] = []

    async def later() -> None:
        calls.append("c")

    parts = {"a": lambda: calls.append("a"), "b": lambda: calls.append("b"), "c": later}
    samples = await interleaved(parts, runs=3, warmup=1)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert {name: len(values) for name, values in samples.items()} == {"a": 3, "b": 3, "c": 3}
    assert all(value >= 0 for values in samples.values() for value in values)


def test_a_missed_target_prints_its_measured_reason() -> None:
    """A missed target's row gets its reason under the table and in the Markdown; a met one none."""
    report = Report({"python": "x"}, quick=True, runs=1)
    report.rows += [
        Row("9", "made-up ratio", "2.0x", "<= 1.5x", False, why=lambda: "because 2.0 > 1.5"),
        Row("9", "met ratio", "1.0x", "<= 1.5x", True, why=lambda: "never shown"),
        Row("9", "printed only", "3", "printed"),
    ]
    table = report.table()
    assert "- 9, made-up ratio: because 2.0 > 1.5" in table and "never shown" not in table
    markdown = report.markdown()
    assert "because 2.0 > 1.5" in markdown and "never shown" not in markdown
    assert report.missed() == [("9", "made-up ratio", "because 2.0 > 1.5")]


@pytest.mark.parametrize("chunking", [Chunking(), Chunking(size=7), Chunking(seed=5)], ids=repr)
async def test_the_socket_driven_reader_sees_every_event(chunking: Chunking) -> None:
    """``bench.protocol`` (the live figure's socket-driven floor) decodes the chunked body into the events."""
    body = make_capture(CaptureSpec(150))
    seen: list[bytes] = []
    async with ReplayServer(body=body, chunking=chunking) as server:
        count = await read_events(f"{server.base_url}/v1/chat/completions", {"stream": True}, seen.append)
    parser = SseParser()
    expected = [event.data.encode() for event in parser.feed(body) + parser.close()]
    assert seen == expected and count == len(expected) == 151


async def test_the_live_split_feeds_every_chunk_of_every_stream(tmp_path: Path) -> None:
    """Memory-fed chains at a pace: every stream's chunks reach its chain (counted at the sink side)."""
    from bench import live_split
    from bench.make_captures import CaptureSpec, ensure_captures

    ensure_captures(tmp_path, [CaptureSpec(20, variant=variant) for variant in range(3)])
    feeds = [live_split.capture_chunks(tmp_path, 20, number) for number in range(3)]
    assert all(len(feed) >= 20 for feed in feeds)
    seen: list[int] = []
    original = live_split._pace

    def counting(loop: Any, feed: Any, emit: Any, *rest: Any) -> None:
        def counted(item: Any) -> None:
            seen.append(1)
            emit(item)

        original(loop, feed, counted, *rest)

    live_split._pace = counting  # type: ignore[assignment]
    try:
        cost = await live_split._fed_from_memory(feeds, 2000.0)
    finally:
        live_split._pace = original
    assert len(seen) == sum(len(feed) for feed in feeds) and cost > 0


def test_paragraph_heavy_captures_break_paragraphs_several_times_as_often() -> None:
    """Figure 2's paragraph-heavy captures: the flusher's boundaries at their densest."""
    import random

    from bench.make_captures import CaptureSpec, capture_name, make_capture, make_text

    assert capture_name(10_000, paragraphs=True) == "paras-10k.sse"
    assert CaptureSpec(1000, paragraphs=True).name == "paras-1k.sse"
    plain = make_text(20_000, random.Random(3))
    dense = make_text(20_000, random.Random(3), paragraphs=True)
    assert dense.count("\n\n") / len(dense) > 3 * plain.count("\n\n") / len(plain)
    body = make_capture(CaptureSpec(200, paragraphs=True))
    assert body.count(b"data: ") == 200 + 1 and body.endswith(b"data: [DONE]\n\n")  # 200 events, [DONE]


def openai_installed() -> bool:
    try:
        import openai  # noqa: F401
    except ImportError:
        return False
    return True


def test_grouped_writes_hold_whole_events_and_rebuild_the_body() -> None:
    body = make_capture(CaptureSpec(200))
    for events in (1, 3, 64):
        pieces = split_grouped(body, events)
        assert b"".join(pieces) == body
        counts = [piece.count(b"\n\n") for piece in pieces]
        assert counts[:-1] == [events] * (len(pieces) - 1) and 0 < counts[-1] <= events
    assert parse_grouped(grouped_mode(64, 6000)) == (64, 6000)
    assert parse_grouped("event") is None and parse_grouped("random") is None


async def test_the_hand_written_bot_sends_at_paragraph_breaks_and_at_the_limit() -> None:
    bot = HandWrittenBot()
    for delta in ["One ", "para.\n", "\nTwo", " paras.\n\n", "x" * 2500]:
        await bot.feed(delta)
    await bot.close()
    assert bot.sent == ["One para.", "Two paras.", "x" * LIMIT, "x" * 500]


async def test_the_live_figures_sink_counts_and_keeps_no_message() -> None:
    """The live figures' sink answers like a bot's sink (ids, edits) and holds no payload afterwards."""
    from bench.live import CountingSink
    from rxcord.core.config import StreamContext

    sink = CountingSink()
    context = StreamContext(channel_id="100000000000000001")
    first = await sink.create_message(context, {"content": "a"})
    second = await sink.create_message(context, {"content": "b"})
    edited = await sink.edit_message(context, "1", {"content": "ab"})
    await sink.trigger_typing(context)
    assert (first.message_id, second.message_id, edited.message_id) == ("1", "2", "1")
    assert (sink.created, sink.edited, sink.typing) == (2, 1, 1)
    assert first.channel_id == "100000000000000001"
    assert all(isinstance(value, int) for value in gc.get_referents(sink) if value is not CountingSink)


async def test_the_pool_is_warmed_with_one_connection_per_stream() -> None:
    """``warm_pool`` opens one pooled connection per stream; streams after it open none."""
    from types import SimpleNamespace

    from aiohttp import web

    from bench.live import live_session, warm_pool

    peers: list[object] = []

    async def reset(request: web.Request) -> web.Response:
        peers.append(request.transport.get_extra_info("peername") if request.transport else None)
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/reset", reset)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    server: Any = SimpleNamespace(root=f"http://127.0.0.1:{port}")
    try:
        async with live_session() as session:
            await warm_pool(session, server, 12)
            first = set(peers)
            await warm_pool(session, server, 12)
    finally:
        await runner.cleanup()
    assert len(peers) == 24
    assert len(first) == 12  # twelve requests at once: twelve connections
    assert set(peers) == first  # the second round found them pooled
