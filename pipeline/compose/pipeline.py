"""The composable pipeline: the chain as an ordered value of named stage operators.

The one chain (``rxcord.compose.chain``) is built from a ``Pipeline``: two ordered
tuples of named ``Stage`` s, the *routing* stages (raw chunks to orchestrator
states, stages 03-04) and the *delivery* stages (states to Discord deliveries,
stages 05-07). ``Pipeline.default(guards)`` is what rxcord runs; a user takes it,
inserts, replaces or removes a stage at a named point, and hands the result to
``stream_to_discord`` / ``run_turn`` / ``run_stream`` / ``build_chain``, which keep
the timeline, accounting, stops and log context::

    from reactivex import operators as ops
    import rxcord
    from rxcord.operators import Segment

    def no_shouting(segment: Segment) -> Segment:
        return attrs.evolve(segment, text=segment.text.replace("!!!", "!"))

    pipeline = rxcord.Pipeline.default().insert_after("flush", "calm", ops.map(no_shouting))

Default stages, in order::

    routing:   normalize  redact_secrets                             (03, whenever a secret is known)
               think_strip  spill_guard  verbatim_tools              (03; guards as the adapter declares)
               prefill  speaker_guard                                (03, from the stream config)
               idle_timeout  stop_gate  accumulate                   (04)
    delivery:  flush (05)  clean (06)  typing (04)  deliver (07)

The type at each named point (what a stage inserted there receives and must emit; the
same table, with the producing modules, is docs/stage-types.md)::

    point            receives                            emits
    normalize        RawStreamChunk (or a Batch)         ProcessedChunk
    redact_secrets .. speaker_guard                      ProcessedChunk -> ProcessedChunk
    idle_timeout     ProcessedChunk                      ProcessedChunk (an error chunk on silence)
    stop_gate        ProcessedChunk                      ProcessedChunk, then a StopSignal on a stop
    accumulate       ProcessedChunk or StopSignal        StreamState (one per chunk)
    flush            StreamState                         Segment
    clean            Segment                             Segment
    typing           Segment                             Segment or TypingPulse
    deliver          Segment or TypingPulse              Delivery

A user stage after ``accumulate`` gets ``StreamState`` s, after ``flush`` or ``clean``
``Segment`` s, after ``typing`` segments and ``TypingPulse`` s. In edit mode
(``DeliveryMode.EDIT``) the same holds: ``flush`` also emits ``Preview`` markers (a
``Segment`` of kind ``PREVIEW``, text computed only when sent), which go *around* the
stages between ``flush`` and ``deliver`` and carry them as their lane: each preview the
delivery actually sends has its text, as ``TEXT`` segments, run through those stages (the
typing heartbeat left out), so a stage there sees the text of every create and every edit,
and never a marker (``rxcord.sinks.preview_lane``). The lane is subscribed afresh per
preview sent: its stages keep per-subscription state, as the architecture requires.

A stage is built per stream from a ``StageContext`` (the stream's config, stop
subjects, send function...). A stage that has nothing to do for a stream (no
prefill, no speaker names, no exposed tools) builds to ``None`` and is left out,
so it costs nothing. Adjacent stages built as ``Fusable`` operators (the
normalizer and the text guards) are fused into one operator: one observer hop
per chunk for all of stage 03 (``rxcord.operators.fused``). A user operator
inserted between two of them splits the fusion there and changes nothing else.

Timeline taps are not stages: given a ``Timeline``, the builder adds its
recording operators after the named points they observe (the end of stage 03,
``accumulate``, ``flush``, ``clean``); without one it adds none.

Batches: built with ``batched=True`` (the source emits one ``Batch`` per socket
read, ``stream_source(batched=True)``), the routing stages that take batches (the
fused stages, ``idle_timeout``, ``stop_gate``, ``accumulate``:
``rxcord.operators.fused.accepts_batches``) get them whole; ``unbatch`` is inserted
before the first stage or tap that does not, so a user operator anywhere still
sees one chunk at a time. ``accumulate`` emits one state per chunk.
"""

from __future__ import annotations

__all__ = ("DELIVERY_STAGES", "ROUTING_STAGES", "Pipeline", "Stage", "StageContext", "stage03")

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import reactivex
from loguru import logger
from reactivex import Observable, abc

