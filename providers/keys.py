"""Keys that failed for themselves: the one rule of when another key may succeed, and their cooldown.

Used by the turn runner's fallback (``rxcord.compose.turn``) and by the Decision capability's
fallback keys (``rxcord.providers.decisions``): one rule in one place, so a key a turn found
revoked is also skipped by a decision call sharing the same ``KeyCooldown``.
"""

from __future__ import annotations

__all__ = ("DEFAULT_KEY_COOLDOWN", "KeyCooldown", "key_failure")

import hashlib
from collections.abc import Callable
from typing import Final

import attrs

from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.types import ErrorType, ProviderError
from rxcord.providers.errors import provider_limit

DEFAULT_KEY_COOLDOWN: Final = 300.0
"""Seconds a key that failed for itself is skipped: long enough not to spend a request of
every turn on a revoked or empty key, short enough that a topped-up key is back soon."""

_KEY_STATUSES: Final = frozenset({401, 402, 403})
"""Refusals of the key itself (unauthenticated, out of credit, forbidden): another key may pass."""


def _frozen_clock() -> float:
    return 0.0


def _fingerprint(key: str) -> str:
    # The cooldown never holds the key itself (reprs, dumps): a digest identifies it.
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


@attrs.define
class KeyCooldown:
    """Keys that failed for themselves, skipped by the turn runner until their cooldown ends.

    Share one across turns (a bot's) to stop spending a request of every turn on a revoked
    or empty key. The clock is injected (``time.monotonic`` or the event loop's ``time`` in
    a bot, a fake in tests); nothing here reads a wall clock.
    """

    clock: Callable[[], float]
    """Seconds, monotonic."""
    seconds: float = DEFAULT_KEY_COOLDOWN
    _until: dict[str, float] = attrs.field(factory=dict, init=False, repr=False)

    @classmethod
    def for_turn(cls) -> KeyCooldown:
        """A cooldown whose time stands still: a failed key is skipped for the rest of one turn."""
        return cls(clock=_frozen_clock)

    def cool(self, key: str | None) -> None:
        """Skip *key* for ``seconds`` from now (no key: nothing to skip)."""
        if key:
            self._until[_fingerprint(key)] = self.clock() + self.seconds

    def cooling(self, key: str | None) -> bool:
        """Whether *key* is skipped now (an ended cooldown is forgotten)."""
        if not key:
            return False
        fingerprint = _fingerprint(key)
        until = self._until.get(fingerprint)
        if until is None:
            return False
        if self.clock() >= until:
            del self._until[fingerprint]
            return False
        return True


def key_failure(error: ProviderError, denial: ProviderRequestDeniedError | None = None) -> bool:
    """Whether *error* is about the key the request used, so that another key may succeed.

    HTTP 401, 402 and 403 (an SSE error's numeric ``code`` stands in for a status), an
    OpenRouter ``limit_source`` (the key's credits, cap or in-flight budget), or a denial
    that says ``key_exhausted``. A content block is never one (OpenRouter's moderation 403:
    every key gets the same verdict), nor a denial of the owner.
    """
    if denial is not None:
        return denial.key_exhausted
    if error.type is ErrorType.CONTENT_BLOCKED:
        return False
    status = error.status if error.status is not None else error.code
    if isinstance(status, int) and not isinstance(status, bool) and status in _KEY_STATUSES:
        return True
    limit = provider_limit(error)
    return limit is not None and limit.limit_source is not None
