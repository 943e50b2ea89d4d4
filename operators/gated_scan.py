"""Stage 04 fused: ``idle_timeout``, ``stop_gate`` and ``accumulate`` as ONE operator.

The three stages stay separate operators for users and marble tests (each in its own
module, with its own rules). When a ``Pipeline`` has them adjacent, in that order, as
the default pipeline does, the builder (``rxcord.compose.pipeline``) runs this operator
instead: one subscription, one observer hop per socket read instead of three, and one
per-stream object instead of three subscriptions with their observers and closures.

It does what the three do, in the same order:

- every item (a chunk or a ``Batch``) is an arrival for the idle timer; after
  *seconds* without one, the source is disposed and a ``timeout`` error chunk is routed;
- stops are subscribed before the source; a graceful stop (not a kill) that arrives
  while an item is being routed is held until that item's routing returns, so it lands
  between two chunks (in a batch, the rest of the batch is not routed); at the stop,
  what stage 03 held after the last chunk routed is routed, then the stop;
- every chunk is routed through ``accumulate.route``; the first final state is the last
  item, then the stream completes and everything upstream is disposed.
"""

from __future__ import annotations

__all__ = ("fuse_stage04", "gated_scan")

from collections.abc import Sequence
from typing import Any

from reactivex import Observable, abc

from rxcord.core.state import StreamState
from rxcord.core.types import Batch, Operator, ProcessedChunk, StopKind, StopSignal
from rxcord.operators.accumulate import is_open, route
from rxcord.operators.fused import BatchAware
from rxcord.operators.idle_timeout import timeout_chunk
from rxcord.operators.light import LightOperator, Relay, relay, subscribe_light
from rxcord.operators.quiet_timer import QuietTimer
from rxcord.operators.reasoning.held_at_stop import released_at_stop
from rxcord.operators.redact_secrets import tail_at_stop


class _GatedScan(Relay):
    """One subscription: the idle timer, the gate's hold, the scan's state.

    ``gated``: the gate has ended (no more chunks are routed, stops are ignored);
    ``stopped``: nothing more goes downstream (the scan reached a final state, or the end).
    """

    __slots__ = ("busy", "gated", "last", "pending", "seconds", "state", "stops", "timer")

    def __init__(
        self, observer: abc.ObserverBase[StreamState], scheduler: abc.SchedulerBase, seconds: float
    ) -> None:
        super().__init__(observer)
        self.seconds = seconds
        self.timer = QuietTimer(scheduler, seconds, self.quiet)
        self.stops: abc.DisposableBase | None = None  # the stops' subscription
        self.state = StreamState()
        # The last chunk routed, only if it notes a holdback: what a stop releases
        # (``released_at_stop``, ``tail_at_stop``) is read from its metadata alone, and most
        # chunks have none, so a waiting stream keeps no chunk.
        self.last: ProcessedChunk | None = None
        self.busy = 0
        self.gated = False
        self.pending: StopSignal | None = None

    def step(self, item: ProcessedChunk | StopSignal) -> bool:
        """The scan: route one item; whether the stream is still open."""
        try:
            state = route(self.state, item)
        except Exception as exc:  # a routing bug becomes on_error, as in ops.scan
            self.fail(exc)
            return False
        self.state = state
        if is_open(state):
            self.observer.on_next(state)
            return True
        self.stopped = True
        try:
            self.observer.on_next(state)
            self.observer.on_completed()
        finally:
            self.dispose()
        return False

    def on_stop(self, signal: StopSignal) -> None:
        if signal.kind is StopKind.KILL or self.gated or self.pending is not None:
            return
        if self.busy:
            self.pending = signal
        else:
            self.finish(signal)

    def finish(self, signal: StopSignal | None) -> None:
        """The gate ends: at a stop, what stage 03 held and the stop are routed; then the end."""
        if self.gated:
            return
        self.gated = True
        self.close()
        if self.stopped:
            return
        if signal is not None:
            # In stream order, as stop_gate emits them (see rxcord.operators.stop_gate).
            for held in (released_at_stop(self.last), tail_at_stop(self.last)):
                if held is not None and not self.step(held):
                    return
            if not self.step(signal):
                return
        self.stopped = True
        self.observer.on_completed()

    def route_items(self, item: Any) -> None:
        self.busy += 1
        try:
            if isinstance(item, Batch):
                for one in item:
                    if self.pending is not None or self.gated:
                        break
                    self.last = one if one.metadata else None  # see __init__
                    if not self.step(one):
                        break
            else:
                self.last = item if item.metadata else None
                self.step(item)
        finally:
            self.busy -= 1
        if self.pending is not None and not self.busy:
            self.finish(self.pending)

    def quiet(self) -> None:
        if self.stopped or self.gated:
            return
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.dispose()
        self.route_items(timeout_chunk(self.seconds))
        self.finish(self.pending)

    def on_next(self, item: Any) -> None:
        if self.stopped or self.gated:
            return
        self.timer.poke()
        self.route_items(item)

    def on_completed(self) -> None:
        self.timer.cancel()
        self.finish(self.pending)

    def on_error(self, error: Exception) -> None:
        if not self.gated:  # the gate ignores what its source does after it ended
            self.fail(error)

    def fail(self, error: Exception) -> None:
        if self.stopped:
            return
        self.stopped = True
        try:
            self.observer.on_error(error)
        finally:
            self.dispose()

    def close(self) -> None:
        """Everything upstream released: the source, the stops' subscription, the timer."""
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.dispose()
        stops, self.stops = self.stops, None
        if stops is not None:
            stops.dispose()
        self.timer.dispose()

    def dispose(self) -> None:
        self.stopped = True
        self.gated = True
        self.close()


