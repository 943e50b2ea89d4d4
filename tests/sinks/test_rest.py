"""RestSink against the emulator on 127.0.0.1: ordering, rate limits, retries, error mapping, secrets."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from loguru import logger

from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError, TokenRejectedError, UnknownWebhookError
from rxcord.core.types import StopKind
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.ratelimit import RateLimiter, RateLimitError
from rxcord.sinks.rest import Backoff, RestSink
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig, Fault
from tests.faults.fake_discord import FakeDiscord, Step, gzip_bomb, json_step, rate_limited

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
    other = "100000000000000002"
    waits: list[tuple[object, float]] = []
    sink.limiter.on_wait = lambda route, delay: waits.append((route, delay))
    first = asyncio.create_task(sink.create_message(_ctx(), {"content": "a"}))
    await asyncio.sleep(0.05)
    await sink.create_message(_ctx(other), {"content": "b"})
    # Counted, not timed: the other channel's send waited on the limiter (the global pause).
    assert any(other in route.major for route, _ in waits)  # type: ignore[attr-defined]
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


# -- Discord faults (issue 15), against the scripted fake Discord -------------------------


@pytest.fixture
async def fake() -> AsyncIterator[FakeDiscord]:
    async with FakeDiscord() as server:
        yield server


def _fake_sink(fake: FakeDiscord, **options: Any) -> RestSink:
    return RestSink(fake.base_url, fake.token, backoff=FAST, seed=3, **options)


async def test_rejected_token_is_remembered(fake: FakeDiscord) -> None:
    """A 401 raises TokenRejectedError once Discord said so; later calls raise it without a request."""
    async with _fake_sink(fake) as sink:
        await sink.create_message(_ctx(), {"content": "before"})
        fake.revoke()
        with pytest.raises(TokenRejectedError):
            await sink.create_message(_ctx(), {"content": "first"})
        asked = len(fake.requests)
        with pytest.raises(TokenRejectedError):
            await sink.create_message(_ctx("2"), {"content": "second"})
        with pytest.raises(TokenRejectedError):
            await sink.trigger_typing(_ctx())
        with pytest.raises(TokenRejectedError):
            await sink.edit_message(_ctx(), "1", {"content": "x"})
    assert len(fake.requests) == asked and sink.token_rejected
    assert sink.limiter.invalid_requests == 1
    assert fake.contents() == ["before"]


async def test_bodyless_429_pauses_every_route(fake: FakeDiscord) -> None:
    """A Cloudflare 429 (HTML, Retry-After only) pauses globally; the retry waits it out, then succeeds."""
    clock = [0.0]
    waits: list[tuple[str, float]] = []

    async def sleep(seconds: float) -> None:  # the limiter's clock moves only when it sleeps
        clock[0] += seconds
        await asyncio.sleep(0)

    limiter = RateLimiter(clock=lambda: clock[0], sleep=sleep, on_wait=lambda r, s: waits.append((r.key, s)))
    fake.script(Step("status", status=429, body=b"<html>1015</html>", headers={"Retry-After": "0.3"}))
    async with _fake_sink(fake, limiter=limiter) as sink:
        sent = await sink.create_message(_ctx(), {"content": "hello"})
        assert limiter.global_paused_until == pytest.approx(0.3)
        await sink.create_message(_ctx("2"), {"content": "other channel"})
    assert sent.message_id is not None and fake.contents() == ["hello", "other channel"]
    assert waits == [(ROUTE_CREATE, pytest.approx(0.3))]


@pytest.mark.parametrize("body", [b'{"retry_after": NaN, "global": false}', b'{"retry_after": -1}', b"{}"])
async def test_unusable_retry_after_is_a_typed_error(fake: FakeDiscord, body: bytes) -> None:
    """NaN, negative or missing retry_after with no header: RateLimitError, and nothing sent after it."""
    fake.script(Step("status", status=429, body=body, headers={"Content-Type": "application/json"}))
    async with _fake_sink(fake) as sink:
        with pytest.raises(RateLimitError):
            await sink.create_message(_ctx(), {"content": "a"})
        asked = len(fake.requests)
        with pytest.raises(RateLimitError):
            await sink.create_message(_ctx("2"), {"content": "b"})
    assert len(fake.requests) == asked == 1 and fake.contents() == []


async def test_compressed_bomb_is_read_with_a_bound(fake: FakeDiscord) -> None:
    """A 64 MiB gzip answer is decompressed only up to max_body: the message counts, memory stays small."""
    import tracemalloc

    bomb = gzip_bomb(64 << 20)
    fake.script(Step("status", status=200, raw=bomb, encoding="gzip", store=True))
    async with _fake_sink(fake, max_body=1 << 20) as sink:
        tracemalloc.start()
        try:
            sent = await sink.create_message(_ctx(), {"content": "bomb"})
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert sent.message_id is None and fake.contents() == ["bomb"]
    assert peak < 16 << 20, peak


async def test_oversized_plain_body_is_not_kept(fake: FakeDiscord) -> None:
    """A 2 MiB JSON answer above max_body: delivered, but its id is unknown (not parsed)."""
    fake.script(json_step(200, {"id": "9", "junk": "x" * (2 << 20)}, store=True))
    async with _fake_sink(fake, max_body=1 << 20) as sink:
        sent = await sink.create_message(_ctx(), {"content": "big"})
    assert sent.message_id is None and fake.contents() == ["big"]


async def test_webhook_persona_name_discord_rejects_is_never_sent(fake: FakeDiscord) -> None:
    """The sink repairs or drops a username Discord rejects, from the context or from the payload."""
    hook = fake.add_webhook(CHANNEL)
    async with _fake_sink(fake) as sink:
        for name in ("Clyde", "here", "everyone", "discord"):
            await sink.create_message(
                _ctx(webhook_id=hook.id, webhook_token=hook.token, persona_username=name), {"content": name}
            )
        await sink.create_message(
            _ctx(webhook_id=hook.id, webhook_token=hook.token), {"content": "p", "username": "Discord Helper"}
        )
    assert [m["username"] for m in fake.messages] == [None, None, None, None, "Helper"]


async def test_webhook_ambiguous_failures_are_at_most_once(fake: FakeDiscord) -> None:
    """Webhooks: 500 or a reset after storing is not retried (one copy, id unknown); a 503 is retried."""
    hook = fake.add_webhook(CHANNEL)
    ctx = _ctx(webhook_id=hook.id, webhook_token=hook.token)
    fake.script(
        json_step(500, {"message": "500", "code": 0}, store=True),
        Step("reset", store=True),
        json_step(503, {"message": "503", "code": 0}),
        Step(),  # the 503's retry
        Step("reset"),
    )
    async with _fake_sink(fake) as sink:
        results = [await sink.create_message(ctx, {"content": f"m{n}"}) for n in range(4)]
    assert fake.contents() == ["m0", "m1", "m2"]  # m3 was lost before Discord stored it (at most once)
    assert [r.message_id is None for r in results] == [True, True, False, True]
    assert [p for _, p in fake.requests].count(f"webhooks/{hook.id}/<token>") == 5  # only the 503 retried


async def test_bot_ambiguous_failures_are_exactly_once(fake: FakeDiscord) -> None:
    """Bot path: 500 and a reset after storing are retried with the same nonce: one copy each."""
    fake.script(
        json_step(500, {"message": "500", "code": 0}, store=True), Step("reset", store=True), Step("reset")
    )
    async with _fake_sink(fake) as sink:
        results = [await sink.create_message(_ctx(), {"content": f"m{n}"}) for n in range(3)]
    assert fake.contents() == ["m0", "m1", "m2"]
    assert all(r.message_id is not None for r in results)


async def test_edit_and_delete_messages(fake: FakeDiscord) -> None:
    """Bot and webhook messages are edited and deleted on their own routes; a gone message deletes quietly."""
    hook = fake.add_webhook(CHANNEL)
    hooked = _ctx(webhook_id=hook.id, webhook_token=hook.token, thread_id="77")
    async with _fake_sink(fake) as sink:
        bot = await sink.create_message(_ctx(), {"content": "draft"})
        web = await sink.create_message(hooked, {"content": "hook draft"})
        assert bot.message_id and web.message_id
        edited = await sink.edit_message(_ctx(), bot.message_id, {"content": "final", "nonce": "x"})
        await sink.edit_message(hooked, web.message_id, {"content": "hook final", "username": "x"})
        assert edited.payload == {"content": "final"} and fake.records("77") == ["hook final"]
        await sink.delete_message(_ctx(), bot.message_id)
        await sink.delete_message(_ctx(), bot.message_id)  # already gone: no error
        await sink.delete_message(hooked, web.message_id)
        with pytest.raises(DiscordError):
            await sink.edit_message(_ctx(), "424242", {"content": "nope"})
    assert fake.messages == []
    assert ("PATCH", f"webhooks/{hook.id}/<token>/messages/{web.message_id}") in fake.requests


async def test_edit_route_has_its_own_bucket(fake: FakeDiscord) -> None:
    """A 429 on the edit route holds back edits only: a create in the same channel goes on at once."""
    waits: list[str] = []
    fake.script(rate_limited(1.0, scope="user"), on="edit")
    async with _fake_sink(fake, limiter=RateLimiter(on_wait=lambda r, s: waits.append(r.key))) as sink:
        first = await sink.create_message(_ctx(), {"content": "a"})
        assert first.message_id
        edit = asyncio.ensure_future(sink.edit_message(_ctx(), first.message_id, {"content": "b"}))
        while len(fake.requests) < 2:  # the edit's first attempt (the 429) has been answered
            await asyncio.sleep(0.01)
        await sink.create_message(_ctx(), {"content": "c"})
        await edit
    edit_path = f"channels/{CHANNEL}/messages/{first.message_id}"
    create_path = f"channels/{CHANNEL}/messages"
    assert fake.requests == [
        ("POST", create_path),
        ("PATCH", edit_path),
        ("POST", create_path),
        ("PATCH", edit_path),
    ]
    assert waits == ["PATCH /channels/{channel_id}/messages/{message_id}"]  # the create never waited


async def test_reply_notice_links_into_the_thread(fake: FakeDiscord) -> None:
    """Delivered by webhook into a thread, the reply notice's jump link points at the thread."""
    from rxcord.compose.run import stream_to_discord
    from rxcord.core.request import ChatRequest, Message
    from rxcord.providers.openai import OpenAIAdapter
    from rxcord.providers.transport import TransportConfig
    from rxcord.testing.replay import ReplayServer
    from tests.conftest import DEMO_DATA

    hook = fake.add_webhook(CHANNEL)
    context = _ctx(
        guild_id="5", webhook_id=hook.id, webhook_token=hook.token, thread_id="77", reply_to_message_id="99"
    )
    async with (
        ReplayServer(body=(DEMO_DATA / "openai_think_leak.sse").read_bytes()) as server,
        _fake_sink(fake) as sink,
    ):
        await stream_to_discord(
            OpenAIAdapter(),
            ChatRequest(model="m", messages=(Message.user("hi"),)),
            sink=sink,
            base_url=server.base_url,
            api_key="k",
            context=context,
            transport=TransportConfig(allow_private_network=True),
        )
    notice = fake.records("77")[0]
    assert notice.endswith("https://discord.com/channels/5/77/99"), notice
