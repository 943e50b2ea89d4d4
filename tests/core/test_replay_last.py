"""The light stop subject against reactivex's ReplaySubject(1): the same notifications, fewer objects."""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from reactivex import abc
from reactivex import operators as ops
from reactivex.internal import DisposedException
from reactivex.scheduler import ImmediateScheduler
from reactivex.subject import ReplaySubject

from rxcord.core.replay_last import ReplayLast
from rxcord.operators.light import subscribe_light

Op = tuple[Any, ...]
Subject = ReplayLast[int] | ReplaySubject[int]

_TERMINAL_OPS = st.sampled_from([("completed",), ("error",)])
_SUB = st.tuples(st.just("sub"), st.sampled_from(["rx", "light"]))
_NEXT = st.tuples(st.just("next"), st.integers(0, 99))
_NESTED_OPS = st.one_of(_SUB, st.tuples(st.just("unsub"), st.integers(0, 3)), _NEXT, _TERMINAL_OPS)
_TOP_OPS = st.one_of(_SUB, _SUB, _NEXT, _NEXT, _NESTED_OPS, _SUB, _NEXT, st.just(("dispose",)))
# (subscriber, which of its notifications) -> what its callback does then (once). A small key
# space, so that reactions fire: a callback subscribing, disposing or notifying re-entrantly.
_REACTIONS = st.dictionaries(
    st.tuples(st.integers(0, 3), st.integers(0, 2)), _NESTED_OPS, min_size=1, max_size=12
)


class _Script:
    """Runs one script against one subject; every notification goes to one shared log, in order."""

    def __init__(self, subject: Subject, reactions: dict[tuple[int, int], Op]) -> None:
        self.subject = subject
        self.reactions = dict(reactions)
        self.log: list[tuple[Any, ...]] = []
        self.seen: list[int] = []
        self.disposables: dict[int, abc.DisposableBase] = {}

    def do(self, op: Op) -> None:
        try:
            self._do(op)
        except DisposedException:
            self.log.append(("raised", op[0]))

    def _do(self, op: Op) -> None:
        name = op[0]
        if name == "sub":
            self._subscribe(op[1])
        elif name == "unsub":
            if self.seen:
                target = op[1] % len(self.seen)
                disposable = self.disposables.get(target)
                if disposable is not None:
                    disposable.dispose()
        elif name == "next":
            self.subject.on_next(op[1])
        elif name == "completed":
            self.subject.on_completed()
        elif name == "error":
            self.subject.on_error(ValueError("boom"))
        else:
            self.subject.dispose()

    def _subscribe(self, mode: str) -> None:
        sid = len(self.seen)
        self.seen.append(0)

        def heard(*entry: Any) -> None:
            self.log.append((sid, *entry))
            nth = self.seen[sid]
            self.seen[sid] += 1
            reaction = self.reactions.pop((sid, nth), None)
            if reaction is not None:
                self.do(reaction)

        def on_next(value: int) -> None:
            heard("next", value)

        def on_error(error: Exception) -> None:
            heard("error", type(error).__name__, str(error))

        def on_completed() -> None:
            heard("completed")

        if mode == "rx":
            self.disposables[sid] = self.subject.subscribe(on_next, on_error, on_completed)
        else:
            self.disposables[sid] = subscribe_light(self.subject, on_next, on_error, on_completed)


def _run(subject: Subject, program: list[Op], reactions: dict[tuple[int, int], Op]) -> list[tuple[Any, ...]]:
    script = _Script(subject, reactions)
    for op in program:
        script.do(op)
    return script.log


_A_THEN_B = [("sub", "light"), ("sub", "rx"), ("next", 1), ("next", 2)]


@settings(max_examples=400, deadline=None)
@given(program=st.lists(_TOP_OPS, max_size=14), reactions=_REACTIONS)
@example(program=_A_THEN_B, reactions={(0, 0): ("next", 5)})  # raised while the first is busy
@example(program=_A_THEN_B, reactions={(0, 0): ("sub", "light")})  # subscribed during a delivery
@example(program=_A_THEN_B, reactions={(0, 0): ("unsub", 1)})  # the next one disposed before its turn
@example(program=_A_THEN_B, reactions={(1, 0): ("unsub", 0), (0, 1): ("completed",)})
@example(program=[("next", 3), *_A_THEN_B], reactions={(0, 0): ("next", 4), (1, 1): ("unsub", 1)})
def test_same_notifications_as_replay_subject(
    program: list[Op], reactions: dict[tuple[int, int], Op]
) -> None:
    """Random subscribe / dispose / on_next / end scripts, callbacks acting re-entrantly: one log."""
    theirs = _run(ReplaySubject(1, scheduler=ImmediateScheduler()), program, reactions)
    ours = _run(ReplayLast(), program, reactions)
    assert ours == theirs


def test_late_subscriber_gets_the_last_value_then_the_end() -> None:
    subject: ReplayLast[int] = ReplayLast()
    subject.on_next(1)
    subject.on_next(2)
    early: list[object] = []
    subject.subscribe(early.append)
    subject.on_completed()
    late: list[object] = []
    subject.subscribe(late.append, on_completed=lambda: late.append("end"))
    assert early == [2] and late == [2, "end"]


def test_subscriber_disposed_during_a_delivery_gets_nothing_more() -> None:
    subject: ReplayLast[int] = ReplayLast()
    seen: list[tuple[str, int]] = []
    second: list[abc.DisposableBase] = []

    def first(value: int) -> None:
        seen.append(("first", value))
        second[0].dispose()

    subscribe_light(subject, first)
    second.append(subscribe_light(subject, lambda value: seen.append(("second", value))))
    subject.on_next(1)
    subject.on_next(2)
    assert seen == [("first", 1), ("first", 2)]


