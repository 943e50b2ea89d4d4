"""The batched path (one item per socket read) against the per-event path, side by side.

The transport can hand the chain all SSE events of one network read as one ``Batch``
(``stream_source(batched=True)``, ``build_chain(batched=True)``); the stages that know
batches take them whole, the others get the chunks one by one. The results must be the
ones of the per-event path on every capture, under any grouping of its events into
reads, in every delivery mode, with a stop after any routed chunk, and with a user
operator inserted anywhere in the routing stages.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import reactivex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reactivex import operators as ops

from rxcord.compose.pipeline import Pipeline, Stage, stage03
from rxcord.core.config import StreamConfig
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.core.types import (
    Batch,
    DeliveryMode,
    ProcessedChunk,
    RawStreamChunk,
    SegmentKind,
    StopKind,
)
from rxcord.operators.aio import drain
from rxcord.operators.fused import Fusable, fuse, unbatch
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.registry import default_registry
from rxcord.providers.sse import SseParser
from rxcord.providers.transport import TransportConfig, _event_chunks, stream_source
from rxcord.testing.replay import Chunking, ReplayServer
from tests.chain_harness import run_reads
from tests.conftest import CAPTURES

SSE = sorted(CAPTURES.glob("*/*.sse"))
_IDS = [f"{p.parent.name}/{p.name}" for p in SSE]


def _adapter(path: Path) -> ProviderAdapter:
    provider = path.parent.name
    options: dict[str, Any] = {}
    if provider == "custom" and "verbatim" in path.name:
        options = {"tool_names": frozenset({"generate_image", "web_search"}), "verbatim_tool_calling": True}
    return default_registry().create(provider, **options)


def _raws(path: Path) -> list[RawStreamChunk]:
    """The capture's chunks as the transport makes them (up to ``[DONE]``)."""
    parser = SseParser()
    fields = parser.feed_raw(path.read_bytes())
    chunks, done = _event_chunks(path.parent.name, fields)
    if not done:
        rest, _ = _event_chunks(path.parent.name, parser.close_raw(), at_end=True)
        chunks += rest
    return chunks


RAWS = {path: _raws(path) for path in SSE}
_CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))


def _groups(raws: Sequence[RawStreamChunk], cuts: Sequence[int]) -> list[list[RawStreamChunk]]:
    """*raws* cut into consecutive non-empty groups (the reads) at *cuts* (modulo the length)."""
    edges = [0, *sorted({c % (len(raws) + 1) for c in cuts}), len(raws)]
    return [list(raws[a:b]) for a, b in itertools.pairwise(edges) if b > a]


def _run(
    path: Path,
    groups: list[list[RawStreamChunk]],
    *,
    batched: bool,
    mode: DeliveryMode,
    stop: tuple[StopKind, int] | None = None,
    pipeline: Pipeline | None = None,
) -> tuple[StreamResult, list[tuple[str, Any]]]:
    """One stream under virtual time: each group is one read (one tick)."""
    config = StreamConfig(
        delivery=mode, typing_interval=0, live_idle_flush=25.0, max_messages=10_000, max_flushes=10_000
    )
    return run_reads(_adapter(path), groups, config, batched=batched, stop=stop, pipeline=pipeline)


MODES = st.sampled_from([DeliveryMode.AGGREGATED, DeliveryMode.LIVE, DeliveryMode.EDIT])
CUTS = st.lists(st.integers(min_value=0, max_value=10_000), max_size=12)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(path=st.sampled_from(SSE), cuts=CUTS, mode=MODES)
def test_batched_chain_gives_the_per_event_result(path: Path, cuts: list[int], mode: DeliveryMode) -> None:
    """Any grouping of a capture's events into reads: the same result, messages and timing."""
    groups = _groups(RAWS[path], cuts)
    old = _run(path, groups, batched=False, mode=mode)
    new = _run(path, groups, batched=True, mode=mode)
    assert new == old


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    path=st.sampled_from(SSE),
    cuts=CUTS,
    mode=MODES,
    kind=st.sampled_from([StopKind.USER, StopKind.INTERRUPT]),
    after=st.integers(min_value=1, max_value=40),
)
def test_a_stop_after_chunk_n_lands_before_chunk_n_plus_1_in_a_batch(
    path: Path, cuts: list[int], mode: DeliveryMode, kind: StopKind, after: int
) -> None:
    """``--stop KIND@N`` semantics: a stop raised after the N-th routed chunk, even in the middle of
    a read's batch, ends the stream exactly where the per-event path ends it."""
    groups = _groups(RAWS[path], cuts)
    old = _run(path, groups, batched=False, mode=mode, stop=(kind, after))
    new = _run(path, groups, batched=True, mode=mode, stop=(kind, after))
    assert new == old
    # Plus at most one: the gate's reasoning chunk of what stage 03 still held (held_at_stop).
    if old[0].chunk_count > after + 1:
        raise AssertionError(f"routed {old[0].chunk_count} chunks after a stop at {after}")


def _spy(seen: list[object]) -> Stage:
    def note(item: object) -> object:
        seen.append(item)
        return item

    return Stage.of("spy", ops.map(note))


