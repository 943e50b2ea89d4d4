"""Stages 05-07 end to end against the Discord emulator: concurrency, routing, failures, caps, mentions."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.core.types import DeliveryMode, StreamStatus
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.ratelimit import RateLimiter
from rxcord.sinks.rest import Backoff, RestSink
from rxcord.testing.emulator import ROUTE_CREATE, DiscordEmulator, EmulatorConfig, Fault
from rxcord.testing.replay import Chunking, ReplayServer
from tests.conftest import DEMO_DATA

LONG = (DEMO_DATA / "openrouter_reasoning_code.sse").read_bytes()
LOCAL = TransportConfig(allow_private_network=True)  # the replay server is on 127.0.0.1
FAST = EmulatorConfig(channel_limit=5, channel_window=0.5, global_limit=50, global_window=1.0)


def _answer(text: str) -> bytes:
    out = []
    for i in range(0, len(text), 5):
        out.append(
            "data: "
            + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": text[i : i + 5]}}]})
        )
    out.append('data: {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}')
    return ("\n\n".join(out) + "\n\ndata: [DONE]\n\n").encode()


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    """A Discord emulator with fast (but real-shaped) limits."""
    emu = DiscordEmulator(
        EmulatorConfig(**{k: getattr(FAST, k) for k in ("channel_limit", "channel_window")})
    )
    await emu.start()
    try:
        yield emu
    finally:
        await emu.close()


async def _stream(
    emu: DiscordEmulator,
    body: bytes,
    context: StreamContext,
    config: StreamConfig,
    *,
    sink: RestSink | None = None,
    session: aiohttp.ClientSession | None = None,
    pace: float = 0.0,
) -> StreamResult:
    async with ReplayServer(body=body, chunking=Chunking(seed=5), pace=pace) as server:
        adapter = OpenRouterAdapter()
        http = adapter.build_request(
            ChatRequest(model="m", messages=(Message.user("hi"),)), base_url=server.base_url, api_key="k"
        )
        own = session is None
        session = session or aiohttp.ClientSession()
        try:
            rest = sink or RestSink(emu.base_url, emu.config.token, session=session)
            job = StreamJob(
                adapter=adapter, request=http, sink=rest, context=context, config=config, transport=LOCAL
            )
            return await run_stream(job)
        finally:
            if own:
                await session.close()


async def test_concurrent_streams_one_and_many_channels(emulator: DiscordEmulator) -> None:
    """4 streams into one channel and 8 into 8 channels: every message once, in order, no 429."""
    live = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.05)
    async with aiohttp.ClientSession() as session:
        sink = RestSink(emulator.base_url, emulator.config.token, session=session, limiter=RateLimiter())
        contexts = [StreamContext(channel_id="500")] * 4 + [
            StreamContext(channel_id=str(600 + i)) for i in range(8)
        ]
        results = await asyncio.gather(
            *(_stream(emulator, LONG, ctx, live, sink=sink, session=session) for ctx in contexts)
        )
    assert emulator.counters.rate_limited == 0
    assert all(r.status is StreamStatus.COMPLETED for r in results)
    for ctx in {c.channel_id for c in contexts}:
        stored = [m["content"] for m in emulator.messages(ctx)]
        mine = [r for r, c in zip(results, contexts, strict=True) if c.channel_id == ctx]
        assert len(stored) == sum(len(r.messages) for r in mine)
        for result in mine:
            sent = [m.payload["content"] for m in result.messages]
            positions = [stored.index(content) for content in sent]
            assert positions == sorted(positions)  # each stream's messages in order


async def test_webhook_persona_reply_notice_and_no_nonce(emulator: DiscordEmulator) -> None:
    """A webhook reply posts a standalone reply notice first, then the answer under the persona's name."""
    channel = "700"
    hook = emulator.add_webhook(channel)
    target = emulator.seed_message(channel, "what is the answer?")
    context = StreamContext(
        channel_id=channel,
        webhook_id=hook.id,
        webhook_token=hook.token,
        persona_username="Mira (Discord bot)",
        reply_to_message_id=target,
    )
    result = await _stream(emulator, _answer("Forty-two."), context, StreamConfig())
    stored = [m for m in emulator.messages(channel) if m.get("webhook_id")]
    assert [m["content"] for m in stored][1:] == ["Forty-two."]
    assert target in stored[0]["content"] and stored[0]["content"].startswith("-#")
    assert all(m["username"] == "Mira ( bot)" for m in result_payloads(result))
    assert all("nonce" not in p for p in result_payloads(result))


