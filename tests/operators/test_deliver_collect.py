"""Stage 07 ordering (deliver) and the result fold (collect_result), including the hard kill."""

from __future__ import annotations

from typing import Any

import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.subject import ReplaySubject
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.core.state import Delivery, Segment, SentMessage, StreamState
from rxcord.core.stops import StopHandle
from rxcord.core.types import (
    ChunkType,
    FunctionCall,
    ProcessedChunk,
    RawStreamChunk,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
    ThoughtKind,
    ThoughtLogEntry,
)
from rxcord.operators.collect_result import ResultBuilder, collect_result, compile_thought_log
from rxcord.operators.normalize import normalize
from rxcord.operators.stop_after import stop_after
from rxcord.sinks.deliver import deliver
from tests.marbles import marbles


def _slow_send(m: Any) -> Any:
    def send(name: str) -> Observable[Delivery]:
        return m.cold("--x|", {"x": Delivery(segment=Segment(kind=SegmentKind.TEXT, text=name))})

    return send


def _text(d: Delivery) -> str:
    assert d.segment is not None
    return d.segment.text


def test_marble_deliver_is_serial_and_ordered() -> None:
    """A send starts only after the previous one finished; order is kept."""
    with marbles() as m:
        source = m.cold("-a-b---|")
        "                01234567"
        results = m.start(source.pipe(deliver(_slow_send(m)), ops.map(_text)))
        assert results == m.exp("---a--b|")


def test_deliver_has_one_send_in_flight() -> None:
    """Sends are deferred: the second is subscribed only when the first completes."""
    scheduler = TestScheduler()
    started: list[float] = []

    def send(x: int) -> Observable[Delivery]:
        def factory(_: Any) -> Observable[Delivery]:
            started.append(scheduler.clock)
            return reactivex.timer(3.0).pipe(ops.map(lambda _: Delivery()))

        return reactivex.defer(factory)

    source = scheduler.create_cold_observable(ReactiveTest.on_next(1, 1), ReactiveTest.on_next(2, 2))
    scheduler.start(lambda: source.pipe(deliver(send)))
    assert started == [201.0, 204.0]


def _state(i: int, delta: str, status: StreamStatus = StreamStatus.STREAMING, **kw: Any) -> StreamState:
    return StreamState(index=i, delta=delta, status=status, **kw)


def test_result_builder_folds_states_and_deliveries() -> None:
    """Visible text, delivered text, thoughts, details and calls are folded in order."""
    builder = ResultBuilder(provider="openrouter")
    thought = ThoughtLogEntry(kind=ThoughtKind.RAW, text="plan. ")
    builder.add(_state(1, "Hel", thoughts=(thought,), serving_provider="DeepInfra"))
    builder.add(_state(2, "lo"))
    sent = SentMessage(payload={"content": "Hello"}, message_id="9")
    builder.add(Delivery(segment=Segment(kind=SegmentKind.TEXT, text="Hello"), messages=(sent,)))
    builder.add(Delivery(segment=Segment(kind=SegmentKind.THOUGHT, text="inband")))
    builder.add(Delivery(segment=Segment(kind=SegmentKind.DETAILS, text="<details>x</details>")))
    call = FunctionCall(name="f")
    builder.add(_state(3, "", StreamStatus.FUNCTION_CALL, function_call=call, serving_provider="DeepInfra"))
    result = builder.build()
    assert result.status is StreamStatus.FUNCTION_CALL
    assert result.visible_text == "Hello" and result.accumulated_text == "Hello"
    assert result.reasoning == "plan. inband"
    assert result.details_content == "<details>x</details>"
    assert result.function_calls == (call,) and result.messages == (sent,)
    assert result.thought_log is not None and result.thought_log.endswith(
        "Provider: openrouter via DeepInfra"
    )
    assert result.finish_reason is not None and result.finish_reason.value == "tool_calls"


def test_thought_log_none_without_reasoning() -> None:
    """No reasoning means no thought log (and no footer alone)."""
    assert compile_thought_log([], "X", "openrouter") is None


def test_marble_collect_emits_one_result_at_completion() -> None:
    """One StreamResult, at completion, with status completed for a stream that just ended."""
    lookup = {"a": _state(1, "a"), "b": _state(2, "b")}
    with marbles() as m:
        results = m.start(
            m.cold("-a-b-|", lookup).pipe(
                collect_result(m.cold("-")), ops.map(lambda r: (r.status, r.visible_text))
            )
        )
        assert results == m.exp("-----(r,|)", {"r": (StreamStatus.COMPLETED, "ab")})


