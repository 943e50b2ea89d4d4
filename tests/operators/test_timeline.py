"""The timeline recorder (virtual time), its plot (a real PNG), `--timeline`, and the progress display."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import reactivex
from reactivex import Observable
from reactivex import operators as ops
from reactivex.notification import OnNext
from reactivex.subject import ReplaySubject
from reactivex.testing import ReactiveTest, TestScheduler

from rxcord.cli.main import main
from rxcord.cli.progress import Progress, iterate
from rxcord.cli.replay import ReplayOptions, run_replay
from rxcord.compose.chain import build_chain
from rxcord.compose.pipeline import Pipeline
from rxcord.core.config import StreamConfig
from rxcord.core.state import Delivery, Segment, TypingPulse
from rxcord.core.types import (
    DeliveryMode,
    FinishReason,
    ProcessedChunk,
    RawStreamChunk,
    StopKind,
    StopSignal,
    ThoughtKind,
    ThoughtLogEntry,
)
from rxcord.operators.timeline import (
    CLEAN,
    DELIVERY,
    FLUSH,
    NORMALIZE,
    ORCHESTRATOR,
    TRANSPORT,
    Timeline,
    TimelineEvent,
)
from rxcord.testing.emulator import EmulatorConfig
from tests.conftest import DEMO_DATA
from tests.marbles import marbles

on_next, on_completed = ReactiveTest.on_next, ReactiveTest.on_completed
SUBSCRIBED = 100.0


class _Words:
    """A normalizer for tests: raw ``data`` is the text; ``"?x"`` is reasoning ``x``; finish says done."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        text = str(raw.data)
        if text.startswith("?"):
            return [ProcessedChunk.text("", thoughts=(ThoughtLogEntry(kind=ThoughtKind.RAW, text=text[1:]),))]
        return [ProcessedChunk.text(text)]

    def finish(self) -> Sequence[ProcessedChunk]:
        return [ProcessedChunk.done(finish_reason=FinishReason.STOP)]


def _raw(text: str) -> RawStreamChunk:
    return RawStreamChunk(provider="test", data=text)


def _instant_send(item: Segment | TypingPulse) -> Observable[Delivery]:
    return reactivex.just(Delivery(segment=item if isinstance(item, Segment) else None))


def _run_chain(
    scheduler: TestScheduler,
    source: Observable[RawStreamChunk],
    timeline: Timeline | None,
    stops: ReplaySubject[StopSignal] | None = None,
    config: StreamConfig | None = None,
) -> list[Any]:
    subject = stops if stops is not None else ReplaySubject[StopSignal](1)
    chain = build_chain(
        source,
        normalizer=_Words,
        config=config or StreamConfig(typing_interval=0),
        stops=subject,
        stop_sink=subject,
        send=_instant_send,
        provider="test",
        timeline=timeline,
    )
    observer = scheduler.start(lambda: chain, created=0.0, subscribed=SUBSCRIBED, disposed=1000.0)
    return [message.value.value for message in observer.messages if isinstance(message.value, OnNext)]


def _marks(timeline: Timeline, lane: str) -> list[tuple[float, str]]:
    return [(event.t, event.kind) for event in timeline.lane(lane)]


def test_chain_records_each_stage_at_virtual_times() -> None:
    """Raw and processed chunks, the final flush, the cleaned segment and the result land at their ticks."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(2, _raw("?plan")), on_next(5, _raw("Hello")), on_next(9, _raw(" world")), on_completed(12)
    )
    timeline = Timeline()
    results = _run_chain(scheduler, source, timeline)

    assert results[0].visible_text == "Hello world"
    assert _marks(timeline, TRANSPORT) == [(0, "request"), (2, "raw"), (5, "raw"), (9, "raw"), (12, "end")]
    assert _marks(timeline, NORMALIZE) == [(2, "thought"), (5, "text"), (9, "text"), (12, "done")]
    assert _marks(timeline, FLUSH) == [(12, "text")]
    assert _marks(timeline, CLEAN) == [(12, "text")]
    assert timeline.lane(FLUSH)[0].detail == "11 chars final"
    assert _marks(timeline, ORCHESTRATOR) == [(12, "result")]
    assert timeline.status == "completed"
    assert timeline.lane(DELIVERY) == []  # only DiscordDelivery and the rate limiter record sends


def test_live_flushes_are_recorded_when_the_idle_timer_fires() -> None:
    """In live mode a segment released by the idle flush is recorded at the timer's virtual time."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(1, _raw("First part. ")), on_next(20, _raw("Second.")), on_completed(21)
    )
    timeline = Timeline()
    config = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=3.0, typing_interval=0)
    _run_chain(scheduler, source, timeline, config=config)
    assert _marks(timeline, FLUSH) == [(4, "text"), (21, "text")]


