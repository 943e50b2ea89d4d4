"""Counted, not timed: what stage 03 holds per live stream, and the calls it makes per event.

Stage 03 (the normalizer, the secret redaction, the think-tag stripper and the spill guard,
fused into one operator as the pipeline builds it) is built and subscribed per stream, so
everything it keeps is an object the collector walks for as long as the stream runs
(``tests/compose/test_live_objects.py`` counts the whole chain). Counted here: the tracked
objects of many streams halfway through their text, against the same streams through a
pass-through fusable operator (what the source and the subscriber cost either way), and the
Python calls per event (cProfile's call counts, not its times).
"""

from __future__ import annotations

import cProfile
import gc
import json
import pstats
from collections.abc import Callable, Sequence
from typing import Any

from reactivex import Observable
from reactivex.subject import Subject

from rxcord.compose.pipeline import stage03
from rxcord.core.redact import Redactor
from rxcord.core.types import RawStreamChunk
from rxcord.operators.fused import Fusable
from rxcord.providers import transport
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.sse import SseParser

SECRET = "sk-live-12345678"

OBJECTS_PER_STREAM = 17
"""Tracked objects stage 03 holds per stream beyond a lone pass-through stage (counted 15; before
the per-stream closures became slots objects and the lists lazy: 42)."""

CALLS_PER_EVENT = 74
"""Python calls per event through stage 03 (counted 70.7 on this text; before: 81.2)."""


class _Pass:
    """A transducer that keeps nothing: the baseline a stage 03 stream is counted against."""

    __slots__ = ()

    def feed(self, item: Any) -> Sequence[Any]:
        return (item,)

    def finish(self) -> Sequence[Any]:
        return ()


_PASS = _Pass()


def _chunks(count: int) -> list[RawStreamChunk]:
    """OpenAI chunks of prose, some with markup a think-tag stripper looks at (``<b>``, code)."""
    lines = []
    for k in range(count):
        text = "word\n\n" if k % 8 == 7 else ("a <b> `c` " if k % 5 == 0 else "word ")
        lines.append(b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode())
    chunks, _ = transport._event_chunks("openai", SseParser().feed_raw(b"\n\n".join(lines) + b"\n\n"))
    return chunks


def _stage03() -> Fusable:
    return Fusable(stage03(OpenAIAdapter(), redactor=Redactor.of(SECRET)), "stage03")


def _passing() -> Fusable:
    return Fusable(lambda: _PASS, "pass")


def _held(operator: Callable[[], Fusable], streams: int, chunks: list[RawStreamChunk]) -> float:
    """Tracked objects per stream, *streams* subscribed and fed the first half of *chunks*."""
    seen: list[int] = []
    warm: Subject[Any] = Subject()
    warm.pipe(operator()).subscribe(lambda _chunk: seen.append(1))
    for chunk in chunks:
        warm.on_next(chunk)
    warm.on_completed()
    gc.collect()
    before = len(gc.get_objects())
    subjects: list[Subject[Any]] = [Subject() for _ in range(streams)]
    for subject in subjects:
        observable: Observable[Any] = subject.pipe(operator())
        observable.subscribe(lambda _chunk: seen.append(1))
    for chunk in chunks[: len(chunks) // 2]:
        for subject in subjects:
            subject.on_next(chunk)
    gc.collect()
    held = (len(gc.get_objects()) - before) / streams
    for subject in subjects:
        subject.on_completed()
    assert len(seen) > streams * len(chunks) // 2  # every stream's text went through
    return held


def test_stage03_holds_few_tracked_objects_per_stream() -> None:
    chunks = _chunks(64)
    extra = _held(_stage03, 40, chunks) - _held(_passing, 40, chunks)
    assert 4 <= extra <= OBJECTS_PER_STREAM, f"{extra:.1f} tracked objects per stream in stage 03"


def _calls_per_event(chunks: list[RawStreamChunk]) -> float:
    def run() -> int:
        out: list[Any] = []
        subject: Subject[Any] = Subject()
        subject.pipe(_stage03()).subscribe(out.append)
        for chunk in chunks:
            subject.on_next(chunk)
        subject.on_completed()
        return len(out)

    assert run() > len(chunks) // 2  # warm-up: every module imported; the text went through
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        run()
    finally:
        profiler.disable()
    calls: int = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return calls / len(chunks)


def test_stage03_calls_per_event_are_counted_and_few() -> None:
    calls = _calls_per_event(_chunks(200))
    assert 10 <= calls <= CALLS_PER_EVENT, f"{calls:.1f} calls per event in stage 03"
