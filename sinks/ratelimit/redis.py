"""Stage 07: the Discord rate limiter shared through Redis, for bots that run several processes.

Why a shared limiter?
---------------------
Discord counts per bot token, not per process. Four shard processes that each
run the in-process ``rxcord.sinks.ratelimit.RateLimiter`` each believe they own the
whole global budget (50 requests per second) and every bucket, so together
they send four times too fast and collect 429s. ``RedisStore`` is the
``BucketStore`` that keeps the one limiter's shared *state* in Redis
(``make_limiter(url)`` builds ``RateLimiter(store=RedisStore(url))``); the limiter's
wait loop, FIFO locks and local state are the same as in process, and the store
runs the *same algorithm* as the in-process one
(read the package docstring first: buckets keyed by (bucket hash, major
parameters) once ``X-RateLimit-Bucket`` names the hash, pre-emptive waits from
``Remaining`` / ``Reset-After``, 429 blocks, the proactive global meter and the
global pause), as two Lua scripts that Redis runs atomically (``lua/*.lua``, package data):

* **take** (``RedisStore.take``, from ``slot.wait()``): resolve the route to its bucket key through the
  shared route -> hash map, compute the wait exactly as ``Slot.wait`` does
  (bucket block, bucket slot, global pause), and when nothing blocks, spend
  the bucket slot and reserve a global meter token.
* **learn** (``RedisStore.learn``, from ``slot.update(...)``): file the route under the hash the response
  named, refresh limit / remaining / reset from the headers, and record a 429
  as a bucket block or a global pause.

Every timestamp in Redis is Redis's own clock (``TIME``), and only relative
durations cross the wire (``Reset-After``, ``retry_after``, the wait a script
returns), so processes on machines with skewed clocks agree.

What changes when several processes share a bucket
--------------------------------------------------
In-process, a bucket's ``asyncio.Lock`` keeps one request per bucket in
flight, so every response describes the bucket as it is. Across processes two
requests can be in flight on one bucket, and a response may describe the
bucket *before* the other requests arrived, and requests taken in one order
can reach Discord in another. Overwriting ``remaining`` with it would
over-count free slots. So each take gets a sequence number and each answer
counts as done on its key; a response for take ``s`` is applied as
``remaining = R - (takes still in flight)`` (every other unanswered take,
earlier or later, counted as not yet seen by Discord, which can only
under-count), and a response older than the last one applied is ignored. A
bucket refilled without an answer starts a new window (``reset_at`` moves on
by the window the headers implied) and forgets answers that never came.
With one process per bucket (the usual case: a channel's stream runs in one
process, and the per-process FIFO lock is kept for order) nothing else is in
flight when the answer is learnt, and this is exactly the in-process update.

The global meter is a GCRA shared by all processes. In-process it is polled
(wait, re-check, take). Two hundred streams polling one Redis key would wake
together on every token and hammer Redis, so the take script instead
*reserves* the next token in virtual time: it pushes the theoretical arrival
time one interval forward and returns how long the caller must sleep before
sending. Same meter, same rate, one round trip per request.

Not shared: the invalid-request budget (401/403/429 -> Cloudflare ban). That
ban is per IP, not per token; processes on other machines have their own IPs,
so each process keeps its own count, as the in-process limiter does.

When Redis is down or slow
--------------------------
Every Redis call has a deadline: ``redis_timeout``, or the longer
``slow_timeout`` while Redis answered within the last two seconds (a Redis that
just answered is slow, not down: on a loaded machine the short deadline made
processes fall back needlessly, and fallback sends on top of a full shared
meter earned global 429s). When a call fails or times out, the store logs it
once and the limiter runs on its own in-process state (every response is also
learnt locally, so the local buckets are warm) with a **conservative** global
meter: the global limit
divided by the number of limiter processes Redis last reported (or by
``fallback_processes`` if larger). Its first token comes only after the last
send the shared meter had reserved for this process (those reservations are
still honoured, so issuing local tokens beside them would double the rate),
and with no burst allowance, because the others may just have used the whole
budget. Every send the fallback admits is also *charged* to the shared meter in
the background, best effort: a Redis that is slow rather than down (a loaded
machine, the usual cause of a fallback) takes the charge a moment later, so the
processes still on the shared meter leave room for this one's sends and all of
them together stay within the shared bound; a Redis that is really down has
nobody on the shared meter, and the shares add up to the limit. When Redis
comes back, the backlog the fallback meter ran up is carried into the shared
meter, in case Redis restarted empty. Streams keep going. A request is never
sent twice because of Redis: the limiter only decides *when* a
request leaves; retries remain ``RestSink``'s (with its nonces). At most one
probe per ``retry_interval`` tries Redis again; the first one that succeeds
logs the recovery and the shared state is used from then on (if the server
restarted empty, ``EVALSHA`` answers ``NOSCRIPT`` and the scripts are loaded again).

Keys
----
All keys of one bot token share the prefix ``rxcord:{<namespace>}`` (the braces
are a cluster hash tag, so the scripts' keys stay in one slot). Give every
process of one token the same namespace (``token_namespace(token)`` derives
one without exposing the token) and different tokens different ones. Keys
expire after ``state_ttl`` seconds without use.
"""

