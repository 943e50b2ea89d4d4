"""The limits' counters: one SQLite file (one process, or several on one machine) or Redis (scaled out).

What is counted (``rxcord.bot.limits`` decides what to ask and what to charge):

* **requests** per user in a fixed window (``window_seconds``, aligned to multiples of it since
  the epoch, so every process agrees on where a window ends without talking);
* **concurrent answers** per user and per channel, as leases: one per admitted message, removed
  when it settles, and expiring after ``lease_seconds`` (a crashed process's leases end by
  themselves instead of holding a cap forever);
* **tokens and cost** per user and per guild per UTC day.

Admission is one atomic step: every cap is checked and, only when all pass, the request is
counted and the leases are taken (a refused request counts for nothing). In SQLite that is one
``BEGIN IMMEDIATE`` transaction (two processes on one file serialize on its write lock); in
Redis one Lua script (two processes on one server hold a shared cap). Settling is one more.
"""

from __future__ import annotations

__all__ = (
    "MEMORY",
    "Ask",
    "Charge",
    "CounterStore",
    "RedisCounters",
    "Refusal",
    "SqliteCounters",
    "check_order",
    "resets_at",
)

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Final, Protocol, TypeVar

import attrs

from rxcord.bot.config import LimitsSection

_T = TypeVar("_T")

