"""The limiter with its state in Redis (RedisStore), on a real Redis server and the Discord emulator.

Several limiters with their own Redis connections stand for several bot processes
(and one test runs real processes): together they must never exceed a bucket or the
global limit, must keep going on a local fallback when Redis dies or stalls, and must
come back to the shared state when it returns.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from loguru import logger

from rxcord.core.config import StreamContext
from rxcord.sinks.ratelimit import RateLimiter, Route, make_limiter
from rxcord.sinks.ratelimit.redis import RedisStore, token_namespace
from rxcord.sinks.rest import Backoff, RestSink
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig, Fault, Scope
from tests.redis_server import Restartable, redis_url, restartable_redis

__all__ = ("redis_url", "restartable_redis")  # fixtures imported for pytest

TOKEN = "emulator-token"
ROUTE_CREATE = "POST /channels/{channel_id}/messages"
FAST = Backoff(base=0.01, cap=0.05, jitter=0.01)
ROOT = Path(__file__).resolve().parents[3]


def _store(limiter: RateLimiter) -> RedisStore:
    assert isinstance(limiter.store, RedisStore)
    return limiter.store


def _namespace() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


def _channel(number: int) -> str:
    return str(100000000000000000 + number)


async def _stream(sink: RestSink, channel: str, tag: str, count: int) -> None:
    for number in range(count):
        await sink.create_message(StreamContext(channel_id=channel), {"content": f"{tag}-{number}"})


def _assert_delivered(emulator: DiscordEmulator, plan: Iterable[tuple[str, str, int]]) -> None:
    """Every (channel, tag, count) stream arrived exactly once and in order in its channel."""
    by_channel: dict[str, list[tuple[str, int]]] = {}
    for channel, tag, count in plan:
        by_channel.setdefault(channel, []).append((tag, count))
    for channel, streams in by_channel.items():
        contents = [m["content"] for m in emulator.messages(channel)]
        expected = [f"{tag}-{n}" for tag, count in streams for n in range(count)]
        assert sorted(contents) == sorted(expected), channel
        for tag, count in streams:
            assert [c for c in contents if c.rpartition("-")[0] == tag] == [
                f"{tag}-{n}" for n in range(count)
            ]
    assert emulator.counters.nonce_dedupes == 0


@pytest.fixture
async def sinks_for() -> AsyncIterator[Any]:
    """Builds RestSinks (one per limiter) and closes them and their limiters afterwards."""
    made: list[RestSink] = []

    def build(base_url: str, limiters: list[RateLimiter]) -> list[RestSink]:
        made.extend(RestSink(base_url, TOKEN, limiter=lim, backoff=FAST, seed=1) for lim in limiters)
        return made[-len(limiters) :]

    yield build
    for sink in made:
        await sink.aclose()
        await sink.limiter.aclose()


async def test_redis_limiters_share_the_global_limit(redis_url: str, sinks_for: Any) -> None:
    """Four limiters on separate connections meter the token's global limit together: no 429."""
    namespace = _namespace()
    config = EmulatorConfig(global_limit=20, channel_limit=50, channel_window=1.0)
    async with DiscordEmulator(config) as emulator:
        limiters: list[RateLimiter] = [
            # 12/s against the emulator's 20/s: on a loaded machine, requests the shared meter spaced
            # out can reach the emulator bunched (a late loop), and the margin must absorb that.
            make_limiter(redis_url, namespace=namespace, global_limit=12, redis_timeout=5.0)
            for _ in range(4)
        ]
        sinks = sinks_for(emulator.base_url, limiters)
        plan = [(_channel(10 * i + j), f"p{i}s{j}", 5) for i in range(4) for j in range(2)]
        waits: list[float] = []
        for limiter in limiters:
            limiter.on_wait = lambda _route, delay: waits.append(delay)
        await asyncio.gather(*(_stream(sinks[int(tag[1])], ch, tag, n) for ch, tag, n in plan))
        assert emulator.counters.rate_limited == 0
        _assert_delivered(emulator, plan)
        # 40 requests at 12/s after a burst of 12, every one through the shared meter, which made
        # the rest wait (four private meters would each allow 12/s, 48/s together, with 429s).
        assert sum(_store(lim).stats.shared_takes for lim in limiters) == 40
        assert waits, "the shared meter made no request wait"
        assert {_store(lim).peers for lim in limiters} == {4}
        assert all(_store(lim).stats.local_takes == 0 for lim in limiters)
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    keys = [key async for key in client.scan_iter(match=f"rxcord:{{{namespace}}}:*")]
    await client.aclose()
    assert keys and not any(TOKEN in key for key in keys)