from rxcord.core.config import Guards, StreamConfig
from rxcord.core.redact import Redactor
from rxcord.core.state import Delivery, Segment, StreamState, TypingPulse
from rxcord.core.types import ChunkNormalizer, DeliveryMode, Operator, ProviderError, StopSignal
from rxcord.operators.accumulate import accumulate
from rxcord.operators.clean import clean
from rxcord.operators.flush import ErrorEmbed, flush
from rxcord.operators.fused import Fusable, TransducerFactory, accepts_batches, fuse, keeps_batches, unbatch
from rxcord.operators.gated_scan import fuse_stage04
from rxcord.operators.idle_timeout import idle_timeout
from rxcord.operators.light import unbound
from rxcord.operators.normalize import normalize
from rxcord.operators.reasoning.prefill import prefill
from rxcord.operators.reasoning.spill_guard import spill_guard
from rxcord.operators.reasoning.think_strip import think_strip
from rxcord.operators.redact_secrets import redact_secrets
from rxcord.operators.speaker_guard import speaker_guard
from rxcord.operators.stop_gate import stop_gate
from rxcord.operators.stream_deadline import with_deadline
from rxcord.operators.timeline import CLEAN, FLUSH, Timeline
from rxcord.operators.typing_heartbeat import typing_heartbeat
from rxcord.operators.verbatim_tools import verbatim_tools
from rxcord.providers.base import ProviderAdapter
from rxcord.sinks.deliver import deliver
from rxcord.sinks.edit_in_place import edit_flush
from rxcord.sinks.error_embed import error_embed
from rxcord.sinks.preview_lane import around_previews

Send = Callable[[Segment | TypingPulse], Observable[Delivery]]
"""Delivers one segment or typing pulse (stage 07)."""
Merge = Callable[[Segment | TypingPulse, Segment | TypingPulse], Segment | TypingPulse | None]
"""Coalesces segments that queued behind a Discord send in flight (live delivery)."""


@attrs.frozen(kw_only=True)
class StageContext:
    """What one stream's stages are built from."""

    config: StreamConfig
    """The stream's behaviour."""
    normalizer: Callable[[], ChunkNormalizer]
    """Makes the per-stream stage 03 normalizer (the adapter's ``new_normalizer``)."""
    stops: Observable[StopSignal]
    """The stream's stop signals (stage 04's ``take_until``)."""
    stop_sink: abc.ObserverBase[StopSignal] | None = None
    """Where internal stops are raised (``None`` disables them)."""
    send: Send
    """Stage 07's send function."""
    merge: Merge | None = None
    """Coalesces queued segments (live delivery), or ``None``."""
    describe: Callable[[ProviderError], str] | None = None
    """The provider's error description (the error embed's text)."""
    guards: Guards = Guards()
    """The stage 03 guards the adapter declared."""
    provider: str = ""
    """Provider name."""
    redactor: Redactor = attrs.field(default=Redactor(), repr=False)
    """The stream's secrets (``rxcord.compose.run.stream_redactor``): ``redact_secrets`` replaces them."""


StageBuild = Callable[[StageContext], Operator[Any, Any] | None]
"""Builds a stage's operator for one stream; ``None``: the stage does nothing for it."""


@attrs.frozen
class Stage:
    """One named stage of the pipeline."""

    name: str
    """Unique within the pipeline: the point others are inserted at."""
    build: StageBuild
    """Builds the stage's operator for one stream."""

    @classmethod
    def of(cls, name: str, operator: Operator[Any, Any]) -> Stage:
        """A stage that is the same operator for every stream (the operator is built per subscription)."""
        return cls(name, lambda _context: operator)


def _verbatim(context: StageContext) -> Operator[Any, Any] | None:
    names = context.guards.verbatim_tools
    return verbatim_tools(names) if names else None


def _speaker(context: StageContext) -> Operator[Any, Any] | None:
    names = context.config.speaker_names
    return speaker_guard(names, context.stop_sink) if names else None


def _flush_for(mode: DeliveryMode) -> Callable[..., Operator[Any, Any]]:
    # Edit-in-place: the aggregated flusher with live previews beside it (rxcord.sinks.edit_in_place).
    return edit_flush if mode is DeliveryMode.EDIT else flush


