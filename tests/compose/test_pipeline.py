"""The composable pipeline: named stages, edits by name, fusion of stage 03, operators users insert."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
import reactivex
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex import Observable
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.compose import pipeline as pipeline_module
from rxcord.compose.chain import build_chain
from rxcord.compose.pipeline import Pipeline, Stage, stage03
from rxcord.core.config import StreamConfig
from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, TypingPulse
from rxcord.core.stops import StopHandle
from rxcord.core.types import ChunkType, ProcessedChunk, RawStreamChunk
from rxcord.operators import fused
from rxcord.operators.fused import Fusable
from rxcord.operators.normalize import normalize
from rxcord.operators.reasoning.spill_guard import spill_guard
from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW, think_strip
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from tests.providers.chat_completions.test_normalizer import raws, sse_events

DEFAULT_NAMES = (
    "normalize",
    "redact_secrets",
    "think_strip",
    "spill_guard",
    "verbatim_tools",
    "prefill",
    "speaker_guard",
    "idle_timeout",
    "stop_gate",
    "accumulate",
    "flush",
    "clean",
    "typing",
    "deliver",
)


def test_default_pipeline_names_every_stage_in_order() -> None:
    assert Pipeline.default().names == DEFAULT_NAMES


def test_edits_return_new_pipelines_at_the_named_point() -> None:
    base = Pipeline.default()
    marker = ops.map(lambda x: x)
    after = base.insert_after("flush", "filter", marker)
    assert after.names[after.names.index("flush") + 1] == "filter"
    before = base.insert_before("normalize", "log", marker)
    assert before.names[0] == "log"
    assert "clean" not in base.remove("clean").names
    replaced = base.replace("clean", marker)
    assert replaced.names == base.names
    assert replaced.delivery[1].build is not base.delivery[1].build
    assert base.names == DEFAULT_NAMES  # the original is unchanged


def test_an_unknown_point_names_the_stages_and_a_duplicate_name_is_refused() -> None:
    with pytest.raises(KeyError, match="flush, clean"):
        Pipeline.default().insert_after("nope", "x", ops.map(lambda x: x))
    with pytest.raises(ValueError, match="unique"):
        Pipeline.default().insert_after("flush", "clean", ops.map(lambda x: x))
    with pytest.raises(TypeError):
        Pipeline.default().insert_after("flush", "filter")


class _Recorder:
    """Captures the operators the builder composes, to count the hops of a stream."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[Any, ...]] = []
        real = reactivex.compose

        def compose(*operators: Any) -> Any:
            self.calls.append(operators)
            return real(*operators)

        monkeypatch.setattr(pipeline_module.reactivex, "compose", compose)


def _chain_for(adapter: Any, pipeline: Pipeline, events: Sequence[Any]) -> Observable[StreamResult]:
    stops = StopHandle("1")

    def send(item: Segment | TypingPulse) -> Observable[Delivery]:
        if isinstance(item, TypingPulse):
            return reactivex.just(Delivery())
        return reactivex.just(Delivery(segment=item, messages=(SentMessage(payload={"content": item.text}),)))

    source: Observable[RawStreamChunk] = reactivex.from_iterable(raws(adapter.name, events))
    return build_chain(
        source,
        normalizer=adapter.new_normalizer,
        guards=adapter.guards,
        config=StreamConfig(typing_interval=0),
        stops=stops.signals,
        stop_sink=stops.subject,
        send=send,
        pipeline=pipeline,
    )


def test_stage03_runs_as_one_operator_no_more_hops_than_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stage 03 (normalize + think_strip + spill_guard) and stage 04 (three stages) fuse: 2 operators."""
    recorder = _Recorder(monkeypatch)
    _chain_for(OpenAIAdapter(), Pipeline.default(), [])
    routing = next(ops_ for ops_ in recorder.calls if any(isinstance(op, Fusable) for op in ops_))
    assert len(routing) == 2  # fused stage 03, then idle_timeout+stop_gate+accumulate (gated_scan)
    assert isinstance(routing[0], Fusable) and routing[0].name.count("+") == 2
    assert routing[1].name == "idle_timeout+stop_gate+accumulate"


def test_an_operator_inserted_between_guards_splits_the_fusion_there(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = _Recorder(monkeypatch)
    seen: list[str] = []
    spy = ops.do_action(lambda chunk: seen.append(chunk.content))
    pipeline = Pipeline.default().insert_after("think_strip", "spy", spy)
    events = sse_events("custom", "think_stray_closer")
    [result] = _run_sync(_chain_for(CustomAdapter(), pipeline, events))
    routing = next(ops_ for ops_ in recorder.calls if any(isinstance(op, Fusable) for op in ops_))
    assert len(routing) == 4  # normalize+think_strip, spy, spill_guard, idle_timeout+stop_gate+accumulate
    assert "</think>" not in "".join(seen)  # the spy saw what think_strip released
    assert result.visible_text == "\n\nHello! What can I do?"


def _run_sync(chain: Observable[StreamResult]) -> list[StreamResult]:
    observer = TestScheduler().start(lambda: chain, disposed=10**9)
    return [m.value.value for m in observer.messages if m.value.kind == "N"]


def test_a_user_operator_between_flush_and_clean_sees_segments_and_changes_the_reply() -> None:
    """The README's example shape: a word filter between flush and clean."""

    def calm(segment: Segment) -> Segment:
        return attrs.evolve(segment, text=segment.text.replace("Hello", "Hi"))

    pipeline = Pipeline.default().insert_after("flush", "calm", ops.map(calm))
    events = sse_events("custom", "think_stray_closer")
    [result] = _run_sync(_chain_for(CustomAdapter(), pipeline, events))
    # The fake send does not split, so the segment's leading blank lines are still there.
    assert [str(m.payload["content"]).strip() for m in result.messages] == ["Hi! What can I do?"]
    [plain] = _run_sync(_chain_for(CustomAdapter(), Pipeline.default(), events))
    assert [str(m.payload["content"]).strip() for m in plain.messages] == ["Hello! What can I do?"]


