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
(the default, in process) or ``RedisStore``
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

Where each part lives
---------------------
``window.py`` the bucket arithmetic (delays, headers, fixed or sliding, retry delays);
``stores.py`` the ``BucketStore`` protocol, the global meter and ``MemoryStore``;
``limiter.py`` ``RateLimiter``, ``Route``, ``Slot`` and ``make_limiter``; ``redis.py``
``RedisStore`` (the optional ``redis`` extra) with its Lua scripts in ``lua/`` (package data).
The errors (``RateLimitError``, ``InvalidRequestLimitError``) are in ``rxcord.core.errors``.
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
    "RedisStore",
    "Route",
    "Slot",
    "make_limiter",
    "retry_seconds",
    "webhook_major",
)

from typing import TYPE_CHECKING, Any

from rxcord.core.errors import InvalidRequestLimitError, RateLimitError
from rxcord.sinks.ratelimit.limiter import RateLimited, RateLimiter, Route, Slot, make_limiter, webhook_major
from rxcord.sinks.ratelimit.stores import DEFAULT_GLOBAL_METER, BucketStore, GlobalMeter, Grant, MemoryStore
from rxcord.sinks.ratelimit.window import DEFAULT_RETRY_BUDGET, MAX_BLOCK, MIN_RETRY_CHARGE, retry_seconds

if TYPE_CHECKING:
    from rxcord.sinks.ratelimit.redis import RedisStore as RedisStore


def __getattr__(name: str) -> Any:
    # RedisStore needs the optional redis extra: imported on first use only, so the in-process
    # limiter works without it (and a missing extra says so with MissingExtraError then).
    if name == "RedisStore":
        from rxcord.sinks.ratelimit.redis import RedisStore

        return RedisStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