def _embed(context: StageContext) -> ErrorEmbed:
    # Stage 07 builds the error embed; stage 05 is handed the builder (operators never import sinks).
    describe = context.describe
    return _plain_embed if describe is None else _Embed(describe)


def _plain_embed(error: ProviderError) -> Mapping[str, Any]:
    return error_embed(error, None)


class _Embed:
    """The error embed with the provider's description (one slots object per stream, not a closure).

    *describe* may be the adapter's ``describe_error``: it is held as its function and its
    object (``unbound``), not as a bound method kept per stream; the bound method is made
    only when an error embed is built.
    """

    __slots__ = ("_describe_fn", "_describe_of")

    def __init__(self, describe: Callable[[ProviderError], str]) -> None:
        self._describe_fn, self._describe_of = unbound(describe)

    def __call__(self, error: ProviderError) -> Mapping[str, Any]:
        return error_embed(error, self.describe)

    def describe(self, error: ProviderError) -> str:
        """The provider's description of *error*."""
        described: str = self._describe_fn(self._describe_of, error)
        return described


def _deliver(context: StageContext) -> Operator[Any, Any]:
    # deliver() is generic; pinned to this chain's items here, where mypy cannot infer them.
    typed: Callable[[Send, Merge | None], Operator[Segment | TypingPulse, Delivery]] = deliver
    return typed(context.send, context.merge)


ROUTING_STAGES: tuple[Stage, ...] = (
    Stage("normalize", lambda c: normalize(c.normalizer)),
    # First of the guards: the others classify redacted text, so none can cut a secret in two
    # (a spill boundary inside a token) or hold one to surface at a stop.
    Stage("redact_secrets", lambda c: redact_secrets(c.redactor) if c.redactor else None),
    # The guards note what they hold on each chunk: a graceful stop keeps it as reasoning.
    Stage(
        "think_strip",
        lambda c: (
            think_strip(start_window=c.guards.think_start_window, note_held=True)
            if c.guards.think_tags
            else None
        ),
    ),
    Stage("spill_guard", lambda c: spill_guard(note_held=True) if c.guards.spill else None),
    Stage("verbatim_tools", _verbatim),
    Stage("prefill", lambda c: prefill(c.config.prefill) if c.config.prefill else None),
    Stage("speaker_guard", _speaker),
    Stage("idle_timeout", lambda c: idle_timeout(c.config.idle_timeout)),
    # The overall deadline is one more stop the gate obeys (rxcord.operators.stream_deadline).
    Stage("stop_gate", lambda c: stop_gate(with_deadline(c.stops, c.config.max_stream_seconds))),
    Stage("accumulate", lambda _c: accumulate()),
)
"""Stages 03-04, raw chunks to orchestrator states."""

DELIVERY_STAGES: tuple[Stage, ...] = (
    Stage("flush", lambda c: _flush_for(c.config.delivery)(c.config, c.stop_sink, _embed(c))),
    Stage("clean", lambda c: clean(c.config)),
    Stage("typing", lambda c: typing_heartbeat(c.config.typing_interval)),
    Stage("deliver", _deliver),
)
"""Stages 05-07, orchestrator states to Discord deliveries."""

_STAGE03 = frozenset({"normalize", "think_strip", "spill_guard", "verbatim_tools", "redact_secrets"})
"""The normalizer and the guards: the timeline's ``03 normalize`` lane records after the last of them."""


