"""Small statistics helpers: median with min-max spread, percentiles."""

from __future__ import annotations

__all__ = ("Spread", "percentile", "spread")

import math
import statistics
from collections.abc import Sequence

import attrs


@attrs.frozen
class Spread:
    """The median of several runs and their range."""

    median: float
    low: float
    high: float
    n: int

    def show(self, digits: int = 2, unit: str = "") -> str:
        """``12.3 µs (11.9-13.0, n=7)``."""
        return f"{self.median:.{digits}f}{unit} ({self.low:.{digits}f}-{self.high:.{digits}f}, n={self.n})"


def spread(values: Sequence[float]) -> Spread:
    """The median and range of *values* (at least one)."""
    return Spread(statistics.median(values), min(values), max(values), len(values))


def percentile(values: Sequence[float], q: float) -> float:
    """The *q*-th percentile (0-100) by the nearest-rank method; ``nan`` for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]
