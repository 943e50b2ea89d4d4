"""Edit mode runs every preview through the delivery stages a user inserted, as the final text."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest
import reactivex
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.compose.chain import build_chain
from rxcord.compose.pipeline import Pipeline
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Segment, StreamResult
from rxcord.core.stops import StopHandle
from rxcord.core.types import DeliveryMode, RawStreamChunk, SegmentKind, StreamStatus
from rxcord.operators.aio import drain
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.edit_in_place import EditInPlaceDelivery, Preview, through_lane
from rxcord.sinks.memory import MemorySink
from rxcord.sinks.preview_lane import around_previews
from tests.chain_harness import TextFeed
from tests.sinks.test_edit_in_place import EditRecorder

_DELTAS = [f"word{i} bad " for i in range(60)] + ["end <"]
"""About 600 characters (one message). It ends on what may start a tag, which a preview holds
back and the final text shows: the final text differs from every preview, so it is an edit too."""


class Moderation:
    """A content filter: counts the text segments it sees and masks a word."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, segment: Segment) -> Segment:
        if segment.kind is not SegmentKind.TEXT:
            return segment
        self.calls += 1
        return attrs.evolve(segment, text=segment.text.replace("bad", "***"))


def _source(deltas: list[str]) -> reactivex.Observable[RawStreamChunk]:
    # Each chunk on its own loop turn, as from a socket.
    return reactivex.from_iterable(deltas).pipe(
        ops.concat_map(
            lambda d: reactivex.timer(0.0).pipe(ops.map(lambda _: RawStreamChunk(provider="t", data=d)))
        )
    )


async def _run(mode: DeliveryMode, pipeline: Pipeline) -> tuple[EditRecorder, StreamResult]:
    config = StreamConfig(delivery=mode, typing_interval=0)
    sink = EditRecorder()
    context = StreamContext(channel_id="7")
    delivery: EditInPlaceDelivery | DiscordDelivery
    if mode is DeliveryMode.EDIT:
        delivery = EditInPlaceDelivery(sink=sink, context=context, config=config)
    else:
        delivery = DiscordDelivery(sink=sink, context=context, config=config)
    handle = StopHandle("1")
    chain = build_chain(
        _source(_DELTAS),
        normalizer=TextFeed,
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=delivery.send,
        merge=delivery.merge if mode is not DeliveryMode.AGGREGATED else None,
        pipeline=pipeline,
    )
    [result] = await drain(chain)
    return sink, result


def test_a_filter_after_flush_sees_every_create_and_every_edit_in_edit_mode() -> None:
    moderation = Moderation()
    pipeline = Pipeline.default().insert_after("flush", "moderation", ops.map(moderation))
    sink, result = asyncio.run(_run(DeliveryMode.EDIT, pipeline))
    assert result.status is StreamStatus.COMPLETED
    creates = len(sink.contents)
    assert sink.edit_calls > 5  # previews were shown as the text grew
    assert moderation.calls == creates + sink.edit_calls
    assert len(sink.shown) == creates + sink.edit_calls
    assert all("bad" not in content and "***" in content for content in sink.shown), sink.shown
    expected = "".join(_DELTAS).replace("bad", "***").strip()
    assert sink.visible() == [expected]


@pytest.mark.parametrize("point", ["flush", "clean", "typing"])
def test_the_final_text_with_a_user_stage_is_the_aggregated_one(point: str) -> None:
    """Wherever the stage sits between flush and deliver, edit mode ends on aggregated's messages."""
    outcomes = {}
    for mode in (DeliveryMode.EDIT, DeliveryMode.AGGREGATED):
        moderation = Moderation()
        pipeline = Pipeline.default().insert_after(point, "moderation", ops.map(moderation))
        outcomes[mode] = asyncio.run(_run(mode, pipeline))
    edit_sink, edit_result = outcomes[DeliveryMode.EDIT]
    agg_sink, agg_result = outcomes[DeliveryMode.AGGREGATED]
    assert edit_sink.visible() == agg_sink.contents
    assert edit_result.accumulated_text == agg_result.accumulated_text
    assert all("bad" not in content for content in edit_sink.shown)


def test_previews_pass_the_cleaner_of_the_pipeline() -> None:
    """The lane is the pipeline's own stages: without 'clean', neither the previews nor the final text
    are cleaned (a zero-width space stays), with it both are."""
    deltas = ["Hi\u200b there ", *[f"w{i} " for i in range(30)]]
    for pipeline, kept in ((Pipeline.default(), False), (Pipeline.default().remove("clean"), True)):
        config = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
        sink = EditRecorder()
        delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(), config=config)
        handle = StopHandle("1")
        chain = build_chain(
            _source(deltas),
            normalizer=TextFeed,
            config=config,
            stops=handle.signals,
            stop_sink=handle.subject,
            send=delivery.send,
            merge=delivery.merge,
            pipeline=pipeline,
        )
        asyncio.run(drain(chain))
        assert len(sink.shown) > 2
        assert all(("\u200b" in content) is kept for content in sink.shown), (kept, sink.shown)


def _preview(text: str, **flags: bool) -> Preview:
    return Preview(kind=SegmentKind.PREVIEW, deltas=[text], count=1, chars=len(text), **flags)


