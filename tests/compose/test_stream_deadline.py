"""The overall stream deadline (``StreamConfig.max_stream_seconds``): a trickle is stopped, its text kept.

``idle_timeout`` never trips on a provider sending one delta a second; the deadline does,
on the injected scheduler: under virtual time in the marble tests, on the event loop
against the replay server. The stop is typed (status ``stream_deadline``) and the text
streamed so far is delivered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.compose.chain import build_chain
from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import Delivery, Segment, SentMessage, StreamResult, TypingPulse
from rxcord.core.stops import StopHandle
from rxcord.core.types import ProcessedChunk, RawStreamChunk, SegmentKind, StopKind, StopSignal, StreamStatus
from rxcord.operators.stop_gate import stop_gate
from rxcord.operators.stream_deadline import deadline_signal, with_deadline
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import Chunking, ReplayServer
from tests.marbles import marbles

CHUNKS = {c: ProcessedChunk.text(c) for c in "abcdefg"}


def _label(item: ProcessedChunk | StopSignal) -> str:
    if isinstance(item, StopSignal):
        return "S" if item.kind is StopKind.STREAM_DEADLINE else item.kind.value
    return item.content


def test_marble_a_trickle_is_stopped_at_the_deadline() -> None:
    """A chunk every two ticks never trips an idle bound; the deadline at 6 stops it, source disposed."""
    with marbles() as m:
        source = m.cold("-a-b-c-d-e-f-g-|", CHUNKS)
        "                0123456789"
        results = m.start(source.pipe(stop_gate(with_deadline(m.cold("-"), 6.0)), ops.map(_label)))
        assert results == m.exp("-a-b-c(S,|)", {c: c for c in "abc"} | {"S": "S"})


def test_marble_no_deadline_passes_everything() -> None:
    """``None`` disables the deadline: the same trickle runs to its end."""
    with marbles() as m:
        source = m.cold("-a-b-c-d-e-f-g-|", CHUNKS)
        results = m.start(source.pipe(stop_gate(with_deadline(m.cold("-"), None)), ops.map(_label)))
        assert results == m.exp("-a-b-c-d-e-f-g-|", {c: c for c in "abcdefg"})


def test_the_deadline_disposes_the_source_and_its_timer() -> None:
    """At the deadline the source is unsubscribed (the HTTP request closes); a stream ending first
    cancels the timer (nothing fires later)."""
    scheduler = TestScheduler()
    events = [ReactiveTest.on_next(t, CHUNKS["a"]) for t in range(10, 200, 10)]
    source = scheduler.create_cold_observable(*events)
    scheduler.start(lambda: source.pipe(stop_gate(with_deadline(reactivex.never(), 45.0))))
    assert source.subscriptions == [ReactiveTest.subscribe(200, 245)]
    scheduler = TestScheduler()
    short = scheduler.create_cold_observable(
        ReactiveTest.on_next(5, CHUNKS["a"]), ReactiveTest.on_completed(8)
    )
    observer = scheduler.start(lambda: short.pipe(stop_gate(with_deadline(reactivex.never(), 45.0))))
    assert [m.value.kind for m in observer.messages] == ["N", "C"]
    assert not scheduler._queue  # the deadline's timer went with the stream
    assert "max_stream_seconds" in deadline_signal(45.0).reason  # the stop names the setting


class _PassThrough:
    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        return [raw.data]

    def finish(self) -> Sequence[ProcessedChunk]:
        return []


def _send(item: Segment | TypingPulse) -> Observable[Delivery]:
    if isinstance(item, TypingPulse) or item.kind is not SegmentKind.TEXT:
        return reactivex.just(Delivery(segment=item if isinstance(item, Segment) else None))
    return reactivex.just(Delivery(segment=item, messages=(SentMessage(payload={"content": item.text}),)))


def _chain_result(config: StreamConfig, ticks: Sequence[int]) -> tuple[StreamResult, Any]:
    scheduler = TestScheduler()
    handle = StopHandle("1")
    events = [
        ReactiveTest.on_next(t, RawStreamChunk(provider="t", data=ProcessedChunk.text(f"w{t} ")))
        for t in ticks
    ]
    source = scheduler.create_cold_observable(*events, ReactiveTest.on_completed(ticks[-1] + 1))
    chain = build_chain(
        source,
        normalizer=_PassThrough,
        config=config,
        stops=handle.signals,
        stop_sink=handle.subject,
        send=_send,
    )
    observer = scheduler.start(lambda: chain, disposed=100_000)
    [result] = [m.value.value for m in observer.messages if m.value.kind == "N"]
    return result, source


def test_the_whole_chain_stops_a_trickle_at_the_deadline_and_delivers_its_text() -> None:
    """One delta every 10 ticks, never idle for 30: stopped at 55 with the five deltas before it delivered."""
    config = StreamConfig(typing_interval=0, idle_timeout=30.0, max_stream_seconds=55.0)
    result, source = _chain_result(config, range(10, 1000, 10))
    assert result.status is StreamStatus.STREAM_DEADLINE
    assert result.accumulated_text.split() == ["w10", "w20", "w30", "w40", "w50"]  # delivered, not lost
    assert result.visible_text.split() == ["w10", "w20", "w30", "w40", "w50"]
    assert [m.payload["content"].split() for m in result.messages] == [["w10", "w20", "w30", "w40", "w50"]]
    assert source.subscriptions == [ReactiveTest.subscribe(200, 255)]


def test_the_default_deadline_is_generous_and_none_disables_it() -> None:
    """600 s by default: a 100-tick trickle completes; None lets even a 2000-tick one complete."""
    result, _ = _chain_result(StreamConfig(typing_interval=0), range(10, 100, 10))
    assert result.status is StreamStatus.COMPLETED and len(result.visible_text.split()) == 9
    config = StreamConfig(typing_interval=0, max_stream_seconds=None)
    result, _ = _chain_result(config, range(10, 2000, 10))
    assert result.status is StreamStatus.COMPLETED and len(result.visible_text.split()) == 199


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_a_deadline_that_is_not_a_positive_number_is_refused(bad: float) -> None:
    """The refusal names the setting."""
    with pytest.raises(InputError, match="max_stream_seconds"):
        StreamConfig(max_stream_seconds=bad)


def _delta(text: str) -> bytes:
    event = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": text}}]}
    return b"data: " + json.dumps(event).encode() + b"\n\n"


async def test_a_trickling_provider_is_stopped_at_a_small_deadline() -> None:
    """The replay server trickles a delta every 0.5 s for 20 s; a 2 s deadline stops it with its text kept.

    Asserted on what was sent and kept, not on timing: the text delivered is a prefix of the
    answer, at least the first write (sent at once), and the server saw the client close early.
    """
    words = [f"w{i:02d} " for i in range(40)]
    body = b"".join(_delta(w) for w in words) + b"data: [DONE]\n\n"
    sink = MemorySink()
    one_event = Chunking(size=len(_delta(words[0])))  # every event is as long: one write each
    async with ReplayServer(body=body, chunking=one_event, pace=0.5) as server:
        result = await stream_to_discord(
            OpenAIAdapter(),
            ChatRequest(model="m", messages=(Message.user("hi"),)),
            sink=sink,
            base_url=f"{server.base_url}/v1",
            api_key="k",
            context=StreamContext(channel_id="1"),
            config=StreamConfig(max_stream_seconds=2.0),
            transport=TransportConfig(allow_private_network=True),
        )
        await server.wait_finished(5)
    assert result.status is StreamStatus.STREAM_DEADLINE
    delivered = result.visible_text.split()
    assert delivered and delivered == [w.strip() for w in words[: len(delivered)]] and len(delivered) < 40
    assert [p["content"] for p in sink.payloads] == [result.visible_text.strip()]
    assert server.requests[0].closed_early and not server.requests[0].completed
