"""The window arithmetic of one bucket: delays, sends, headers, fixed or sliding (pure, no clock).

Times are the limiter's clock, passed in; see the package docstring ("Sliding windows",
"Fixed windows", "The bound on retry delays") for the rules this module computes.
"""

from __future__ import annotations

__all__ = (
    "DEFAULT_RETRY_BUDGET",
    "EPSILON",
    "MAX_BLOCK",
    "MIN_RETRY_CHARGE",
    "Bucket",
    "retry_delay",
    "retry_seconds",
)

import asyncio
import math
from collections.abc import Mapping
from typing import Any, Final

import attrs
from loguru import logger

_log = logger.bind(stage="07-ratelimit")

EPSILON: Final = 1e-9
"""Float slack when comparing times, so a wait computed to the exact instant is not repeated."""

MAX_BLOCK: Final = 3600.0
"""The longest a 429 closes a bucket or every route, whatever delay it asked for (seconds)."""

DEFAULT_RETRY_BUDGET: Final = 30.0
"""Seconds of 429 delays one request may wait out in total (see "The 429 budget")."""

MIN_RETRY_CHARGE: Final = 0.1
"""The least one 429 is charged against the budget, so zero-delay 429s cannot retry forever."""


def retry_seconds(value: Any) -> float | None:
    """A delay in seconds if ``value`` is a usable one: a finite number >= 0 (or its text), else ``None``.

    NaN, infinities, negative numbers, booleans and anything unparsable are not
    delays (see "The bound on retry delays" in the package docstring).
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


def retry_delay(body_seconds: float | None, header_seconds: float | None) -> float:
    """The 429 delay: the body's precise value unless the whole-second header clearly exceeds it."""
    if body_seconds is None:
        return header_seconds or 0.0
    if header_seconds is not None and header_seconds > math.ceil(body_seconds - EPSILON):
        return header_seconds
    return body_seconds


@attrs.define(eq=False)
class Bucket:
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
    """Detected as a fixed window (see "Fixed windows" in the package docstring)."""
    reset_epoch: float | None = None
    """The last ``X-RateLimit-Reset`` seen (Discord's epoch seconds), for fixed-window detection."""
    seen_remaining: int | None = None
    """The last ``Remaining`` a response reported."""

    def delay(self, now: float) -> float:
        """Seconds until this bucket lets the next request go (<= 0: go now)."""
        wait = self.blocked_until - now
        if self.remaining is not None and self.remaining <= 0:
            if now + EPSILON >= self.reset_at:
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
