"""Stage 04 stop gate: take_until semantics plus the stop signal, safe against re-entrant stops."""

from __future__ import annotations

from typing import Any

from reactivex import Observable
from reactivex import operators as ops
from reactivex.subject import ReplaySubject, Subject
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.core.types import ProcessedChunk, StopKind, StopSignal
from rxcord.operators.stop_gate import stop_gate
from tests.marbles import marbles

A, B, C = (ProcessedChunk.text(t) for t in "abc")
USER = StopSignal(StopKind.USER)


def _label(item: ProcessedChunk | StopSignal) -> str:
    return item.kind.value if isinstance(item, StopSignal) else item.content


def test_marble_stop_ends_stream_with_signal() -> None:
    """A stop completes the stream right after emitting the signal."""
    with marbles() as m:
        source = m.cold("-a-b-c-|", {"a": A, "b": B, "c": C})
        stops = m.cold("----s", {"s": USER})
        "               012345678"
        results = m.start(source.pipe(stop_gate(stops), ops.map(_label)))
        assert results == m.exp("-a-b(u,|)", {"a": "a", "b": "b", "u": "user"})


def test_marble_no_stop_passes_everything() -> None:
    """Without a stop the gate is transparent."""
    with marbles() as m:
        source = m.cold("-a-b-|", {"a": A, "b": B})
        results = m.start(source.pipe(stop_gate(m.cold("---------")), ops.map(_label)))
        assert results == m.exp("-a-b-|", {"a": "a", "b": "b"})


def test_kill_is_ignored_by_the_gate() -> None:
    """A kill is not a graceful stop: the gate lets chunks through (the result operator owns kills)."""
    with marbles() as m:
        source = m.cold("-a-b-|", {"a": A, "b": B})
        stops = m.cold("--k", {"k": StopSignal(StopKind.KILL)})
        results = m.start(source.pipe(stop_gate(stops), ops.map(_label)))
        assert results == m.exp("-a-b-|", {"a": "a", "b": "b"})


def test_stop_before_subscription_is_not_lost() -> None:
    """A stop sent to the ReplaySubject before subscription stops the stream at once."""
    subject: ReplaySubject[StopSignal] = ReplaySubject(1)
    subject.on_next(USER)
    with marbles() as m:
        results = m.start(m.cold("-a-|", {"a": A}).pipe(stop_gate(subject), ops.map(_label)))
        assert results == m.exp("(u,|)", {"u": "user"})


def test_source_is_disposed_at_the_stop() -> None:
    """take_until semantics: the source subscription ends when the stop arrives."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, A), ReactiveTest.on_next(30, B), ReactiveTest.on_completed(50)
    )
    stops: Subject[StopSignal] = Subject()
    scheduler.schedule_absolute(225, lambda *_: stops.on_next(USER))
    results = scheduler.start(lambda: source.pipe(stop_gate(stops)))
    assert source.subscriptions == [ReactiveTest.subscribe(200, 225)]
    assert [r.value.kind for r in results.messages] == ["N", "N", "C"]


def test_reentrant_stop_lands_after_the_current_chunk() -> None:
    """A stop raised while a chunk is being delivered takes effect after that delivery returns."""
    stops: Subject[StopSignal] = Subject()
    seen: list[Any] = []

    def produce(obs: Any, _: Any = None) -> None:
        for x in (A, B, C):
            obs.on_next(x)
        obs.on_completed()

    source: Observable[ProcessedChunk] = Observable(produce)

    def on_next(item: ProcessedChunk | StopSignal) -> None:
        seen.append(_label(item))
        if item is A:
            stops.on_next(USER)  # raised from inside the chain, mid-delivery
            seen.append("after-stop-call")

    source.pipe(stop_gate(stops)).subscribe(on_next, on_completed=lambda: seen.append("|"))
    assert seen == ["a", "after-stop-call", "user", "|"]
