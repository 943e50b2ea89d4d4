"""A stream's timeline: what each stage did, and when, on the scheduler's clock (all stages).

Why: latency questions ("why did the first message take 2 s?", "how long did
the rate limiter hold message 7?") are about *when* things happened across
stages, which logs spread over many lines. A ``Timeline`` is an optional
observer of the one chain that records a ``TimelineEvent`` per interesting
moment, in one lane per stage:

================  ==============================================================
lane              kinds
================  ==============================================================
``02 transport``  ``request`` (subscription), ``raw`` / ``transport_error`` (a raw
                  chunk), ``end`` (the source completed), ``cancelled`` (the
                  source was disposed before its end: a kill, an idle timeout)
``03 normalize``  the processed chunk's type: ``text``, ``thought`` (reasoning
                  only), ``empty``, ``function_call``, ``error``, ``done``
``04 orchestr.``  ``status`` (the state's status changed), ``stop`` (a stop signal
                  was raised, any kind), ``result`` (the final status)
``05 flush``      one per segment released: its kind (``text``, ``thought``,
                  ``details``, ``error_embed``)
``06 clean``      the same, after cleaning and render modifiers
``07 delivery``   ``typing``, ``send`` (a message, start to accepted), ``wait``
                  (a rate-limit wait), ``pause`` (paced messages), ``refused``
================  ==============================================================

Stage 01 (context assembly) happens before the stream exists; its output is
the ``request`` mark.

Time. Every timestamp is read from the scheduler the chain was subscribed
with (``rxcord.operators.quiet_timer.seconds_clock``: the event loop's monotonic clock
under asyncio, the one its timers run on; virtual time under a
``TestScheduler``), never from the wall clock, as seconds since the chain's
subscription. The first tap subscribed binds the scheduler; stage 07's
hooks (``DiscordDelivery``, the rate limiter's ``on_wait``) read the same clock
through ``Timeline.now``.

Cost. Nothing when off: ``build_chain`` adds the taps only when given a
timeline, and the delivery's hooks are one ``is None`` test per send. When on,
a tap appends one plain tuple per item (tuples of numbers and strings leave
the garbage collector's care once they survive a collection, so a long
recording does not lengthen full collections); ``TimelineEvent`` values are
built when the events are read.

One timeline records one stream (one subscription of the chain).
"""

from __future__ import annotations

__all__ = (
    "CLEAN",
    "DELIVERY",
    "FLUSH",
    "LANES",
    "NORMALIZE",
    "ORCHESTRATOR",
    "TRANSPORT",
    "Timeline",
    "TimelineEvent",
)

from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any, Final, TypeAlias, TypeVar

import attrs
from reactivex import Observable, abc
from reactivex.disposable import CompositeDisposable, Disposable

from rxcord.core.state import Segment, StreamResult, StreamState
from rxcord.core.types import ChunkType, Operator, ProcessedChunk, RawStreamChunk, StopSignal, StreamStatus
from rxcord.operators.quiet_timer import seconds_clock

_T = TypeVar("_T")

TRANSPORT: Final = "02 transport"
NORMALIZE: Final = "03 normalize"
ORCHESTRATOR: Final = "04 orchestrator"
FLUSH: Final = "05 flush"
CLEAN: Final = "06 clean"
DELIVERY: Final = "07 delivery"
LANES: Final = (TRANSPORT, NORMALIZE, ORCHESTRATOR, FLUSH, CLEAN, DELIVERY)
"""The lanes, in stage order."""

Describe = Callable[[_T], tuple[str, str]]
"""What a tap records for one item: ``(kind, detail)``."""

_Record: TypeAlias = tuple[float, str, str, str, float]
"""A recorded event as stored: ``(t, lane, kind, detail, duration)``."""


@attrs.frozen
class TimelineEvent:
    """One moment of one stage."""

    t: float
    """Seconds since the chain was subscribed (scheduler clock)."""
    lane: str
    """The stage's lane (``LANES``)."""
    kind: str
    """What happened (see the module docstring)."""
    detail: str = ""
    """A short human description (sizes, statuses, route keys)."""
    duration: float = 0.0
    """Seconds it lasted (sends, rate-limit waits, pauses); 0 for an instant."""

    @property
    def end(self) -> float:
        """When it ended (``t + duration``)."""
        return self.t + self.duration


