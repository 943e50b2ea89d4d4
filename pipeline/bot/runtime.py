"""Process-wide settings the ``rxcord bot`` application applies (the library never does).

A bot process carries many live streams, and each holds a few hundred objects the
garbage collector tracks (reactivex's observers and disposables, aiohttp's response):
a full collection stops the event loop while it walks them all, 100-340 ms with
200-500 streams on the benchmark machine, which is the tail latency of every stream
at that moment. ``tuned_collector`` freezes what exists once the bot has started
(imports, configuration, the client: it lives as long as the process) out of the
collector's walks and collects the young generation less often. Measured in
``bench/RESULTS.md`` (figure 3, the "GC tuned" rows): no full collection during the
run, and a p99 latency of 1.3 ms instead of 12.7 ms at 200 streams x 50 chunks/s.
"""

from __future__ import annotations

__all__ = ("TUNED_THRESHOLDS", "restore_collector", "tuned_collector")

import gc

TUNED_THRESHOLDS = (50_000, 20, 1_000)
"""``gc.set_threshold`` while tuned (CPython's default: 700, 10, 10)."""


def tuned_collector() -> tuple[int, int, int]:
    """Freeze the objects that exist now and raise the thresholds; returns the previous thresholds."""
    previous = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*TUNED_THRESHOLDS)
    return previous


def restore_collector(previous: tuple[int, int, int]) -> None:
    """Undo ``tuned_collector`` (the frozen objects become collectable again)."""
    gc.set_threshold(*previous)
    gc.unfreeze()
