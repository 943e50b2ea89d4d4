"""The stop registry (issue 14): several streams per channel, each stoppable; close is exact."""

from __future__ import annotations

import gc

from rxcord.core.stops import StopHandle, StopRegistry
from rxcord.core.types import StopKind, StopSignal
from rxcord.operators.light import subscribe_light


def _seen(handle: StopHandle) -> list[StopSignal]:
    seen: list[StopSignal] = []
    handle.signals.subscribe(seen.append)
    return seen


def test_second_stream_in_a_channel_does_not_replace_the_first() -> None:
    """Two streams in one channel: a channel stop reaches both."""
    registry = StopRegistry()
    first, second = registry.open("c"), registry.open("c")
    assert first is not second
    seen_first, seen_second = _seen(first), _seen(second)
    assert registry.stop("c", StopKind.USER)
    assert [s.kind for s in seen_first] == [StopKind.USER]
    assert [s.kind for s in seen_second] == [StopKind.USER]


def test_closing_one_stream_keeps_the_other_stoppable() -> None:
    """Closing the older (or the newer) handle leaves the other registered; closing twice is harmless."""
    for close_first in (True, False):
        registry = StopRegistry()
        first, second = registry.open("c"), registry.open("c")
        closed, kept = (first, second) if close_first else (second, first)
        registry.close(closed)
        registry.close(closed)
        seen_closed, seen_kept = _seen(closed), _seen(kept)
        assert registry.stop("c", StopKind.INTERRUPT)
        assert seen_closed == [] and [s.kind for s in seen_kept] == [StopKind.INTERRUPT]
        assert registry.handles("c") == (kept,)
        registry.close(kept)
        assert registry.active() == () and not registry.stop("c", StopKind.USER)


def test_channels_are_independent() -> None:
    """A stop reaches only its own channel."""
    registry = StopRegistry()
    here, there = registry.open("a"), registry.open("b")
    seen_here, seen_there = _seen(here), _seen(there)
    registry.stop("a", StopKind.KILL)
    assert [s.kind for s in seen_here] == [StopKind.KILL] and seen_there == []
    assert set(registry.active()) == {"a", "b"}


def test_a_stop_before_the_stream_subscribes_reaches_it_at_once() -> None:
    """The handle's subject replays the last stop: a stop between ``open`` and the chain is kept."""
    handle = StopRegistry().open("c")
    handle.stop(StopKind.USER, "early")
    handle.stop(StopKind.KILL, "later")
    seen = _seen(handle)
    assert [(s.kind, s.reason) for s in seen] == [(StopKind.KILL, "later")]


def test_a_stream_stop_handle_holds_few_tracked_objects() -> None:
    """Per stream: the handle, its subject, one link per subscriber (beside the subscriber) and the stop.

    ``ReplaySubject(1)`` held about seven objects per subscriber (a ScheduledObserver with its lock,
    queue and SerialDisposable with another lock, a RemovableDisposable) and four of its own.
    """

    def nothing(_: object) -> None:
        pass

    def open_one() -> list[object]:
        handle = StopHandle("c")
        subscribers = [subscribe_light(handle.signals, nothing) for _ in range(3)]
        handle.stop(StopKind.USER)
        return [handle, *subscribers]

    open_one()  # warm-up: what the first use imports or caches is no stream's
    gc.collect()
    before = len(gc.get_objects())
    kept = [open_one() for _ in range(100)]
    gc.collect()
    per_stream = (len(gc.get_objects()) - before - 1 - len(kept)) / len(kept)  # minus the lists
    assert per_stream <= 1 + 1 + 3 * 2 + 1, per_stream
