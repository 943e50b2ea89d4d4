"""Edit-in-place delivery (``DeliveryMode.EDIT``): one message sent, then edited as the text grows.

What llmcord users know, built so that it can never show something the other modes would not:

* **The final text is the aggregated text.** In edit mode stages 05 and 06 run exactly as in
  aggregated mode (they only special-case ``LIVE``), so the stream's last ``TEXT`` segment is
  the one aggregated delivery would send; ``EditInPlaceDelivery`` plans its messages with the
  same ``DiscordDelivery.payloads`` and edits (or creates) the messages to match them exactly.
  Messages a preview created that the final text does not need are deleted.
* **Previews are live segments.** ``edit_previews`` runs a live ``Flusher`` and
  ``SegmentCleaner`` beside the aggregated one and releases, after every routed delta, what
  is safe up to the best cut (``Flusher.idle``): never inside a code block or a tag, never
  reasoning (``<think>`` goes to the flusher's thought segments, provider reasoning never
  reaches the visible text). Each ``Preview`` carries the cleaned text so far; the preview is
  split like any text (``split_message``: 2000 code points, fences repaired), so a preview
  longer than one message continues in a new message.
* **At most as often as the edit route allows.** Deliveries are serialized
  (``rxcord.sinks.deliver``) and previews that queue behind an edit in flight (a rate-limit
  wait on the edit route's bucket, discovered by the sink's limiter like any other) are
  merged into the latest one, so the number of edits follows the bucket, not the chunk rate.
  The preview text is joined only when an edit is actually sent.

A graceful stop flushes (the final edit is the text so far); a follow-up interrupt or a kill
leaves the last preview as it was shown and sends nothing more.
"""

from __future__ import annotations

__all__ = ("EditInPlaceDelivery", "Preview", "edit_flush", "edit_previews", "editing_sink")

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import attrs
import reactivex
from loguru import logger
from reactivex import Observable, abc
from reactivex import operators as ops
from rxcord.core.config import RenderModifiers, StreamConfig, StreamContext
from rxcord.core.errors import DiscordStopError, InputError
from rxcord.core.state import Delivery, Segment, SentMessage, StreamState, TypingPulse
from rxcord.core.types import (
    DeliveryMode,
    Operator,
    ProviderError,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
)
from rxcord.operators.aio import from_coro
from rxcord.operators.clean import SegmentCleaner
from rxcord.operators.flush import Flusher, flush
from rxcord.operators.mentions import MentionResolver
from rxcord.operators.timeline import Timeline
from rxcord.sinks.base import DiscordSink, EditableSink
from rxcord.sinks.delivery import DiscordDelivery

_log = logger.bind(stage="07-edit")


def editing_sink(sink: DiscordSink) -> EditableSink:
    """*sink* as an ``EditableSink``, or ``InputError`` when it cannot edit messages."""
    if not (
        callable(getattr(sink, "edit_message", None)) and callable(getattr(sink, "delete_message", None))
    ):
        raise InputError(
            f"edit-in-place delivery needs a sink that edits messages; {type(sink).__name__} does not"
        )
    return cast(EditableSink, sink)


@attrs.frozen(kw_only=True)
class Preview(Segment):
    """The visible text so far, cleaned, as an intermediate edit would show it.

    ``parts`` is the stream's shared, append-only list of cleaned live pieces; a preview is
    the first ``count`` of them, joined only when it is sent.
    """

    parts: list[str] = attrs.field(factory=list, eq=False, repr=False)
    count: int = 0

    @property
    def preview_text(self) -> str:
        """The text this preview shows."""
        return "".join(self.parts[: self.count])


