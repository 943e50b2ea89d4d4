"""RestSink against the emulator on 127.0.0.1: ordering, rate limits, retries, error mapping, secrets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from loguru import logger
from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError, UnknownWebhookError
from rxcord.core.types import StopKind
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.emulator import DiscordEmulator, EmulatorConfig, Fault
from rxcord.sinks.ratelimit import RateLimiter
from rxcord.sinks.rest import Backoff, RestSink

TOKEN = "emulator-token"
CHANNEL = "100000000000000001"
ROUTE_CREATE = "POST /channels/{channel_id}/messages"
FAST = Backoff(base=0.01, cap=0.05, jitter=0.01)


class Sleeps:
    """Records backoff delays and sleeps for real (briefly)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(seconds)


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    async with DiscordEmulator(EmulatorConfig(channel_window=0.5, webhook_window=0.5)) as emu:
        yield emu


@pytest.fixture
async def sink(emulator: DiscordEmulator) -> AsyncIterator[RestSink]:
    async with RestSink(emulator.base_url, TOKEN, backoff=FAST, seed=7) as rest:
        yield rest


def _ctx(channel: str = CHANNEL, **fields: Any) -> StreamContext:
    return StreamContext(channel_id=channel, **fields)


async def test_create_message_returns_what_was_sent(sink: RestSink, emulator: DiscordEmulator) -> None:
    """The sent payload gains a nonce with enforce_nonce; the returned id is the stored message's."""
    protocol: DiscordSink = sink  # RestSink satisfies the protocol (mypy checks this line)
    sent = await protocol.create_message(_ctx(), {"content": "hello", "allowed_mentions": {"parse": []}})
    stored = emulator.messages(CHANNEL)
    assert [m["content"] for m in stored] == ["hello"]
    assert sent.message_id == stored[0]["id"] and sent.channel_id == CHANNEL
    assert sent.payload["enforce_nonce"] is True and stored[0]["nonce"] == sent.payload["nonce"]
    assert dict(sent.payload) == {k: stored[0][k] for k in sent.payload if k != "allowed_mentions"} | {
        "allowed_mentions": {"parse": []}
    }


async def _stream(sink: RestSink, channel: str, name: str, count: int) -> None:
    for number in range(count):
        await sink.create_message(_ctx(channel), {"content": f"{name}-{number}", "nonce": f"{name}-{number}"})


def _assert_in_order(contents: list[str], streams: list[str], count: int) -> None:
    assert sorted(contents) == sorted(f"{s}-{n}" for s in streams for n in range(count))
    for stream in streams:
        assert [c for c in contents if c.startswith(f"{stream}-")] == [f"{stream}-{n}" for n in range(count)]


async def test_concurrent_streams_to_one_channel(sink: RestSink, emulator: DiscordEmulator) -> None:
    """Three streams of four messages to one channel: all delivered once, each in order, no 429."""
    streams = ["a", "b", "c"]
    await asyncio.gather(*(_stream(sink, CHANNEL, s, 4) for s in streams))
    _assert_in_order([m["content"] for m in emulator.messages(CHANNEL)], streams, 4)
    assert emulator.counters.rate_limited == 0


async def test_concurrent_streams_to_many_channels(sink: RestSink, emulator: DiscordEmulator) -> None:
    """Two streams into each of six channels: all delivered once, in order, no route or global 429."""
    channels = [str(100000000000000100 + n) for n in range(6)]
    streams = ["x", "y"]
    await asyncio.gather(*(_stream(sink, ch, f"{ch}{s}", 4) for ch in channels for s in streams))
    for channel in channels:
        _assert_in_order(
            [m["content"] for m in emulator.messages(channel)], [f"{channel}{s}" for s in streams], 4
        )
    assert len(emulator.all_messages()) == 48
    assert emulator.counters.rate_limited == 0


async def test_429_storm_is_survived(sink: RestSink, emulator: DiscordEmulator) -> None:
    """Four injected 429s in a row are waited out and the message goes through once."""
    emulator.inject(Fault("rate_limit", route=ROUTE_CREATE, count=4, retry_after=0.02))
    sent = await sink.create_message(_ctx(), {"content": "after the storm"})
    assert [m["id"] for m in emulator.messages(CHANNEL)] == [sent.message_id]
    assert emulator.counters.rate_limited == 4


async def test_global_429_pauses_other_channels(sink: RestSink, emulator: DiscordEmulator) -> None:
    """After a global 429 on one channel, another channel's send waits for the pause too."""
    emulator.inject(Fault("rate_limit", scope="global", major=CHANNEL, retry_after=0.3))
    loop = asyncio.get_running_loop()
    start = loop.time()
    first = asyncio.create_task(sink.create_message(_ctx(), {"content": "a"}))
    await asyncio.sleep(0.05)
    await sink.create_message(_ctx("100000000000000002"), {"content": "b"})
    assert loop.time() - start >= 0.3
    await first
    assert emulator.counters.rate_limited == 1