def test_removing_a_guard_for_a_custom_endpoint_lets_the_tags_through() -> None:
    events = sse_events("openrouter", "think_tags_leaked")
    [guarded] = _run_sync(_chain_for(OpenRouterAdapter(), Pipeline.default(), events))
    [raw] = _run_sync(_chain_for(OpenRouterAdapter(), Pipeline.default().remove("think_strip"), events))
    assert "<think>" not in guarded.visible_text
    assert "<think>" in raw.visible_text


def test_adapters_declare_their_guards_as_data() -> None:
    # One start window on every adapter that runs the stripper: one stray-closer result for the same text.
    assert (
        OpenAIAdapter().guards.think_tags
        and OpenAIAdapter().guards.think_start_window == DEFAULT_START_WINDOW
    )
    assert not GoogleAdapter().guards.think_tags and not GoogleAdapter().guards.spill
    custom = CustomAdapter(frozenset({"lookup"}), True, think_opened_by_template=True)
    assert custom.guards.verbatim_tools == frozenset({"lookup"})
    assert custom.guards.think_start_window > 10**9


# --------------------------------------------------------------------------- fused == separate operators

LEAK = "<think>plan the reply</think>Hello there, friend. `code` stays.\n\nMore <thi"


def _separately(pieces: Sequence[str]) -> list[ProcessedChunk]:
    """Stage 03 as three separate Rx operators (what the fusion must equal)."""
    adapter = CustomAdapter()
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    source = reactivex.from_iterable(raws("custom", events))
    out: list[ProcessedChunk] = []
    guards = (think_strip(start_window=256, note_held=True), spill_guard(note_held=True))  # as the pipeline
    source.pipe(normalize(adapter.new_normalizer), *guards).subscribe(out.append)
    return out


def _fused(pieces: Sequence[str]) -> list[ProcessedChunk]:
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    transducer = stage03(CustomAdapter())()
    out: list[ProcessedChunk] = []
    for raw in raws("custom", events):
        out.extend(transducer.feed(raw))
    out.extend(transducer.finish())
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(LEAK) - 1), unique=True, max_size=12))
def test_fused_stage03_emits_exactly_what_separate_operators_emit(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(LEAK)]
    pieces = [LEAK[a:b] for a, b in itertools.pairwise(bounds)]
    assert _fused(pieces) == _separately(pieces)


def test_fused_completion_releases_each_stage_in_order() -> None:
    """What an earlier stage releases at the end still goes through the later stages."""

    class Hold:
        def __init__(self) -> None:
            self.held: list[str] = []

        def feed(self, item: str) -> list[str]:
            self.held.append(item)
            return []

        def finish(self) -> list[str]:
            return ["".join(self.held)]

    class Upper:
        def feed(self, item: str) -> list[str]:
            return [item.upper()]

        def finish(self) -> list[str]:
            return ["!"]

    op = fused.fuse([Fusable(Hold, "hold"), Fusable(Upper, "upper")])
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, "a"), ReactiveTest.on_next(20, "b"), ReactiveTest.on_completed(30)
    )
    observer = scheduler.start(lambda: source.pipe(op))
    assert [(m.time, m.value.kind, getattr(m.value, "value", None)) for m in observer.messages] == [
        (230, "N", "AB"),
        (230, "N", "!"),
        (230, "C", None),
    ]


def test_a_raising_transducer_ends_the_stream_with_its_error() -> None:
    class Boom:
        def feed(self, item: Any) -> list[Any]:
            raise RuntimeError("boom")

        def finish(self) -> list[Any]:
            return []

    errors: list[Exception] = []
    reactivex.of(1).pipe(Fusable(Boom)).subscribe(on_error=errors.append)
    assert [str(e) for e in errors] == ["boom"]


def test_stage03_of_a_capture_matches_the_chain_text() -> None:
    chunks = []
    transducer = stage03(CustomAdapter())()
    for raw in raws("custom", sse_events("custom", "think_stray_closer")):
        chunks.extend(transducer.feed(raw))
    chunks.extend(transducer.finish())
    text = "".join(c.content for c in chunks if c.type is ChunkType.TEXT)
    [result] = _run_sync(
        _chain_for(CustomAdapter(), Pipeline.default(), sse_events("custom", "think_stray_closer"))
    )
    assert text == result.visible_text
    assert json.dumps(text)  # plain text, no tags
    with pytest.raises(ValueError, match="not a transducer"):
        stage03(
            CustomAdapter(), pipeline=Pipeline.default().insert_after("normalize", "x", ops.map(lambda c: c))
        )
    assert Stage.of("x", ops.map(lambda c: c)).name == "x"
