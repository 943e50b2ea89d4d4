"""``rxcord.bot.counters``: the Redis store shared by two bot processes holds every cap across both.

A real redis-server (``tests/redis_server.py``), never a mock; each test has its own key prefix.
Two ``Limits`` with their own connection stand for two processes; the clock is injected.
"""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import attrs
import pytest

from rxcord import StreamStatus, TurnResult, Usage
from rxcord.bot.config import BotConfig, LimitsSection, ProviderSection, ScaleSection
from rxcord.bot.counters import Ask, Charge, RedisCounters, SqliteCounters
from rxcord.bot.limits import Limits
from rxcord.compose.turn import Attempt
from rxcord.core.errors import MissingCredentialError
from rxcord.core.state import StreamResult
from tests.redis_server import redis_url  # noqa: F401  (fixture)

NOON = 1_780_000_000.0 - 1_780_000_000.0 % 86_400 + 12 * 3600
OFF = LimitsSection(requests_per_user=0, concurrent_per_user=0, concurrent_per_channel=0)


class Clock:
    def __init__(self) -> None:
        self.now = NOON

    def __call__(self) -> float:
        return self.now


def turn(usage: Usage) -> TurnResult:
    result = StreamResult(status=StreamStatus.COMPLETED)
    attempt = Attempt(label="openrouter:m#key1", status=StreamStatus.COMPLETED)
    return TurnResult(result=result, results=(result,), attempts=(attempt,), usage=usage)


def process(redis_url: str, section: LimitsSection, clock: Clock, prefix: str) -> Limits:  # noqa: F811
    return Limits(section, {}, store=RedisCounters(redis_url, section, prefix=prefix), clock=clock)


async def test_two_processes_hold_one_per_user_request_cap(redis_url: str) -> None:  # noqa: F811
    clock, prefix = Clock(), f"test:{uuid.uuid4().hex}"
    section = attrs.evolve(OFF, requests_per_user=5)
    first, second = process(redis_url, section, clock, prefix), process(redis_url, section, clock, prefix)
    try:
        # Twenty messages of one user at once, split across the two processes.
        asks = [
            (first if i % 2 else second).check(user="u1", channel=f"c{i}", guild="g1", message_id=f"m{i}")
            for i in range(20)
        ]
        refusals = await asyncio.gather(*asks)
        assert sum(r is None for r in refusals) == 5
        refused = [r for r in refusals if r is not None]
        assert all(r.startswith("You have used 5 of 5 requests this hour") for r in refused)
        assert await first.check(user="u2", channel="c0", guild="g1", message_id="other") is None
        clock.now += 3600  # the next window, on both
        assert await second.check(user="u1", channel="c0", guild="g1", message_id="next") is None
    finally:
        await first.close()
        await second.close()


@pytest.mark.parametrize("running", [1, 2, 3])
async def test_two_processes_hold_one_concurrency_cap_and_leases_expire(
    redis_url: str,  # noqa: F811
    running: int,
) -> None:
    clock, prefix = Clock(), f"test:{uuid.uuid4().hex}"
    section = attrs.evolve(OFF, concurrent_per_user=2, lease_seconds=300)
    first, second = process(redis_url, section, clock, prefix), process(redis_url, section, clock, prefix)
    try:
        results = [
            await (first, second)[i % 2].check(user="u1", channel=f"c{i}", guild=None, message_id=f"m{i}")
            for i in range(running)
        ]
        assert results[:2] == [None] * min(running, 2)
        if running == 3:
            assert results[2] is not None and "2 of 2 answers running" in results[2]
            await second.release("m1", turn(Usage()))  # settled in the process that admitted it
            assert await first.check(user="u1", channel="c9", guild=None, message_id="m9") is None
            # m0 and m9 are never settled (their process "crashed"): their leases expire.
            assert await second.check(user="u1", channel="c8", guild=None, message_id="m8") is not None
            clock.now += 300
            assert await second.check(user="u1", channel="c8", guild=None, message_id="m8") is None
    finally:
        await first.close()
        await second.close()


async def test_two_processes_share_the_guilds_daily_tokens(redis_url: str) -> None:  # noqa: F811
    clock, prefix = Clock(), f"test:{uuid.uuid4().hex}"
    section = attrs.evolve(OFF, tokens_per_guild_per_day=100, cost_per_user_per_day=0.5)
    first, second = process(redis_url, section, clock, prefix), process(redis_url, section, clock, prefix)
    try:
        assert await first.check(user="a", channel="c1", guild="g1", message_id="a") is None
        await first.release("a", turn(Usage(input_tokens=60, output_tokens=0, cost=0.25)))
        assert await second.check(user="b", channel="c2", guild="g1", message_id="b") is None
        await second.release("b", turn(Usage(input_tokens=39, output_tokens=0)))
        assert await first.check(user="c", channel="c1", guild="g1", message_id="c") is None  # 99 of 100
        await first.release("c", turn(Usage(input_tokens=1, output_tokens=0)))
        refusal = await second.check(user="d", channel="c2", guild="g1", message_id="d")
        assert refusal is not None and "This server has used 100 of 100 tokens today" in refusal
        assert await second.check(user="a", channel="c2", guild="g2", message_id="a2") is None
        await second.release("a2", turn(Usage(input_tokens=1, output_tokens=0, cost=0.25)))
        refusal = await first.check(user="a", channel="c1", guild="g3", message_id="a3")
        assert refusal is not None and "You have used $0.50 of $0.50 today" in refusal
    finally:
        await first.close()
        await second.close()


async def test_from_config_picks_redis_when_scaled_out_and_sqlite_otherwise(
    redis_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    provider = ProviderSection(name="openrouter", model="m")
    scaled = BotConfig(provider=provider, scale=ScaleSection(redis_url_env="BOT_REDIS"))
    limits = Limits.from_config(scaled, {"BOT_REDIS": redis_url})
    try:
        assert isinstance(limits._store, RedisCounters)
    finally:
        await limits.close()
    with pytest.raises(MissingCredentialError, match="BOT_REDIS is not set"):
        Limits.from_config(scaled, {})
    in_code = Limits.from_config(BotConfig(provider=provider), {})  # no file named: in memory
    try:
        assert await in_code.check(user="u", channel="c", guild=None, message_id="m") is None
        assert list(tmp_path.iterdir()) == []
    finally:
        await in_code.close()
    local = BotConfig(provider=provider, limits=LimitsSection(state_file=str(tmp_path / "s.db")))
    limits = Limits.from_config(local, {})
    try:
        assert isinstance(limits._store, SqliteCounters) and (tmp_path / "s.db").exists()
    finally:
        await limits.close()


async def test_sqlite_work_per_message_does_not_grow_with_history(tmp_path: Path) -> None:
    """Each admit and settle runs the same few statements whatever came before (counted, not timed)."""
    section = attrs.evolve(
        OFF, requests_per_user=10**6, concurrent_per_user=10**6, tokens_per_user_per_day=10**9
    )
    store = SqliteCounters(tmp_path / "l.db", section)
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    per_message = []
    try:
        for i in range(300):
            ask = Ask(user=f"u{i % 7}", channel=f"c{i % 3}", guild="g", lease=str(i), now=NOON + i * 60)
            before = len(statements)
            assert await store.admit(ask) is None
            await store.settle(ask, Charge(tokens=5), NOON + i * 60)
            per_message.append(len(statements) - before)
    finally:
        await store.close()
    assert per_message[0] > 0 and set(per_message) == {per_message[0]}