def test_user_stop_is_recorded_with_the_cancelled_request() -> None:
    """A user stop shows as a stop, a status change, the request cancelled, and the final status."""
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(
        on_next(2, _raw("Hello")), on_next(8, _raw(" late")), on_completed(10)
    )
    stops = ReplaySubject[StopSignal](1)
    scheduler.schedule_absolute(SUBSCRIBED + 5, lambda *_: stops.on_next(StopSignal(StopKind.USER, "test")))
    timeline = Timeline()
    _run_chain(scheduler, source, timeline, stops=stops)

    assert _marks(timeline, ORCHESTRATOR) == [(5, "stop"), (5, "status"), (5, "result")]
    assert [e.detail for e in timeline.lane(ORCHESTRATOR)] == [
        "user: test",
        "stopped_by_user",
        "stopped_by_user",
    ]
    assert (5, "cancelled") in _marks(timeline, TRANSPORT)
    assert (8, "raw") not in _marks(timeline, TRANSPORT)


def test_without_a_timeline_no_tap_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    """build_chain without a timeline never creates a recording operator (zero cost when off)."""
    import rxcord.operators.timeline as timeline_module

    def refuse(*_: Any, **__: Any) -> None:
        raise AssertionError("a timeline tap was built")

    for name in ("tap", "raw_tap", "chunk_tap", "state_tap", "segment_tap", "result_tap"):
        monkeypatch.setattr(timeline_module.Timeline, name, refuse)
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(on_next(1, _raw("Hi")), on_completed(2))
    assert _run_chain(scheduler, source, None)[0].visible_text == "Hi"


def test_tap_reads_the_subscribe_time_scheduler() -> None:
    """A tap records at the marble scheduler's ticks, relative to the subscription."""
    timeline = Timeline()

    def describe(item: str) -> tuple[str, str]:
        return "item", item

    with marbles() as m:
        source = m.cold("-a--b-|")
        assert m.start(source.pipe(timeline.tap("lane", describe))) == m.exp("-a--b-|")
    assert [(e.t, e.detail) for e in timeline.events] == [(1.0, "a"), (4.0, "b")]


def test_tap_without_a_scheduler_refuses() -> None:
    """Subscribing a tap without a scheduler is an error, never a silent wall-clock fallback."""
    errors: list[Exception] = []
    reactivex.of(1).pipe(Timeline().tap("lane", _kind)).subscribe(on_error=errors.append)
    assert errors and isinstance(errors[0], ValueError)


def _kind(item: object) -> tuple[str, str]:
    return "item", str(item)


def test_record_before_binding_is_a_no_op_and_now_refuses() -> None:
    """Hooks called before the chain is subscribed record nothing; now() says why it cannot answer."""
    timeline = Timeline()
    assert timeline.record(DELIVERY, "wait") is None
    timeline.rate_limit_wait("route", 1.0)
    assert timeline.events == []
    with pytest.raises(RuntimeError):
        timeline.now()


def test_readers_sort_count_and_find_the_first_message() -> None:
    """Events are read in time order; counts, span, status and time to first message follow from them."""
    timeline = Timeline()
    timeline.extend(
        [
            TimelineEvent(0.5, DELIVERY, "send", "message 2", 0.25),
            TimelineEvent(0.1, DELIVERY, "send", "message 1", 0.2),
            TimelineEvent(0.0, TRANSPORT, "request"),
            TimelineEvent(0.9, ORCHESTRATOR, "result", "completed"),
        ]
    )
    assert [e.t for e in timeline.events] == [0.0, 0.1, 0.5, 0.9]
    assert timeline.first_message_at == pytest.approx(0.3)
    assert timeline.counts() == {
        DELIVERY: {"send": 2},
        TRANSPORT: {"request": 1},
        ORCHESTRATOR: {"result": 1},
    }
    assert timeline.span == pytest.approx(0.9)
    assert timeline.status == "completed"
    assert [e.detail for e in timeline.of_kind("send")] == ["message 1", "message 2"]


