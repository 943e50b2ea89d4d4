"""DiscordDelivery.send: a segment's messages go out in order from one coroutine; disposal cancels it."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from reactivex.scheduler.eventloop import AsyncIOScheduler
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Delivery, Segment, SentMessage
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.flush import Flusher
from rxcord.sinks.delivery import DiscordDelivery

from tests.operators.test_split_message import fences_balanced


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