from __future__ import annotations

__all__ = ("RedisLimiterStats", "RedisStore", "token_namespace")

import asyncio
import hashlib
import math
import os
import socket
import uuid
from collections.abc import Mapping
from importlib import resources
from typing import Final

import attrs
from loguru import logger

from rxcord.core.errors import InputError, MissingExtraError

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError
except ImportError as exc:  # the name says what to install, not a bare ModuleNotFoundError
    raise MissingExtraError("redis", "redis", "rxcord.sinks.RedisStore (the Redis bucket store)") from exc
from rxcord.sinks.ratelimit.limiter import RateLimiter, Route, Slot
from rxcord.sinks.ratelimit.stores import DEFAULT_GLOBAL_METER, GlobalMeter, Grant
from rxcord.sinks.ratelimit.window import MAX_BLOCK

_log = logger.bind(stage="07-ratelimit-redis")

_SLOW_WINDOW: Final = 2.0
"""Seconds after a Redis answer during which a slow call gets ``slow_timeout`` (see ``RedisStore``)."""


def _script(name: str) -> str:
    """One Lua script of the package's ``lua/`` folder (package data, read once at import)."""
    return (resources.files("rxcord.sinks.ratelimit") / "lua" / name).read_text(encoding="utf-8")


_PRELUDE: Final = _script("prelude.lua")
_TAKE: Final = _PRELUDE + _script("take.lua")
"""Wait or take: one bucket slot and one reserved global token (``Slot.wait`` in Lua)."""
_LEARN: Final = _PRELUDE + _script("learn.lua")
"""Learn one response: discovery, headers (sequence-aware), 429 blocks (``RateLimiter.learn`` in Lua)."""
_DEBT: Final = _script("debt.lua")
"""Charge the shared meter for sends the fallback admitted (so the processes still on Redis slow down)."""