@attrs.frozen
class Pipeline:
    """The chain's stages, in order: a value (every edit returns a new pipeline)."""

    routing: tuple[Stage, ...] = ROUTING_STAGES
    """Raw chunks to orchestrator states (stages 03-04)."""
    delivery: tuple[Stage, ...] = DELIVERY_STAGES
    """Orchestrator states to Discord deliveries (stages 05-07)."""

    def __attrs_post_init__(self) -> None:
        names = self.names
        if len(set(names)) != len(names):
            raise ValueError(f"stage names must be unique: {names}")

    @classmethod
    def default(cls) -> Pipeline:
        """The pipeline rxcord runs (the guards come from the adapter, per stream)."""
        return cls()

    @property
    def names(self) -> tuple[str, ...]:
        """Every stage's name, routing then delivery."""
        return tuple(stage.name for stage in (*self.routing, *self.delivery))

    def insert_after(
        self, point: str, stage: Stage | str, operator: Operator[Any, Any] | None = None
    ) -> Pipeline:
        """A pipeline with *stage* (or ``Stage.of(stage, operator)``) right after the stage named *point*."""
        return self._insert(point, _as_stage(stage, operator), after=True)

    def insert_before(
        self, point: str, stage: Stage | str, operator: Operator[Any, Any] | None = None
    ) -> Pipeline:
        """A pipeline with *stage* (or ``Stage.of(stage, operator)``) right before the stage named *point*."""
        return self._insert(point, _as_stage(stage, operator), after=False)

    def replace(self, point: str, stage: Stage | Operator[Any, Any]) -> Pipeline:
        """A pipeline whose stage named *point* is *stage* (an operator keeps the name *point*)."""
        new = stage if isinstance(stage, Stage) else Stage.of(point, stage)
        return self._edit(point, lambda stages, i: (*stages[:i], new, *stages[i + 1 :]))

    def remove(self, point: str) -> Pipeline:
        """A pipeline without the stage named *point*."""
        return self._edit(point, lambda stages, i: (*stages[:i], *stages[i + 1 :]))

    def _insert(self, point: str, stage: Stage, *, after: bool) -> Pipeline:
        offset = 1 if after else 0
        return self._edit(point, lambda stages, i: (*stages[: i + offset], stage, *stages[i + offset :]))

    def _edit(self, point: str, change: Callable[[tuple[Stage, ...], int], tuple[Stage, ...]]) -> Pipeline:
        for branch in ("routing", "delivery"):
            stages: tuple[Stage, ...] = getattr(self, branch)
            for index, stage in enumerate(stages):
                if stage.name == point:
                    return attrs.evolve(self, **{branch: change(stages, index)})
        raise KeyError(f"no stage named {point!r}; the stages are {', '.join(self.names)}")

    def build_routing(
        self, context: StageContext, timeline: Timeline | None = None, *, batched: bool = False
    ) -> Operator[Any, StreamState]:
        """The routing stages as one operator for one stream.

        *batched*: the source emits ``Batch`` es of raw chunks (see the module docstring).
        """
        if context.redactor and "redact_secrets" not in self.names:
            # The opt-out is removing the stage: never silent, since the secrets then reach Discord.
            logger.bind(stage="03-redact").warning(
                "secrets in the text stream are not redacted: the pipeline has no 'redact_secrets' stage"
            )
        taps: dict[str, Operator[Any, Any]] = {}
        if timeline is not None:
            taps[_last_of_stage03(self.routing)] = timeline.chunk_tap()
            taps["accumulate"] = timeline.state_tap(context.stops)
        return _compose(self.routing, context, taps, batched=batched, kept=False)

    def build_delivery(
        self, context: StageContext, timeline: Timeline | None = None
    ) -> Operator[StreamState, Delivery]:
        """The delivery stages as one operator for one stream."""
        taps: dict[str, Operator[Any, Any]] = {}
        if timeline is not None:
            taps = {"flush": timeline.segment_tap(FLUSH), "clean": timeline.segment_tap(CLEAN)}
        parts = _edit_parts(self.delivery) if context.config.delivery is DeliveryMode.EDIT else None
        if parts is None:
            return _compose(self.delivery, context, taps)
        # Edit mode: previews go around the stages between flush and deliver, carrying them as
        # their lane, so each preview the delivery sends passes them (rxcord.sinks.preview_lane).
        head, middle, tail = parts
        lane = _compose([stage for stage in middle if stage.name != "typing"], context, {})
        around = around_previews(_compose(middle, context, taps), lane)
        return _Composed((_compose(head, context, taps), around, _compose(tail, context, taps)))


def _as_stage(stage: Stage | str, operator: Operator[Any, Any] | None) -> Stage:
    if isinstance(stage, Stage):
        return stage
    if operator is None:
        raise TypeError("insert a Stage, or a name and an operator")
    return Stage.of(stage, operator)


