"""Counted, not timed: the objects a live stream holds, the observer hops per event, the task start.

Every live stream keeps its subscription objects for as long as it runs, and with hundreds
of streams each full garbage collection walks them all (``bench/notes.md``, figure 4). The
streams here are the chain fed from memory on the running loop (``build_chain`` into a
``MemorySink``, live delivery), counted halfway through their text.
"""

from __future__ import annotations

import asyncio
import cProfile
import gc
import json
import pstats
from collections.abc import Coroutine
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import Observable
from reactivex.subject import Subject

from rxcord.compose import pipeline as pipeline_module
from rxcord.compose.chain import build_chain
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import StreamResult
from rxcord.core.stops import StopHandle
from rxcord.core.types import DeliveryMode, RawStreamChunk, StopKind
from rxcord.operators import aio
from rxcord.operators.aio import choose_task_start, drain, from_coro
from rxcord.operators.gated_scan import fuse_stage04
from rxcord.providers import transport
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.sse import SseParser
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink
from tests.chain_harness import run_reads
from tests.compose.test_batched_path import RAWS, SSE, _adapter, _groups

LIVE = StreamConfig(delivery=DeliveryMode.LIVE, max_messages=10_000, max_flushes=10_000)

OBJECTS_PER_STREAM = 110
"""Tracked objects per live stream halfway (counted 93; 122 before drain, the quiet timers' context,
the short texts and the sent-message record were slimmed; 272 before the stop subject, the stage
glue, stage 03 and the text state; 443 before the light subscriptions)."""

HOPS_PER_EVENT = 5.0
"""Observer hops per event, one event per read (counted 3.7; before: 7.9, reactivex's wrappers)."""


def _chunks(count: int) -> list[RawStreamChunk]:
    """*count* OpenAI chunks of prose, a paragraph break every eighth (so messages go out)."""
    lines = []
    for k in range(count):
        text = "word\n\n" if k % 8 == 7 else "word "
        lines.append(b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode())
    body = b"\n\n".join(lines) + b"\n\n"
    chunks, _ = transport._event_chunks("openai", SseParser().feed_raw(body))
    return chunks


def _chain(
    source: Observable[Any], sink: MemorySink, adapter: OpenAIAdapter | None = None, *, as_built: bool = False
) -> Observable[StreamResult]:
    """A live chain into *sink*; *as_built*: wired as ``build_stream`` wires it (the adapter's
    error description, the delivery's record of sent messages)."""
    adapter = adapter if adapter is not None else OpenAIAdapter()
    stops = StopHandle("1")
    delivery = DiscordDelivery(
        sink=sink, context=StreamContext(), config=LIVE, stops=stops.subject, nonce_prefix="t"
    )
    built: dict[str, Any] = {"describe": adapter.describe_error, "record": delivery.held} if as_built else {}
    return build_chain(
        source,
        normalizer=adapter.new_normalizer,
        config=LIVE,
        stops=stops.signals,
        stop_sink=stops.subject,
        send=delivery.send,
        provider=adapter.name,
        **built,
    )


async def _settle() -> None:
    for _ in range(20):  # the sends of what was fed, and their completions
        await asyncio.sleep(0)


