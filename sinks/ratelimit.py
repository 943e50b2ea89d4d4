"""Client-side Discord REST rate limiting for the stage 07 sinks.

What is the theory behind this implementation?
----------------------------------------------
Discord limits a bot in three independent layers, and a well-behaved client
respects all three (the project's Discord delivery facts (``shared/reference/discord-delivery-facts.md``) §1):

1. **Per-route buckets.** Each route (``METHOD /template``) belongs to a bucket
   whose opaque id arrives in ``X-RateLimit-Bucket``. The counter that really
   limits is keyed by *(bucket hash, major parameters)*: the channel id, guild
   id or webhook id + token in the path. ``POST /channels/1/messages`` and
   ``POST /channels/2/messages`` share a hash but never a counter. The hash is
   unknown until the first response of a route, so a limiter starts life keyed
   by *(route key, major parameters)* and is re-filed under
   *(hash, major parameters)* once a response names the hash (discord.py
   ``http.py`` and hikari ``buckets.py`` both do this). Any later route that
   reports the same hash with the same major parameters then shares the same
   limiter. If a route's hash changes (sub-limits can make hashes oscillate)
   the route simply points at the new hash from then on.
2. **The global limit**: 50 requests per second per bot across every route.
   Neither discord.py nor hikari meter it; they wait only after a global 429.
   This module does both: a small proactive meter (default 48 per second, a
   margin under Discord's 50 that absorbs network jitter, because Discord
   counts arrival times while we can only count send times; requests queue
   for it first come, first served, so no channel starves) and a gate that
   closes for ``retry_after`` seconds after a 429 whose body says
   ``"global": true`` (or whose scope header says ``global``).
3. **The invalid request limit**: 10,000 responses with status 401, 403 or 429
   (except 429s of scope ``shared``) in 10 minutes get the IP banned by
   Cloudflare. We count them in a rolling window and refuse to send once the
   count reaches ``max_invalid`` (default 1,000, a tenth of Discord's limit):
   a bot that produces that many errors is broken, and stopping early keeps
   the IP usable. The refusal is an ``InvalidRequestLimitError``.

Sliding windows
---------------
Since 2022-11 Discord's buckets behave as a sliding window in leaky-bucket
form (hikari's docstring; observed "reset in 1.0 s" after one request on a
5/5 s bucket): every request pushes a "theoretical arrival time" forward by
``window / limit`` seconds, ``X-RateLimit-Reset-After`` is the time until the
bucket is completely empty again, and one slot frees every
``window / limit`` seconds. So when a response says ``Remaining: 0`` and
``Reset-After: r``, the next slot frees no later than ``r / limit`` seconds
later; we wait exactly that (``sliding=True``). With ``sliding=False`` we wait
the whole ``Reset-After``, as discord.py does, which is also right for a
fixed window but adds latency. We trust ``Reset-After`` (relative, immune to
clock skew) rather than the epoch ``X-RateLimit-Reset``. Both estimates are
conservative against a leaky bucket: the response is read after Discord
computed it, so our clock is always a little behind Discord's decision.

How a request goes through
--------------------------
``async with limiter.acquire(route) as slot``: takes the bucket's lock, so
**at most one request per bucket is in flight** and requests leave in the
order they asked (``asyncio.Lock`` wakes waiters first-in, first-out and does
not let newcomers barge past queued waiters). Two requests in flight on two
connections could overtake each other on the wire, so FIFO at the lock is the
only way to keep per-channel order; it costs nothing real because a bucket
allows about one request per second sustained anyway, far slower than one
round trip. Then, once per attempt:

* ``await slot.wait()`` sleeps until the global gate is open, the global
  meter has a token and the bucket has a slot (the pre-emptive wait), then
  takes them. It raises ``InvalidRequestLimitError`` when over budget.
* ``slot.update(status, headers, body)`` reads the response: it learns the
  bucket hash, refreshes limit/remaining/reset, counts invalid responses,
  and for a 429 blocks the bucket (or everything, when global) for the
  retry delay and returns a ``RateLimited`` verdict; the caller retries.

The retry delay of a 429 is the body's ``retry_after`` (float seconds, the
precise value). The ``Retry-After`` header is whole seconds rounded up, so a
header no larger than the body rounded up agrees with it and we keep the
body's precision; a larger header means the two disagree (Discord had such a
bug in 2025) and we wait the header: never less than either. A 429 whose body
is not JSON or has no ``retry_after`` is what a Cloudflare ban looks like;
retrying would only extend it, so ``update`` raises ``RateLimitError``. So does
a delay above ``max_retry_after`` (default 60 s): stalling a live answer for
minutes is worse than failing it.

What this does not do
---------------------
Hidden sub-limits (keyed on message age or body content) are invisible until
their 429 arrives; we handle that 429 like any other. Buckets are never
evicted; a bot talks to a bounded set of channels and each bucket is a few
dozen bytes. Retrying 5xx and connection errors is the caller's job (it owns
the backoff policy); it should keep holding the slot while it retries so the
order is kept.
"""

