"""DiscordDelivery.send: a segment's messages go out in order from one coroutine; disposal cancels it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.scheduler.eventloop import AsyncIOScheduler
from reactivex.subject import Subject

from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Delivery, Segment, SentMessage
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.clean import SegmentCleaner
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.cut_policy import is_blank_piece
from rxcord.sinks.deliver import deliver
from rxcord.sinks.delivery import DiscordDelivery
from tests.sinks.test_split_message import fences_balanced
from tests.strategies import CUTS, cut


class _GatedSink:
    """Accepts messages at once, except the one numbered *hold_at* (1-based), which waits forever."""

    def __init__(self, hold_at: int) -> None:
        self.hold_at = hold_at
        self.started: list[str] = []
        self.cancelled = False

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        self.started.append(str(payload.get("content", "")))
        if len(self.started) == self.hold_at:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        return SentMessage(payload=payload, message_id=str(len(self.started)))

    async def trigger_typing(self, context: StreamContext) -> None:
        return None


def _segment(messages: int) -> Segment:
    # Paragraphs of 1,500 characters: one message each (the limit is 2,000).
    return Segment(kind=SegmentKind.TEXT, text="\n\n".join(f"{i}" + "x" * 1500 for i in range(messages)))


def test_a_long_segment_is_sent_in_order_as_one_delivery() -> None:
    """Every message of the segment, in order, in one Delivery."""

    async def main() -> list[Delivery]:
        sink = _GatedSink(hold_at=0)
        delivery = DiscordDelivery(sink=sink, context=StreamContext(), config=StreamConfig())
        out: list[Delivery] = []
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        delivery.send(_segment(4)).subscribe(
            out.append, done.set_exception, lambda: done.set_result(None), scheduler=AsyncIOScheduler(loop)
        )
        await done
        return out

    (result,) = asyncio.run(main())
    assert [m.payload["content"][0] for m in result.messages] == ["0", "1", "2", "3"]
    assert [m.message_id for m in result.messages] == ["1", "2", "3", "4"]


def test_disposing_mid_segment_cancels_the_send_in_flight_and_sends_nothing_more() -> None:
    """A kill while message 2 of 4 is in flight: message 2 is cancelled, 3 and 4 never start."""

    async def main() -> tuple[_GatedSink, list[Delivery]]:
        sink = _GatedSink(hold_at=2)
        delivery = DiscordDelivery(sink=sink, context=StreamContext(), config=StreamConfig())
        out: list[Delivery] = []
        subscription = delivery.send(_segment(4)).subscribe(
            out.append, scheduler=AsyncIOScheduler(asyncio.get_running_loop())
        )
        while len(sink.started) < 2:
            await asyncio.sleep(0)
        subscription.dispose()
        for _ in range(5):
            await asyncio.sleep(0)
        return sink, out

    sink, out = asyncio.run(main())
    assert sink.cancelled
    assert len(sink.started) == 2
    assert out == []


# -- coalesced live segments of a long code block (issue 14) ---------------------------------------------

_GLUED = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n]*(?:`{3,}|~{3,})", re.MULTILINE)


def _live_segments(text: str, limit: int) -> list[Segment]:
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=limit, max_flushes=10**6)
    flusher = Flusher(config)
    out: list[Segment] = []
    for i in range(0, len(text), 7):
        out += flusher.push(text[i : i + 7])
    return out + flusher.flush(final=True)


def test_coalesced_pieces_of_a_long_code_block_never_glue_a_close_to_a_reopen() -> None:
    """Segments queued behind a send are merged: the cut's close and reopen go, no ```` ``````python ````."""
    code = "".join(f"    value_{i} = compute({i})\n" for i in range(60))
    segments = _live_segments("Intro.\n\n```python\n" + code + "```\n\nAfter.", 400)
    assert sum(s.text.startswith("```python\n") for s in segments) > 2
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=400)
    delivery = DiscordDelivery(sink=_GatedSink(hold_at=0), context=StreamContext(), config=config)
    merged = segments[0]
    for segment in segments[1:]:
        item = delivery.merge(merged, segment)
        assert isinstance(item, Segment)
        merged = item
    assert "```python\n" + code + "```" in merged.text
    messages = [p["content"] for p in delivery.payloads(merged)]
    assert len(messages) > 1
    for message in messages:
        assert not _GLUED.search(message), message
        assert fences_balanced(message) and len(message) <= 400


# -- stages 05-07 as one function of the bytes: properties over random chunkings --------------------------

