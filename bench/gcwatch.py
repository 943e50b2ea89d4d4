"""Garbage-collector pauses during a run, and the tuning a latency-sensitive bot may apply.

A full (generation 2) collection stops the event loop for as long as it takes
to traverse every tracked object; with hundreds of live streams the heap holds
a few hundred thousand (mostly reactivex's per-subscription observers,
disposables and locks), and one collection takes 100-200 ms on this machine.
``GcWatch`` records every collection's duration; ``tuned_gc`` applies what the
README's "Many concurrent streams" section recommends (``gc.freeze()`` once the
process has started, a higher first-generation threshold) and restores the
defaults afterwards.
"""

from __future__ import annotations

__all__ = ("TUNED_THRESHOLDS", "GcWatch", "tuned_gc")

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from rxcord.bot.runtime import TUNED_THRESHOLDS, restore_collector, tuned_collector


@attrs.define
class GcWatch:
    """Records the duration of each collection while installed (``with GcWatch() as watch``)."""

    pauses: list[tuple[int, float]] = attrs.field(factory=list)
    """``(generation, milliseconds)`` of each collection, in order."""
    _started: float = 0.0

    def __enter__(self) -> GcWatch:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses.append((int(info["generation"]), (time.perf_counter() - self._started) * 1e3))

    def full(self) -> list[float]:
        """Milliseconds of each full (generation 2) collection."""
        return [ms for generation, ms in self.pauses if generation == 2]


@contextmanager
def tuned_gc() -> Iterator[None]:
    """``rxcord bot``'s collector settings (``rxcord.bot.runtime``) while the block runs."""
    previous = tuned_collector()
    try:
        yield
    finally:
        restore_collector(previous)
