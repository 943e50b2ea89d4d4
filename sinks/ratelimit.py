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
bug in 2025) and we wait the header: never less than either.

**The bound on retry delays.** A delay is usable only if it is a finite number
of seconds >= 0; NaN, infinities, negative numbers, booleans and text are
ignored (as if absent), never an untyped ``ValueError``. A usable delay above
``max_retry_after`` (default 60 s) is not slept: the request fails with
``RateLimitError`` (stalling a live answer for minutes is worse than failing
it), and the bucket (or every route, for a global 429) stays closed for the
asked time, capped at ``MAX_BLOCK`` (one hour); later sends meeting that closed
gate fail at once with ``RateLimitError`` instead of sending.

**The 429 budget.** How long one request (one ``acquire``: the message and all its
retries) may spend waiting out 429s is a budget of time, not a count of tries:
``retry_budget`` seconds in total (default 30 s), each 429 charged the delay it asked
for and at least ``MIN_RETRY_CHARGE`` (0.1 s, so a storm of zero-delay 429s ends too:
at most 300 tries on the default budget). The first ``min_retries`` 429s (default 3) are
always waited out (each still bounded by ``max_retry_after``), so a small budget does not
fail a request on its first long-but-allowed delay. A 429 whose wait would take the total
past the budget is not slept: ``Slot.update`` raises ``RateLimitError`` with
``budget_spent=True`` at once. The bucket is then closed only for that last delay, so
the route is still usable: the delivery posts its error notice through it
(``rxcord.sinks.delivery``). Twenty-five 429s of 0.02 s are thus half a second of a
30 s budget and the message goes through; a storm of 5 s delays fails at its seventh.

**Body-less 429s.** A 429 whose body is not JSON (a Cloudflare page, an empty
body) comes from Discord's edge, not from a bucket: it closes the gate for
*every* route for its ``Retry-After`` and is retried. A 429 with no usable
delay at all (no header, no ``retry_after``) is what a Cloudflare ban looks
like; retrying would only extend it, so every route is closed for
``ban_pause`` seconds (default 300) and ``update`` raises ``RateLimitError``.

Fixed windows
-------------
Some buckets are fixed windows (all slots free at the reset instant), and
waiting ``r / limit`` on one of those earns a 429 per window. A bucket is
detected as fixed, as hikari does, from two responses of one window: on a
sliding bucket every request moves the reset instant on by ``window / limit``,
on a fixed one it stays put (compared on the epoch ``X-RateLimit-Reset``,
Discord's own instant: our clock's reading of a response is too noisy). A 429 on a bucket
the limiter believed had a slot marks it fixed as well. A fixed bucket waits
the whole ``Reset-After``; evidence of sliding (the reset moving on) turns it
back.

Stores: where the shared state lives
------------------------------------
``RateLimiter`` is the one limiter: the FIFO lock per bucket, the wait loop,
the local bucket state (learnt from every response), the global pause and the
invalid-request budget. What several processes must share (bucket counters
and the global meter) lives in a pluggable ``BucketStore``: ``MemoryStore``
(the default, in process) or ``rxcord.sinks.redis_ratelimit.RedisStore``
(Redis, shared by every process of one token). ``make_limiter(redis_url)`` is
the switch.

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
    "DEFAULT_RETRY_BUDGET",
    "MAX_BLOCK",
    "MIN_RETRY_CHARGE",
    "BucketStore",
    "GlobalMeter",
    "Grant",
    "InvalidRequestLimitError",
    "MemoryStore",
    "RateLimitError",
    "RateLimited",
    "RateLimiter",
    "Route",
    "Slot",
    "make_limiter",
    "retry_seconds",
    "webhook_major",
)

import asyncio
import collections
import contextlib
import hashlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final, Protocol

import attrs
from loguru import logger

from rxcord.core.errors import DiscordError

_log = logger.bind(stage="07-ratelimit")

_EPSILON: Final = 1e-9
"""Float slack when comparing times, so a wait computed to the exact instant is not repeated."""

MAX_BLOCK: Final = 3600.0
"""The longest a 429 closes a bucket or every route, whatever delay it asked for (seconds)."""

DEFAULT_RETRY_BUDGET: Final = 30.0
"""Seconds of 429 delays one request may wait out in total (see "The 429 budget")."""

MIN_RETRY_CHARGE: Final = 0.1
"""The least one 429 is charged against the budget, so zero-delay 429s cannot retry forever."""

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