async def test_replay_records_sends_typing_and_rate_limit_waits() -> None:
    """Against a tight emulator, sends, typing and the limiter's waits are recorded on the loop clock."""
    timeline = Timeline()
    outcome = await run_replay(
        ReplayOptions(
            capture=DEMO_DATA / "openrouter_reasoning_code.sse",
            provider="openrouter",
            delivery=DeliveryMode.LIVE,
            config=StreamConfig(delivery=DeliveryMode.LIVE, message_limit=500),
            emulator=EmulatorConfig(channel_limit=2, channel_window=0.2),
            timeline=timeline,
        )
    )
    sends = timeline.of_kind("send", DELIVERY)
    waits = timeline.of_kind("wait", DELIVERY)
    assert len(sends) == len(outcome.result.messages) > 2
    assert waits and all(w.duration > 0 and "messages" in w.detail for w in waits)
    assert timeline.of_kind("typing", DELIVERY)
    first = timeline.first_message_at
    assert first is not None and 0 < first <= sends[0].end
    assert timeline.status == "completed"
    assert all(e.t >= 0 for e in timeline.events)


# -- the plot ----------------------------------------------------------------------------------------------


def _sample_timeline() -> Timeline:
    timeline = Timeline()
    events = [TimelineEvent(0.0, TRANSPORT, "request")]
    events += [TimelineEvent(0.05 + i * 0.01, TRANSPORT, "raw") for i in range(60)]
    events += [TimelineEvent(0.05 + i * 0.01, NORMALIZE, "text" if i > 10 else "thought") for i in range(60)]
    events += [TimelineEvent(0.3 + i * 0.1, FLUSH, "text", "80 chars") for i in range(4)]
    events += [TimelineEvent(0.3 + i * 0.1, CLEAN, "text", "80 chars") for i in range(4)]
    events += [TimelineEvent(0.3 + i * 0.1, DELIVERY, "send", "", 0.05 + 0.1 * (i > 1)) for i in range(4)]
    events += [TimelineEvent(0.52, DELIVERY, "wait", "POST", 0.1), TimelineEvent(0.01, DELIVERY, "typing")]
    events += [
        TimelineEvent(0.45, ORCHESTRATOR, "stop", "user"),
        TimelineEvent(0.9, ORCHESTRATOR, "result", "x"),
    ]
    timeline.extend(events)
    return timeline


def _assert_real_png(path: Path) -> None:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size > 15_000
    pixels = imread(path)
    height, width = pixels.shape[:2]
    assert width > 600 and height > 250
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05  # not one flat colour
    colours = {tuple(p) for p in (rgb.reshape(-1, 3) * 255).astype(int)[::7].tolist()}
    assert len(colours) > 20  # lanes, marks, bars and text, not a blank canvas


def test_save_timeline_writes_a_non_trivial_png(tmp_path: Path) -> None:
    """The plot is a real, non-blank PNG of a sensible size."""
    from rxcord.cli.timeline_plot import save_timeline

    path = save_timeline(_sample_timeline(), tmp_path / "timeline.png", label="sample")
    _assert_real_png(path)


def test_plot_has_one_lane_per_stage_and_the_first_message() -> None:
    """The figure's y axis names the six lanes and the title gives the time to the first message."""
    from rxcord.cli.timeline_plot import plot_timeline

    figure = plot_timeline(_sample_timeline())
    axes = figure.axes[0]
    assert [t.get_text() for t in axes.get_yticklabels()] == [
        DELIVERY,
        CLEAN,
        FLUSH,
        ORCHESTRATOR,
        NORMALIZE,
        TRANSPORT,
    ]
    assert "first message after 0.350 s" in axes.get_title()