from __future__ import annotations

__all__ = (
    "DEFAULT_GLOBAL_METER",
    "InvalidRequestLimitError",
    "RateLimitError",
    "RateLimited",
    "RateLimiter",
    "Route",
    "Slot",
    "webhook_major",
)

import asyncio
import collections
import contextlib
import hashlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final

import attrs
from loguru import logger
from rxcord.core.errors import DiscordError

_log = logger.bind(stage="07-ratelimit")

_EPSILON: Final = 1e-9
"""Float slack when comparing times, so a wait computed to the exact instant is not repeated."""

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


@attrs.define(auto_exc=True, slots=False)
class RateLimitError(DiscordError):
    """A 429 that must not be waited out: a Cloudflare ban, or a delay above the limiter's maximum."""

    retry_after: float | None = None
    """The delay Discord asked for (``None`` when the response gave none, as in a ban)."""


@attrs.define(auto_exc=True, slots=False)
class InvalidRequestLimitError(DiscordError):
    """Too many 401/403/429 responses in the rolling window; sending stops to protect the IP."""

    count: int = 0
    """Invalid responses counted in the window."""


@attrs.frozen
class RateLimited:
    """What ``Slot.update`` concluded from a 429 (the caller then retries)."""

    retry_after: float
    """Seconds the limiter will hold the next attempt back."""
    is_global: bool
    """Whether every route is paused (a global 429) or only this bucket."""
    scope: str | None
    """``X-RateLimit-Scope``: ``user``, ``global`` or ``shared`` (``None`` if absent)."""


@attrs.define(eq=False)
class _Bucket:
    """Per-(bucket, major parameters) state; one request in flight, guarded by ``lock``."""

    name: str
    """For logs only: the route key or the bucket hash, with the major parameters."""
    lock: asyncio.Lock = attrs.Factory(asyncio.Lock)
    limit: int | None = None
    remaining: int | None = None
    """``None`` until a response carries rate-limit headers (no limiting before that)."""
    reset_at: float = 0.0
    """When the bucket is fully refilled (our clock)."""
    slot_at: float = 0.0
    """When the next slot frees, if ``remaining`` is 0."""
    blocked_until: float = 0.0
    """Set by a per-route 429."""

    def delay(self, now: float) -> float:
        """Seconds until this bucket lets the next request go (<= 0: go now)."""
        wait = self.blocked_until - now
        if self.remaining is not None and self.remaining <= 0:
            if now + _EPSILON >= self.reset_at:
                self.remaining = self.limit
            else:
                wait = max(wait, self.slot_at - now)
        return wait

    def on_send(self, now: float) -> None:
        """Spend a slot locally until the response says how many are really left."""
        if self.remaining is None:
            return
        self.remaining -= 1
        if self.remaining <= 0 and self.slot_at <= now:
            # No fresh headers tell us when the next slot frees (the response
            # may never come): assume the whole window.
            self.slot_at = self.reset_at

    def apply_headers(self, headers: Mapping[str, str], now: float, sliding: bool) -> None:
        """Refresh limit, remaining and reset from a response's headers (if it has them)."""
        try:
            limit = int(headers["x-ratelimit-limit"])
            remaining = int(headers["x-ratelimit-remaining"])
            reset_after = float(headers["x-ratelimit-reset-after"])
        except (KeyError, ValueError):
            return
        if limit <= 0:
            return
        self.limit = limit
        self.remaining = remaining
        self.reset_at = now + reset_after
        if remaining > 0:
            self.slot_at = now
        else:
            self.slot_at = now + (reset_after / limit if sliding else reset_after)