async def test_redis_control_private_limiters_exceed_the_global_limit(sinks_for: Any) -> None:
    """Control for the test above: four in-process limiters, same load, collect 429s."""
    config = EmulatorConfig(global_limit=20, channel_limit=50, channel_window=1.0)
    async with DiscordEmulator(config) as emulator:
        sinks = sinks_for(emulator.base_url, [RateLimiter(global_limit=18) for _ in range(4)])
        plan = [(_channel(10 * i + j), f"p{i}s{j}", 5) for i in range(4) for j in range(2)]
        streams = (_stream(sinks[int(tag[1])], ch, tag, n) for ch, tag, n in plan)
        await asyncio.gather(*streams, return_exceptions=True)  # some give up after ten 429s
        assert emulator.counters.global_rate_limited > 0


async def test_redis_limiters_share_a_bucket(redis_url: str, sinks_for: Any) -> None:
    """Four limiters sending to one channel never exceed its bucket: no 429, each stream in order."""
    namespace = _namespace()
    config = EmulatorConfig(channel_limit=5, channel_window=0.5)
    async with DiscordEmulator(config) as emulator:
        # A generous Redis timeout: a loaded CI machine must not trigger the (separately tested) fallback.
        limiters: list[RateLimiter] = [
            make_limiter(redis_url, namespace=namespace, redis_timeout=5.0) for _ in range(4)
        ]
        sinks = sinks_for(emulator.base_url, limiters)
        plan = [(_channel(1), f"p{i}", 5) for i in range(4)]
        await asyncio.gather(*(_stream(sinks[int(tag[1])], ch, tag, n) for ch, tag, n in plan))
        assert emulator.counters.rate_limited == 0
        _assert_delivered(emulator, plan)


@pytest.mark.parametrize("scope", ["user", "global"])
async def test_redis_429_blocks_every_process(redis_url: str, sinks_for: Any, scope: Scope) -> None:
    """A 429 learnt by one limiter holds the others back: on its bucket (route 429) or everywhere (global)."""
    namespace = _namespace()
    fault = Fault("rate_limit", route=ROUTE_CREATE, major=_channel(1), retry_after=0.4, scope=scope)
    async with DiscordEmulator(EmulatorConfig(fault_plan=[fault])) as emulator:
        first, second = sinks_for(
            emulator.base_url,
            [make_limiter(redis_url, namespace=namespace, redis_timeout=5.0) for _ in range(2)],
        )
        blocked = asyncio.ensure_future(_stream(first, _channel(1), "a", 1))
        while emulator.counters.rate_limited == 0:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.05)  # the 429's lesson reaches Redis
        waits: list[float] = []
        second.limiter.on_wait = lambda _route, delay: waits.append(delay)
        other = _channel(1) if scope == "user" else _channel(2)
        await _stream(second, other, "b", 1)
        assert waits, "the second limiter sent without waiting out the 429 the first one learnt"
        await blocked
        assert emulator.counters.rate_limited == 1
        assert first.limiter.invalid_requests == 1 and second.limiter.invalid_requests == 0


async def test_redis_down_mid_run_falls_back_and_recovers(
    restartable_redis: Restartable, sinks_for: Any
) -> None:
    """Redis killed mid-run: streams go on (local fallback, logged), nothing twice; restart: shared again."""
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lines.append, level="INFO", format="{message}")
    try:
        config = EmulatorConfig(channel_limit=5, channel_window=0.5)
        async with DiscordEmulator(config) as emulator:
            limiter = make_limiter(
                restartable_redis.url, namespace=_namespace(), redis_timeout=0.2, retry_interval=0.1
            )
            store = _store(limiter)
            (sink,) = sinks_for(emulator.base_url, [limiter])
            plan = [(_channel(1), "a", 18), (_channel(2), "b", 18)]
            run = asyncio.ensure_future(asyncio.gather(*(_stream(sink, c, t, n) for c, t, n in plan)))

            async def delivered_at_least(count: int) -> None:
                while len(emulator.all_messages()) < count:
                    assert not run.done() or run.exception() is None
                    await asyncio.sleep(0.01)

            await delivered_at_least(8)
            await restartable_redis.kill()
            shared_before_kill = store.stats.shared_takes
            await delivered_at_least(16)
            assert not store.using_redis
            during = store.stats.local_takes
            assert during > 0
            await restartable_redis.restart()
            await run
            assert store.using_redis
            assert store.stats.outages == 1 and store.stats.recoveries == 1
            assert store.stats.shared_takes > shared_before_kill  # back on the shared state
            assert emulator.counters.rate_limited == 0
            _assert_delivered(emulator, plan)
    finally:
        logger.remove(handler)
        logger.disable("rxcord")
    assert any("Redis unreachable" in line for line in lines)
    assert any("reachable again" in line for line in lines)


