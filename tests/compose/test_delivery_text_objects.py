"""Counted, not timed: the tuples, queues and lists the text and delivery side hold per live stream.

A stream waiting for its next event keeps its subscriptions, and each full collection walks
what they hold (``bench/notes.md``). What is the same for every stream, or made before it holds
anything, is not kept per stream: the delivery stages' operators are one tuple object, a fused
run of two stages holds them in slots, the deliver hop holds its operator (not tuples of its
functions) and a queue only while items wait, and a short text is one string.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Sequence
from typing import Any

from reactivex import Observable
from reactivex.subject import Subject

from rxcord.core.state import Delivery
from rxcord.core.text_buffer import TextBuffer
from rxcord.operators.fused import Fusable, _FusedRun, fuse
from rxcord.operators.markdown.code_spans import BATCH, CodeTracker
from rxcord.sinks.deliver import _DeliverRun, deliver
from tests.compose.test_glue_objects import GLUE, _held, _module

_KEPT = frozenset({("DiscordDelivery", "held"), ("ResultBuilder", "messages")})
"""The two lists a stream's glue holds: what Discord accepted (the delivery's and the result's record)."""


def _containers(obj: object) -> list[object]:
    """The tracked tuples, lists and deques *obj* refers to directly."""
    return [ref for ref in gc.get_referents(obj) if gc.is_tracked(ref) and type(ref) in (tuple, list, deque)]


async def test_the_glue_and_the_text_buffers_hold_no_tuple_or_queue_per_stream() -> None:
    """Halfway through a live stream, past two messages, the glue holds only the messages' lists.

    Counted before: 5.0 tuples, lists and deques per stream among the glue and the text buffers
    (``_Composed.operators``, ``_Deliver.send``, ``_DeliverRun.queue`` and four text lists); now 2.
    """
    streams = 40
    modules = GLUE | {"rxcord.operators.fused", "rxcord.core.text_buffer"}
    held = await _held(streams)
    found: list[tuple[str, str]] = []
    for obj in held:
        if _module(obj) not in modules:
            continue
        for ref in _containers(obj):
            names = [name for name in getattr(type(obj), "__slots__", ()) if getattr(obj, name, None) is ref]
            names += [name for name, value in getattr(obj, "__dict__", {}).items() if value is ref]
            found.append((type(obj).__qualname__, names[0] if names else type(ref).__name__))
    unexpected = [item for item in found if item not in _KEPT]
    assert not unexpected, unexpected
    assert len(found) <= 2 * streams
    buffers = [obj for obj in held if type(obj) is TextBuffer]
    assert len(buffers) == 4 * streams  # the resend check, the flusher, the result's two texts
    assert not [buffer for buffer in buffers if _containers(buffer)]  # short texts: one string each


class _Twice:
    def feed(self, item: Any) -> Sequence[Any]:
        return [item, item]

    def finish(self) -> Sequence[Any]:
        return ["end"]


class _Plus:
    def __init__(self) -> None:
        self.seen = 0

    def feed(self, item: Any) -> Sequence[Any]:
        self.seen += 1
        return [f"{item}+{self.seen}"] if item != "drop" else []

    def finish(self) -> Sequence[Any]:
        return [f"seen {self.seen}"]


def _through(operator: Fusable, items: list[Any]) -> tuple[list[Any], list[_FusedRun]]:
    seen: list[Any] = []
    subject: Subject[Any] = Subject()
    before = {id(obj) for obj in gc.get_objects() if type(obj) is _FusedRun}
    subject.pipe(operator).subscribe(seen.append, seen.append, lambda: seen.append("|"))
    runs = [obj for obj in gc.get_objects() if type(obj) is _FusedRun and id(obj) not in before]
    for item in items:
        subject.on_next(item)
    subject.on_completed()
    return seen, runs


def test_a_fused_run_of_two_stages_holds_them_in_slots_and_gives_what_the_chain_gives() -> None:
    for makes in ([_Twice, _Plus], [_Plus, _Twice], [_Plus, _Twice, _Plus], [_Twice]):
        operator = fuse([Fusable(make, make.__name__) for make in makes])
        items = ["a", "drop", "b"]
        chain = operator.factory()
        expected = [out for item in items for out in chain.feed(item)] + list(chain.finish()) + ["|"]
        seen, runs = _through(operator, items)
        assert seen == expected, makes
        assert len(runs) == 1
        assert len(_containers(runs[0])) == (1 if len(makes) > 2 else 0), makes


def test_the_deliver_hop_holds_no_tuple_and_a_queue_only_while_items_wait() -> None:
    sends: list[Subject[Delivery]] = []

    def send(item: str) -> Observable[Delivery]:
        subject: Subject[Delivery] = Subject()
        sends.append(subject)
        return subject

    def merge(first: str, second: str) -> str:
        return first + second

    seen: list[Any] = []
    source: Subject[str] = Subject()
    before = {id(obj) for obj in gc.get_objects() if type(obj) is _DeliverRun}
    source.pipe(deliver(send, merge)).subscribe(seen.append, seen.append, lambda: seen.append("|"))
    (run,) = [obj for obj in gc.get_objects() if type(obj) is _DeliverRun and id(obj) not in before]
    assert not _containers(run)
    source.on_next("a")  # sent at once: nothing waits behind it
    assert len(sends) == 1 and run.queue is None
    source.on_next("b")
    source.on_next("c")
    assert run.queue is not None and len(run.queue) == 2
    sends[0].on_next(Delivery())
    sends[0].on_completed()  # b and c merged into one send
    assert len(sends) == 2 and run.queue is None
    sends[1].on_completed()
    assert not _containers(run)
    source.on_completed()
    assert seen == [Delivery(), "|"]


def test_a_code_tracker_holds_its_unread_text_as_one_short_string() -> None:
    """Between chunks the think-tag stripper's code state holds no list (before: one per stream)."""
    tracker = CodeTracker()
    for piece in ("some `co", "de", " still"):
        tracker.feed(piece)
        assert not [ref for ref in gc.get_referents(tracker) if type(ref) is list]
    assert tracker._pieces == "some `code still"
    assert tracker.in_code()
    tracker.feed("` out")
    assert not tracker.in_code()
    for _ in range(BATCH):
        tracker.feed("ab")
        assert tracker._pieces is None or len(tracker._pieces) < BATCH  # read once it is that long
