"""Stage 07 under failure and stops, on the asyncio loop (issue 14).

* typing is best effort: a failing typing call never aborts the reply;
* stops are obeyed at once: paced delays and queued sends are interrupted;
* a follow-up interrupt after the provider finished discards what is still queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import aiohttp
import pytest
import reactivex
from reactivex.subject import Subject

from rxcord.compose.chain import build_chain
from rxcord.core.config import RenderModifiers, StreamConfig, StreamContext
from rxcord.core.errors import DiscordError
from rxcord.core.state import SentMessage, StreamResult
from rxcord.core.stops import StopHandle
from rxcord.core.types import DeliveryMode, RawStreamChunk, StopKind, StreamStatus
from rxcord.operators.aio import drain
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink
from tests.chain_harness import TextFeed

MODES = [DeliveryMode.AGGREGATED, DeliveryMode.LIVE]
"""The delivery modes this chain harness drives (edit-in-place has its own delivery)."""


def _chain(
    source: reactivex.Observable[RawStreamChunk], sink: Any, config: StreamConfig, handle: StopHandle
) -> reactivex.Observable[StreamResult]:
    delivery = DiscordDelivery(
        sink=sink, context=StreamContext(channel_id="1"), config=config, stops=handle.subject
    )
    return build_chain(
        source,
        normalizer=TextFeed,
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=delivery.send,
        merge=delivery.merge if delivery.coalesces else None,
    )


def _raw(*texts: str) -> reactivex.Observable[RawStreamChunk]:
    return reactivex.from_iterable([RawStreamChunk(provider="t", data=t) for t in texts])


@pytest.mark.parametrize(
    "failure",
    [
        DiscordError(status=500, message="internal"),
        DiscordError(status=429, code=None, message="rate limited"),
        aiohttp.ServerDisconnectedError(),
        ConnectionResetError("reset"),
    ],
    ids=["5xx", "429", "disconnect", "reset"],
)
@pytest.mark.parametrize("mode", MODES)
def test_failing_typing_never_aborts_the_reply(failure: BaseException, mode: DeliveryMode) -> None:
    """Every typing call fails: the reply is still delivered and the stream completes."""
    sink = MemorySink(typing_failures={n: failure for n in range(1, 50)})
    config = StreamConfig(delivery=mode, typing_interval=5.0)

    async def main() -> StreamResult:
        results = await drain(_chain(_raw("Hello ", "there."), sink, config, StopHandle("1")))
        return results[-1]

    result = asyncio.run(main())
    assert result.status is StreamStatus.COMPLETED
    assert sink.contents == ["Hello there."]
    assert sink.typing_calls >= 1


def test_failing_typing_between_paced_messages_never_aborts_the_reply() -> None:
    """Paced delivery types before each follow-up message: a failure there is ignored too."""
    sink = MemorySink(typing_failures={n: DiscordError(status=503) for n in range(1, 50)})
    render = RenderModifiers(paced_messages=True, seed=1)
    config = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, render=render, live_idle_flush=0.01)

    async def main() -> StreamResult:
        source = _raw("One.\n\n", "Two.\n\n", "Three.")
        return (await drain(_chain(source, sink, config, StopHandle("1"))))[-1]

    result = asyncio.run(main())
    assert result.status is StreamStatus.COMPLETED
    assert "".join(sink.contents).replace("\n", "") == "One.Two.Three."
    assert sink.typing_calls >= 1


# ------------------------------------------------------------------------------------ stops at once


class _GateSink(MemorySink):
    """A memory sink whose message number *hold_at* waits until ``release`` (and may stop first)."""

    def __init__(self, hold_at: int = 0) -> None:
        super().__init__()
        self.hold_at = hold_at
        self.gate = asyncio.Event()
        self.holding = asyncio.Event()

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        if self.send_calls + 1 == self.hold_at:
            self.holding.set()
            await self.gate.wait()
        return await super().create_message(context, payload)


LONG_PAUSES = {"_TYPING_CAP": 3600.0, "_TYPING_SECONDS_PER_CHAR": 100.0}
"""Pacing pauses of an hour: a stop that did not cut them would hit the test's timeout."""


@pytest.fixture
def long_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    import rxcord.sinks.delivery as delivery_module

    for name, value in LONG_PAUSES.items():
        monkeypatch.setattr(delivery_module, name, value)


def _paced(**kw: Any) -> StreamConfig:
    render = RenderModifiers(paced_messages=True, seed=3)
    return StreamConfig(
        delivery=DeliveryMode.LIVE, typing_interval=0, render=render, live_idle_flush=0.01, **kw
    )