def edit_previews(config: StreamConfig) -> Operator[StreamState, Segment]:
    """Stage 05-06 for previews: a live flusher and cleaner releasing what is safe after each delta.

    .. marble::
        -a----b-----c|        a="Hel"  b="lo wor"  c="ld"  (c ends the stream)
        [ edit_previews(config) ]
        -A----B------|        A="Hel"  B="Hello "  (the end belongs to the final segment)

    Only ``STREAMING`` states produce previews; the state that ends the stream produces the
    final segment in the aggregated branch instead.
    """
    live = attrs.evolve(
        config,
        delivery=DeliveryMode.LIVE,
        render=RenderModifiers(force_lowercase=config.render.force_lowercase, seed=config.render.seed),
    )

    def _op(source: Observable[StreamState]) -> Observable[Segment]:
        def subscribe(
            observer: abc.ObserverBase[Segment], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            flusher = Flusher(live)
            cleaner = SegmentCleaner(live)
            parts: list[str] = []
            ended = False

            def on_next(state: StreamState) -> None:
                nonlocal ended
                if ended:
                    return
                if state.status is not StreamStatus.STREAMING:
                    ended = True
                    flusher.discard()
                    return
                if not state.delta:
                    return
                before = len(parts)
                for segment in flusher.push(state.delta) + flusher.idle():
                    if segment.kind is SegmentKind.TEXT:
                        parts.extend(piece.text for piece in cleaner.feed(segment))
                if len(parts) > before:
                    observer.on_next(Preview(kind=SegmentKind.PREVIEW, parts=parts, count=len(parts)))

            return source.subscribe(on_next, observer.on_error, observer.on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return _op


def edit_flush(
    config: StreamConfig,
    stops: abc.ObserverBase[StopSignal] | None = None,
    describe: Callable[[ProviderError], str] | None = None,
) -> Operator[StreamState, Segment]:
    """Stage 05 in edit mode: the aggregated flusher's segments, with ``edit_previews`` beside them.

    The pipeline's ``flush`` stage for ``DeliveryMode.EDIT``. Previews (``SegmentKind.PREVIEW``)
    pass stage 06 untouched (they are cleaned already); on the state that ends the stream the
    final segment comes first, so a preview after it is ignored by the delivery.
    """
    segments = flush(config, stops, describe)
    previews = edit_previews(config)

    def _op(states: Observable[StreamState]) -> Observable[Segment]:
        shared = states.pipe(ops.share())
        return reactivex.merge(shared.pipe(segments), shared.pipe(previews))

    return _op


@attrs.define
class EditInPlaceDelivery:
    """Delivers one stream by editing its messages in place (per stream: it holds the messages)."""

    sink: EditableSink
    context: StreamContext
    config: StreamConfig
    stops: abc.ObserverBase[StopSignal] | None = None
    resolver: MentionResolver | None = None
    timeline: Timeline | None = None
    """Accepted for symmetry with ``DiscordDelivery`` (edits are not recorded)."""
    shown: list[SentMessage] = attrs.field(factory=list)
    """The messages as Discord shows them now (id and the payload last sent)."""
    edits: int = 0
    """Edits sent."""
    finished: bool = False
    """The final text was delivered: later previews are ignored."""
    stopped: StopKind | None = None
    typing_calls: int = 0
    nonce_prefix: str = attrs.field(factory=lambda: secrets.token_hex(6))
    """The nonce prefix of the messages it creates."""

    coalesces = True
    """Queued previews are always merged (``rxcord.sinks.deliver``)."""

    def send(self, item: Segment | TypingPulse) -> Observable[Delivery]:
        """The observable that delivers *item* (lazy: nothing happens until subscribed)."""
        if isinstance(item, TypingPulse):
            if self.shown or self.finished or self.stopped is not None:
                return reactivex.just(Delivery())
            return from_coro(self._typing)
        if isinstance(item, Preview):
            if self.finished or self.stopped is not None:
                return reactivex.just(Delivery())
            return from_coro(_Apply(self, item, final=False))
        if self.stopped is not None or item.kind in (SegmentKind.THOUGHT, SegmentKind.DETAILS):
            return reactivex.just(Delivery(segment=item))
        return from_coro(_Apply(self, item, final=True))

    def merge(
        self, first: Segment | TypingPulse, second: Segment | TypingPulse
    ) -> Segment | TypingPulse | None:
        """Coalesce queued items: the latest preview wins, a final segment supersedes previews."""
        if isinstance(second, TypingPulse):
            return first
        if isinstance(first, TypingPulse):
            return second
        if isinstance(second, Preview):
            if isinstance(first, Preview):
                return second
            return first if first.kind is SegmentKind.TEXT else None  # the final text supersedes it
        if isinstance(first, Preview) and second.kind is SegmentKind.TEXT:
            return second
        return None

    def plan(self, text: str) -> list[dict[str, Any]]:
        """The payloads aggregated delivery would send for *text* (``DiscordDelivery.payloads``)."""
        return self._planner().payloads(Segment(kind=SegmentKind.TEXT, text=text))

    async def apply(self, segment: Segment, *, final: bool) -> Delivery:
        """Make Discord show *segment*: edit what differs, create what is missing, delete the rest."""
        if segment.kind is SegmentKind.ERROR_EMBED:
            planner = self._planner()
            planner.planned = len(self.shown)
            sent = [m for p in planner.payloads(segment) if (m := await self._create(p)) is not None]
            return Delivery(segment=segment, messages=tuple(sent), stopped=self.stopped)
        text = segment.preview_text if isinstance(segment, Preview) else segment.text
        payloads = self.plan(text)
        if final:
            self.finished = True
        result: list[SentMessage] = []
        for index, payload in enumerate(payloads):
            if self.stopped is not None:
                break
            if index < len(self.shown):
                message = await self._edit(index, payload)
            else:
                message = await self._create(payload)
            if message is not None:
                result.append(message)
        if final and self.stopped is None:
            while len(self.shown) > len(payloads):
                await self._delete(self.shown[-1])
        if not final:
            return Delivery(stopped=self.stopped)
        return Delivery(segment=segment, messages=tuple(result), stopped=self.stopped)

    def _planner(self) -> DiscordDelivery:
        return DiscordDelivery(
            sink=self.sink,
            context=self.context,
            config=self.config,
            resolver=self.resolver,
            nonce_prefix=self.nonce_prefix,
        )

    async def _typing(self) -> Delivery:
        self.typing_calls += 1
        try:
            await self.sink.trigger_typing(self.context)
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)
        except Exception as exc:
            # Typing is best effort, as in ``DiscordDelivery``.
            _log.warning("typing indicator failed, ignored: {error}", error=type(exc).__name__)
        return Delivery(typing=1)

    async def _create(self, payload: Mapping[str, Any]) -> SentMessage | None:
        if len(self.shown) >= self.config.max_messages:
            self._stop(StopKind.SEND_MESSAGE_LIMIT)
            return None
        try:
            sent = await self.sink.create_message(self.context, payload)
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)
            return None
        self.shown.append(sent)
        return sent

    async def _edit(self, index: int, payload: Mapping[str, Any]) -> SentMessage | None:
        current = self.shown[index]
        if _same(current.payload, payload):
            return current
        assert current.message_id is not None
        body = {key: payload[key] for key in ("content", "embeds", "allowed_mentions") if key in payload}
        try:
            await self.sink.edit_message(self.context, current.message_id, body)
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)
            return None
        self.edits += 1
        edited = attrs.evolve(current, payload={**current.payload, **body})
        self.shown[index] = edited
        return edited

    async def _delete(self, message: SentMessage) -> None:
        self.shown.pop()
        if message.message_id is None:
            return
        try:
            await self.sink.delete_message(self.context, message.message_id)
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)

    def _stop(self, kind: StopKind) -> None:
        if self.stopped is not None:
            return
        self.stopped = kind
        _log.warning("edit delivery stopped: {kind}", kind=kind.value)
        if self.stops is not None:
            self.stops.on_next(StopSignal(kind, "delivery"))


def _same(shown: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(shown.get(key) == wanted.get(key) for key in ("content", "embeds"))


def final_contents(messages: Sequence[SentMessage]) -> list[str]:
    """The content of each message, as shown (a helper for tests and reports)."""
    return [str(m.payload.get("content") or "") for m in messages]


@attrs.frozen
class _Apply:
    delivery: EditInPlaceDelivery
    segment: Segment
    final: bool

    async def __call__(self) -> Delivery:
        return await self.delivery.apply(self.segment, final=self.final)