def result_payloads(result: StreamResult) -> list[dict[str, Any]]:
    return [dict(m.payload) for m in result.messages]


async def test_channel_reply_references_first_message_only(emulator: DiscordEmulator) -> None:
    """Only the first message replies; a deleted target does not fail the answer."""
    target = emulator.seed_message("710", "question")
    emulator.delete_message(target)
    result = await _stream(
        emulator, LONG, StreamContext(channel_id="710", reply_to_message_id=target), StreamConfig()
    )
    payloads = result_payloads(result)
    assert len(payloads) >= 2 and result.status is StreamStatus.COMPLETED
    assert "message_reference" in payloads[0] and all("message_reference" not in p for p in payloads[1:])


async def test_channel_deleted_mid_stream_stops_with_status(emulator: DiscordEmulator) -> None:
    """A 404 unknown channel after the first message ends the stream as channel_deleted, nothing more sent."""
    live = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.02)

    async def delete_soon() -> None:
        while not emulator.messages("720"):
            await asyncio.sleep(0.005)
        emulator.config.deleted_channels.add("720")

    deleter = asyncio.ensure_future(delete_soon())
    result = await _stream(emulator, LONG, StreamContext(channel_id="720"), live, pace=0.001)
    await deleter
    assert result.status is StreamStatus.CHANNEL_DELETED
    assert len(emulator.messages("720")) == len(result.messages) >= 1


async def test_forbidden_channel_stops_with_missing_access(emulator: DiscordEmulator) -> None:
    """403 missing access ends the stream as missing_access."""
    emulator.config.forbidden_channels.add("730")
    result = await _stream(emulator, _answer("hi there"), StreamContext(channel_id="730"), StreamConfig())
    assert result.status is StreamStatus.MISSING_ACCESS and result.messages == ()


async def test_rate_limit_storm_and_5xx_are_survived(emulator: DiscordEmulator) -> None:
    """Injected 429s and 500s: every message still arrives exactly once, in order."""
    emulator.inject(Fault(kind="rate_limit", route=ROUTE_CREATE, count=3, retry_after=0.05))
    emulator.inject(Fault(kind="error_after_accept", route=ROUTE_CREATE, count=1, status=500))
    emulator.inject(Fault(kind="error", route=ROUTE_CREATE, count=2, status=503))
    async with aiohttp.ClientSession() as session:
        sink = RestSink(
            emulator.base_url, emulator.config.token, session=session, backoff=Backoff(base=0.01, cap=0.05)
        )
        result = await _stream(emulator, LONG, StreamContext(channel_id="740"), StreamConfig(), sink=sink)
    stored = [m["content"] for m in emulator.messages("740")]
    assert stored == [m.payload["content"] for m in result.messages]
    assert len(set(stored)) == len(stored)


async def test_send_message_limit(emulator: DiscordEmulator) -> None:
    """The per-turn message cap stops the stream with send_message_limit after exactly that many."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.01, max_messages=2)
    result = await _stream(emulator, LONG, StreamContext(channel_id="750"), config)
    assert result.status is StreamStatus.SEND_MESSAGE_LIMIT
    assert len(emulator.messages("750")) == 2


async def test_flush_limit(emulator: DiscordEmulator) -> None:
    """The per-turn flush cap stops the stream with flush_limit."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.01, max_flushes=2)
    result = await _stream(emulator, LONG, StreamContext(channel_id="760"), config)
    assert result.status is StreamStatus.FLUSH_LIMIT


async def test_mentions_resolved_and_crowds_never_pinged(emulator: DiscordEmulator) -> None:
    """@name resolves through the caller's resolver; @everyone/@here are never parsed."""
    async with ReplayServer(body=_answer("Hey @mira and @everyone, see @here.")) as server:
        adapter = OpenRouterAdapter()
        http = adapter.build_request(
            ChatRequest(model="m", messages=(Message.user("hi"),)), base_url=server.base_url, api_key="k"
        )
        async with aiohttp.ClientSession() as session:
            job = StreamJob(
                adapter=adapter,
                request=http,
                sink=RestSink(emulator.base_url, emulator.config.token, session=session),
                context=StreamContext(channel_id="770"),
                resolver={"mira": "123456789012345678"}.get,
                transport=LOCAL,
            )
            await run_stream(job)
    [stored] = emulator.messages("770")
    assert "<@123456789012345678>" in stored["content"]
    assert stored["allowed_mentions"]["users"] == ["123456789012345678"]
    assert "everyone" not in stored["allowed_mentions"]["parse"]
    assert stored["mention_everyone"] is False
    assert [u["id"] for u in stored["mentions"]] == ["123456789012345678"]