def retry_seconds(value: Any) -> float | None:
    """A delay in seconds if ``value`` is a usable one: a finite number >= 0 (or its text), else ``None``.

    NaN, infinities, negative numbers, booleans and anything unparsable are not
    delays (see "The bound on retry delays" in the module docstring).
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        try:
            seconds = float(value.strip())
        except ValueError:
            return None
    else:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return seconds


@attrs.define(auto_exc=True, slots=False)
class RateLimitError(DiscordError):
    """A 429 that must not be waited out: a ban, a delay above the maximum, or the 429 budget spent."""

    retry_after: float | None = None
    """The delay Discord asked for (``None`` when the response gave none, as in a ban)."""
    is_global: bool = False
    """Whether every route is closed (a global 429 or a ban), not only this bucket."""
    budget_spent: bool = False
    """The request's 429 budget ran out; the route is closed only for ``retry_after`` (still usable)."""


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


@attrs.frozen
class Grant:
    """A store's answer to one take."""

    taken: bool
    """Whether a bucket slot and a global token were taken (else: wait ``delay`` and ask again)."""
    delay: float = 0.0
    """Sleep before sending (taken) or before asking again (not taken)."""
    key: str | None = None
    """The shared key of the bucket the take used (``None`` for a take from local state)."""
    seq: int = 0
    """The take's sequence number in that bucket (a shared store uses it to spot stale answers)."""


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
    fixed: bool = False
    """Detected as a fixed window (see "Fixed windows" in the module docstring)."""
    reset_epoch: float | None = None
    """The last ``X-RateLimit-Reset`` seen (Discord's epoch seconds), for fixed-window detection."""
    seen_remaining: int | None = None
    """The last ``Remaining`` a response reported."""

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
        except (KeyError, ValueError):
            return
        reset_after = retry_seconds(headers.get("x-ratelimit-reset-after"))
        if limit <= 0 or reset_after is None:
            return
        reset_after = min(reset_after, MAX_BLOCK)
        reset_at = now + reset_after
        epoch = retry_seconds(headers.get("x-ratelimit-reset"))
        self._detect_window(limit, remaining, epoch)
        self.limit = limit
        self.remaining = remaining
        self.reset_at = reset_at
        self.reset_epoch = epoch
        self.seen_remaining = remaining
        if remaining > 0:
            self.slot_at = now
        else:
            self.slot_at = now + (reset_after / limit if sliding and not self.fixed else reset_after)

    def _detect_window(self, limit: int, remaining: int, epoch: float | None) -> None:
        previous = self.seen_remaining
        if self.limit != limit or previous is None or remaining >= previous:
            return  # not two answers of one window
        if epoch is None or self.reset_epoch is None:
            return  # only Discord's own reset instant is precise enough to compare
        same = abs(epoch - self.reset_epoch) < 1e-3
        if same != self.fixed:
            _log.debug(
                "bucket {name} is a {kind} window", name=self.name, kind="fixed" if same else "sliding"
            )
        self.fixed = same


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

    def __init__(self, limiter: RateLimiter, route: Route, bucket: _Bucket) -> None:
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
            if delay > _EPSILON:
                await self.sleep(delay)
                continue
            grant = await limiter.store.take(self)
            if not grant.taken:
                if grant.delay > _EPSILON:
                    await self.sleep(grant.delay)
                continue
            if grant.delay > _EPSILON:
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


class BucketStore(Protocol):
    """Where the state several processes share lives: bucket counters and the global meter.

    The limiter checks its local state first (every response is learnt locally,
    so it is warm), then asks the store for a take. ``MemoryStore`` keeps only
    the global meter (the local buckets *are* the state in process);
    ``rxcord.sinks.redis_ratelimit.RedisStore`` keeps both in Redis.
    """

    def bind(self, limiter: RateLimiter) -> None:
        """Called once by the limiter that owns this store."""
        ...

    async def take(self, slot: Slot) -> Grant:
        """Take one bucket slot and one global token for ``slot``, or say how long to wait."""
        ...

    def learn(
        self, slot: Slot, headers: Mapping[str, str], retry_after: float | None, is_global: bool
    ) -> asyncio.Task[None] | None:
        """Record one response (in the background if it is I/O; ``Slot.settle`` awaits the task)."""
        ...

    async def connect(self) -> bool:
        """Reach the store now; whether it answered."""
        ...

    async def aclose(self) -> None:
        """Finish background work and release connections."""
        ...