def test_a_disposed_subscription_is_unlinked_at_once() -> None:
    """Disposing forgets the observer (no list kept, no walk): a stream that ends is not held."""
    subject: ReplayLast[int] = ReplayLast()
    kept = [subscribe_light(subject, lambda _: None) for _ in range(3)]
    middle = kept[1]
    middle.dispose()
    assert not _reaches(subject, middle)
    assert _reaches(subject, kept[0]) and _reaches(subject, kept[2])
    for subscription in kept:
        subscription.dispose()
    assert not any(_reaches(subject, subscription) for subscription in kept)


def _reaches(root: object, target: object) -> bool:
    """Whether *target* is reachable from *root* through the objects the collector sees."""
    seen, todo = {id(root)}, [root]
    while todo:
        for referent in gc.get_referents(todo.pop()):
            if referent is target:
                return True
            if id(referent) not in seen and gc.is_tracked(referent):
                seen.add(id(referent))
                todo.append(referent)
    return False


def test_disposing_the_subject_during_a_delivery_delivers_nothing_more() -> None:
    subject: ReplayLast[int] = ReplayLast()
    seen: list[tuple[str, int]] = []

    def first(value: int) -> None:
        seen.append(("first", value))
        subject.dispose()

    subscribe_light(subject, first)
    subscribe_light(subject, lambda value: seen.append(("second", value)))
    subject.on_next(1)
    assert seen == [("first", 1)]


def test_a_stop_raised_by_a_stop_handler_reaches_everyone_in_order() -> None:
    """The first subscriber raises 2 while handling 1: the second still sees 1 before 2."""
    subject: ReplayLast[int] = ReplayLast()
    seen: list[tuple[str, int]] = []

    def first(value: int) -> None:
        seen.append(("first", value))
        if value == 1:
            subject.on_next(2)

    subscribe_light(subject, first)
    subscribe_light(subject, lambda value: seen.append(("second", value)))
    subject.on_next(1)
    assert [v for who, v in seen if who == "first"] == [1, 2]
    assert [v for who, v in seen if who == "second"] == [1, 2]


def test_a_raising_subscriber_is_detached_and_the_others_still_hear() -> None:
    """The error reaches the caller once all were notified; the subject keeps working."""
    subject: ReplayLast[int] = ReplayLast()
    seen: list[int] = []

    def broken(value: int) -> None:
        raise RuntimeError(f"handler failed on {value}")

    subscribe_light(subject, broken)
    subscribe_light(subject, seen.append)
    with pytest.raises(RuntimeError, match="on 1"):
        subject.on_next(1)
    subject.on_next(2)  # the broken subscriber is gone: nothing raised
    assert seen == [1, 2]


def test_a_subscribe_that_fails_keeps_nothing_linked() -> None:
    """A replay raising a stop that a broken handler fails on: the subscribe fails, nothing leaks."""
    subject: ReplayLast[int] = ReplayLast()
    subject.on_next(1)

    def broken(value: int) -> None:
        if value == 2:
            raise RuntimeError("handler failed on 2")

    subscribe_light(subject, broken)
    seen: list[int] = []
    errors: list[Exception] = []

    def chained(value: int) -> None:
        seen.append(value)
        if value == 1:
            subject.on_next(2)

    late = subscribe_light(subject, chained, errors.append)
    assert seen == [1, 2] and [str(e) for e in errors] == ["handler failed on 2"]
    assert not _reaches(subject, late)
    subject.on_next(3)  # nobody left: nothing raised, nothing delivered
    assert seen == [1, 2]


def test_disposed_subject_refuses_as_reactivex_subjects_do() -> None:
    subject: ReplayLast[int] = ReplayLast()
    seen: list[int] = []
    subject.subscribe(seen.append)
    subject.dispose()
    with pytest.raises(DisposedException):
        subject.on_next(1)
    errors: list[Exception] = []
    subject.subscribe(seen.append, errors.append)
    assert seen == [] and [type(e) for e in errors] == [DisposedException]


def test_operators_that_lock_their_source_work() -> None:
    """take_while takes ``source.lock``; the subject's is one shared lock."""
    subject: ReplayLast[int] = ReplayLast()
    seen: list[int] = []

    def small(value: int) -> bool:
        return value < 3

    subject.pipe(ops.take_while(small)).subscribe(seen.append)
    for value in range(5):
        subject.on_next(value)
    assert seen == [0, 1, 2]


def _tracked_per_subject(make: Callable[[], Subject], streams: int = 200) -> float:
    """Tracked objects one subject with three light subscribers and one value holds."""

    def nothing(_: object) -> None:
        pass

    keep: list[object] = []
    for _ in range(3):  # warm-up: what the first use imports or caches is no subject's
        warm = make()
        subscribe_light(warm, nothing)
        warm.on_next(0)
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(streams):
        subject = make()
        keep.append(subject)
        keep.extend(subscribe_light(subject, nothing) for _ in range(3))
        subject.on_next(7)  # an int: the value itself is not tracked
    gc.collect()
    return (len(gc.get_objects()) - before - 1) / streams  # the list `keep` itself


def test_tracked_objects_per_subject_are_counted_and_few() -> None:
    """Ours: the subject and one link per subscriber (beside each LightObserver); ReplaySubject: ~25."""
    ours = _tracked_per_subject(ReplayLast)
    theirs = _tracked_per_subject(lambda: ReplaySubject(1, scheduler=ImmediateScheduler()))
    assert ours <= 1 + 3 * 2 + 0.5, ours  # the half: what the run itself leaves, not per subject
    assert theirs >= ours + 15, (theirs, ours)