def gated_scan(seconds: float, stops: Observable[StopSignal]) -> Operator[Any, StreamState]:
    """``idle_timeout(seconds)``, ``stop_gate(stops)`` and ``accumulate()`` as one operator.

    .. marble::
        -a-b-c-d-|
        ----s--------         stops
        [ gated_scan(30, stops) ]
        -A-B(S,|)             S: the state of the stop; the source is disposed

    Returns:
        An operator from chunks (or ``Batch`` es) to ``StreamState`` s.
    """
    return BatchAware(_GatedScanOp(seconds, stops), "idle_timeout+stop_gate+accumulate", keeps=False)


class _GatedScanOp(LightOperator[Any, StreamState]):
    """The ``gated_scan`` operator: its two parameters (one slots object, not a closure per stream)."""

    __slots__ = ("seconds", "stops")

    def __init__(self, seconds: float, stops: Observable[StopSignal]) -> None:
        self.seconds = seconds
        self.stops = stops

    def subscribe_to(
        self,
        source: Observable[Any],
        observer: abc.ObserverBase[StreamState],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        if scheduler is None:
            raise ValueError("idle_timeout needs a subscribe-time scheduler")
        run = _GatedScan(observer, scheduler, self.seconds)
        stops = subscribe_light(self.stops, run.on_stop, scheduler=scheduler)
        if run.gated:  # a stop while subscribing ended the gate: release its subscription now
            stops.dispose()
        else:
            run.stops = stops
        if not run.stopped:
            run.timer.poke()
            relay(source, run, scheduler)
        return run


_STAGE04 = ("idle_timeout", "stop_gate", "accumulate")


def _is_stage(operator: object, name: str) -> bool:
    return (
        isinstance(operator, BatchAware)
        and operator.name == name
        and (name == "accumulate" or bool(operator.args))
    )


def fuse_stage04(operators: Sequence[Operator[Any, Any]]) -> list[Operator[Any, Any]]:
    """*operators*, each adjacent ``idle_timeout``, ``stop_gate``, ``accumulate`` run as one ``gated_scan``.

    Only the three stages as this package builds them, adjacent and in that order: a user
    operator between two of them, or one in their place, keeps every stage as it is.
    """
    fused: list[Operator[Any, Any]] = []
    index = 0
    while index < len(operators):
        run = operators[index : index + 3]
        if len(run) == 3 and all(_is_stage(op, name) for op, name in zip(run, _STAGE04, strict=True)):
            idle, gate = run[0], run[1]
            assert isinstance(idle, BatchAware) and isinstance(gate, BatchAware)
            fused.append(gated_scan(idle.args[0], gate.args[0]))
            index += 3
        else:
            fused.append(operators[index])
            index += 1
    return fused