def test_previews_go_around_a_slow_stage_and_the_end_marker_waits_for_it() -> None:
    """Marbles: p and q pass at once (with the lane), the segment a takes 3 ticks, the closing
    marker c comes after A, when the stage completes."""
    scheduler = TestScheduler()
    p, q, c = _preview("p"), _preview("pq"), _preview("", closing=True)
    a = Segment(kind=SegmentKind.TEXT, text="a", final=True)
    source = scheduler.create_hot_observable(
        ReactiveTest.on_next(210, p),
        ReactiveTest.on_next(220, a),
        ReactiveTest.on_next(221, q),
        ReactiveTest.on_next(230, c),
        ReactiveTest.on_completed(231),
    )
    lane = ops.map(lambda s: s)
    slow = ops.delay(3.0)
    observer = scheduler.start(lambda: source.pipe(around_previews(slow, lane)))
    seen = [(m.time, m.value.kind, m.value.value if m.value.kind == "N" else None) for m in observer.messages]
    assert [(t, k) for t, k, _ in seen] == [(210, "N"), (221, "N"), (223, "N"), (234, "N"), (234, "C")]
    values: list[Any] = [v for _, _, v in seen[:4]]
    assert values[0] == p and values[0].lane is lane
    assert values[1] == q and values[1].lane is lane
    assert values[2] is a
    assert values[3] is c and c.lane is None  # the marker carries no text to run through the lane


def test_a_sent_preview_waits_for_the_lane_and_shows_what_it_made() -> None:
    """Marbles: the preview's text through a lane that takes 5 ticks arrives 5 ticks after
    subscription, filtered."""
    scheduler = TestScheduler()
    config = StreamConfig(delivery=DeliveryMode.EDIT)
    lane = reactivex.compose(ops.delay(5.0), ops.map(Moderation()))
    preview = _preview("a bad day")
    observer = scheduler.start(lambda: through_lane(preview, lane, config), created=0, subscribed=100)
    assert observer.messages == [ReactiveTest.on_next(105, "a *** day"), ReactiveTest.on_completed(105)]


@pytest.mark.parametrize("mode", [DeliveryMode.LIVE, DeliveryMode.AGGREGATED])
def test_live_and_aggregated_deliver_no_preview_and_no_lane(mode: DeliveryMode) -> None:
    """The preview route is edit mode's only: a stage after flush sees the same segments as before."""
    seen: list[Segment] = []
    pipeline = Pipeline.default().insert_after("flush", "spy", ops.do_action(seen.append))
    sink, result = asyncio.run(_run(mode, pipeline))
    assert seen and not any(isinstance(s, Preview) for s in seen)
    assert (
        "".join(s.text for s in seen if s.kind is SegmentKind.TEXT).strip() == result.accumulated_text.strip()
    )
    assert sink.edit_calls == 0


def test_a_memory_sink_aggregated_run_sends_one_filtered_message() -> None:
    moderation = Moderation()
    pipeline = Pipeline.default().insert_after("flush", "moderation", ops.map(moderation))
    sink, _ = asyncio.run(_run(DeliveryMode.AGGREGATED, pipeline))
    assert isinstance(sink, MemorySink)
    assert moderation.calls == 1
    assert sink.contents == ["".join(_DELTAS).replace("bad", "***").strip()]


def test_a_slow_user_stage_keeps_the_final_text_last() -> None:
    """An asynchronous stage after clean (a moderation call): every edit filtered, the final
    text is the one left, and the previews' deletion marker waits for the stage."""
    moderation = Moderation()
    slow = reactivex.compose(ops.delay(0.002), ops.map(moderation))
    sink, result = asyncio.run(
        _run(DeliveryMode.EDIT, Pipeline.default().insert_after("clean", "slow", slow))
    )
    assert result.status is StreamStatus.COMPLETED
    assert sink.edit_calls > 0
    # A preview that went around the delayed final segment may show all the deltas; the final
    # text still differs (the held "<", see _DELTAS), so it is an edit and the count is exact.
    assert moderation.calls == len(sink.contents) + sink.edit_calls
    assert sink.visible() == ["".join(_DELTAS).replace("bad", "***").strip()]
    assert all("bad" not in content for content in sink.shown)
    assert not sink.deleted  # the end marker did not overtake the final text


def test_a_final_text_cleaned_to_nothing_deletes_the_previews_behind_a_slow_stage() -> None:
    """Previews showed the text; a stage cleans the final text to nothing (here: drops it): the
    closing marker comes after the (delayed, empty) final text and the messages are deleted.

    (A speaker prefix alone, ``Assistant: ``, is no longer shown at all: the first message waits
    for the first words' boundary, and the cleaner removes the prefix from that preview too.)"""
    config = StreamConfig(delivery=DeliveryMode.EDIT, typing_interval=0)
    sink = EditRecorder()
    delivery = EditInPlaceDelivery(sink=sink, context=StreamContext(), config=config)
    handle = StopHandle("1")
    pipeline = (
        Pipeline.default()
        .insert_after("clean", "slow", ops.delay(0.002))
        .insert_after("slow", "drop_final", ops.filter(lambda segment: not segment.final))
    )
    chain = build_chain(
        _source(list("Hi there. This is long enough.")),
        normalizer=TextFeed,
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=delivery.send,
        merge=delivery.merge,
        pipeline=pipeline,
    )
    asyncio.run(drain(chain))
    assert sink.shown  # a preview was shown
    assert sink.visible() == []
    assert sink.deleted
