"""Rate-limit simulation: leaky-bucket (GCRA) windows, bucket headers and 429 answers.

Buckets are sliding windows in GCRA form, which is how Discord's buckets have behaved since
2022-11 (facts §1.6): every accepted request pushes the bucket's "theoretical arrival time"
``window / limit`` seconds forward; a request is refused while that time is more than
``window - window / limit`` seconds ahead. ``Remaining`` is how many requests fit now,
``Reset-After`` the time until the bucket is empty again.
"""

from __future__ import annotations

__all__ = ("Verdict", "Window", "bucket_hash", "bucket_headers", "ceil_ms", "too_many")

import hashlib
import math
from collections.abc import Mapping
from typing import Any, Final

import attrs
from aiohttp import web

from rxcord.testing.emulator.config import Scope
from rxcord.testing.emulator.wire import json_response

_SLACK: Final = 1e-6
"""Tolerance (seconds) when admitting a request, so a client that waited the exact advertised time passes."""


@attrs.frozen
class Verdict:
    """The answer of one window to one request."""

    allowed: bool
    limit: int
    remaining: int
    reset_after: float
    retry_after: float


@attrs.define
class Window:
    """Leaky-bucket (GCRA) counters of one limit, keyed by major parameter or identity."""

    limit: int
    window: float
    arrivals: dict[str, float] = attrs.Factory(dict)
    """Key -> theoretical arrival time."""

    def take(self, key: str, now: float, *, consume: bool = True) -> Verdict:
        """Admit (and by default count) one request for ``key`` at ``now``."""
        interval = self.window / self.limit
        tat = max(self.arrivals.get(key, now), now)
        if tat + interval - now > self.window + _SLACK:
            retry = tat + interval - self.window - now
            return Verdict(False, self.limit, 0, tat - now, retry)
        if consume:
            tat += interval
            self.arrivals[key] = tat
        reset_after = tat - now
        remaining = math.floor((self.window - reset_after) / interval + 1e-9)
        return Verdict(True, self.limit, max(0, min(self.limit, remaining)), reset_after, 0.0)


def ceil_ms(seconds: float) -> float:
    """Round up to whole milliseconds (never below zero), as Discord's headers are."""
    return math.ceil(max(seconds, 0.0) * 1000 - 1e-6) / 1000


def bucket_hash(route_key: str) -> str:
    """A stable, opaque ``X-RateLimit-Bucket`` value per route."""
    return hashlib.sha256(f"rxcord-emulator {route_key}".encode()).hexdigest()[:32]


def bucket_headers(bucket: str, verdict: Verdict, wall_now: float) -> dict[str, str]:
    """The ``X-RateLimit-*`` headers of a limited response (``wall_now``: epoch seconds)."""
    reset_after = ceil_ms(verdict.reset_after)
    return {
        "X-RateLimit-Limit": str(verdict.limit),
        "X-RateLimit-Remaining": str(verdict.remaining),
        "X-RateLimit-Reset": f"{ceil_ms(wall_now + reset_after):.3f}",
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": bucket,
    }


def too_many(
    retry_after: float, scope: Scope, headers: Mapping[str, str], code: int | None = None
) -> web.Response:
    """A 429 answer (facts §1.3: ``Retry-After`` whole seconds rounded up, body in seconds)."""
    retry = ceil_ms(retry_after)
    body: dict[str, Any] = {
        "message": "The resource is being rate limited."
        if scope == "shared"
        else "You are being rate limited.",
        "retry_after": retry,
        "global": scope == "global",
    }
    if code is not None:
        body["code"] = code
    extra = {"Retry-After": str(max(1, math.ceil(retry - 1e-9))), "X-RateLimit-Scope": scope}
    if scope == "global":
        extra["X-RateLimit-Global"] = "true"
    return json_response(429, body, {**headers, **extra})