def test_missing_matplotlib_is_a_clear_input_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without matplotlib, plotting says what to install, and the CLI exits 2 before replaying."""
    from rxcord.cli.timeline_plot import plot_timeline
    from rxcord.core.errors import InputError, PlotUnavailableError

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailableError, match=r"rxcord\[plot\]") as caught:
        plot_timeline(_sample_timeline())
    assert isinstance(caught.value, InputError)
    capture = str(DEMO_DATA / "openai_think_leak.sse")
    code = main(["replay", capture, "--provider", "openai", "--timeline", str(tmp_path / "t.png")])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1 and "matplotlib" in err
    assert not (tmp_path / "t.png").exists()


def test_cli_timeline_flag_writes_the_png_and_keeps_the_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`replay --timeline out.png --json` prints the same report as without the flag, and writes the plot."""
    capture = str(DEMO_DATA / "openai_think_leak.sse")
    args = ["replay", capture, "--provider", "openai", "--sink", "memory", "--json"]
    assert main(args) == 0
    plain, _ = capsys.readouterr()
    png = tmp_path / "out.png"
    assert main([*args, "--timeline", str(png)]) == 0
    with_plot, err = capsys.readouterr()
    assert json.loads(with_plot) == json.loads(plain)
    assert err == ""
    _assert_real_png(png)


def test_cli_timeline_into_a_missing_directory_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A --timeline path whose directory does not exist fails with exit 2 and one line, before replaying."""
    capture = str(DEMO_DATA / "openai_think_leak.sse")
    code = main(["replay", capture, "--provider", "openai", "--timeline", str(tmp_path / "no" / "t.png")])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and "no such directory" in err


# -- the progress display ---------------------------------------------------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_is_silent_when_the_stream_is_not_a_terminal() -> None:
    """Off by default on a pipe or a file: nothing is written, but items are still counted."""
    stream = io.StringIO()
    with Progress("replay", stream=stream) as progress:
        progress.advance(5)
    assert stream.getvalue() == ""
    assert progress.count == 5


def test_progress_bar_redraws_at_most_every_interval_and_ends_its_line() -> None:
    """Redraws are throttled by the clock; close draws the final count and a newline."""
    stream, clock = io.StringIO(), _Clock()
    progress = Progress("bench", total=4, unit="runs", stream=stream, enabled=True, clock=clock, width=4)
    progress.advance()
    progress.advance()  # same instant: no redraw
    clock.now = 1.0
    progress.advance()
    progress.close()
    lines = stream.getvalue().split("\r")[1:]
    assert lines == [
        "bench 1/4 runs [#...]  25%, 0.0 s",
        "bench 3/4 runs [###.]  75%, 1.0 s",
        "bench 3/4 runs [###.]  75%, 1.0 s\n",
    ]


def test_progress_without_total_is_a_live_count() -> None:
    """With no total the line is a count with the elapsed time."""
    clock = _Clock()
    progress = Progress("replay", unit="chunks", stream=io.StringIO(), enabled=True, clock=clock)
    progress.advance(981)
    clock.now = 1.25
    assert progress.render() == "replay: 981 chunks, 1.2 s"


def test_progress_tap_counts_items_and_passes_them_through() -> None:
    """The tap is a pass-through operator counting every item."""
    progress = Progress("x", stream=io.StringIO())
    with marbles() as m:
        assert m.start(m.cold("-a-b-c-|").pipe(progress.tap())) == m.exp("-a-b-c-|")
    assert progress.count == 3


def test_iterate_yields_everything_with_the_total_from_len() -> None:
    """iterate() wraps an iterable, taking the total from its length."""
    stream = io.StringIO()
    assert list(iterate([1, 2, 3], "bench", stream=stream, enabled=True)) == [1, 2, 3]
    assert "3/3 items" in stream.getvalue() and stream.getvalue().endswith("\n")


def test_progress_tap_counts_routed_chunks_in_a_chain() -> None:
    """Used as the chain's state tap, the count is the number of routed chunks."""
    progress = Progress("replay", stream=io.StringIO())
    scheduler = TestScheduler()
    source = scheduler.create_cold_observable(on_next(1, _raw("a")), on_next(2, _raw("b")), on_completed(3))
    subject = ReplaySubject[StopSignal](1)
    chain = build_chain(
        source,
        normalizer=_Words,
        config=StreamConfig(typing_interval=0),
        stops=subject,
        stop_sink=subject,
        send=_instant_send,
        pipeline=Pipeline.default().insert_after("accumulate", "progress", progress.tap()),
    )
    scheduler.start(lambda: chain.pipe(ops.last()))
    assert progress.count == 3  # "a", "b" and the final done chunk
