"""Counted, not timed: what the stage glue (operators, stage states, light hops, timers) holds per stream.

The chain is built and subscribed per stream, so every closure, bound method and lock its
operators keep lives as long as the stream, for each full collection to walk
(``bench/notes.md``). The streams here are those of ``test_live_objects`` (40 chains fed from
memory on the running loop, live delivery), counted halfway through their text.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections import Counter
from types import FunctionType, MethodType
from typing import Any

from reactivex import abc
from reactivex.subject import Subject

from rxcord.operators.aio import drain
from rxcord.operators.light import NO_DISPOSAL, LightDisposables, LightObserver
from rxcord.operators.quiet_timer import QuietTimer
from rxcord.sinks.memory import MemorySink
from tests.compose.test_live_objects import _chain, _chunks, _feed_halfway, _warm_up

GLUE = frozenset(
    {
        "rxcord.operators.light",
        "rxcord.operators.quiet_timer",
        "rxcord.operators.flush",
        "rxcord.operators.clean",
        "rxcord.operators.typing_heartbeat",
        "rxcord.operators.gated_scan",
        "rxcord.operators.stream_deadline",
        "rxcord.operators.collect_result",
        "rxcord.operators.idle_timeout",
        "rxcord.operators.stop_gate",
        "rxcord.operators.accumulate",
        "rxcord.compose.chain",
        "rxcord.compose.pipeline",
        "rxcord.sinks.deliver",
        "rxcord.sinks.delivery",
        "rxcord.sinks.error_embed",
    }
)
"""The modules of the glue built per stream."""

GLUE_OBJECTS_PER_STREAM = 31
"""Instances of the glue's classes per live stream (counted 29, the light hops other rooms use
included). Before the slots operators, the stage states as their own hops and the lazy parts the
glue held about 30 instances and, besides them, 12 closures with their 27 cells and 20 tuples,
and some 20 bound methods (``objects_stages_who.py``)."""


def _module(obj: object) -> str:
    if isinstance(obj, MethodType):
        return getattr(obj.__func__, "__module__", "") or ""
    if isinstance(obj, FunctionType):
        return obj.__module__ or ""
    return type(obj).__module__


async def _held(streams: int) -> list[Any]:
    chunks = _chunks(64)
    await _warm_up(chunks)
    before = {id(obj) for obj in gc.get_objects()}
    subjects: list[Subject[Any]] = [Subject() for _ in range(streams)]
    tasks = [asyncio.ensure_future(drain(_chain(s, MemorySink()))) for s in subjects]
    await asyncio.sleep(0)
    await _feed_halfway(subjects, chunks)
    held = [obj for obj in gc.get_objects() if id(obj) not in before]
    for subject in subjects:
        subject.on_completed()
    await asyncio.gather(*tasks)
    return held


async def test_the_glue_holds_no_closure_bound_method_or_lock_per_stream() -> None:
    streams = 40
    held = await _held(streams)
    closures = Counter(f.__qualname__ for f in held if isinstance(f, FunctionType) and _module(f) in GLUE)
    methods = Counter(
        m.__func__.__qualname__ for m in held if isinstance(m, MethodType) and _module(m) in GLUE
    )
    assert not closures, f"closures held per stream: {dict(closures)}"
    assert not methods, f"bound methods held per stream: {dict(methods)}"
    glue = Counter(type(obj).__qualname__ for obj in held if _module(obj) in GLUE)
    per_stream = sum(glue.values()) / streams
    assert per_stream <= GLUE_OBJECTS_PER_STREAM, f"{per_stream:.1f} glue objects per stream: {dict(glue)}"
    # Every armed timer is a quiet timer's one loop handle (the typing pulse's, cancelled, may linger).
    handles = [h for h in held if isinstance(h, asyncio.TimerHandle) and not h.cancelled()]
    assert all(isinstance(h._callback, QuietTimer) for h in handles)  # type: ignore[attr-defined]
    assert len(handles) / streams <= 3


class _Stage:
    def __init__(self) -> None:
        self.seen: list[object] = []

    def take(self, value: object) -> None:
        self.seen.append(value)

    def failed(self, error: Exception) -> None:
        self.seen.append(error)

    def done(self) -> None:
        self.seen.append("done")


def test_a_light_observer_keeps_no_bound_method() -> None:
    stage = _Stage()
    hop = LightObserver(stage.take, stage.failed, stage.done)
    assert not [ref for ref in gc.get_referents(hop) if isinstance(ref, MethodType)]
    hop.on_next(1)
    hop.on_completed()
    hop.on_next(2)  # after the end: nothing
    assert stage.seen == [1, "done"]
    plain: list[object] = []
    LightObserver(plain.append, plain.append, lambda: plain.append("end")).on_next(3)
    assert plain == [3]


class _Disposal(abc.DisposableBase):
    def __init__(self, order: list[int], name: int) -> None:
        self.order, self.name = order, name

    def dispose(self) -> None:
        self.order.append(self.name)


def test_light_disposables_hold_two_without_a_list_and_dispose_in_order() -> None:
    order: list[int] = []
    two = LightDisposables(_Disposal(order, 1), _Disposal(order, 2))
    assert not [ref for ref in gc.get_referents(two) if isinstance(ref, list)]
    two.add(_Disposal(order, 3))
    two.dispose()
    two.dispose()
    assert order == [1, 2, 3]
    two.add(_Disposal(order, 4))  # disposed at once: these are disposed already
    assert order == [1, 2, 3, 4]
    assert LightDisposables(NO_DISPOSAL).is_disposed is False


def test_a_quiet_timer_under_asyncio_is_its_handles_callback() -> None:
    from reactivex.scheduler.eventloop import AsyncIOScheduler

    async def run() -> None:
        loop = asyncio.get_running_loop()
        fired = threading.Event()
        timer = QuietTimer(AsyncIOScheduler(loop), 0.01, fired.set)
        timer.poke()
        refs = gc.get_referents(timer)
        assert not [ref for ref in refs if isinstance(ref, MethodType)]
        handle = timer._handle
        assert handle is not None and handle._callback is timer  # type: ignore[attr-defined]
        while not fired.is_set():
            await asyncio.sleep(0.005)
        assert timer._handle is None

    asyncio.run(run())
