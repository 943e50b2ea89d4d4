"""Stage 04 stop signals: ``take_until`` on the stop subject, plus the signal itself.

A graceful stop must still tell the orchestrator *which* stop ended the
stream (a user stop flushes, an interrupt discards), so the gate has
``take_until(stops)`` semantics and then emits the stop signal as its last
item.

It is written out rather than composed from ``ops.take_until`` for one
reason: stops are often raised *from inside* the chain while a chunk is
still moving through it (the flusher hitting its cap, a test firing a stop
right after chunk N was routed). ``take_until`` would complete the stream
re-entrantly, in the middle of that chunk's delivery, and downstream stages
would see the completion before the rest of the chunk. The gate instead
defers a stop that arrives while it is delivering a chunk until that
delivery returns, so a stop always lands *between* two chunks.

Hard kills are not handled here (they dispose the whole chain at once; see
``rxcord.operators.collect_result``), so the gate ignores ``StopKind.KILL``.
"""

from __future__ import annotations

__all__ = ("stop_gate",)

from collections.abc import Iterator, Sequence

from reactivex import Observable, abc

from rxcord.core.types import Batch, Operator, ProcessedChunk, StopKind, StopSignal
from rxcord.operators.fused import BatchAware
from rxcord.operators.light import LightDisposables, subscribe_light, subscribe_target
from rxcord.operators.reasoning.held_at_stop import released_at_stop
from rxcord.operators.redact_secrets import tail_at_stop


class _Gate:
    """Per-subscription state of one gate."""

    __slots__ = ("busy", "done", "last", "observer", "pending", "upstream")

    def __init__(self, observer: abc.ObserverBase[ProcessedChunk | StopSignal]) -> None:
        self.observer = observer
        self.last: ProcessedChunk | None = None
        """The last chunk passed on (what stage 03 held after it is delivered at a graceful stop)."""
        self.busy = 0
        self.done = False
        self.pending: StopSignal | None = None
        self.upstream = LightDisposables()

    def finish(self, signal: StopSignal | None) -> None:
        if self.done:
            return
        self.done = True
        self.upstream.dispose()
        if signal is not None:
            # What stage 03 still held is delivered (held_at_stop): the answer the user saw being
            # written as content, what the stream marked as reasoning as reasoning. In stream order:
            # the secret guard (the first of stage 03's guards) holds text the later guards have not
            # seen yet, so its tail (as reasoning: never classified) comes after what they hold.
            for held in (released_at_stop(self.last), tail_at_stop(self.last)):
                if held is not None:
                    self.observer.on_next(held)
            self.observer.on_next(signal)
        self.observer.on_completed()

    def on_stop(self, signal: StopSignal) -> None:
        # The first graceful stop counts (``filter(not kill)`` + ``take(1)``, without their two
        # subscriptions per stream: fewer objects for the collector to walk).
        if signal.kind is StopKind.KILL or self.done or self.pending is not None:
            return
        if self.busy:
            self.pending = signal
        else:
            self.finish(signal)

    def on_next(self, chunk: ProcessedChunk) -> None:
        if self.done:
            return
        self.busy += 1
        try:
            if isinstance(chunk, Batch):
                self.observer.on_next(_Gated(chunk.items, self))
            else:
                self.last = chunk
                self.observer.on_next(chunk)
        finally:
            self.busy -= 1
        if self.pending is not None and not self.busy:
            self.finish(self.pending)

    def on_error(self, exc: Exception) -> None:
        if not self.done:
            self.done = True
            self.upstream.dispose()
            self.observer.on_error(exc)

    def on_completed(self) -> None:
        self.finish(self.pending)


class _Gated(Batch[ProcessedChunk]):
    """A batch handed on by the gate: its iteration ends once a stop is pending.

    A stop raised while chunk N of the batch is being delivered (downstream of the
    gate) is pending until that delivery returns; the consumer's next step in the
    batch then finds the batch ended, and the gate emits the stop: between chunk N
    and chunk N+1, as for chunks that come one by one.
    """

    __slots__ = ("_gate",)

    def __init__(self, items: Sequence[ProcessedChunk], gate: _Gate) -> None:
        super().__init__(items)
        self._gate = gate

    def __iter__(self) -> Iterator[ProcessedChunk]:
        gate = self._gate
        for item in self.items:
            if gate.pending is not None or gate.done:
                return
            gate.last = item
            yield item


def stop_gate(stops: Observable[StopSignal]) -> Operator[ProcessedChunk, ProcessedChunk | StopSignal]:
    """Pass chunks until a stop arrives, then emit that stop and complete.

    .. marble::
        -a-b-c-d-|
        ----s--------         stops
        [ stop_gate(stops) ]
        -a-b(s,|)             the source is disposed at the stop

    Args:
        stops: The stream's stop subject (a ``ReplaySubject(1)``, so a stop sent
            before subscription is not lost).

    At a graceful stop, what stage 03 still held after the last chunk passed on is emitted
    just before the stop: the answer it held as content, what it held as reasoning as a
    thought (``rxcord.operators.reasoning.held_at_stop``).

    Returns:
        An operator emitting the source's chunks, then at most one ``StopSignal``. A
        ``Batch`` passes as one batch whose iteration ends at a pending stop (``_Gated``).
    """

    def _op(source: Observable[ProcessedChunk]) -> Observable[ProcessedChunk | StopSignal]:
        def subscribe(
            observer: abc.ObserverBase[ProcessedChunk | StopSignal],
            scheduler: abc.SchedulerBase | None = None,
        ) -> abc.DisposableBase:
            gate = _Gate(observer)
            # A stop already held by the subject finishes the gate inside this call: then the
            # source is never subscribed, and the stop's subscription is disposed as it is added.
            gate.upstream.add(subscribe_light(stops, gate.on_stop, scheduler=scheduler))
            if not gate.done:
                gate.upstream.add(subscribe_target(source, gate, scheduler))
            return gate.upstream

        return Observable(subscribe)

    return BatchAware(_op, "stop_gate", args=(stops,))