MEMORY: Final = ":memory:"
"""The state file of counters kept in memory only (a config built in code without ``state_file``)."""

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS requests (user TEXT, window INTEGER, count INTEGER, PRIMARY KEY (user, window));
CREATE TABLE IF NOT EXISTS leases (id TEXT PRIMARY KEY, user TEXT, channel TEXT, expires REAL);
CREATE INDEX IF NOT EXISTS leases_user ON leases (user);
CREATE INDEX IF NOT EXISTS leases_channel ON leases (channel);
CREATE INDEX IF NOT EXISTS leases_expires ON leases (expires);
CREATE TABLE IF NOT EXISTS daily (
    scope TEXT, day INTEGER, tokens INTEGER, cost REAL, PRIMARY KEY (scope, day)
);
"""


@attrs.frozen(kw_only=True)
class Ask:
    """One message asking to be answered, and when (epoch seconds from the injected clock)."""

    user: str
    channel: str
    guild: str | None
    lease: str
    """The lease's id (the message id): settling removes it."""
    now: float

    def day(self) -> int:
        """The UTC day number (days since the epoch): the token and cost counters' key."""
        return int(self.now // 86_400)


@attrs.frozen(kw_only=True)
class Refusal:
    """Which cap refused a message: the setting's name, how much is used of how much, when it resets."""

    setting: str
    """The ``[limits]`` key (``requests_per_user``)."""
    used: float
    limit: float
    resets_at: float | None
    """Epoch seconds; ``None`` for a concurrency cap (it frees when a running answer ends)."""


@attrs.frozen(kw_only=True)
class Charge:
    """What one settled answer costs: its tokens, and its cost when known."""

    tokens: int = 0
    cost: float | None = None


class CounterStore(Protocol):
    """Where the counters live."""

    async def admit(self, ask: Ask) -> Refusal | None:
        """Check every cap; when all pass, count the request and take the leases (atomically)."""

    async def settle(self, ask: Ask, charge: Charge, now: float) -> None:
        """Release the leases of *ask* and add *charge* to the day's counters at *now*."""

    def retune(self, limits: LimitsSection) -> None:
        """Check the next asks against *limits* (a reload); what was counted stays."""

    async def close(self) -> None:
        """Release the connection."""


def check_order(limits: LimitsSection) -> tuple[tuple[str, float], ...]:
    """The caps that are on (``0`` is off), in the order a refusal names the first one hit."""
    caps = (
        ("concurrent_per_user", limits.concurrent_per_user),
        ("concurrent_per_channel", limits.concurrent_per_channel),
        ("requests_per_user", limits.requests_per_user),
        ("tokens_per_user_per_day", limits.tokens_per_user_per_day),
        ("tokens_per_guild_per_day", limits.tokens_per_guild_per_day),
        ("cost_per_user_per_day", limits.cost_per_user_per_day),
        ("cost_per_guild_per_day", limits.cost_per_guild_per_day),
    )
    return tuple((name, float(cap)) for name, cap in caps if cap > 0)


def resets_at(limits: LimitsSection, setting: str, now: float) -> float | None:
    """When the counter behind *setting* starts again (window end, UTC midnight; ``None``: a lease)."""
    if setting.startswith("concurrent"):
        return None
    if setting == "requests_per_user":
        return (now // limits.window_seconds + 1) * limits.window_seconds
    return (now // 86_400 + 1) * 86_400


class SqliteCounters:
    """The counters in one SQLite file (WAL): a restart keeps them.

    Each admit and settle is one small transaction run on one worker thread of its own, so the
    event loop never waits on the disk or on another process's write lock (``busy_timeout``),
    and the statements of one store never interleave.
    """

    def __init__(self, path: str | Path, limits: LimitsSection) -> None:
        self._limits = limits
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="limits")
        if str(path) != MEMORY:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10.0)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL: durable at checkpoints, never corrupt
        self._db.executescript(_SCHEMA)

    async def _run(self, call: Callable[..., _T], *args: object) -> _T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, call, *args)

    async def admit(self, ask: Ask) -> Refusal | None:
        """One ``BEGIN IMMEDIATE`` transaction: check every cap, then count and lease."""
        return await self._run(self._admit, ask)

    async def settle(self, ask: Ask, charge: Charge, now: float) -> None:
        """One transaction: drop the lease, add the tokens and the cost to the day's rows."""
        await self._run(self._settle, ask, charge, now)

    def retune(self, limits: LimitsSection) -> None:
        """The caps of the next admits (``Limits.retune``)."""
        self._limits = limits

    async def close(self) -> None:
        """Close the file after the pending statements."""
        await self._run(self._db.close)
        self._worker.shutdown(wait=False)

    def _admit(self, ask: Ask) -> Refusal | None:
        db, limits = self._db, self._limits
        window = int(ask.now // limits.window_seconds)
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM leases WHERE expires <= ?", (ask.now,))
            db.execute("DELETE FROM requests WHERE user = ? AND window < ?", (ask.user, window))
            used = self._used(ask, window)
            for setting, cap in check_order(limits):
                if used[setting] >= cap:
                    db.execute("COMMIT")
                    return Refusal(
                        setting=setting,
                        used=used[setting],
                        limit=cap,
                        resets_at=resets_at(limits, setting, ask.now),
                    )
            db.execute(
                "INSERT INTO requests VALUES (?, ?, 1) "
                "ON CONFLICT (user, window) DO UPDATE SET count = count + 1",
                (ask.user, window),
            )
            db.execute(
                "INSERT OR REPLACE INTO leases VALUES (?, ?, ?, ?)",
                (ask.lease, ask.user, ask.channel, ask.now + limits.lease_seconds),
            )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        return None

    def _used(self, ask: Ask, window: int) -> dict[str, float]:
        db = self._db

        def one(sql: str, *args: object) -> float:
            row = db.execute(sql, args).fetchone()
            return float(row[0] or 0) if row is not None else 0.0

        day = ask.day()
        guild = f"guild:{ask.guild}" if ask.guild is not None else None
        daily = "SELECT {} FROM daily WHERE scope = ? AND day = ?"
        return {
            "concurrent_per_user": one("SELECT count(*) FROM leases WHERE user = ?", ask.user),
            "concurrent_per_channel": one("SELECT count(*) FROM leases WHERE channel = ?", ask.channel),
            "requests_per_user": one(
                "SELECT count FROM requests WHERE user = ? AND window = ?", ask.user, window
            ),
            "tokens_per_user_per_day": one(daily.format("tokens"), f"user:{ask.user}", day),
            "tokens_per_guild_per_day": one(daily.format("tokens"), guild, day) if guild else 0.0,
            "cost_per_user_per_day": one(daily.format("cost"), f"user:{ask.user}", day),
            "cost_per_guild_per_day": one(daily.format("cost"), guild, day) if guild else 0.0,
        }

    def _settle(self, ask: Ask, charge: Charge, now: float) -> None:
        db = self._db
        day = int(now // 86_400)
        scopes = [f"user:{ask.user}", *([f"guild:{ask.guild}"] if ask.guild is not None else [])]
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("DELETE FROM leases WHERE id = ?", (ask.lease,))
            for scope in scopes:
                db.execute("DELETE FROM daily WHERE scope = ? AND day < ?", (scope, day - 1))
                db.execute(
                    "INSERT INTO daily VALUES (?, ?, ?, ?) ON CONFLICT (scope, day) DO UPDATE SET "
                    "tokens = tokens + excluded.tokens, cost = cost + excluded.cost",
                    (scope, day, charge.tokens, charge.cost or 0.0),
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


# KEYS: user leases, channel leases, the user's request window, user day, guild day (or "").
# ARGV: now, lease id, lease expiry, window ttl, day ttl, then the caps in check_order's full
# order (0: off). Returns {} (admitted) or {setting index, used} as strings (Lua truncates numbers).
_ADMIT: Final = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local function day(key, field)
  if key == '' then return 0 end
  return tonumber(redis.call('HGET', key, field) or '0')
end
local used = {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  tonumber(redis.call('GET', KEYS[3]) or '0'),
  day(KEYS[4], 'tokens'), day(KEYS[5], 'tokens'),
  day(KEYS[4], 'cost'), day(KEYS[5], 'cost'),
}
for i = 1, 7 do
  local cap = tonumber(ARGV[5 + i])
  if cap > 0 and used[i] >= cap then return {tostring(i), tostring(used[i])} end
end
redis.call('INCR', KEYS[3])
redis.call('EXPIRE', KEYS[3], ARGV[4])
for i = 1, 2 do
  redis.call('ZADD', KEYS[i], ARGV[3], ARGV[2])
  redis.call('EXPIRE', KEYS[i], ARGV[5])
end
return {}
"""

# KEYS: user leases, channel leases, user day, guild day (or ""). ARGV: lease id, tokens, cost, day ttl.
_SETTLE: Final = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
for i = 3, 4 do
  if KEYS[i] ~= '' then
    redis.call('HINCRBY', KEYS[i], 'tokens', ARGV[2])
    redis.call('HINCRBYFLOAT', KEYS[i], 'cost', ARGV[3])
    redis.call('EXPIRE', KEYS[i], ARGV[4])
  end
end
return 1
"""

_ALL_CAPS: Final = (
    "concurrent_per_user",
    "concurrent_per_channel",
    "requests_per_user",
    "tokens_per_user_per_day",
    "tokens_per_guild_per_day",
    "cost_per_user_per_day",
    "cost_per_guild_per_day",
)
_DAY_TTL: Final = 2 * 86_400


class RedisCounters:
    """The counters in Redis, shared by every bot process: two Lua scripts, each atomic.

    Keys live under *prefix* (one bot, one prefix). Counters expire by themselves (a window, two
    days, a lease's time), so nothing is swept. The expiry times are the injected clock's, as in
    SQLite: processes whose clocks disagree by seconds disagree on a window's edge by as much.
    """

    def __init__(self, url: str, limits: LimitsSection, *, prefix: str = "rxcord:limits") -> None:
        try:
            import redis.asyncio as aioredis
        except ImportError as exc:  # the name says what to install
            from rxcord import MissingExtraError

            raise MissingExtraError("redis", "redis", "[scale] redis_url_env") from exc
        self._limits = limits
        self._prefix = prefix
        self._redis = aioredis.Redis.from_url(url)
        self._admit_script = self._redis.register_script(_ADMIT)
        self._settle_script = self._redis.register_script(_SETTLE)

    def _keys(self, ask: Ask, day: int) -> tuple[str, str, str, str]:
        p = self._prefix
        guild = f"{p}:day:guild:{ask.guild}:{day}" if ask.guild is not None else ""
        return (
            f"{p}:lease:user:{ask.user}",
            f"{p}:lease:channel:{ask.channel}",
            f"{p}:day:user:{ask.user}:{day}",
            guild,
        )

    async def admit(self, ask: Ask) -> Refusal | None:
        """Check and take in one script run (two processes cannot both take the last slot)."""
        limits = self._limits
        window = int(ask.now // limits.window_seconds)
        user_leases, channel_leases, user_day, guild_day = self._keys(ask, ask.day())
        caps: list[float] = [float(getattr(limits, name)) for name in _ALL_CAPS]
        keys = [user_leases, channel_leases, f"{self._prefix}:req:{ask.user}:{window}", user_day, guild_day]
        args: list[str | float] = [
            ask.now,
            ask.lease,
            ask.now + limits.lease_seconds,
            limits.window_seconds,
            limits.lease_seconds,
        ]
        reply = await self._admit_script(keys=keys, args=[*args, *caps])
        if not reply:
            return None
        setting = _ALL_CAPS[int(reply[0]) - 1]
        return Refusal(
            setting=setting,
            used=float(reply[1]),
            limit=float(getattr(limits, setting)),
            resets_at=resets_at(limits, setting, ask.now),
        )

    async def settle(self, ask: Ask, charge: Charge, now: float) -> None:
        """Release the leases and charge the day (of *now*) in one script run."""
        user_leases, channel_leases, user_day, guild_day = self._keys(ask, int(now // 86_400))
        keys = [user_leases, channel_leases, user_day, guild_day]
        await self._settle_script(keys=keys, args=[ask.lease, charge.tokens, charge.cost or 0.0, _DAY_TTL])

    def retune(self, limits: LimitsSection) -> None:
        """The caps of the next admits (``Limits.retune``)."""
        self._limits = limits

    async def close(self) -> None:
        """Close the connection pool."""
        await self._redis.aclose()