class Slot:
    """The right to send one request (and its retries) through one bucket; see ``RateLimiter.acquire``."""

    __slots__ = ("_bucket", "_limiter", "_route")

    def __init__(self, limiter: RateLimiter, route: Route, bucket: _Bucket) -> None:
        self._limiter = limiter
        self._route = route
        self._bucket = bucket

    @property
    def route(self) -> Route:
        """The route this slot was acquired for."""
        return self._route

    async def wait(self) -> None:
        """Sleep until the global gate, the global meter and the bucket all allow one request, then take it.

        Raises:
            InvalidRequestLimitError: too many invalid responses in the rolling window.
        """
        limiter = self._limiter
        while True:
            limiter.check_invalid_budget()
            now = limiter.now()
            delay = max(limiter.global_paused_until - now, self._bucket.delay(now))
            if delay > _EPSILON:
                await self._sleep(delay)
                continue
            # The bucket allows a request: queue for the global meter. The gate is a FIFO
            # lock, so requests pass the meter in the order their buckets became ready
            # instead of racing for each freed token (racing starves some channels and
            # leaves a slow tail when many channels share the global limit); the token is
            # taken at the actual send time, so late wake-ups never bunch requests up.
            async with limiter.meter_gate():
                while (delay := limiter.meter_delay(limiter.now())) > _EPSILON:
                    await self._sleep(delay)
                if limiter.global_paused_until - limiter.now() > _EPSILON:
                    continue
                limiter.meter_take(limiter.now())
            break
        self._bucket.on_send(limiter.now())

    async def _sleep(self, delay: float) -> None:
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
            RateLimitError: a 429 without a usable ``retry_after`` (a ban) or one too long to wait.
        """
        verdict, self._bucket = self._limiter.learn(self._route, self._bucket, status, headers, body)
        return verdict


DEFAULT_GLOBAL_METER: Final = 48
"""Requests per second the proactive global meter allows by default (Discord's limit is 50)."""


class RateLimiter:
    """Bucket-aware Discord rate limiter shared by every request of one bot token (see module docstring).

    Args:
        clock: Monotonic seconds; defaults to the running loop's ``time``.
        sleep: Awaitable sleep; defaults to ``asyncio.sleep``. Tests inject a fake that advances ``clock``.
        global_limit: Requests per ``global_period`` the proactive meter allows; ``None`` disables it.
        global_period: The meter's window in seconds.
        global_burst: Requests the meter lets through at once from idle (default: three
            quarters of ``global_limit``). Less than the limit, so Discord's side keeps
            headroom for requests that arrive bunched by network or event-loop jitter.
        max_invalid: Invalid responses (401, 403, non-shared 429) tolerated in ``invalid_window``.
        invalid_window: The rolling window of the invalid request count (Discord: 10 minutes).
        max_retry_after: A 429 asking for a longer wait raises ``RateLimitError`` instead.
        sliding: Treat buckets as sliding windows (one slot per ``reset_after / limit``).
        on_wait: Called with the route and the delay before every wait (timelines, metrics).
    """

    __slots__ = (
        "_buckets",
        "_clock",
        "_global_paused_until",
        "_global_period",
        "_global_tat",
        "_hashes",
        "_invalid",
        "_invalid_window",
        "_max_invalid",
        "_max_retry_after",
        "_meter_interval",
        "_meter_lock",
        "_meter_tolerance",
        "_sleep",
        "_sliding",
        "on_wait",
    )

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        sleep: Sleep | None = None,
        global_limit: int | None = DEFAULT_GLOBAL_METER,
        global_period: float = 1.0,
        global_burst: int | None = None,
        max_invalid: int = 1000,
        invalid_window: float = 600.0,
        max_retry_after: float = 60.0,
        sliding: bool = True,
        on_wait: WaitHook | None = None,
    ) -> None:
        self._clock: Clock = clock or _loop_time
        self._sleep: Sleep = sleep or asyncio.sleep
        self._meter_interval = global_period / global_limit if global_limit else 0.0
        burst = max(1, global_burst if global_burst is not None else (global_limit or 0) * 3 // 4)
        self._meter_tolerance = (burst - 1) * self._meter_interval
        self._global_period = global_period
        self._global_tat = -math.inf
        self._meter_lock: asyncio.Lock | None = None
        self._global_paused_until = -math.inf
        self._max_invalid = max_invalid
        self._invalid_window = invalid_window
        self._invalid: collections.deque[float] = collections.deque()
        self._max_retry_after = max_retry_after
        self._sliding = sliding
        self.on_wait = on_wait
        """Called with the route and the delay before every wait; may be set at any time."""
        self._hashes: dict[str, str] = {}
        """Route key -> bucket hash, learned from responses."""
        self._buckets: dict[tuple[str, str, tuple[str, ...]], _Bucket] = {}
        """("route", route key, major) before discovery; ("bucket", hash, major) after."""

    def __repr__(self) -> str:
        return f"<RateLimiter buckets={len(self._buckets)} invalid={len(self._invalid)}>"

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
            yield Slot(self, route, bucket)

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

    def meter_delay(self, now: float) -> float:
        """Seconds until the proactive global meter has a token (<= 0: now)."""
        if not self._meter_interval:
            return 0.0
        tat = max(self._global_tat, now)
        return tat - self._meter_tolerance - now

    def meter_take(self, now: float) -> None:
        """Spend one global meter token (leaky bucket: push the arrival time one interval forward)."""
        if self._meter_interval:
            self._global_tat = max(self._global_tat, now) + self._meter_interval

    def meter_gate(self) -> asyncio.Lock:
        """The FIFO gate in front of the global meter (created on first use, on the running loop)."""
        if self._meter_lock is None:
            self._meter_lock = asyncio.Lock()
        return self._meter_lock

    # -- learning from responses -----------------------------------------

    def learn(
        self, route: Route, bucket: _Bucket, status: int, headers: Mapping[str, str], body: Any
    ) -> tuple[RateLimited | None, _Bucket]:
        """Apply one response to the limiter's state (``Slot.update`` delegates here).

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
        bucket.apply_headers(lowered, now, self._sliding)
        if status != 429:
            return None, bucket
        return self._rate_limited(route, bucket, lowered, body, now), bucket

    def _rate_limited(
        self, route: Route, bucket: _Bucket, headers: Mapping[str, str], body: Any, now: float
    ) -> RateLimited:
        code = body.get("code") if isinstance(body, Mapping) else None
        code = code if isinstance(code, int) else None
        retry_value = body.get("retry_after") if isinstance(body, Mapping) else None
        if isinstance(retry_value, bool) or not isinstance(retry_value, int | float):
            self._count_invalid(now)
            message = body.get("message", "") if isinstance(body, Mapping) else ""
            raise RateLimitError(
                status=429,
                code=code,
                message=f"429 without retry_after (Cloudflare ban?): {message}".strip(),
            )
        scope = headers.get("x-ratelimit-scope")
        is_global = (
            (isinstance(body, Mapping) and body.get("global") is True)
            or headers.get("x-ratelimit-global", "").lower() == "true"
            or scope == "global"
        )
        wait = _retry_delay(float(retry_value), headers.get("retry-after"))
        if scope != "shared":
            self._count_invalid(now)
        if wait > self._max_retry_after:
            raise RateLimitError(
                status=429,
                code=code,
                message=f"rate limited for {wait:.3f} s, above the {self._max_retry_after:.0f} s maximum",
                retry_after=wait,
            )
        if is_global:
            self._global_paused_until = max(self._global_paused_until, now + wait)
            _log.warning("global rate limit: pausing every route for {wait:.3f} s", wait=wait)
        else:
            bucket.blocked_until = max(bucket.blocked_until, now + wait)
            _log.warning(
                "rate limited on {route} (scope {scope}): retrying in {wait:.3f} s",
                route=route.key,
                scope=scope,
                wait=wait,
            )
        return RateLimited(retry_after=wait, is_global=is_global, scope=scope)

    # -- buckets -----------------------------------------------------------

    def _bucket_for(self, route: Route) -> _Bucket:
        bucket_hash = self._hashes.get(route.key)
        key = ("bucket", bucket_hash, route.major) if bucket_hash else ("route", route.key, route.major)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = _Bucket(name=f"{key[1]} {route.major}")
            self._buckets[key] = bucket
        return bucket

    def _discover(self, route: Route, bucket_hash: str, bucket: _Bucket) -> _Bucket:
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


def _retry_delay(body_seconds: float, header: str | None) -> float:
    """The 429 delay: the body's precise value unless the whole-second header clearly exceeds it."""
    try:
        header_seconds = float(header) if header is not None else None
    except ValueError:
        header_seconds = None
    if header_seconds is not None and header_seconds > math.ceil(body_seconds - _EPSILON):
        return header_seconds
    return max(body_seconds, 0.0)