async def _feed_halfway(subjects: list[Subject[Any]], chunks: list[RawStreamChunk]) -> None:
    """The first half of *chunks* to every stream, each settled; then a collection (garbage gone)."""
    for chunk in chunks[: len(chunks) // 2]:
        for subject in subjects:
            subject.on_next(chunk)
        await _settle()
    gc.collect()


async def _warm_up(chunks: list[RawStreamChunk]) -> None:
    """A first stream end to end (what it imports and caches is not any stream's), then a collection."""
    warm: Subject[Any] = Subject()
    first = asyncio.ensure_future(drain(_chain(warm, MemorySink())))
    await asyncio.sleep(0)
    for chunk in chunks:
        warm.on_next(chunk)
    warm.on_completed()
    await first
    gc.collect()


async def _objects_per_stream(streams: int, chunks: list[RawStreamChunk]) -> float:
    await _warm_up(chunks)
    before = len(gc.get_objects())
    subjects: list[Subject[Any]] = [Subject() for _ in range(streams)]
    sinks = [MemorySink() for _ in range(streams)]
    tasks = [asyncio.ensure_future(drain(_chain(s, sink))) for s, sink in zip(subjects, sinks, strict=True)]
    await asyncio.sleep(0)
    await _feed_halfway(subjects, chunks)
    held = (len(gc.get_objects()) - before) / streams
    for chunk in chunks[len(chunks) // 2 :]:
        for subject in subjects:
            subject.on_next(chunk)
    for subject in subjects:
        subject.on_completed()
    results = await asyncio.gather(*tasks)
    assert all(result[-1].visible_text.count("word") == len(chunks) for result in results)
    assert all(sink.sent for sink in sinks)
    return held


async def test_a_live_stream_holds_few_tracked_objects() -> None:
    held = await _objects_per_stream(40, _chunks(64))
    assert held <= OBJECTS_PER_STREAM, f"{held:.0f} tracked objects per live stream"


def _hop_count(chunks: list[RawStreamChunk]) -> float:
    from bench.stages import hop_entries

    async def run() -> None:
        subject: Subject[Any] = Subject()
        task = asyncio.ensure_future(drain(_chain(subject, MemorySink())))
        await asyncio.sleep(0)
        for chunk in chunks:
            subject.on_next(chunk)
        subject.on_completed()
        await task

    asyncio.run(run())  # warm-up: every module imported, every Relay subclass defined
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        asyncio.run(run())
    finally:
        profiler.disable()
    table: dict[tuple[str, int, str], tuple[int, ...]] = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    entries = hop_entries()
    return sum(row[1] for key, row in table.items() if key in entries) / len(chunks)


def test_observer_hops_per_live_event_are_counted_and_few() -> None:
    hops = _hop_count(_chunks(200))
    assert 2 <= hops <= HOPS_PER_EVENT, f"{hops:.2f} observer hops per event"


# -- the segment coroutine's task: eager where Python has it ------------------------------------------


def _eager_without_suspension(
    loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, Any]
) -> asyncio.Future[Any]:
    """An eager start for coroutines that never suspend (what 3.12's eager tasks do for them)."""
    future: asyncio.Future[Any] = loop.create_future()
    try:
        coro.send(None)
    except StopIteration as stop:
        future.set_result(stop.value)
        return future
    raise AssertionError("the coroutine suspended")


def test_the_task_start_is_eager_only_when_python_has_one() -> None:
    assert choose_task_start(None) is not _eager_without_suspension
    assert choose_task_start(_eager_without_suspension) is _eager_without_suspension
    eager = getattr(asyncio, "eager_task_factory", None)
    assert (aio._START is eager) if eager is not None else (aio._START is choose_task_start(None))


@pytest.mark.parametrize("eager", [False, True])
async def test_from_coro_delivers_at_once_with_an_eager_start(eager: bool) -> None:
    start = choose_task_start(_eager_without_suspension if eager else None)

    async def answer() -> int:
        return 42

    seen: list[int] = []
    done: list[bool] = []
    from_coro(answer, start=start).subscribe(seen.append, on_completed=lambda: done.append(True))
    # Eager: the value arrives inside subscribe; a plain task needs loop hops (its step, its callback).
    assert (seen, done) == (([42], [True]) if eager else ([], []))
    await _settle()
    assert (seen, done) == ([42], [True])


@pytest.mark.parametrize("eager", [False, True])
async def test_the_chain_gives_the_same_result_with_either_task_start(
    eager: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(aio, "_START", choose_task_start(_eager_without_suspension if eager else None))
    sink = MemorySink()
    subject: Subject[Any] = Subject()
    task = asyncio.ensure_future(drain(_chain(subject, sink)))
    await asyncio.sleep(0)
    chunks = _chunks(40)
    for chunk in chunks:
        subject.on_next(chunk)
        await _settle()
    subject.on_completed()
    result = (await task)[-1]
    assert result.visible_text.count("word") == 40
    assert sink.contents == ["word " * 7 + "word"] * 5


# -- stage 04 fused (gated_scan) against its three operators -----------------------------------------


def _stage04_run(
    path: Any, groups: Any, *, fused: bool, batched: bool, mode: DeliveryMode, stop: Any, idle: float
) -> Any:
    config = StreamConfig(
        delivery=mode,
        typing_interval=0,
        live_idle_flush=25.0,
        max_messages=10_000,
        max_flushes=10_000,
        idle_timeout=idle,
    )
    with mock.patch.object(pipeline_module, "fuse_stage04", fuse_stage04 if fused else list):
        return run_reads(_adapter(path), groups, config, batched=batched, stop=stop)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(SSE),
    cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12),
    mode=st.sampled_from([DeliveryMode.AGGREGATED, DeliveryMode.LIVE, DeliveryMode.EDIT]),
    stop=st.none() | st.tuples(st.sampled_from([StopKind.USER, StopKind.INTERRUPT]), st.integers(1, 40)),
    batched=st.booleans(),
    idle=st.sampled_from([60.0, 5.0, 15.0]),
)
def test_fused_stage04_gives_what_its_three_operators_give(
    path: Any, cuts: list[int], mode: DeliveryMode, stop: Any, batched: bool, idle: float
) -> None:
    """Same result, messages and timing: reads ten ticks apart, stops after any chunk, idle timeouts."""
    groups = _groups(RAWS[path], cuts)
    separate = _stage04_run(path, groups, fused=False, batched=batched, mode=mode, stop=stop, idle=idle)
    fused = _stage04_run(path, groups, fused=True, batched=batched, mode=mode, stop=stop, idle=idle)
    assert fused == separate


def test_the_fusion_needs_the_three_stages_adjacent() -> None:
    from rxcord.operators.accumulate import accumulate
    from rxcord.operators.idle_timeout import idle_timeout
    from rxcord.operators.stop_gate import stop_gate

    stops: Subject[Any] = Subject()
    three = [idle_timeout(5), stop_gate(stops), accumulate()]
    assert [op.name for op in fuse_stage04(three)] == ["idle_timeout+stop_gate+accumulate"]  # type: ignore[attr-defined]
    split = [three[0], three[1], _passthrough, three[2]]
    assert fuse_stage04(split) == split


def _passthrough(source: Observable[Any]) -> Observable[Any]:
    return source