@pytest.mark.usefixtures("long_pauses")
@pytest.mark.parametrize("kind", [StopKind.INTERRUPT, StopKind.USER])
def test_stop_cuts_a_paced_pause_after_the_provider_finished(kind: StopKind) -> None:
    """The provider is done, message 2 waits behind an hour-long pause: a stop ends the wait at once.

    An interrupt discards the rest (``follow_up_interrupt``); a user stop sends it without pauses.
    """
    sink = MemorySink()
    handle = StopHandle("1")

    async def main() -> StreamResult:
        loop = asyncio.get_running_loop()
        chain = _chain(_raw("One.\n\n", "Two.\n\n", "Three."), sink, _paced(), handle)
        task = asyncio.ensure_future(drain(chain))
        while not sink.contents:
            await asyncio.sleep(0.01)
        loop.call_later(0.05, handle.stop, kind)
        return (await asyncio.wait_for(task, 60))[-1]

    result = asyncio.run(main())
    if kind is StopKind.INTERRUPT:
        assert result.status is StreamStatus.FOLLOW_UP_INTERRUPT
        assert sink.contents == ["One."]
    else:
        assert result.status is StreamStatus.COMPLETED
        assert "".join(sink.contents).replace("\n", "") == "One.Two.Three."


def test_interrupt_after_the_provider_finished_discards_queued_sends() -> None:
    """Message 1 is in flight, the rest queued, the provider done: an interrupt sends nothing more."""
    sink = _GateSink(hold_at=1)
    handle = StopHandle("1")
    config = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=0.01)

    async def main() -> StreamResult:
        source = _raw("One.\n\n", "Two.\n\n", "Three.\n\n", "Four.")
        task = asyncio.ensure_future(drain(_chain(source, sink, config, handle)))
        await sink.holding.wait()
        handle.stop(StopKind.INTERRUPT)
        sink.gate.set()
        return (await asyncio.wait_for(task, 60))[-1]

    result = asyncio.run(main())
    assert result.status is StreamStatus.FOLLOW_UP_INTERRUPT
    assert len(sink.contents) == 1 and sink.contents[0].startswith("One.")
    assert result.accumulated_text.strip() == sink.contents[0]


def test_interrupt_during_generation_discards_queued_sends() -> None:
    """The provider still streams, sends are queued behind message 1: an interrupt drops them all."""
    sink = _GateSink(hold_at=1)
    handle = StopHandle("1")
    config = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=0.01)
    source: Subject[RawStreamChunk] = Subject()

    async def main() -> StreamResult:
        task = asyncio.ensure_future(drain(_chain(source, sink, config, handle)))
        await asyncio.sleep(0)
        for text in ("One.\n\n", "Two.\n\n", "Three.\n\n", "Four.\n\n", "Five"):
            source.on_next(RawStreamChunk(provider="t", data=text))
        await sink.holding.wait()
        for _ in range(5):
            await asyncio.sleep(0.02)  # let the idle flush queue what it can
        handle.stop(StopKind.INTERRUPT)
        sink.gate.set()
        return (await asyncio.wait_for(task, 60))[-1]

    result = asyncio.run(main())
    assert result.status is StreamStatus.FOLLOW_UP_INTERRUPT
    assert len(sink.contents) == 1 and sink.contents[0].startswith("One.")


def test_interrupt_after_everything_was_delivered_changes_nothing() -> None:
    """A late interrupt with nothing left to discard: the stream stays ``completed``."""
    sink = MemorySink()
    handle = StopHandle("1")
    config = StreamConfig(delivery=DeliveryMode.LIVE, typing_interval=0, live_idle_flush=0.01)

    async def main() -> StreamResult:
        result = (await drain(_chain(_raw("Done."), sink, config, handle)))[-1]
        handle.stop(StopKind.INTERRUPT)
        return result

    result = asyncio.run(main())
    assert result.status is StreamStatus.COMPLETED and sink.contents == ["Done."]


# ------------------------------------------------------------------------- delivered vs generated


@pytest.mark.parametrize("mode", MODES)
def test_message_cap_reports_only_the_delivered_text(mode: DeliveryMode) -> None:
    """A reply of five messages capped at two: the delivered text is what the two carry, not all five."""
    paragraphs = [f"{i}" + "y" * 1500 for i in range(5)]
    text = "\n\n".join(paragraphs)
    sink = MemorySink()
    config = StreamConfig(delivery=mode, typing_interval=0, live_idle_flush=0.01, max_messages=2)

    async def main() -> StreamResult:
        return (await drain(_chain(_raw(text), sink, config, StopHandle("1"))))[-1]

    result = asyncio.run(main())
    assert result.status is StreamStatus.SEND_MESSAGE_LIMIT
    assert len(sink.contents) == 2
    assert result.visible_text == text
    assert result.accumulated_text.split() == "\n".join(sink.contents).split()
    assert result.accumulated_text != result.visible_text