async def test_redis_fallback_starts_after_the_reserved_sends(restartable_redis: Restartable) -> None:
    """Sends the shared meter reserved still go out, so the fallback meter issues nothing before them."""
    limiter = make_limiter(restartable_redis.url, namespace=_namespace(), global_limit=10)
    store = _store(limiter)
    try:
        delay = 0.0
        for number in range(15):  # a burst of 10, then reservations up to 0.5 s ahead
            grant = await store.take_shared(Route("POST", "/x", (str(number),)))
            assert grant is not None and grant.taken
            delay = grant.delay
        horizon = time.monotonic() + delay
        assert delay > 0.4
        await restartable_redis.kill()
        async with limiter.acquire(Route("POST", "/x", ("other",))) as slot:
            await slot.wait()
        assert not store.using_redis and store.stats.local_takes == 1
        assert time.monotonic() >= horizon
    finally:
        await limiter.aclose()


async def test_redis_slow_falls_back_and_recovers(redis_url: str, sinks_for: Any) -> None:
    """Redis paused (too slow to answer): messages keep flowing meanwhile; then the shared state is used."""
    config = EmulatorConfig(channel_limit=5, channel_window=0.5)
    async with DiscordEmulator(config) as emulator:
        limiter = make_limiter(
            redis_url, namespace=_namespace(), redis_timeout=0.1, slow_timeout=0.1, retry_interval=0.1
        )
        store = _store(limiter)
        (sink,) = sinks_for(emulator.base_url, [limiter])
        plan = [(_channel(1), "a", 12), (_channel(2), "b", 12)]
        run = asyncio.ensure_future(asyncio.gather(*(_stream(sink, c, t, n) for c, t, n in plan)))
        while len(emulator.all_messages()) < 4:
            await asyncio.sleep(0.01)
        admin = aioredis.Redis.from_url(redis_url)
        await admin.client_pause(800)
        paused_at, pause_ends = len(emulator.all_messages()), time.monotonic() + 0.8
        await asyncio.sleep(0.6)
        assert len(emulator.all_messages()) > paused_at + 2  # streams went on while Redis stalled
        assert not store.using_redis
        await run
        await admin.aclose()
        await asyncio.sleep(max(0.0, pause_ends - time.monotonic()) + 0.15)  # pause over, a probe due
        shared_before = store.stats.shared_takes
        await _stream(sink, _channel(3), "c", 2)
        assert store.using_redis and store.stats.shared_takes == shared_before + 2
        assert store.stats.outages >= 1 and store.stats.recoveries >= 1
        _assert_delivered(emulator, [*plan, (_channel(3), "c", 2)])


def test_redis_make_limiter_is_one_switch(redis_url: str) -> None:
    """No URL: the in-process limiter; a URL: the Redis one. The namespace digest hides the token."""
    local = make_limiter(None)
    shared = make_limiter(redis_url, namespace=token_namespace("secret-token"), global_limit=40)
    assert type(local) is RateLimiter
    assert type(shared) is RateLimiter and isinstance(shared.store, RedisStore)
    assert "secret-token" not in repr(shared) and "secret" not in token_namespace("secret-token")


# -- real processes -------------------------------------------------------------


async def test_redis_processes_never_exceed_the_global_limit(redis_url: str) -> None:
    """Three real processes, eight streams each, one token: no 429, all messages once and in order."""
    processes, streams, messages = 3, 8, 3
    namespace = _namespace()
    config = EmulatorConfig(global_limit=40, channel_limit=5, channel_window=1.0)
    async with DiscordEmulator(config) as emulator:
        spec = {"base_url": emulator.base_url, "redis_url": redis_url, "namespace": namespace}
        children = [
            await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "tests.sinks.ratelimit.test_redis",
                json.dumps({**spec, "index": index, "streams": streams, "messages": messages}),
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
            )
            for index in range(processes)
        ]
        for child in children:
            assert child.stdout is not None
            assert (await asyncio.wait_for(child.stdout.readline(), 30)).strip() == b"ready"
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            await child.stdin.drain()
        reports = []
        for child in children:
            out, _ = await asyncio.wait_for(child.communicate(), 30)
            assert child.returncode == 0
            reports.append(json.loads(out))
        assert emulator.counters.rate_limited == 0
        plan = [
            (_channel(100 * p + s), f"p{p}s{s}", messages) for p in range(processes) for s in range(streams)
        ]
        _assert_delivered(emulator, plan)
        assert sum(report["shared_takes"] for report in reports) == processes * streams * messages
        assert max(report["peers"] for report in reports) == processes