_ATOMS = [
    "\n",
    "\n\n",
    " ",
    "Hello there.",
    "word ",
    "```python\n",
    "```\n",
    "~~~\n",
    "    total += value  # keep the running total\n",
    "x = 1\n",
    "\n\n\n",
    "- item\n",
    ">>> quoted\n",
    "| a | b |\n",
    "|---|--:|\n",
    "| 1 | 22 |\n",
    "`span`",
    "`",
    "<think>",
    "</think>",
    "a_very_long_identifier_without_spaces_" * 3,
]
_TEXT = st.lists(
    st.one_of(st.sampled_from(_ATOMS), st.text(alphabet="ab .\n", max_size=20)), max_size=80
).map("".join)


def _messages(
    config: StreamConfig,
    chunks: list[str],
    idle: frozenset[int] = frozenset(),
    merges: list[bool] | None = None,
) -> list[str]:
    """What Discord receives: flusher (05), cleaner (06), coalescing and splitting (07)."""
    flusher = Flusher(config)
    segments: list[Segment] = []
    for i, chunk in enumerate(chunks):
        segments += flusher.push(chunk)
        if i in idle:
            segments += flusher.idle()
    segments += flusher.flush(final=True)
    cleaner = SegmentCleaner(config)
    cleaned = [out for segment in segments for out in cleaner.feed(segment) if out.kind is SegmentKind.TEXT]
    delivery = DiscordDelivery(sink=_GatedSink(hold_at=0), context=StreamContext(), config=config)
    queue: list[Segment] = []
    for k, segment in enumerate(cleaned):
        merged = delivery.merge(queue[-1], segment) if queue and merges and merges[k % len(merges)] else None
        if isinstance(merged, Segment):
            queue[-1] = merged
        else:
            queue.append(segment)
    return [str(p["content"]) for segment in queue for p in delivery.payloads(segment)]


@settings(max_examples=150, deadline=None)
@given(_TEXT, CUTS, st.sampled_from([64, 200, 2000]))
def test_aggregated_messages_do_not_depend_on_chunking(text: str, cuts: list[int], limit: int) -> None:
    """The same bytes cut anywhere give the same Discord messages in aggregated mode."""
    config = StreamConfig(delivery=DeliveryMode.AGGREGATED, message_limit=limit, max_flushes=10**6)
    assert _messages(config, cut(text, cuts)) == _messages(config, [text])


@settings(max_examples=200, deadline=None)
@given(
    _TEXT,
    CUTS,
    st.frozensets(st.integers(0, 30)),
    st.lists(st.booleans(), min_size=1, max_size=8),
    st.sampled_from([40, 64, 200]),
)
def test_every_live_message_is_well_formed(
    text: str, cuts: list[int], idle: frozenset[int], merges: list[bool], limit: int
) -> None:
    """Live mode, any chunking, idle flushes and coalescing: each message fits, balances its fences, is
    never fences alone, and never glues a closing and a reopening fence on one line."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=limit, max_flushes=10**6)
    for message in _messages(config, cut(text, cuts), idle, merges):
        assert 0 < len(message) <= limit and message.strip()
        assert not is_blank_piece(message), message
        assert fences_balanced(message), message
        for glued in _GLUED.finditer(message):
            assert glued.group(0).strip() in text, message


def test_a_long_block_queued_behind_a_slow_send_reaches_discord_as_whole_blocks() -> None:
    """Live pieces of a long block queue behind a send in flight and are coalesced by ``deliver``:
    Discord gets balanced blocks, none with a closing fence glued to a reopening one."""
    code = "".join(f"    total += values[{i}]  # running sum\n" for i in range(120))
    segments = _live_segments("Intro.\n\n```python\n" + code + "```\n\nDone.", 2000)
    assert sum(s.text.endswith("\n```") for s in segments) >= 2

    async def main() -> list[str]:
        release = asyncio.Event()

        class _SlowFirst(_GatedSink):
            async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
                if not self.started:
                    self.started.append(str(payload.get("content", "")))
                    await release.wait()
                    return SentMessage(payload=payload, message_id="1")
                return await super().create_message(context, payload)

        sink = _SlowFirst(hold_at=0)
        config = StreamConfig(delivery=DeliveryMode.LIVE)
        delivery = DiscordDelivery(sink=sink, context=StreamContext(), config=config)
        assert delivery.coalesces
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        source: Subject[Segment] = Subject()
        source.pipe(deliver(delivery.send, delivery.merge)).subscribe(
            on_error=done.set_exception,
            on_completed=lambda: done.set_result(None),
            scheduler=AsyncIOScheduler(loop),
        )
        for segment in segments:
            source.on_next(segment)
        source.on_completed()
        release.set()
        await done
        return sink.started

    sent = asyncio.run(main())
    assert len(sent) < len(segments)  # the queued pieces were coalesced
    for message in sent:
        assert not _GLUED.search(message), message
        assert fences_balanced(message) and len(message) <= 2000
    assert "".join(sent).count("values[119]") == 1