@attrs.define
class Timeline:
    """Records the events of one stream (pass it to ``build_chain`` / ``run_stream``).

    Example::

        timeline = Timeline()
        result = await run_stream(job, timeline=timeline)
        timeline.first_message_at      # seconds from subscription to the first accepted message
        timeline.lane("07 delivery")   # sends, typing calls, rate-limit waits

    Args:
        scheduler: The clock; normally left ``None`` and bound by the chain at subscription.
    """

    scheduler: abc.SchedulerBase | None = None
    _origin: float | None = attrs.field(default=None, init=False)
    _clock: Callable[[], float] | None = attrs.field(default=None, init=False)
    _events: list[_Record] = attrs.field(factory=list, init=False)

    # -- clock ---------------------------------------------------------------------------------------

    def bind(self, scheduler: abc.SchedulerBase) -> None:
        """Use *scheduler*'s clock; time 0 is now. Only the first call counts."""
        if self._origin is not None:
            return
        if self.scheduler is None:
            self.scheduler = scheduler
        self._clock = seconds_clock(self.scheduler)
        self._origin = self._clock()

    @property
    def bound(self) -> bool:
        """Whether a clock is bound (the chain was subscribed)."""
        return self._origin is not None

    def now(self) -> float:
        """Seconds since the chain was subscribed, on the bound scheduler's clock.

        Raises:
            RuntimeError: no clock is bound yet.
        """
        if self.scheduler is None:
            raise RuntimeError("the timeline has no clock: subscribe the chain first")
        if self._origin is None or self._clock is None:
            self.bind(self.scheduler)
        assert self._origin is not None and self._clock is not None
        return self._clock() - self._origin

    # -- recording -----------------------------------------------------------------------------------

    def record(
        self, lane: str, kind: str, detail: str = "", *, t: float | None = None, duration: float = 0.0
    ) -> None:
        """Record one event at *t* (default: now); a no-op while no clock is bound."""
        if t is None:
            if not self.bound:
                return
            t = self.now()
        self._events.append((t, lane, kind, detail, duration))

    def rate_limit_wait(self, route: object, seconds: float) -> None:
        """The rate limiter is about to wait *seconds* for *route* (``RateLimiter(on_wait=...)``)."""
        self.record(DELIVERY, "wait", str(getattr(route, "key", route)), duration=seconds)

    # -- taps ----------------------------------------------------------------------------------------

    def tap(self, lane: str, describe: Describe[_T]) -> Operator[_T, _T]:
        """A pass-through operator recording ``describe(item)`` in *lane* for every item.

        .. marble::
            -a--b-|
            [ timeline.tap(lane, describe) ]
            -a--b-|       records (1, lane, *describe(a)), (4, lane, *describe(b))

        Raises:
            ValueError: subscribed without a scheduler.
        """
        return _Tap(self, lane, describe)

    def raw_tap(self) -> Operator[RawStreamChunk, RawStreamChunk]:
        """Stage 02: the request, each raw chunk, the source's end or its cancellation."""
        return _SourceTap(self)

    def chunk_tap(self) -> Operator[ProcessedChunk, ProcessedChunk]:
        """Stage 03: each processed chunk, by type."""
        return self.tap(NORMALIZE, _describe_chunk)

    def state_tap(self, stops: Observable[StopSignal] | None = None) -> Operator[StreamState, StreamState]:
        """Stage 04: status changes, and every stop signal raised on *stops* while subscribed."""
        return _StateTap(self, stops)

    def segment_tap(self, lane: str) -> Operator[Segment, Segment]:
        """Stage 05 or 06: each segment, by kind."""
        return self.tap(lane, _describe_segment)

    def result_tap(self) -> Operator[StreamResult, StreamResult]:
        """The chain's end: the final status (subscribed first, so it also binds the clock)."""
        return self.tap(ORCHESTRATOR, _describe_result)

    # -- reading -------------------------------------------------------------------------------------

    @property
    def events(self) -> list[TimelineEvent]:
        """Every event, by time (recording order among equal times)."""
        return [TimelineEvent(*record) for record in sorted(self._events, key=_by_time)]

    def lane(self, lane: str) -> list[TimelineEvent]:
        """The events of one lane, by time."""
        return [event for event in self.events if event.lane == lane]

    def of_kind(self, kind: str, lane: str | None = None) -> list[TimelineEvent]:
        """The events of one kind (optionally in one lane), by time."""
        return [e for e in self.events if e.kind == kind and (lane is None or e.lane == lane)]

    def counts(self) -> dict[str, dict[str, int]]:
        """Number of events per lane and kind."""
        out: dict[str, dict[str, int]] = {}
        for _, lane, kind, _, _ in self._events:
            kinds = out.setdefault(lane, {})
            kinds[kind] = kinds.get(kind, 0) + 1
        return out

    @property
    def first_message_at(self) -> float | None:
        """Seconds from subscription until Discord accepted the first message (``None``: none was)."""
        sends = self.of_kind("send", DELIVERY)
        return min(event.end for event in sends) if sends else None

    @property
    def status(self) -> str | None:
        """The final status, once the chain emitted its result."""
        results = self.of_kind("result", ORCHESTRATOR)
        return results[-1].detail if results else None

    @property
    def span(self) -> float:
        """Seconds from 0 to the end of the last event."""
        return max((t + duration for t, _, _, _, duration in self._events), default=0.0)

    def extend(self, events: Iterable[TimelineEvent]) -> None:
        """Add recorded events (to rebuild a timeline from saved ones)."""
        self._events.extend((e.t, e.lane, e.kind, e.detail, e.duration) for e in events)


