"""Counted, not timed: what a waiting stream keeps of its adapter, its chunks and its sent messages.

A stream waiting for its next event keeps its chain and its subscriptions, and each full
collection walks what they hold (``bench/notes.md``). Counted with the bench's census
(``census2.py 50 auto``), each stream kept two bound methods of its adapter (the normalizer
factory and the error description), its last chunk (the stop gate's) and its sent messages
twice (the delivery's record and the result's list). Now: none of the adapter's bound methods,
a chunk only while it notes a holdback, one list of the sent messages.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from types import FunctionType, MethodType, ModuleType
from typing import Any

import attrs
import reactivex
from reactivex import Observer
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from rxcord.compose.run import StreamJob, build_stream
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import Delivery, Segment, SentMessage
from rxcord.core.stops import StopHandle
from rxcord.core.types import ProcessedChunk, SegmentKind, StopKind, StopSignal, StreamStatus
from rxcord.operators.aio import drain
from rxcord.operators.collect_result import ResultBuilder
from rxcord.operators.gated_scan import _GatedScan, _GatedScanOp
from rxcord.providers.openai import OpenAIAdapter
from rxcord.sinks.memory import MemorySink
from tests.compose.test_live_objects import LIVE, _chain, _chunks, _feed_halfway, _warm_up

_REQUEST = ChatRequest(model="m", messages=(Message.user("hi"),))


def _adapter_methods(objects: list[Any], adapter: OpenAIAdapter) -> list[str]:
    return [m.__func__.__qualname__ for m in objects if isinstance(m, MethodType) and m.__self__ is adapter]


async def test_a_waiting_stream_keeps_no_adapter_method_no_plain_chunk_and_one_message_list() -> None:
    streams = 30
    chunks = _chunks(64)
    await _warm_up(chunks)
    adapter = OpenAIAdapter()
    before = {id(obj) for obj in gc.get_objects()}
    subjects: list[Subject[Any]] = [Subject() for _ in range(streams)]
    sinks = [MemorySink() for _ in range(streams)]
    chains = [_chain(s, sink, adapter, as_built=True) for s, sink in zip(subjects, sinks, strict=True)]
    tasks = [asyncio.ensure_future(drain(chain)) for chain in chains]
    await asyncio.sleep(0)
    await _feed_halfway(subjects, chunks)
    held = [obj for obj in gc.get_objects() if id(obj) not in before]
    assert all(sink.sent for sink in sinks)  # past a message or more: there are messages to hold
    assert not _adapter_methods(held, adapter)
    assert not [obj for obj in held if type(obj) is ProcessedChunk]
    builders = [obj for obj in held if type(obj) is ResultBuilder]
    assert len(builders) == streams
    assert all(b.messages is None and b.record and b.reported == len(b.record) for b in builders)
    del held, builders
    for subject in subjects:
        subject.on_completed()
    results = await asyncio.gather(*tasks)
    for (result,), sink in zip(results, sinks, strict=True):
        assert list(result.messages) == sink.results


def _reachable(root: object, limit: int = 200_000) -> Iterator[object]:
    """What *root* refers to, transitively: not through modules, classes or functions' globals."""
    seen = {id(root)}
    pending = [root]
    while pending and len(seen) < limit:
        obj = pending.pop()
        yield obj
        if isinstance(obj, FunctionType):
            refs: list[Any] = [*(obj.__closure__ or ()), *(obj.__defaults__ or ())]
        else:
            refs = gc.get_referents(obj)
        for ref in refs:
            if id(ref) in seen or isinstance(ref, (type, ModuleType)):
                continue
            seen.add(id(ref))
            pending.append(ref)


def test_a_built_stream_reaches_no_bound_method_of_its_adapter() -> None:
    """With or without a secret to redact (the redacting description wraps the adapter's)."""
    adapter = OpenAIAdapter()
    for api_key in ("sk-test-0123456789abcdef", None):
        request = adapter.build_request(_REQUEST, api_key=api_key, stream=True)
        job = StreamJob(adapter=adapter, request=request, sink=MemorySink(), config=LIVE)
        chain = build_stream(job, StopHandle("1"))
        reached = list(_reachable(chain))
        assert any(obj is adapter for obj in reached)  # the walk gets there: the adapter is kept
        assert not _adapter_methods(reached, adapter), api_key


def test_the_stop_gate_keeps_a_chunk_only_while_it_notes_something() -> None:
    plain = ProcessedChunk.text("x")
    noted = attrs.evolve(plain, metadata={"rxcord.held": {"think_strip": "<th"}})
    source: Subject[ProcessedChunk] = Subject()
    seen: list[object] = []
    run = _GatedScanOp(30.0, reactivex.never()).subscribe_to(source, Observer(seen.append), TestScheduler())
    assert isinstance(run, _GatedScan)
    source.on_next(noted)
    assert run.last is noted  # what a stop would release is noted on it
    source.on_next(plain)
    assert run.last is None  # a chunk noting nothing is not kept while the stream waits
    assert len(seen) == 2


def _message(n: int) -> SentMessage:
    return SentMessage(payload={"content": f"m{n}"}, message_id=str(n))


def _text(messages: tuple[SentMessage, ...]) -> Delivery:
    return Delivery(segment=Segment(kind=SegmentKind.TEXT, text="t"), messages=messages)


def test_a_result_counts_its_messages_in_the_delivery_record_and_lists_what_is_not_there() -> None:
    record: list[SentMessage] = []
    counted, listed = ResultBuilder(record=record), ResultBuilder()
    for n in range(0, 6, 2):
        sent = (_message(n), _message(n + 1))
        record.extend(sent)
        for builder in (counted, listed):
            builder.add(_text(sent))
    assert counted.messages is None and counted.reported == 6
    assert counted.build() == listed.build()
    # A stage after deliver that makes a delivery of its own: listed from there on, same result.
    made = (_message(99),)
    for builder in (counted, listed):
        builder.add(_text(made))
    assert counted.messages is not None
    assert counted.build() == listed.build()
    assert counted.build().messages == (*record, *made)


def test_a_killed_result_lists_what_was_reported_not_the_send_in_flight() -> None:
    record = [_message(0)]
    builder = ResultBuilder(record=record)
    builder.add(_text((record[0],)))
    record.append(_message(1))  # accepted, its report disposed by the kill
    result = builder.build(killed=StopSignal(StopKind.KILL, "test"))
    assert result.status is StreamStatus.KILLED
    assert result.messages == (record[0],)
