"""Fusable stages: per-stream transducers that run as one Rx operator when adjacent.

Several pure stages of the chain (stage 03's normalizer and its text guards) are,
underneath, per-stream *transducers*: each item in gives zero or more items out,
and the end of the stream may release what was held. Written as separate Rx
operators, each costs an observer hop per item; written as one, they cannot be
taken apart. ``Fusable`` is both: an ordinary operator (``source.pipe(op)``) that
also exposes its transducer factory, so ``fuse`` can join a run of adjacent
fusable stages into ONE operator (one subscription, one hop per item), the way
RxJava fuses ``map``/``filter`` chains. The composable pipeline
(``rxcord.compose.pipeline``) fuses every run of adjacent fusable stages; an
operator inserted between two of them splits the run there, and nothing else
changes.

Semantics (the same as the separate operators would have):

- per subscription, every stage gets a fresh transducer;
- an item goes through the stages in order; what stage *i* emits is fed to stage
  *i + 1* at once (so the order of items is kept exactly);
- at completion, stage 0 finishes first and what it releases goes through the
  later stages, then stage 1 finishes, and so on; then ``on_completed``;
- a transducer that raises ends the stream with ``on_error`` (a stage that turns
  its own failures into data, like the normalizer, catches them itself);
- upstream errors pass through; what the transducers held is then dropped.

Batches (``rxcord.core.types.Batch``: the events of one socket read as one item).
A fusable operator takes a batch whole: every item of it goes through the
transducers, and what they emit goes downstream as ONE batch (none if they emit
nothing; a lone item as itself), so a read costs one hop, not one per event. A transducer raising on an
item of a batch: what the items before it gave goes downstream first, then
``on_error``. ``unbatch`` gives a stage that does not know batches the items one
by one; ``BatchAware`` marks a hand-written operator that takes batches (the idle
timeout, the stop gate, the orchestrator's scan), and the pipeline inserts
``unbatch`` before the first stage that is neither (``accepts_batches``).

.. marble::
    -a---b---|                 one item in
    [ fuse(normalize, think_strip, spill_guard) ]
    -A---B---(C,|)             the items the last stage emits; C: released at the end
"""

from __future__ import annotations

__all__ = (
    "BatchAware",
    "Fusable",
    "Transducer",
    "TransducerFactory",
    "accepts_batches",
    "fuse",
    "keeps_batches",
    "unbatch",
)

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from reactivex import Observable, abc

from rxcord.core.types import Batch, Operator
from rxcord.operators.light import LightOperator, Relay, relay


class Transducer(Protocol):
    """A per-stream transformation: items in, zero or more items out, a release at the end."""

    def feed(self, item: Any) -> Sequence[Any]:
        """The items *item* becomes (possibly none: held back)."""
        ...

    def finish(self) -> Sequence[Any]:
        """The stream ended: what is still held."""
        ...


TransducerFactory = Callable[[], Transducer]
"""Makes the per-subscription transducer of a stage."""


class Fusable(LightOperator[Any, Any]):
    """An Rx operator backed by a transducer factory, fusable with its fusable neighbours.

    ``source.pipe(fusable)`` is one ``LightObservable`` (no subscribe closure, no lock); a
    subscription is one ``_FusedRun`` holding the transducers of the stages.
    """

    __slots__ = ("factory", "name")

    def __init__(self, factory: TransducerFactory, name: str = "") -> None:
        self.factory = factory
        self.name = name

    def __repr__(self) -> str:
        return f"Fusable({self.name or self.factory!r})"

    def subscribe_to(
        self, source: Observable[Any], observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None
    ) -> abc.DisposableBase:
        factory = self.factory
        # A fused run's stages are held by the run itself: no chain object, no list per stream.
        stages = factory.stages() if isinstance(factory, _ChainFactory) else (factory(),)
        return relay(source, _FusedRun(observer, stages), scheduler)


def _fed(stages: Sequence[Transducer], item: Any) -> Sequence[Any]:
    """What *item* becomes through *stages* in order (what stage *i* emits is fed to *i + 1*)."""
    items: Sequence[Any] = (item,)
    for stage in stages:
        match items:  # one item (the common case) is told apart with no call
            case [one]:
                items = stage.feed(one)
            case _:
                items = [out for one in items for out in stage.feed(one)]
        if not items:
            return ()
    return items


def _finished(stages: Sequence[Transducer]) -> list[Any]:
    """Each stage finished in order, what it releases fed through the later ones."""
    released: list[Any] = []
    for index, stage in enumerate(stages):
        items: Sequence[Any] = stage.finish()
        for later in stages[index + 1 :]:
            if not items:
                break
            items = [out for one in items for out in later.feed(one)]
        released.extend(items)
    return released


