"""Where the limiter's shared state lives: the ``BucketStore`` protocol and the in-process store.

``MemoryStore`` keeps only the proactive global meter (in process the limiter's local buckets
*are* the state); ``rxcord.sinks.ratelimit.redis.RedisStore`` keeps buckets and meter in Redis.
"""

from __future__ import annotations

__all__ = ("DEFAULT_GLOBAL_METER", "BucketStore", "GlobalMeter", "Grant", "MemoryStore")

import asyncio
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Protocol

import attrs

from rxcord.sinks.ratelimit.window import EPSILON

if TYPE_CHECKING:
    from rxcord.sinks.ratelimit.limiter import RateLimiter, Slot


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


class BucketStore(Protocol):
    """Where the state several processes share lives: bucket counters and the global meter.

    The limiter checks its local state first (every response is learnt locally,
    so it is warm), then asks the store for a take. ``MemoryStore`` keeps only
    the global meter (the local buckets *are* the state in process);
    ``rxcord.sinks.ratelimit.redis.RedisStore`` keeps both in Redis.
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
            while (delay := self.delay(limiter.now())) > EPSILON:
                await slot.sleep(delay)
            if limiter.global_paused_until - limiter.now() > EPSILON:
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