async def _worker(spec: dict[str, Any]) -> None:
    """One bot process of the multi-process test: waits for "go", runs its streams, reports stats."""
    limiter = make_limiter(spec["redis_url"], namespace=spec["namespace"], global_limit=36, redis_timeout=5.0)
    index = spec["index"]
    async with RestSink(spec["base_url"], TOKEN, limiter=limiter) as sink:
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        await asyncio.gather(
            *(
                _stream(sink, _channel(100 * index + s), f"p{index}s{s}", spec["messages"])
                for s in range(spec["streams"])
            )
        )
    await limiter.aclose()
    store = _store(limiter)
    print(json.dumps({"shared_takes": store.stats.shared_takes, "peers": store.peers}), flush=True)


if __name__ == "__main__":
    asyncio.run(_worker(json.loads(sys.argv[1])))


def _headers(remaining: int, reset_after: float, limit: int = 5) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset-After": str(reset_after),
    }


async def test_redis_answers_out_of_take_order_leave_no_slot_counted_twice(redis_url: str) -> None:
    """Four takes in flight; the last one reaches Discord first: its answer still counts the other three."""
    limiter = RedisStore(redis_url, namespace=_namespace(), global_limit=1000)
    route = Route("POST", "/channels/{channel_id}/messages", ("1",))
    try:
        # The bucket is known (limit 5, empty), then four processes take at once.
        first = await limiter.take_shared(route)
        assert first is not None and first.taken
        await limiter.learn_shared(first.key, first.seq, route, _headers(4, 0.1), None)
        grants = [await limiter.take_shared(route) for _ in range(4)]
        assert all(grant is not None and grant.taken for grant in grants)
        last = grants[-1]
        assert last is not None
        # Discord saw the last take first (remaining 3 after it): three more are still on their way.
        await limiter.learn_shared(last.key, last.seq, route, _headers(3, 0.2), None)
        after = await limiter.take_shared(route)
        assert after is not None and not after.taken and after.delay > 0
    finally:
        await limiter.aclose()


async def test_redis_a_bucket_refilled_without_an_answer_refills_once(redis_url: str) -> None:
    """After a window with no answer, the bucket allows one window's worth, not an endless refill."""
    limiter = RedisStore(redis_url, namespace=_namespace(), global_limit=1000)
    route = Route("POST", "/channels/{channel_id}/messages", ("2",))
    try:
        first = await limiter.take_shared(route)
        assert first is not None and first.taken
        # Empty now, full again 0.1 s later (a 5 / 0.1 s bucket).
        await limiter.learn_shared(first.key, first.seq, route, _headers(0, 0.1), None)
        await asyncio.sleep(0.15)
        taken = 0
        for _ in range(8):
            grant = await limiter.take_shared(route)
            assert grant is not None
            taken += grant.taken
        assert taken == 5
    finally:
        await limiter.aclose()


async def test_redis_fallback_sends_are_charged_to_the_shared_meter(redis_url: str) -> None:
    """A process on its fallback while Redis is only slow: its sends still reach the shared meter.

    So the processes still on Redis slow down by as much, and together they stay within the
    shared bound (the 429s of a loaded machine came from fallback sends on top of a full
    shared meter).
    """
    namespace = _namespace()
    limiter = make_limiter(redis_url, namespace=namespace, global_limit=10, retry_interval=60.0)
    store = _store(limiter)
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    try:
        assert await limiter.connect()
        seconds, micros = await client.time()
        started = seconds + micros / 1e6
        store._went_down(TimeoutError("slow"))  # a timed-out call: the fallback for a minute
        for number in range(5):
            async with limiter.acquire(
                Route("POST", "/channels/{channel_id}/messages", (str(number),))
            ) as slot:
                await slot.wait()
        await limiter.aclose()  # waits for the background charge
        assert (store.stats.local_takes, store.stats.charged, store.stats.uncharged) == (5, 5, 0)
        tat = float(await client.hget(f"rxcord:{{{namespace}}}:global", "tat") or 0)
        assert tat - started >= 0.5 - 0.01  # 5 sends at 10/s were charged to the shared meter
    finally:
        await client.aclose()