class _FusedRun(Relay):
    """One subscription of a fusable operator: its stages' transducers, fed what the source sends.

    The stages are held in slots, no tuple per stream for the common runs: ``lone`` and
    ``second`` for one or two stages (``second`` ``None`` for one); ``stages`` (the tuple,
    ``lone`` ``None``) only for three or more.
    """

    __slots__ = ("lone", "second", "stages")

    def __init__(self, observer: abc.ObserverBase[Any], stages: tuple[Transducer, ...]) -> None:
        super().__init__(observer)
        short = len(stages) <= 2
        self.lone = stages[0] if short else None
        """The first stage, fed directly (no call of the chain's loop per item); ``None``: three or more."""
        self.second = stages[1] if short and len(stages) == 2 else None
        self.stages = () if short else stages

    def feed(self, item: Any) -> Sequence[Any]:
        """What *item* becomes through the stages."""
        lone = self.lone
        if lone is None:
            return _fed(self.stages, item)
        out = lone.feed(item)
        second = self.second
        if second is None or not out:
            return out
        if len(out) == 1:  # the common case, as in ``_fed``
            return second.feed(out[0])
        return [last for one in out for last in second.feed(one)]

    def on_next(self, item: Any) -> None:
        if self.stopped:
            return
        if isinstance(item, Batch):
            self.on_batch(item)
            return
        try:
            # Three or more stages: the chain's loop called directly (no ``feed`` call per item).
            out = _fed(self.stages, item) if self.lone is None else self.feed(item)
        except Exception as exc:
            self.on_error(exc)
            return
        emit = self.observer.on_next
        for produced in out:
            emit(produced)

    def on_batch(self, batch: Batch[Any]) -> None:
        produced: list[Any] = []
        extend = produced.extend
        try:
            feed = self.lone.feed if self.lone is not None and self.second is None else self.feed
            for item in batch:
                extend(feed(item))
        except Exception as exc:
            if produced:
                self.observer.on_next(_batch_of(produced))
            self.on_error(exc)
            return
        if produced:
            self.observer.on_next(_batch_of(produced))

    def completed(self) -> None:
        lone, second = self.lone, self.second
        out: Sequence[Any]
        try:
            if lone is None:
                out = _finished(self.stages)
            elif second is None:
                out = lone.finish()
            else:
                out = _finished((lone, second))
        except Exception as exc:
            self.observer.on_error(exc)
            return
        emit = self.observer.on_next
        for produced in out:
            emit(produced)
        self.observer.on_completed()


def _batch_of(items: list[Any]) -> Any:
    """*items* as one item downstream: a ``Batch``, or the item itself when it is alone."""
    return items[0] if len(items) == 1 else Batch(items)


class BatchAware:
    """A hand-written operator that takes ``Batch`` es as well as single items.

    *keeps*: whether it hands batches on as batches (the idle timeout, the stop gate)
    or emits the items' results one by one (the orchestrator's scan). *args*: what the
    stage was built with, for a fusion that rebuilds it (``rxcord.operators.gated_scan``).
    """

    __slots__ = ("args", "keeps", "name", "operator")

    def __init__(
        self, operator: Operator[Any, Any], name: str = "", *, keeps: bool = True, args: tuple[Any, ...] = ()
    ) -> None:
        self.operator = operator
        self.name = name
        self.keeps = keeps
        self.args = args
        """What the stage was built with (stage 04 is fused from them: ``rxcord.operators.gated_scan``)."""

    def __repr__(self) -> str:
        return f"BatchAware({self.name or self.operator!r})"

    def __call__(self, source: Observable[Any]) -> Observable[Any]:
        return self.operator(source)


def accepts_batches(operator: object) -> bool:
    """Whether *operator* takes ``Batch`` es (a fusable or a ``BatchAware`` operator)."""
    return isinstance(operator, Fusable | BatchAware)


def keeps_batches(operator: object) -> bool:
    """Whether *operator*, given batches, emits batches (see ``BatchAware``)."""
    return isinstance(operator, Fusable) or (isinstance(operator, BatchAware) and operator.keeps)


def unbatch() -> Operator[Any, Any]:
    """Every ``Batch``'s items one by one (other items pass as they are).

    .. marble::
        -B---c---|        B = Batch([a, b])
        [ unbatch() ]
        -(ab)-c--|
    """

    def _op(source: Observable[Any]) -> Observable[Any]:
        def subscribe(
            observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            return relay(source, _Unbatched(observer), scheduler)

        return Observable(subscribe)

    return _op


class _Unbatched(Relay):
    """One subscription of ``unbatch``."""

    __slots__ = ()

    def on_next(self, item: Any) -> None:
        if self.stopped:
            return
        if isinstance(item, Batch):
            emit = self.observer.on_next
            for one in item:
                emit(one)
        else:
            self.observer.on_next(item)


class _Chain:
    """The transducers of fused stages as one transducer (``fuse(...).factory()``, used without Rx)."""

    __slots__ = ("_stages",)

    def __init__(self, stages: tuple[Transducer, ...]) -> None:
        self._stages = stages

    def feed(self, item: Any) -> Sequence[Any]:
        return _fed(self._stages, item)

    def finish(self) -> Sequence[Any]:
        return _finished(self._stages)


class _ChainFactory(tuple[TransducerFactory, ...]):
    """The factory of fused stages: the stages' factories, called in order per subscription.

    A tuple itself (the factories inline, no second object per stream: the chain is built per
    stream and holds this for the stream's life).
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"fused{tuple(self)!r}"

    def stages(self) -> tuple[Transducer, ...]:
        return tuple([make() for make in self])

    def __call__(self) -> _Chain:
        return _Chain(self.stages())


def fuse(stages: Sequence[Fusable]) -> Fusable:
    """One fusable operator that runs *stages* in order (see the module docstring)."""
    if len(stages) == 1:
        return stages[0]
    factories = _ChainFactory(stage.factory for stage in stages)
    return Fusable(factories, "+".join(stage.name for stage in stages))