def token_namespace(token: str) -> str:
    """A Redis namespace for one bot token: a short digest, so the token never reaches a key or a log."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


@attrs.define
class RedisLimiterStats:
    """What one ``RedisStore`` did, for logs, tests and benchmarks."""

    shared_takes: int = 0
    """Requests admitted through Redis."""
    local_takes: int = 0
    """Requests admitted by the local fallback while Redis was unreachable."""
    rate_limited: int = 0
    """429 answers learnt."""
    rate_limited_undiscovered: int = 0
    """429 answers on routes whose bucket was not known yet (discovery; not the limiter's fault)."""
    charged: int = 0
    """Fallback sends charged to the shared meter afterwards (Redis slow, not down)."""
    uncharged: int = 0
    """Fallback sends that could not be charged (Redis down)."""
    outages: int = 0
    """Times the store switched to the local fallback."""
    recoveries: int = 0
    """Times it switched back to Redis."""


class RedisStore:
    """The ``BucketStore`` whose buckets and global meter live in Redis, shared by every process of one token.

    Plug it into the one limiter: ``RateLimiter(store=RedisStore(url))`` (what
    ``make_limiter(url)`` builds). See this module's docstring for the algorithm and the fallback.

    Args:
        url: Redis URL (``redis://127.0.0.1:6379/0``); ignored when ``client`` is given.
        namespace: Shared by every process of one bot token (see ``token_namespace``).
        process_id: Identifies this limiter among the live ones (default: host, pid and a random suffix).
        client: A ``redis.asyncio.Redis`` with ``decode_responses=True`` to use (not closed by ``aclose``).
        global_limit: Requests per ``global_period`` for all processes together; ``None`` disables the meter.
        global_period: The meter's window in seconds.
        redis_timeout: Deadline of each Redis call; slower counts as down.
        slow_timeout: The deadline while Redis answered within the last ``slow_window`` seconds
            (default: four times ``redis_timeout``): a Redis that just answered is slow, not
            down (a loaded machine), and waiting for it keeps this process on the shared
            meter instead of adding fallback sends on top of it.
        max_connections: Size of the connection pool this store creates.
        retry_interval: Seconds between attempts to reach Redis again while it is down.
        fallback_processes: Processes assumed to share the token when Redis is down (at least this
            many, more if Redis last reported more live limiters).
        state_ttl: Seconds an unused key lives in Redis.
    """

    OPTIONS: Final = (
        "namespace",
        "process_id",
        "client",
        "global_limit",
        "global_period",
        "redis_timeout",
        "slow_timeout",
        "max_connections",
        "retry_interval",
        "fallback_processes",
        "state_ttl",
    )
    """The keyword arguments ``make_limiter`` hands to this store rather than to the limiter."""

    __slots__ = (
        "_client",
        "_debt",
        "_debt_task",
        "_down",
        "_fallback",
        "_fallback_processes",
        "_horizon",
        "_interval",
        "_last_ok",
        "_limiter",
        "_owns_client",
        "_peers",
        "_period",
        "_prefix",
        "_process_id",
        "_redis_timeout",
        "_retry_at",
        "_retry_interval",
        "_scripts",
        "_slow_timeout",
        "_tasks",
        "_ttl_ms",
        "stats",
    )

    def __init__(
        self,
        url: str | None = None,
        *,
        namespace: str = "default",
        process_id: str | None = None,
        client: aioredis.Redis | None = None,
        global_limit: int | None = DEFAULT_GLOBAL_METER,
        global_period: float = 1.0,
        redis_timeout: float = 0.5,
        slow_timeout: float | None = None,
        max_connections: int = 8,
        retry_interval: float = 1.0,
        fallback_processes: int = 1,
        state_ttl: float = 600.0,
    ) -> None:
        if client is None:
            if not url:
                raise InputError("RedisStore needs a Redis url or a client")
            # A few connections shared by every stream: hundreds of streams starting at once
            # would otherwise each open one, and the connect storm alone looks like a slow Redis.
            pool = aioredis.BlockingConnectionPool.from_url(
                url,
                max_connections=max_connections,
                timeout=None,
                decode_responses=True,
                socket_timeout=slow_timeout or redis_timeout * 4,
                socket_connect_timeout=redis_timeout,
                # One immediate retry replaces a pooled connection the server closed
                # (a restart); anything longer would stall a stream instead of falling back.
                retry=Retry(NoBackoff(), 1),
            )
            client = aioredis.Redis.from_pool(pool)
            self._owns_client = True
        else:
            self._owns_client = False
        self._client = client
        self._limiter: RateLimiter | None = None
        self._prefix = f"rxcord:{{{namespace}}}"
        self._process_id = process_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._period = global_period
        self._interval = global_period / global_limit if global_limit else 0.0
        self._redis_timeout = redis_timeout
        self._slow_timeout = max(redis_timeout, slow_timeout or redis_timeout * 4)
        self._last_ok = -math.inf
        """Local time of the last Redis answer."""
        self._retry_interval = retry_interval
        self._fallback_processes = max(1, fallback_processes)
        self._ttl_ms = str(max(1, round(state_ttl * 1000)))
        self._scripts = (
            client.register_script(_TAKE),
            client.register_script(_LEARN),
            client.register_script(_DEBT),
        )
        self._debt = 0
        """Fallback sends not yet charged to the shared meter."""
        self._debt_task: asyncio.Task[None] | None = None
        self._peers = 0
        self._down = False
        self._retry_at = -math.inf
        self._fallback = GlobalMeter(self._interval)
        """The fallback meter: a share of the global limit, no burst (its interval is set on an outage)."""
        self._horizon = -math.inf
        """Local time of the latest send the shared meter reserved for this process."""
        self._tasks: set[asyncio.Task[None]] = set()
        self.stats = RedisLimiterStats()

    def __repr__(self) -> str:
        backend = "redis" if not self._down else "local fallback"
        return f"<RedisStore {self._prefix} {backend} peers={self._peers}>"

    def bind(self, limiter: RateLimiter) -> None:
        """Called once by the limiter that owns this store (its clock is the store's local clock)."""
        self._limiter = limiter

    # -- public API -------------------------------------------------------

    @property
    def using_redis(self) -> bool:
        """False while the limiter runs on its local fallback."""
        return not self._down

    @property
    def process_id(self) -> str:
        """This limiter's name among the live ones."""
        return self._process_id

    @property
    def peers(self) -> int:
        """Live limiters sharing the namespace, as Redis last reported (0 before the first take)."""
        return self._peers

    async def connect(self) -> bool:
        """Reach Redis now and load the scripts (optional: the first request does it otherwise).

        Returns:
            Whether Redis answered; if not, the store is on its fallback (logged) and keeps probing.
        """
        try:
            for script in self._scripts:
                await asyncio.wait_for(self._client.script_load(script.script), self._redis_timeout)
        except (RedisError, OSError, TimeoutError) as exc:
            self._went_down(exc)
            return False
        self._came_back()
        return True

    async def aclose(self) -> None:
        """Finish background writes and close the Redis client if this store created it."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._owns_client:
            await self._client.aclose()

    # -- BucketStore ----------------------------------------------------------

    async def take(self, slot: Slot) -> Grant:
        """Take through Redis, or through the conservative local meter while Redis is unreachable."""
        grant = await self.take_shared(slot.route)
        if grant is None:
            admitted = await self._fallback.admit(slot)
            if admitted:
                self.stats.local_takes += 1
                self._charge(1)
            return Grant(taken=admitted)
        if grant.taken:
            self.stats.shared_takes += 1
        return grant

    def learn(
        self, slot: Slot, headers: Mapping[str, str], retry_after: float | None, is_global: bool
    ) -> asyncio.Task[None] | None:
        """Count the 429s, and write the response's lessons to Redis in the background."""
        if retry_after is not None:
            self.stats.rate_limited += 1
            if not slot.discovered:
                self.stats.rate_limited_undiscovered += 1
        grant = slot.grant
        if grant.key is None:
            return None  # taken locally: nothing to reconcile in Redis
        sliding = self._limiter is None or (self._limiter.sliding and not slot.fixed_window)
        return self.learn_shared(
            grant.key, grant.seq, slot.route, headers, retry_after, is_global=is_global, sliding=sliding
        )

    # -- the shared state ---------------------------------------------------

    async def take_shared(self, route: Route) -> Grant | None:
        """Run the take script for ``route``; ``None`` when Redis is unavailable (use the fallback)."""
        if not self._may_try():
            return None
        try:
            reply = await asyncio.wait_for(
                self._scripts[0](
                    keys=[self._key("routes"), self._key("global"), self._key("peers")],
                    args=[
                        self._prefix,
                        route.key,
                        "/".join(route.major),
                        repr(self._interval),
                        repr(self._period),
                        self._ttl_ms,
                        self._process_id,
                        repr(self._meter_floor()),
                    ],
                ),
                self._deadline(),
            )
        except (RedisError, OSError, TimeoutError) as exc:
            self._went_down(exc)
            return None
        self._came_back()
        self._peers = int(reply[4])
        grant = Grant(taken=int(reply[0]) == 1, delay=float(reply[1]), key=str(reply[2]), seq=int(reply[3]))
        if grant.taken:
            self._horizon = max(self._horizon, self._now() + grant.delay)
        return grant

    def learn_shared(
        self,
        key: str,
        seq: int,
        route: Route,
        headers: Mapping[str, str],
        retry_after: float | None = None,
        *,
        is_global: bool = False,
        sliding: bool = True,
    ) -> asyncio.Task[None]:
        """Write one response's lessons to Redis in the background; the task never raises."""
        lowered = {str(name).lower(): str(value) for name, value in headers.items()}
        limit, remaining, reset_after = "", "", ""
        try:
            limit = str(int(lowered["x-ratelimit-limit"]))
            remaining = str(int(lowered["x-ratelimit-remaining"]))
            seconds = float(lowered["x-ratelimit-reset-after"])
            if not math.isfinite(seconds) or seconds < 0:
                raise ValueError(seconds)
            reset_after = repr(min(seconds, MAX_BLOCK))
        except (KeyError, ValueError):
            limit, remaining, reset_after = "", "", ""
        args = [
            self._prefix,
            route.key,
            "/".join(route.major),
            str(seq),
            lowered.get("x-ratelimit-bucket", ""),
            self._ttl_ms,
            limit,
            remaining,
            reset_after,
            "1" if sliding else "0",
            repr(min(retry_after, MAX_BLOCK)) if retry_after is not None else "",
            "1" if retry_after is not None and is_global else "0",
        ]
        task = asyncio.get_running_loop().create_task(
            self._learn([key, self._key("routes"), self._key("global")], args)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _learn(self, keys: list[str], args: list[str]) -> None:
        if self._down:
            return
        try:
            await asyncio.wait_for(self._scripts[1](keys=keys, args=args), self._deadline())
        except (RedisError, OSError, TimeoutError) as exc:
            self._went_down(exc)
            return
        self._last_ok = self._now()

    def _charge(self, sends: int) -> None:
        """Charge fallback sends to the shared meter in the background (best effort).

        A Redis that is slow rather than down (a loaded machine) still takes the charge a
        moment later, so the processes on the shared meter leave room for this one's
        fallback sends: together they stay within the shared bound. If Redis is really
        down nobody is on the shared meter, and the fallback shares add up to the limit.
        """
        if not self._interval:
            return
        self._debt += sends
        if self._debt_task is None or self._debt_task.done():
            self._debt_task = asyncio.get_running_loop().create_task(self._pay_debt())
            self._tasks.add(self._debt_task)
            self._debt_task.add_done_callback(self._tasks.discard)

    async def _pay_debt(self) -> None:
        while self._debt:
            sends, self._debt = self._debt, 0
            try:
                await asyncio.wait_for(
                    self._scripts[2](
                        keys=[self._key("global")], args=[repr(sends * self._interval), self._ttl_ms]
                    ),
                    self._redis_timeout * 4,
                )
            except (RedisError, OSError, TimeoutError):
                self.stats.uncharged += sends  # Redis really is down: nobody is on the shared meter
                return
            self.stats.charged += sends

    def _now(self) -> float:
        if self._limiter is not None:
            return self._limiter.now()
        return asyncio.get_running_loop().time()

    def _meter_floor(self) -> float:
        """Meter backlog the fallback left, carried into the shared meter (Redis may have restarted empty)."""
        if self._fallback.tat == -math.inf:
            return 0.0
        return max(0.0, self._fallback.tat - self._now())

    def _key(self, name: str) -> str:
        return f"{self._prefix}:{name}"

    # -- availability --------------------------------------------------------

    def _may_try(self) -> bool:
        if not self._down:
            return True
        now = self._now()
        if now < self._retry_at:
            return False
        # One probe at a time: the others keep to the fallback until it answers.
        self._retry_at = now + self._retry_interval
        return True

    def _went_down(self, exc: BaseException) -> None:
        now = self._now()
        self._retry_at = now + self._retry_interval
        if self._down:
            return
        self._down = True
        self.stats.outages += 1
        processes = max(self._peers, self._fallback_processes)
        if self._interval:
            # A share of the global limit per process, and the first local token only after every
            # send the shared meter already reserved (those still go out), without a burst: the
            # others may just have spent the whole global budget.
            interval = self._interval * processes
            self._fallback.interval = interval
            self._fallback.tolerance = 0.0
            self._fallback.tat = max(self._fallback.tat, now, self._horizon + interval)
        rate = (self._period / self._interval / processes) if self._interval else math.inf
        _log.warning(
            "Redis unreachable ({error}): local rate limits, global meter {rate:.1f}/s "
            "(1/{processes} of the shared budget) until it answers",
            error=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
            rate=rate,
            processes=processes,
        )

    def _deadline(self) -> float:
        """``slow_timeout`` while Redis answered recently (slow, not down), else ``redis_timeout``."""
        if self._now() - self._last_ok < _SLOW_WINDOW:
            return self._slow_timeout
        return self._redis_timeout

    def _came_back(self) -> None:
        self._last_ok = self._now()
        if not self._down:
            return
        self._down = False
        self.stats.recoveries += 1
        _log.info("Redis reachable again: shared rate limits resumed")