def test_kill_disposes_upstream_and_reports_killed() -> None:
    """A kill ends everything at once; the result keeps what was routed and says killed."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        ReactiveTest.on_next(10, _state(1, "a")), ReactiveTest.on_next(40, _state(2, "b"))
    )
    stops: ReplaySubject[StopSignal] = ReplaySubject(1)
    scheduler.schedule_absolute(220, lambda *_: stops.on_next(StopSignal(StopKind.KILL)))
    results = scheduler.start(lambda: source.pipe(collect_result(stops)))
    assert source.subscriptions == [ReactiveTest.subscribe(200, 220)]
    result = results.messages[0].value.value
    assert result.status is StreamStatus.KILLED and result.visible_text == "a"


class _Halves:
    """A toy normalizer: holds back half of each text, releases the rest at finish."""

    def __init__(self) -> None:
        self.held = ""

    def feed(self, raw: RawStreamChunk) -> list[ProcessedChunk]:
        if raw.data == "boom":
            raise ValueError("bad chunk")
        text = self.held + str(raw.data)
        cut = len(text) // 2
        self.held = text[cut:]
        return [ProcessedChunk.text(text[:cut])]

    def finish(self) -> list[ProcessedChunk]:
        return [ProcessedChunk.text(self.held)] if self.held else []


def _content(chunk: ProcessedChunk) -> str:
    return chunk.content if chunk.type is ChunkType.TEXT else f"error:{chunk.error and chunk.error.code}"


def test_marble_normalize_feeds_and_finishes_per_subscription() -> None:
    """Each subscription gets a fresh normalizer; finish() output is released at completion."""
    raws = {"a": RawStreamChunk(provider="t", data="abcd"), "b": RawStreamChunk(provider="t", data="ef")}
    with marbles() as m:
        results = m.start(m.cold("-a-b-|", raws).pipe(normalize(_Halves), ops.map(_content)))
        assert results == m.exp("-a-b-(c,|)", {"a": "ab", "b": "cd", "c": "ef"})


def test_normalizer_failure_becomes_error_chunk() -> None:
    """A normalizer that raises yields a typed error chunk instead of crashing the chain."""
    raws = {"x": RawStreamChunk(provider="t", data="boom")}
    with marbles() as m:
        results = m.start(m.cold("-x-|", raws).pipe(normalize(_Halves), ops.map(_content)))
        assert results == m.exp("-x-|", {"x": "error:normalization_failed"})


def test_stop_after_fires_after_forwarding() -> None:
    """The stop is sent after the N-th state has gone downstream."""
    events: list[str] = []
    stops = StopHandle("1").subject
    stops.subscribe(lambda s: events.append(f"stop:{s.kind.value}"))
    source = reactivex.from_iterable([_state(1, "a"), _state(2, "b"), _state(3, "c")])
    source.pipe(stop_after(2, StopKind.USER, stops)).subscribe(lambda s: events.append(s.delta))
    assert events == ["a", "b", "stop:user", "c"]


def test_delivery_stop_after_provider_finished_is_the_outcome() -> None:
    """A delivery cut short (message cap) after the provider finished reports the internal stop."""
    builder = ResultBuilder()
    builder.add(_state(1, "a"))
    builder.add(
        Delivery(segment=Segment(kind=SegmentKind.TEXT, text="a"), stopped=StopKind.SEND_MESSAGE_LIMIT)
    )
    assert builder.build().status is StreamStatus.SEND_MESSAGE_LIMIT


def test_user_stop_is_not_overridden_by_delivery_stop() -> None:
    """A stop the stream already ended with wins over a later delivery stop."""
    builder = ResultBuilder()
    builder.add(_state(1, "a", StreamStatus.STOPPED_BY_USER))
    builder.add(Delivery(stopped=StopKind.MISSING_ACCESS))
    assert builder.build().status is StreamStatus.STOPPED_BY_USER


def _join(a: str, b: str) -> str | None:
    return None if "!" in a + b else a + b


def test_marble_deliver_coalesces_items_queued_behind_a_send() -> None:
    """Items that arrive while a send is in flight are merged before the next send; order is kept."""
    with marbles() as m:

        def slower(name: str) -> Observable[Delivery]:
            return m.cold("----x|", {"x": Delivery(segment=Segment(kind=SegmentKind.TEXT, text=name))})

        source = m.cold("-a-b-c------|")
        "                0123456789012"
        results = m.start(source.pipe(deliver(slower, _join), ops.map(_text)))
        # a is sent 201-206; b (203) and c (205) queue meanwhile and go out as one send.
        assert results == m.exp("-----a----x-|", {"a": "a", "x": "bc"})


def test_deliver_merge_refusal_keeps_items_apart() -> None:
    """A merge that refuses (None) leaves the items as separate sends, in order."""
    with marbles() as m:
        source = m.cold("-a-b-!----------|")
        results = m.start(source.pipe(deliver(_slow_send(m), _join), ops.map(_text)))
        assert [r.value.value for r in results if r.value.kind == "N"] == ["a", "b", "!"]


def test_deliver_many_synchronous_sends_do_not_recurse() -> None:
    """Thousands of sends that complete synchronously are drained in a loop, not by recursion."""
    sent: list[int] = []

    def send(x: int) -> Observable[Delivery]:
        sent.append(x)
        return reactivex.empty()

    done: list[bool] = []
    reactivex.from_iterable(range(5000)).pipe(deliver(send)).subscribe(on_completed=lambda: done.append(True))
    assert sent == list(range(5000)) and done == [True]
