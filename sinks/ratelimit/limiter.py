"""The one Discord rate limiter: FIFO per bucket, the wait loop, learning from responses.

``RateLimiter`` holds the local state (buckets learnt from every response, the global pause,
the invalid-request budget) and asks its ``BucketStore`` for each take; the package docstring
(``rxcord.sinks.ratelimit``) gives the theory.
"""

from __future__ import annotations

__all__ = ("RateLimited", "RateLimiter", "Route", "Slot", "make_limiter", "webhook_major")

import asyncio
import collections
import contextlib
import hashlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import attrs
from loguru import logger

from rxcord.core.errors import InvalidRequestLimitError, RateLimitError
from rxcord.sinks.ratelimit.stores import DEFAULT_GLOBAL_METER, BucketStore, Grant, MemoryStore
from rxcord.sinks.ratelimit.window import (
    DEFAULT_RETRY_BUDGET,
    EPSILON,
    MAX_BLOCK,
    MIN_RETRY_CHARGE,
    Bucket,
    retry_delay,
    retry_seconds,
)

_log = logger.bind(stage="07-ratelimit")

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
WaitHook = Callable[["Route", float], None]
"""Told each pre-emptive wait: the route and the seconds about to be slept."""


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


@attrs.frozen
class Route:
    """One REST route as the limiter sees it: ``METHOD /template`` plus its major parameters.

    ``major`` holds the values of the major parameters in the path (channel id,
    guild id, webhook id and a digest of the webhook token, see
    ``webhook_major``). Never put a secret in it: routes appear in logs.
    """

    method: str
    template: str
    """The path template, e.g. ``/channels/{channel_id}/messages``."""
    major: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The route key ``"POST /channels/{channel_id}/messages"`` (no parameter values)."""
        return f"{self.method} {self.template}"


def webhook_major(webhook_id: str, webhook_token: str) -> tuple[str, str]:
    """Major parameters of a webhook route: the id and a short digest standing in for the token.

    Discord keys webhook limits on id and token; the digest keeps that
    distinction without the secret ever reaching a route, a key or a log line.
    """
    digest = hashlib.sha256(webhook_token.encode()).hexdigest()[:16]
    return (webhook_id, digest)


@attrs.frozen
class RateLimited:
    """What ``Slot.update`` concluded from a 429 (the caller then retries)."""

    retry_after: float
    """Seconds the limiter will hold the next attempt back."""
    is_global: bool
    """Whether every route is paused (a global 429) or only this bucket."""
    scope: str | None
    """``X-RateLimit-Scope``: ``user``, ``global`` or ``shared`` (``None`` if absent)."""


class Slot:
    """The right to send one request (and its retries) through one bucket; see ``RateLimiter.acquire``."""

    __slots__ = (
        "_bucket",
        "_discovered",
        "_expected",
        "_grant",
        "_limited",
        "_limiter",
        "_pending",
        "_route",
        "_spent",
    )

    def __init__(self, limiter: RateLimiter, route: Route, bucket: Bucket) -> None:
        self._limiter = limiter
        self._route = route
        self._bucket = bucket
        self._grant = Grant(taken=False)
        self._discovered = False
        self._expected = False
        """Whether the last send went out with the bucket's limits known (a slot was expected)."""
        self._pending: asyncio.Task[None] | None = None
        self._limited = 0
        """429s this request met (its retries after a 429)."""
        self._spent = 0.0
        """Seconds of 429 delays charged against the budget (see "The 429 budget")."""

    @property
    def route(self) -> Route:
        """The route this slot was acquired for."""
        return self._route

    @property
    def limiter(self) -> RateLimiter:
        """The limiter this slot belongs to."""
        return self._limiter

    @property
    def grant(self) -> Grant:
        """The store's answer to the last take of this slot."""
        return self._grant

    @property
    def discovered(self) -> bool:
        """Whether the route's bucket hash was known when the last attempt was taken."""
        return self._discovered

    @property
    def fixed_window(self) -> bool:
        """Whether the slot's bucket is known to be a fixed window."""
        return self._bucket.fixed

    async def wait(self) -> None:
        """Sleep until the global gate, the store and the bucket all allow one request, then take it.

        Raises:
            InvalidRequestLimitError: too many invalid responses in the rolling window.
            RateLimitError: a 429 closed the bucket (or every route) for longer than ``max_retry_after``.
        """
        limiter = self._limiter
        await self.settle()
        while True:
            limiter.check_invalid_budget()
            now = limiter.now()
            limiter.check_blocked(self._route, self._bucket, now)
            delay = max(limiter.global_paused_until - now, self._bucket.delay(now))
            if delay > EPSILON:
                await self.sleep(delay)
                continue
            grant = await limiter.store.take(self)
            if not grant.taken:
                if grant.delay > EPSILON:
                    await self.sleep(grant.delay)
                continue
            if grant.delay > EPSILON:
                await self.sleep(grant.delay)
            break
        self._grant = grant
        self._discovered = limiter.bucket_hash(self._route) is not None
        self._expected = self._bucket.remaining is not None
        self._bucket.on_send(limiter.now())

    async def sleep(self, delay: float) -> None:
        """Sleep ``delay`` seconds on the limiter's clock, telling its ``on_wait`` hook first."""
        limiter = self._limiter
        if limiter.on_wait is not None:
            limiter.on_wait(self._route, delay)
        await limiter.sleep(delay)

    def update(self, status: int, headers: Mapping[str, str], body: Any) -> RateLimited | None:
        """Learn from one response; for a 429, block as Discord asks and return the verdict.

        Args:
            status: The HTTP status.
            headers: The response headers (any case; an aiohttp ``CIMultiDictProxy`` or a dict).
            body: The decoded JSON body, or ``None`` when it was not JSON.

        Returns:
            ``None`` for anything but a 429; a ``RateLimited`` for a 429 that should be retried.

        Raises:
            RateLimitError: a 429 without a usable delay (a ban), one too long to wait, or one
                whose wait would pass the request's 429 budget (``budget_spent``).
        """
        limiter = self._limiter
        try:
            verdict, self._bucket = limiter.learn(
                self._route, self._bucket, status, headers, body, expected=self._expected
            )
        except RateLimitError as exc:
            pause = exc.retry_after if exc.retry_after is not None else limiter.ban_pause
            self._pending = limiter.store.learn(self, headers, pause, exc.is_global)
            raise
        if verdict is None:
            self._pending = limiter.store.learn(self, headers, None, False)
            return None
        self._pending = limiter.store.learn(self, headers, verdict.retry_after, verdict.is_global)
        self._limited += 1
        self._spent += max(verdict.retry_after, MIN_RETRY_CHARGE)
        limiter.check_retry_budget(self._route, self._limited, self._spent, verdict)
        return verdict

    async def settle(self) -> None:
        """Wait until the store has recorded the last response (never raises)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            # Shielded: a cancelled stream must still leave the shared state right.
            await asyncio.shield(pending)


class RateLimiter:
    """Bucket-aware Discord rate limiter shared by every request of one bot token (see the package docstring).

    Args:
        store: Where the shared state lives (default: a ``MemoryStore`` built from the
            ``global_*`` arguments, which are ignored when a store is given).
        clock: Monotonic seconds; defaults to the running loop's ``time``.
        sleep: Awaitable sleep; defaults to ``asyncio.sleep``. Tests inject a fake that advances ``clock``.
        global_limit: Requests per ``global_period`` the proactive meter allows; ``None`` disables it.
        global_period: The meter's window in seconds.
        global_burst: Requests the meter lets through at once from idle (see ``MemoryStore``).
        max_invalid: Invalid responses (401, 403, non-shared 429) tolerated in ``invalid_window``.
        invalid_window: The rolling window of the invalid request count (Discord: 10 minutes).
        max_retry_after: A 429 asking for a longer wait raises ``RateLimitError`` instead.
        ban_pause: Seconds every route stays closed after a 429 without any usable delay (a ban).
        sliding: Treat buckets as sliding windows (one slot per ``reset_after / limit``)
            unless detected as fixed.
        retry_budget: Seconds of 429 delays one request may wait out in total (see "The 429 budget").
        min_retries: 429s of one request always waited out, whatever the budget.
        on_wait: Called with the route and the delay before every wait (timelines, metrics).
    """

    __slots__ = (
        "_ban_pause",
        "_buckets",
        "_clock",
        "_global_paused_until",
        "_hashes",
        "_invalid",
        "_invalid_window",
        "_max_invalid",
        "_max_retry_after",
        "_min_retries",
        "_retry_budget",
        "_sleep",
        "_sliding",
        "_store",
        "on_wait",
    )

    def __init__(
        self,
        *,
        store: BucketStore | None = None,
        clock: Clock | None = None,
        sleep: Sleep | None = None,
        global_limit: int | None = DEFAULT_GLOBAL_METER,
        global_period: float = 1.0,
        global_burst: int | None = None,
        max_invalid: int = 1000,
        invalid_window: float = 600.0,
        max_retry_after: float = 60.0,
        ban_pause: float = 300.0,
        sliding: bool = True,
        retry_budget: float = DEFAULT_RETRY_BUDGET,
        min_retries: int = 3,
        on_wait: WaitHook | None = None,
    ) -> None:
        self._clock: Clock = clock or _loop_time
        self._sleep: Sleep = sleep or asyncio.sleep
        self._store: BucketStore = (
            store if store is not None else MemoryStore(global_limit, global_period, global_burst)
        )
        self._global_paused_until = -math.inf
        self._max_invalid = max_invalid
        self._invalid_window = invalid_window
        self._invalid: collections.deque[float] = collections.deque()
        self._max_retry_after = max_retry_after
        self._ban_pause = min(ban_pause, MAX_BLOCK)
        self._sliding = sliding
        self._retry_budget = retry_budget
        self._min_retries = min_retries
        self.on_wait = on_wait
        """Called with the route and the delay before every wait; may be set at any time."""
        self._hashes: dict[str, str] = {}
        """Route key -> bucket hash, learned from responses."""
        self._buckets: dict[tuple[str, str, tuple[str, ...]], Bucket] = {}
        """("route", route key, major) before discovery; ("bucket", hash, major) after."""
        self._store.bind(self)

    def __repr__(self) -> str:
        return f"<RateLimiter {self._store!r} buckets={len(self._buckets)} invalid={len(self._invalid)}>"

    # -- public API -------------------------------------------------------

    @contextlib.asynccontextmanager
    async def acquire(self, route: Route) -> AsyncIterator[Slot]:
        """Hold the route's bucket (FIFO among callers) for one request and its retries.

        Example::

            async with limiter.acquire(route) as slot:
                while True:
                    await slot.wait()
                    status, headers, body = await send()
                    if slot.update(status, headers, body) is None:
                        break
        """
        bucket = self._bucket_for(route)
        async with bucket.lock:
            slot = Slot(self, route, bucket)
            try:
                yield slot
            finally:
                await slot.settle()

    @property
    def store(self) -> BucketStore:
        """Where the shared state lives (``MemoryStore`` or a ``RedisStore``)."""
        return self._store

    @property
    def ban_pause(self) -> float:
        """Seconds every route stays closed after a 429 without any usable delay."""
        return self._ban_pause

    @property
    def sliding(self) -> bool:
        """Whether buckets are treated as sliding windows unless detected as fixed."""
        return self._sliding

    async def connect(self) -> bool:
        """Reach the store now (optional: the first request does it otherwise); whether it answered."""
        return await self._store.connect()

    async def aclose(self) -> None:
        """Finish the store's background work and release its connections."""
        await self._store.aclose()

    def bucket_hash(self, route: Route) -> str | None:
        """The bucket hash learned for ``route``'s key, if any response named one yet."""
        return self._hashes.get(route.key)

    @property
    def invalid_requests(self) -> int:
        """Invalid responses counted in the current rolling window."""
        self._prune_invalid(self._clock())
        return len(self._invalid)

    @property
    def global_paused_until(self) -> float:
        """Clock time until which a global 429 pauses every route (in the past when open)."""
        return self._global_paused_until

    def now(self) -> float:
        """The limiter's clock."""
        return self._clock()

    async def sleep(self, seconds: float) -> None:
        """The limiter's sleep (injectable for tests)."""
        await self._sleep(seconds)

    def check_invalid_budget(self) -> None:
        """Raise ``InvalidRequestLimitError`` if the rolling invalid count reached ``max_invalid``."""
        self._prune_invalid(self._clock())
        if len(self._invalid) >= self._max_invalid:
            raise InvalidRequestLimitError(
                status=0,
                message=(
                    f"refusing to send: {len(self._invalid)} invalid responses (401/403/429) "
                    f"in {self._invalid_window:.0f} s"
                ),
                count=len(self._invalid),
            )

    def check_blocked(self, route: Route, bucket: Bucket, now: float) -> None:
        """Raise ``RateLimitError`` if a 429 closed this bucket or every route for longer than allowed."""
        block = max(self._global_paused_until, bucket.blocked_until) - now
        if block > self._max_retry_after:
            raise RateLimitError(
                status=429,
                message=(
                    f"{route.key} not sent: rate limited for {block:.1f} s more, "
                    f"above the {self._max_retry_after:.0f} s maximum"
                ),
                retry_after=block,
            )

    def check_retry_budget(self, route: Route, tries: int, spent: float, verdict: RateLimited) -> None:
        """Raise ``RateLimitError`` (``budget_spent``) if waiting *verdict* would pass the 429 budget.

        Args:
            route: The request's route (for the message).
            tries: 429s the request met, this one included.
            spent: Seconds charged, this 429's delay included.
            verdict: This 429's verdict.
        """
        if tries <= self._min_retries or spent <= self._retry_budget + EPSILON:
            return
        _log.error(
            "{route}: still rate limited after {tries} 429s; waiting {wait:.3f} s more would pass "
            "the {budget:.0f} s budget",
            route=route.key,
            tries=tries,
            wait=verdict.retry_after,
            budget=self._retry_budget,
        )
        raise RateLimitError(
            status=429,
            message=(
                f"{route.key} still rate limited after {tries} tries: waiting {verdict.retry_after:.3f} s "
                f"more would pass the {self._retry_budget:.0f} s budget of 429 waits"
            ),
            retry_after=verdict.retry_after,
            is_global=verdict.is_global,
            budget_spent=True,
        )

    def pause_globally(self, seconds: float) -> None:
        """Close every route for ``seconds`` (a global 429 learnt elsewhere, e.g. by another process)."""
        self._global_paused_until = max(self._global_paused_until, self._clock() + min(seconds, MAX_BLOCK))

    # -- learning from responses -----------------------------------------

    def learn(
        self,
        route: Route,
        bucket: Bucket,
        status: int,
        headers: Mapping[str, str],
        body: Any,
        *,
        expected: bool = False,
    ) -> tuple[RateLimited | None, Bucket]:
        """Apply one response to the limiter's state (``Slot.update`` delegates here).

        ``expected`` says the request left with the bucket's limits known: a
        user-scope 429 then proves the sliding model wrong for this bucket.

        Returns:
            The 429 verdict (or ``None``) and the bucket that now holds the route's
            state: discovery may have merged ``bucket`` into one already filed under
            the same hash, and the state belongs there (the caller keeps its lock).
        """
        now = self._clock()
        lowered = {str(name).lower(): str(value) for name, value in headers.items()}
        if status in (401, 403):
            self._count_invalid(now)
        bucket_hash = lowered.get("x-ratelimit-bucket")
        if bucket_hash:
            bucket = self._discover(route, bucket_hash, bucket)
        if status == 429 and expected and lowered.get("x-ratelimit-scope") == "user":
            if not bucket.fixed:
                _log.debug("bucket {name}: 429 where a slot was expected; a fixed window", name=bucket.name)
            bucket.fixed = True
        bucket.apply_headers(lowered, now, self._sliding)
        if status != 429:
            return None, bucket
        return self._rate_limited(route, bucket, lowered, body, now), bucket

    def _rate_limited(
        self, route: Route, bucket: Bucket, headers: Mapping[str, str], body: Any, now: float
    ) -> RateLimited:
        json_body = body if isinstance(body, Mapping) else None
        code = json_body.get("code") if json_body is not None else None
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        body_value = retry_seconds(json_body.get("retry_after")) if json_body is not None else None
        header_value = retry_seconds(headers.get("retry-after"))
        scope = headers.get("x-ratelimit-scope")
        if body_value is None and header_value is None:
            self._count_invalid(now)
            self._global_paused_until = max(self._global_paused_until, now + self._ban_pause)
            message = str(json_body.get("message", "")) if json_body is not None else ""
            _log.error(
                "429 without a usable retry delay (a Cloudflare ban?): every route closed for {pause:.0f} s",
                pause=self._ban_pause,
            )
            raise RateLimitError(
                status=429,
                code=code,
                message=f"429 without retry_after (Cloudflare ban?): {message}".strip(),
                is_global=True,
            )
        wait = retry_delay(body_value, header_value)
        is_global = (
            json_body is None  # no JSON at all: Discord's edge (Cloudflare), not a bucket
            or json_body.get("global") is True
            or headers.get("x-ratelimit-global", "").lower() == "true"
            or scope == "global"
        ) and scope not in ("user", "shared")
        if scope != "shared":
            self._count_invalid(now)
        until = now + min(wait, MAX_BLOCK)
        if is_global:
            self._global_paused_until = max(self._global_paused_until, until)
        else:
            bucket.blocked_until = max(bucket.blocked_until, until)
        if wait > self._max_retry_after:
            raise RateLimitError(
                status=429,
                code=code,
                message=f"rate limited for {wait:.3f} s, above the {self._max_retry_after:.0f} s maximum",
                retry_after=wait,
                is_global=is_global,
            )
        if is_global:
            _log.warning("global rate limit: pausing every route for {wait:.3f} s", wait=wait)
        else:
            _log.warning(
                "rate limited on {route} (scope {scope}): retrying in {wait:.3f} s",
                route=route.key,
                scope=scope,
                wait=wait,
            )
        return RateLimited(retry_after=wait, is_global=is_global, scope=scope)

    # -- buckets -----------------------------------------------------------

    def _bucket_for(self, route: Route) -> Bucket:
        bucket_hash = self._hashes.get(route.key)
        key = ("bucket", bucket_hash, route.major) if bucket_hash else ("route", route.key, route.major)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = Bucket(name=f"{key[1]} {route.major}")
            self._buckets[key] = bucket
        return bucket

    def _discover(self, route: Route, bucket_hash: str, bucket: Bucket) -> Bucket:
        known = self._hashes.get(route.key)
        new_key = ("bucket", bucket_hash, route.major)
        if known == bucket_hash:
            return self._buckets.get(new_key, bucket)
        if known is not None:
            # Sub-limits can make a route report another hash; follow the newest.
            _log.debug(
                "bucket of {route} changed from {old} to {new}", route=route.key, old=known, new=bucket_hash
            )
        self._hashes[route.key] = bucket_hash
        # Waiters queued on this bucket's lock keep their place: the same object
        # is re-filed, so newcomers queue behind them. If another route already
        # owns a bucket under this hash, newcomers share that one instead.
        canonical = self._buckets.setdefault(new_key, bucket)
        old_key = ("route", route.key, route.major)
        if self._buckets.get(old_key) is bucket:
            del self._buckets[old_key]
        return canonical

    # -- invalid request budget -------------------------------------------

    def _count_invalid(self, now: float) -> None:
        self._invalid.append(now)
        self._prune_invalid(now)

    def _prune_invalid(self, now: float) -> None:
        horizon = now - self._invalid_window
        while self._invalid and self._invalid[0] <= horizon:
            self._invalid.popleft()


def make_limiter(redis_url: str | None, **options: Any) -> RateLimiter:
    """The configuration switch: an in-process limiter without a URL, one sharing its state in Redis with one.

    Args:
        redis_url: ``redis://host:port/db`` shared by every process of the bot token, or ``None``.
        options: Keyword arguments of ``RateLimiter``; with a URL also those of
            ``rxcord.sinks.ratelimit.redis.RedisStore`` (``namespace``, ``redis_timeout``, ...),
            which then takes ``global_limit`` and ``global_period`` too.
    """
    if not redis_url:
        return RateLimiter(**options)
    from rxcord.sinks.ratelimit.redis import RedisStore

    store_options = {name: options.pop(name) for name in RedisStore.OPTIONS if name in options}
    options.pop("global_burst", None)  # the shared meter has no burst allowance beyond its GCRA
    return RateLimiter(store=RedisStore(redis_url, **store_options), **options)