async def test_5xx_is_retried_with_bounded_backoff(emulator: DiscordEmulator) -> None:
    """Two 502s are retried with growing, capped delays; the message is delivered once."""
    emulator.inject(Fault("error", route=ROUTE_CREATE, status=502, count=2))
    sleeps = Sleeps()
    async with RestSink(emulator.base_url, TOKEN, backoff=FAST, seed=1, sleep=sleeps) as sink:
        await sink.create_message(_ctx(), {"content": "x"})
    assert len(emulator.messages(CHANNEL)) == 1
    assert len(sleeps.delays) == 2
    assert 0.01 <= sleeps.delays[0] <= 0.02 and 0.02 <= sleeps.delays[1] <= 0.03


async def test_5xx_retries_are_exhausted(emulator: DiscordEmulator) -> None:
    """Past max_retries the 5xx becomes a DiscordError; nothing was stored."""
    emulator.inject(Fault("error", route=ROUTE_CREATE, status=500, count=10))
    sleeps = Sleeps()
    async with RestSink(emulator.base_url, TOKEN, max_retries=2, backoff=FAST, sleep=sleeps) as sink:
        with pytest.raises(DiscordError) as caught:
            await sink.create_message(_ctx(), {"content": "x"})
    assert caught.value.status == 500
    assert len(sleeps.delays) == 2
    assert emulator.counters.requests[ROUTE_CREATE] == 3


async def test_dropped_connection_is_retried(sink: RestSink, emulator: DiscordEmulator) -> None:
    """A connection closed without an answer is retried."""
    emulator.inject(Fault("disconnect", route=ROUTE_CREATE))
    await sink.create_message(_ctx(), {"content": "x"})
    assert [m["content"] for m in emulator.messages(CHANNEL)] == ["x"]


async def test_nonce_survives_a_500_after_accept(sink: RestSink, emulator: DiscordEmulator) -> None:
    """A 500 after Discord stored the message is retried with the same nonce: nothing is sent twice."""
    emulator.inject(Fault("error_after_accept", route=ROUTE_CREATE))
    sent = await sink.create_message(_ctx(), {"content": "exactly once", "nonce": "chunk-1"})
    stored = emulator.messages(CHANNEL)
    assert [m["content"] for m in stored] == ["exactly once"]
    assert sent.message_id == stored[0]["id"] and sent.payload["nonce"] == "chunk-1"
    assert emulator.counters.nonce_dedupes == 1


@pytest.mark.parametrize(
    ("config", "stop_kind"),
    [
        (EmulatorConfig(forbidden_channels={CHANNEL}), StopKind.MISSING_ACCESS),
        (EmulatorConfig(missing_permission_channels={CHANNEL}), StopKind.MISSING_ACCESS),
        (EmulatorConfig(deleted_channels={CHANNEL}), StopKind.CHANNEL_DELETED),
    ],
)
async def test_403_and_404_stop_the_stream(config: EmulatorConfig, stop_kind: StopKind) -> None:
    """Missing access and deleted channels raise DiscordStopError with the right kind, without retries."""
    async with DiscordEmulator(config) as emu, RestSink(emu.base_url, TOKEN, backoff=FAST) as sink:
        with pytest.raises(DiscordStopError) as caught:
            await sink.create_message(_ctx(), {"content": "x"})
        assert caught.value.stop_kind is stop_kind
        assert emu.counters.requests[ROUTE_CREATE] == 1


async def test_other_4xx_is_a_discord_error_not_retried(sink: RestSink, emulator: DiscordEmulator) -> None:
    """A 400 is raised at once with Discord's code and the flattened field message."""
    with pytest.raises(DiscordError) as caught:
        await sink.create_message(_ctx(), {"content": "x" * 2001})
    assert type(caught.value) is DiscordError
    assert (caught.value.status, caught.value.code) == (400, 50035)
    assert "In content: Must be 2000 or fewer in length." in caught.value.message
    assert emulator.counters.requests[ROUTE_CREATE] == 1