def _edit_parts(stages: tuple[Stage, ...]) -> tuple[tuple[Stage, ...], ...] | None:
    """*stages* cut after ``flush`` and before ``deliver``; ``None`` without both, in that order."""
    names = [stage.name for stage in stages]
    if "flush" not in names or "deliver" not in names:
        return None
    start, end = names.index("flush") + 1, names.index("deliver")
    if start > end:
        return None
    return stages[:start], stages[start:end], stages[end:]


def _last_of_stage03(stages: Sequence[Stage]) -> str:
    last = ""
    for stage in stages:
        if stage.name in _STAGE03:
            last = stage.name
    return last


def _compose(
    stages: Sequence[Stage],
    context: StageContext,
    taps: dict[str, Operator[Any, Any]],
    *,
    batched: bool = False,
    kept: bool = True,
) -> Operator[Any, Any]:
    """The stages' operators in order, runs of adjacent fusable ones fused, taps after their points.

    *batched*: the input is ``Batch`` es; ``unbatch`` goes before the first operator that
    does not take them (and at the end, if batches would leave). *kept*: the operator lives
    as long as the stream (the delivery stages, subscribed when the stream is): one slots
    object (``_Composed``); the routing stages are applied once while the chain is built.
    """
    operators: list[Operator[Any, Any]] = []
    run: list[Fusable] = []

    def end_run() -> None:
        if run:
            operators.append(fuse(run))
            run.clear()

    def add(operator: Operator[Any, Any]) -> None:
        nonlocal batched
        if batched and not accepts_batches(operator):
            end_run()
            operators.append(unbatch())
            batched = False
        elif batched:
            batched = keeps_batches(operator)
        if isinstance(operator, Fusable):
            run.append(operator)
        else:
            end_run()
            operators.append(operator)

    for stage in stages:
        operator = stage.build(context)
        if operator is not None:
            add(operator)
        tap = taps.get(stage.name)
        if tap is not None:
            add(tap)
    if batched:
        end_run()
        operators.append(unbatch())
    end_run()
    fused = fuse_stage04(operators)
    if not kept:
        composed: Operator[Any, Any] = reactivex.compose(*fused)
        return composed
    return fused[0] if len(fused) == 1 else _Composed(fused)


class _Composed(tuple[Operator[Any, Any], ...]):
    """``reactivex.compose``: the operators applied in order, as one object.

    The delivery stages' operator lives as long as its stream; ``reactivex.compose`` is a
    closure (a function, its cells and their tuple) around the same tuple of operators. A
    tuple itself (the operators inline, as ``fuse``'s chain factory holds its factories): no
    second object per stream.
    """

    __slots__ = ()

    def __call__(self, source: Observable[Any]) -> Observable[Any]:
        for operator in self:
            source = operator(source)
        return source


def stage03(
    adapter: ProviderAdapter,
    config: StreamConfig | None = None,
    pipeline: Pipeline | None = None,
    redactor: Redactor | None = None,
) -> TransducerFactory:
    """Stage 03 of *pipeline* for *adapter* (normalizer and guards, fused) as a plain transducer.

    Feed it ``RawStreamChunk`` s and finish it, with no Rx and no clock: what the chain's
    stage 03 emits, for tests, notebooks and offline inspection of a capture. *redactor*:
    the stream's secrets (``redact_secrets`` runs when it holds any).

    Raises:
        ValueError: A stage 03 stage of *pipeline* is not fusable (a user operator).
    """
    stages = (pipeline or Pipeline.default()).routing
    last = _last_of_stage03(stages)
    context = StageContext(
        config=config or StreamConfig(),
        normalizer=adapter.new_normalizer,
        stops=reactivex.never(),
        send=lambda _item: reactivex.empty(),
        guards=adapter.guards,
        provider=adapter.name,
        redactor=redactor or Redactor(),
    )
    fusables: list[Fusable] = []
    for stage in stages:
        operator = stage.build(context)
        if operator is not None:
            if not isinstance(operator, Fusable):
                raise ValueError(f"stage {stage.name!r} is not a transducer")
            fusables.append(operator)
        if stage.name == last:
            break
    return fuse(fusables).factory