@pytest.mark.parametrize("point", ["normalize", "think_strip", "idle_timeout", "stop_gate", "accumulate"])
def test_a_user_operator_anywhere_sees_one_chunk_at_a_time(point: str) -> None:
    """An operator inserted at any point of the routing stages gets no batch, and changes nothing."""
    path = CAPTURES / "custom" / "think_stray_closer.sse"
    groups = _groups(RAWS[path], [2, 5])  # reads of several events
    assert max(map(len, groups)) > 1
    seen: list[object] = []
    spied = Pipeline.default().insert_after(point, _spy(seen))
    old = _run(path, groups, batched=False, mode=DeliveryMode.LIVE)
    new = _run(path, groups, batched=True, mode=DeliveryMode.LIVE, pipeline=spied)
    assert new == old
    assert seen and not any(isinstance(item, Batch) for item in seen)


@pytest.mark.parametrize("point", ["flush", "clean", "typing"])
@pytest.mark.parametrize("mode", [DeliveryMode.EDIT, DeliveryMode.LIVE, DeliveryMode.AGGREGATED])
def test_a_user_stage_in_delivery_gives_the_same_result_batched_or_not(
    point: str, mode: DeliveryMode
) -> None:
    """A stage between flush and deliver (edit mode takes previews around it): both paths agree."""
    path = CAPTURES / "custom" / "think_stray_closer.sse"
    groups = _groups(RAWS[path], [2, 5])
    seen: list[object] = []
    spied = Pipeline.default().insert_after(point, _spy(seen))
    old = _run(path, groups, batched=False, mode=mode, pipeline=spied)
    count = len(seen)
    new = _run(path, groups, batched=True, mode=mode, pipeline=spied)
    assert new == old
    assert count > 0 and len(seen) == 2 * count
    assert not any(getattr(item, "kind", None) is SegmentKind.PREVIEW for item in seen)


@pytest.mark.parametrize("path", SSE, ids=_IDS)
def test_stage03_on_batches_gives_the_chunks_one_by_one(path: Path) -> None:
    """The fused stage 03 fed one batch per read emits exactly the chunks it emits fed event by event."""
    adapter = _adapter(path)
    raws = RAWS[path]
    make = stage03(adapter)
    single = make()
    expected: list[ProcessedChunk] = [out for raw in raws for out in single.feed(raw)]
    released = single.finish()
    expected += released
    operator = Fusable(make, "stage03")
    for cuts in ([], [1], [1, 2, 3, 5, 8, 13], list(range(len(raws)))):
        items: list[object] = [group[0] if len(group) == 1 else Batch(group) for group in _groups(raws, cuts)]
        out: list[object] = []
        reactivex.from_iterable(items).pipe(operator).subscribe(out.append)
        flat = [one for item in out for one in (item if isinstance(item, Batch) else [item])]
        assert flat == expected
        if len(items) == 1 and isinstance(items[0], Batch):
            # The whole capture in one read: one item out for it, then what finish() releases.
            assert len(out) <= 1 + len(released)


class _Boom:
    """A transducer that doubles items and raises on 3."""

    def feed(self, item: int) -> Sequence[int]:
        if item == 3:
            raise ValueError("three")
        return (item, item)

    def finish(self) -> Sequence[int]:
        return (99,)


def test_a_transducer_raising_in_a_batch_emits_what_came_before_then_the_error() -> None:
    """Items before the failing one go downstream (as one batch), then on_error."""
    operator = fuse([Fusable(_Boom, "boom"), Fusable(_Boom, "boom2")])
    out: list[object] = []
    errors: list[Exception] = []
    reactivex.of(Batch([1, 2, 3, 4])).pipe(operator, unbatch()).subscribe(out.append, errors.append)
    assert out == [1, 1, 1, 1, 2, 2, 2, 2]
    assert [str(e) for e in errors] == ["three"]


def test_unbatch_flattens_batches_and_passes_other_items() -> None:
    out: list[object] = []
    reactivex.of(Batch(["a", "b"]), "c", Batch(["d", "e", "f"])).pipe(unbatch()).subscribe(out.append)
    assert out == ["a", "b", "c", "d", "e", "f"]


@pytest.mark.parametrize("path", SSE, ids=_IDS)
async def test_transport_batches_flatten_to_the_per_event_chunks(path: Path) -> None:
    """Over real HTTP on 127.0.0.1: the batched source's reads, flattened, are the per-event chunks."""
    adapter = _adapter(path)
    config = TransportConfig(allow_private_network=True, transient_retries=0)
    chunking = Chunking(seed=len(path.name))
    async with ReplayServer(body=path.read_bytes(), chunking=chunking) as server:
        http = adapter.build_request(_CHAT, base_url=server.base_url, api_key="sk-test-batched-1")
        per_event = await drain(stream_source(adapter, http, config=config))
        batched = await drain(stream_source(adapter, http, config=config, batched=True))
    flat = [one for item in batched for one in (item if isinstance(item, Batch) else [item])]
    assert flat == per_event
    assert all(len(item) > 1 for item in batched if isinstance(item, Batch))
