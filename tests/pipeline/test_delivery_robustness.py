"""Stage 07 under failure and stops, on the asyncio loop (issue 14).

* typing is best effort: a failing typing call never aborts the reply;
* stops are obeyed at once: paced delays and queued sends are interrupted;
* a follow-up interrupt after the provider finished discards what is still queued.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import aiohttp
import pytest
import reactivex
from rxcord.compose.chain import build_chain
from rxcord.core.config import RenderModifiers, StreamConfig, StreamContext
from rxcord.core.errors import DiscordError
from rxcord.core.state import StreamResult
from rxcord.core.stops import StopHandle
from rxcord.core.types import DeliveryMode, ProcessedChunk, RawStreamChunk, StreamStatus
from rxcord.operators.aio import drain
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.memory import MemorySink


class _Feed:
    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        return [ProcessedChunk.text(raw.data)]

    def finish(self) -> Sequence[ProcessedChunk]:
        return []


def _chain(
    source: reactivex.Observable[RawStreamChunk], sink: Any, config: StreamConfig, handle: StopHandle
) -> reactivex.Observable[StreamResult]:
    delivery = DiscordDelivery(
        sink=sink, context=StreamContext(channel_id="1"), config=config, stops=handle.subject
    )
    return build_chain(
        source,
        normalizer=_Feed,
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
@pytest.mark.parametrize("mode", list(DeliveryMode))
def test_failing_typing_never_aborts_the_reply(failure: BaseException, mode: DeliveryMode) -> None:
    """Every typing call fails: the reply is still delivered and the stream completes."""
    sink = MemorySink(typing_failures={n: failure for n in range(1, 50)})
    config = StreamConfig(delivery=mode, typing_interval=5.0)

    async def main() -> StreamResult:
        results = await drain(_chain(_raw("Hello ", "there."), sink, config, StopHandle("1")))
        return results[-1]

    result = asyncio.run(main())
    assert result.status is StreamStatus.COMPLETED
    assert sink.contents() == ["Hello there."]
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
    assert "".join(sink.contents()).replace("\n", "") == "One.Two.Three."
    assert sink.typing_calls >= 1