_by_time = itemgetter(0)


# -- describers ----------------------------------------------------------------------------------------


def _describe_chunk(chunk: ProcessedChunk) -> tuple[str, str]:
    kind = chunk.type
    if kind is ChunkType.TEXT:
        if chunk.content:
            return "text", f"{len(chunk.content)} chars"
        if chunk.thoughts:
            return "thought", f"{sum(len(t.text) for t in chunk.thoughts)} chars"
        return "empty", ""
    if kind is ChunkType.FUNCTION_CALL:
        return "function_call", chunk.function_call.name if chunk.function_call else ""
    if kind is ChunkType.ERROR:
        error = chunk.error
        return "error", f"{error.type.value}: {error.message[:80]}" if error else ""
    reason = chunk.metadata.get("finish_reason")
    detail = str(getattr(reason, "value", reason)) if reason is not None else ""
    if chunk.usage is not None:
        detail = f"{detail} usage".strip()
    return "done", detail


def _describe_segment(segment: Segment) -> tuple[str, str]:
    size = len(segment.text) if segment.embed is None else len(str(segment.embed))
    return segment.kind.value, f"{size} chars" + (" final" if segment.final else "")


def _describe_result(result: StreamResult) -> tuple[str, str]:
    return "result", result.status.value


# -- taps ----------------------------------------------------------------------------------------------


def _bound(timeline: Timeline, scheduler: abc.SchedulerBase | None) -> None:
    if scheduler is None:
        raise ValueError("timeline taps need a subscribe-time scheduler (they read its clock)")
    timeline.bind(scheduler)


@attrs.frozen
class _Tap:
    """``Timeline.tap``: record, then forward."""

    timeline: Timeline
    lane: str
    describe: Describe[Any]

    def __call__(self, source: Observable[Any]) -> Observable[Any]:
        timeline, lane, describe = self.timeline, self.lane, self.describe

        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            _bound(timeline, scheduler)

            def on_next(item: Any) -> None:
                kind, detail = describe(item)
                timeline.record(lane, kind, detail)
                observer.on_next(item)

            return source.subscribe(on_next, observer.on_error, observer.on_completed, scheduler=scheduler)

        return Observable(subscribe)


@attrs.frozen
class _SourceTap:
    """``Timeline.raw_tap``: the request, raw chunks, and how the source ended."""

    timeline: Timeline

    def __call__(self, source: Observable[RawStreamChunk]) -> Observable[RawStreamChunk]:
        timeline = self.timeline

        def subscribe(
            observer: abc.ObserverBase[RawStreamChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            _bound(timeline, scheduler)
            ended = False
            timeline.record(TRANSPORT, "request")

            def on_next(raw: RawStreamChunk) -> None:
                if raw.error is not None:
                    timeline.record(TRANSPORT, "transport_error", raw.error.type.value)
                else:
                    timeline.record(TRANSPORT, "raw", raw.event or "")
                observer.on_next(raw)

            def on_error(exc: Exception) -> None:
                nonlocal ended
                ended = True
                timeline.record(TRANSPORT, "transport_error", type(exc).__name__)
                observer.on_error(exc)

            def on_completed() -> None:
                nonlocal ended
                ended = True
                timeline.record(TRANSPORT, "end")
                observer.on_completed()

            def on_dispose() -> None:
                nonlocal ended
                # Disposed before its end: the chain cut the request (kill, stop, idle timeout).
                if not ended:
                    ended = True
                    timeline.record(TRANSPORT, "cancelled")

            upstream = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return CompositeDisposable(Disposable(on_dispose), upstream)

        return Observable(subscribe)


@attrs.frozen
class _StateTap:
    """``Timeline.state_tap``: status changes and stop signals."""

    timeline: Timeline
    stops: Observable[StopSignal] | None

    def __call__(self, source: Observable[StreamState]) -> Observable[StreamState]:
        timeline, stops = self.timeline, self.stops

        def subscribe(
            observer: abc.ObserverBase[StreamState], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            _bound(timeline, scheduler)
            last = StreamStatus.STREAMING

            def on_stop(signal: StopSignal) -> None:
                detail = f"{signal.kind.value}: {signal.reason}" if signal.reason else signal.kind.value
                timeline.record(ORCHESTRATOR, "stop", detail)

            def on_next(state: StreamState) -> None:
                nonlocal last
                if state.status is not last:
                    last = state.status
                    timeline.record(ORCHESTRATOR, "status", state.status.value)
                observer.on_next(state)

            watch = stops.subscribe(on_stop) if stops is not None else Disposable()
            upstream = source.subscribe(
                on_next, observer.on_error, observer.on_completed, scheduler=scheduler
            )
            return CompositeDisposable(watch, upstream)

        return Observable(subscribe)