async def test_reply_to_a_deleted_message_is_resent_without_reference(
    sink: RestSink, emulator: DiscordEmulator
) -> None:
    """When the reply target is gone the message is sent once more, as a plain message."""
    target = emulator.seed_message(CHANNEL, "question")
    kept = await sink.create_message(_ctx(), {"content": "a", "message_reference": {"message_id": target}})
    assert kept.payload["message_reference"] == {"message_id": target}
    emulator.delete_message(target)
    sent = await sink.create_message(_ctx(), {"content": "b", "message_reference": {"message_id": target}})
    assert "message_reference" not in sent.payload
    assert [m["content"] for m in emulator.messages(CHANNEL)] == ["a", "b"]
    assert emulator.counters.statuses[400] == 1


async def test_webhook_delivery(sink: RestSink, emulator: DiscordEmulator) -> None:
    """A webhook context executes the webhook with the persona; nonce and reference are not sent."""
    hook = emulator.add_webhook(CHANNEL)
    ctx = _ctx(
        webhook_id=hook.id, webhook_token=hook.token, persona_username="Ada", thread_id="700000000000000007"
    )
    payload = {"content": "hi", "nonce": "n", "enforce_nonce": True, "message_reference": {"message_id": "1"}}
    sent = await sink.create_message(ctx, payload)
    stored = emulator.messages("700000000000000007")
    assert [m["author"]["username"] for m in stored] == ["Ada"]
    assert dict(sent.payload) == {"content": "hi", "username": "Ada"}
    assert sent.message_id == stored[0]["id"] and sent.channel_id == "700000000000000007"


async def test_unknown_webhook_is_never_used_again(sink: RestSink, emulator: DiscordEmulator) -> None:
    """404 / 10015 raises UnknownWebhookError, and later sends fail without a request."""
    hook = emulator.add_webhook(CHANNEL)
    emulator.remove_webhook(hook.id)
    ctx = _ctx(webhook_id=hook.id, webhook_token=hook.token)
    for _ in range(2):
        with pytest.raises(UnknownWebhookError):
            await sink.create_message(ctx, {"content": "x"})
    assert emulator.counters.requests["POST /webhooks/{webhook_id}/{webhook_token}"] == 1


async def test_typing(sink: RestSink, emulator: DiscordEmulator) -> None:
    """Typing hits the channel's typing route; a webhook-only sink skips it."""
    await sink.trigger_typing(_ctx())
    assert emulator.counters.typing[CHANNEL] == 1
    async with RestSink(emulator.base_url, None) as webhook_only:
        await webhook_only.trigger_typing(_ctx(webhook_id="1", webhook_token="t"))
        with pytest.raises(DiscordError):
            await webhook_only.create_message(_ctx(), {"content": "x"})
    assert emulator.counters.typing[CHANNEL] == 1


async def test_secrets_never_leak(emulator: DiscordEmulator) -> None:
    """Neither the bot token nor a webhook token appears in logs, exceptions or reprs."""
    hook = emulator.add_webhook(CHANNEL)
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lines.append, level="DEBUG", format="{message} {extra}")
    errors: list[BaseException] = []
    try:
        # Every attempt of the four sends below fails (the bot's twice; a webhook message is not
        # retried after an ambiguous failure: at most once), then the webhook is deleted.
        emulator.inject(Fault("disconnect", count=3))
        emulator.inject(Fault("error", count=3))
        async with RestSink(emulator.base_url, TOKEN, max_retries=1, backoff=FAST) as sink:
            ctx = _ctx(webhook_id=hook.id, webhook_token=hook.token)
            for context in (ctx, _ctx(), ctx, _ctx()):
                try:
                    await sink.create_message(context, {"content": "x"})
                except DiscordError as exc:
                    errors.append(exc)
            emulator.remove_webhook(hook.id)
            with pytest.raises(UnknownWebhookError) as gone:
                await sink.create_message(ctx, {"content": "x"})
            errors.append(gone.value)
            texts = [*lines, repr(sink), repr(ctx), repr(sink.limiter)]
    finally:
        logger.remove(handler)
        logger.disable("rxcord")
    texts += [f"{e!s} {e!r}" for e in errors]
    assert len(errors) == 3 and any("failed after" in str(e) for e in errors)
    assert any("not retried" in line for line in lines)
    assert any("retry" in line for line in lines)
    for text in texts:
        assert TOKEN not in text and hook.token not in text


async def test_shared_limiter_serializes_two_sinks(emulator: DiscordEmulator) -> None:
    """Two sinks sharing one limiter respect one channel bucket together (no 429)."""
    limiter = RateLimiter()
    async with (
        RestSink(emulator.base_url, TOKEN, limiter=limiter) as one,
        RestSink(emulator.base_url, TOKEN, limiter=limiter) as two,
    ):
        await asyncio.gather(_stream(one, CHANNEL, "p", 4), _stream(two, CHANNEL, "q", 4))
    assert len(emulator.messages(CHANNEL)) == 8
    assert emulator.counters.rate_limited == 0