class GlobalMeter:
    """A GCRA meter of requests per period with a FIFO gate (first come, first served).

    Requests queue at the gate in the order their buckets became ready instead of
    racing for each freed token (racing starves some channels and leaves a slow
    tail when many channels share the global limit); the token is taken at the
    actual send time, so late wake-ups never bunch requests up.
    """

    __slots__ = ("_gate", "interval", "tat", "tolerance")

    def __init__(self, interval: float, tolerance: float = 0.0) -> None:
        self.interval = interval
        """Seconds per token (0: no meter)."""
        self.tolerance = tolerance
        """Burst allowance in seconds (``(burst - 1) * interval``)."""
        self.tat = -math.inf
        """Theoretical arrival time of the next token."""
        self._gate: asyncio.Lock | None = None

    def delay(self, now: float) -> float:
        """Seconds until the meter has a token (<= 0: now)."""
        if not self.interval:
            return 0.0
        return max(self.tat, now) - self.tolerance - now

    def take(self, now: float) -> None:
        """Spend one token (push the arrival time one interval forward)."""
        if self.interval:
            self.tat = max(self.tat, now) + self.interval

    async def admit(self, slot: Slot) -> bool:
        """Queue at the gate, sleep until a token is free and take it; ``False`` if a global pause began."""
        limiter = slot.limiter
        if self._gate is None:
            self._gate = asyncio.Lock()
        async with self._gate:
            while (delay := self.delay(limiter.now())) > _EPSILON:
                await slot.sleep(delay)
            if limiter.global_paused_until - limiter.now() > _EPSILON:
                return False
            self.take(limiter.now())
        return True


DEFAULT_GLOBAL_METER: Final = 48
"""Requests per second the proactive global meter allows by default (Discord's limit is 50)."""


class MemoryStore:
    """The in-process store: the local buckets are the state; this adds the proactive global meter.

    Args:
        global_limit: Requests per ``global_period`` the meter allows; ``None`` disables it.
        global_period: The meter's window in seconds.
        global_burst: Requests the meter lets through at once from idle (default: three
            quarters of ``global_limit``). Less than the limit, so Discord's side keeps
            headroom for requests that arrive bunched by network or event-loop jitter.
    """

    __slots__ = ("meter",)

    def __init__(
        self,
        global_limit: int | None = DEFAULT_GLOBAL_METER,
        global_period: float = 1.0,
        global_burst: int | None = None,
    ) -> None:
        interval = global_period / global_limit if global_limit else 0.0
        burst = max(1, global_burst if global_burst is not None else (global_limit or 0) * 3 // 4)
        self.meter = GlobalMeter(interval, (burst - 1) * interval)

    def __repr__(self) -> str:
        return "<MemoryStore>"

    def bind(self, limiter: RateLimiter) -> None:
        """Nothing to bind: the state is the limiter's own."""

    async def take(self, slot: Slot) -> Grant:
        """Pass the global meter (the bucket was checked locally)."""
        return Grant(taken=await self.meter.admit(slot))

    def learn(
        self, slot: Slot, headers: Mapping[str, str], retry_after: float | None, is_global: bool
    ) -> asyncio.Task[None] | None:
        """Nothing to record: the limiter learnt the response locally."""
        return None

    async def connect(self) -> bool:
        """Always reachable."""
        return True

    async def aclose(self) -> None:
        """Nothing to release."""


class RateLimiter:
    """Bucket-aware Discord rate limiter shared by every request of one bot token (see module docstring).

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
        self._buckets: dict[tuple[str, str, tuple[str, ...]], _Bucket] = {}
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

    def check_blocked(self, route: Route, bucket: _Bucket, now: float) -> None:
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
        if tries <= self._min_retries or spent <= self._retry_budget + _EPSILON:
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
        bucket: _Bucket,
        status: int,
        headers: Mapping[str, str],
        body: Any,
        *,
        expected: bool = False,
    ) -> tuple[RateLimited | None, _Bucket]:
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
        self, route: Route, bucket: _Bucket, headers: Mapping[str, str], body: Any, now: float
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
        wait = _retry_delay(body_value, header_value)
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


def _retry_delay(body_seconds: float | None, header_seconds: float | None) -> float:
    """The 429 delay: the body's precise value unless the whole-second header clearly exceeds it."""
    if body_seconds is None:
        return header_seconds or 0.0
    if header_seconds is not None and header_seconds > math.ceil(body_seconds - _EPSILON):
        return header_seconds
    return body_seconds


def make_limiter(redis_url: str | None, **options: Any) -> RateLimiter:
    """The configuration switch: an in-process limiter without a URL, one sharing its state in Redis with one.

    Args:
        redis_url: ``redis://host:port/db`` shared by every process of the bot token, or ``None``.
        options: Keyword arguments of ``RateLimiter``; with a URL also those of
            ``rxcord.sinks.redis_ratelimit.RedisStore`` (``namespace``, ``redis_timeout``, ...),
            which then takes ``global_limit`` and ``global_period`` too.
    """
    if not redis_url:
        return RateLimiter(**options)
    from rxcord.sinks.redis_ratelimit import RedisStore

    store_options = {name: options.pop(name) for name in RedisStore.OPTIONS if name in options}
    options.pop("global_burst", None)  # the shared meter has no burst allowance beyond its GCRA
    return RateLimiter(store=RedisStore(redis_url, **store_options), **options)
