"""Typed wrapper over ``reactivex.testing.marbles``.

``MarblesContext`` declares cold/hot/exp with three required positional
parameters, so the documented ``cold("-a-|")`` fails mypy. This wrapper
restores the optional arguments. Keep ``timespan=1.0``: ``exp()`` truncates
times with ``int()``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs
from reactivex import Observable
from reactivex.testing.marbles import MarblesContext, marbles_testing
from reactivex.testing.recorded import Recorded

Lookup = Mapping[Any, Any]


@attrs.frozen
class Marbles:
    """cold/hot/exp/start with optional lookup and error arguments."""

    _ctx: MarblesContext

    def cold(
        self, marbles: str, lookup: Lookup | None = None, error: Exception | None = None
    ) -> Observable[Any]:
        return self._ctx.cold(marbles, dict(lookup) if lookup else None, error)

    def hot(
        self, marbles: str, lookup: Lookup | None = None, error: Exception | None = None
    ) -> Observable[Any]:
        return self._ctx.hot(marbles, dict(lookup) if lookup else None, error)

    def exp(
        self, marbles: str, lookup: Lookup | None = None, error: Exception | None = None
    ) -> list[Recorded[Any]]:
        return self._ctx.exp(marbles, dict(lookup) if lookup else None, error)

    def start(self, observable: Observable[Any]) -> list[Recorded[Any]]:
        return self._ctx.start(observable)


@contextmanager
def marbles(timespan: float = 1.0) -> Generator[Marbles, None, None]:
    """A marble-testing context with a fresh ``TestScheduler``."""
    with marbles_testing(timespan) as ctx:
        yield Marbles(ctx)
