"""Edit-in-place delivery (``DeliveryMode.EDIT``): one message sent, then edited as the text grows.

What llmcord users know, built so that it can never show something the other modes would not:

* **The final text is the aggregated text.** In edit mode stages 05 and 06 run exactly as in
  aggregated mode (they only special-case ``LIVE``), so the stream's final segments are the
  ones aggregated delivery would send; ``EditInPlaceDelivery`` plans its messages with the
  same ``DiscordDelivery.payloads`` and edits (or creates) the messages to match them exactly.
  Messages a preview created that the final text does not need are deleted.
* **Previews are snapshots of the final text.** ``edit_previews`` emits one ``Preview`` per
  routed visible delta (sharing one list: O(1) each); the preview that is actually sent shows
  ``snapshot``: what aggregated delivery would send if the stream ended there, with an open
  code block closed by its fence and a partial tag or an unclosed ``<think>`` held back. So
  every intermediate edit has balanced fences and never shows reasoning (provider reasoning
  never reaches the visible text), and it is split like any text (``split_message``: 2000
  code points, fences repaired): a preview longer than one message continues in a new one.
* **At most as often as the edit route allows.** Deliveries are serialized
  (``rxcord.sinks.deliver``) and previews that queue behind an edit in flight (a rate-limit
  wait on the edit route's bucket, discovered by the sink's limiter like any other) are
  merged into the latest one, so the number of edits follows the bucket, not the chunk rate.
  The preview text is joined only when an edit is actually sent.

* **Tables as the other modes deliver them.** A table sent as a picture (``StreamConfig.tables``)
  cuts the text, in the previews as in the final text: the first preview holding it complete
  (or the final text) settles the text before it and commits it (never edited again), posts
  the picture as its own message (``DiscordDelivery.payloads``), and the text after it grows
  in new messages. Final segments a preview already delivered are reported, not sent again.

* **Through the user's stages.** In a pipeline, previews go around the stages between
  ``flush`` and ``deliver`` and carry them (``Preview.lane``, ``rxcord.sinks.preview_lane``);
  a preview that is sent has its text run through them first (``through_lane``), so clean,
  mentions, render modifiers and user stages see every create and every edit.

A graceful stop flushes (the final edit is the text so far); a follow-up interrupt or a kill
leaves the last preview as it was shown and sends nothing more. Whatever ends the stream, the
result lists the messages as the channel shows them (a kill: none).

Discord's ambiguous answers: a create answered without a message id is looked for
(``rxcord.sinks.lookup``: the bot's nonce again, or the channel read back), sent again when the
channel shows it is not there, and otherwise kept as shown, never edited: it and the messages
before it are committed (``frozen``), and the rest of the text is planned after them
(``rxcord.sinks.remainder``). A message deleted meanwhile (an edit answered 404 / 10008) is
sent again after its predecessors.
"""

from __future__ import annotations

__all__ = (
    "EditInPlaceDelivery",
    "Preview",
    "edit_flush",
    "edit_previews",
    "editing_sink",
    "flushed",
    "lane_segments",
    "preview_segments",
    "snapshot",
    "through_lane",
)

import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

import attrs
import reactivex
from loguru import logger
from reactivex import Observable, abc
from reactivex import operators as ops

from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError, InputError
from rxcord.core.state import Delivery, Segment, SentMessage, StreamState, TypingPulse
from rxcord.core.types import (
    Operator,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
)
from rxcord.operators.aio import from_coro
from rxcord.operators.clean import SegmentCleaner
from rxcord.operators.flush import ErrorEmbed, flush
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.first_cut import FirstCut
from rxcord.operators.mentions import MentionResolver
from rxcord.operators.timeline import Timeline
from rxcord.sinks.base import DiscordSink, EditableSink
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.lookup import find_sent
from rxcord.sinks.ratelimit import RateLimitError

_log = logger.bind(stage="07-edit")

_DISCARDED: Final = frozenset(
    {StreamStatus.FOLLOW_UP_INTERRUPT, StreamStatus.KILLED}
    | {StreamStatus.for_stop(kind) for kind in StopKind if kind.is_internal}
) - {StreamStatus.SPEAKER_GUARD}
"""Endings whose text is discarded (stage 05 releases nothing): the previews stay as shown."""

_UNKNOWN_MESSAGE: Final = 10008
"""Discord's code for a message that is not there (deleted): an edit of it falls back to a create."""

_GROWTH_CAP: Final = 400
"""A preview is sent once the text grew by a sixteenth, or by this many characters."""

_SHOWN: Final = (SegmentKind.TEXT, SegmentKind.TABLE)
"""What a preview shows: text and tables sent as pictures."""


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
    """The visible text routed so far, for an intermediate edit (``SegmentKind.PREVIEW``).

    ``deltas`` is the stream's shared, append-only list of routed visible deltas; a preview is
    the first ``count`` of them. Its text is computed only when it is sent (``snapshot``).
    """

    deltas: list[str] = attrs.field(factory=list, eq=False, repr=False)
    count: int = 0
    chars: int = 0
    """Characters of visible text routed so far."""
    closing: bool = False
    """The stream ended and its text was flushed: if no final text came (it cleaned to nothing),
    the previews' messages are deleted, as aggregated delivery would have sent nothing."""
    abandoned: bool = False
    """The stream ended with its text discarded (an interrupt, an internal stop): the previews
    stay as shown, and the delivery reports them as what reached Discord."""
    lane: Operator[Segment, Segment] | None = attrs.field(default=None, eq=False, repr=False)
    """The delivery stages between ``flush`` and ``deliver`` (clean, user stages), which the
    preview's text passes when it is sent (``rxcord.sinks.preview_lane``); ``None``: stage 06
    alone, as ``snapshot`` runs it."""


def snapshot(deltas: Sequence[str], config: StreamConfig) -> str:
    """What aggregated delivery would send if the stream ended gracefully after *deltas*.

    Stages 05 and 06 exactly as the final flush runs them, except that the flusher is not
    closed (``Flusher.flush(final=False)``): an open code block is closed with its fence, a
    partial tag and an unclosed reasoning block stay held, so a preview never shows an open
    fence or reasoning. The cost is linear in the text, paid once per edit actually sent.
    """
    cleaner = SegmentCleaner(config)
    return "".join(piece.text for segment in flushed(deltas, config) for piece in cleaner.feed(segment))


def flushed(deltas: Sequence[str], config: StreamConfig) -> list[Segment]:
    """Stage 05's visible segments if the stream ended gracefully after *deltas* (not cleaned).

    ``TEXT``, and ``TABLE`` for a complete table sent as a picture (``StreamConfig.tables``).
    """
    flusher = Flusher(config)
    flusher.push("".join(deltas))
    return [segment for segment in flusher.flush(final=False) if segment.kind in _SHOWN]


def preview_segments(deltas: Sequence[str], config: StreamConfig) -> list[Segment]:
    """``flushed`` through stage 06, as a preview without a lane shows it: text and table pictures."""
    cleaner = SegmentCleaner(config)
    return [piece for segment in flushed(deltas, config) for piece in cleaner.feed(segment)]


def through_lane(preview: Preview, lane: Operator[Segment, Segment], config: StreamConfig) -> Observable[str]:
    """The text *preview* shows after *lane*: its ``flushed`` segments through it, ``TEXT`` joined."""
    return lane_segments(preview, lane, config).pipe(ops.map(_visible_text))


def lane_segments(
    preview: Preview, lane: Operator[Segment, Segment], config: StreamConfig
) -> Observable[list[Segment]]:
    """The segments *preview* shows after *lane*: its ``flushed`` segments through it.

    Lazy and subscribed once per preview sent, so the lane's stages start afresh on the
    preview's text, as they would on a stream that ended there.
    """

    def pieces(_: abc.SchedulerBase) -> Observable[Segment]:
        return reactivex.from_iterable(flushed(preview.deltas[: preview.count], config))

    return reactivex.defer(pieces).pipe(lane, ops.to_list())


def _visible_text(segments: list[Segment]) -> str:
    return "".join(segment.text for segment in segments if segment.kind is SegmentKind.TEXT)


def edit_previews(config: StreamConfig) -> Operator[StreamState, Segment]:
    """The previews of edit-in-place delivery: one ``Preview`` per routed visible delta.

    .. marble::
        -a----b------c-----d|     a="Hel"  b="lo. W"  c="orld"  d=(the end)
        [ edit_previews(config) ]
        ------F------C------|     F=["Hello."]  C=["Hel", "lo. W", "orld"]

    Nothing is shown before the first safe boundary of the first words
    (``rxcord.operators.markdown.first_cut``: a sentence or line end outside code, or a word
    boundary after ``cut_policy.FIRST_WORDS`` characters): the delta that completes it emits
    the first message's text up to there (``F``); the words after it go with the next
    delta's preview, so the first message is not edited at once. Previews after it grow by
    edits. The end belongs to the final segment.

    O(1) per delta after the first message (before it, the scan of the first words):
    previews share one list; the delivery merges queued previews and computes the text of
    the one it sends (``snapshot``). Only ``STREAMING`` states produce previews;
    the state that ends the stream produces the final segment in the aggregated branch.
    """

    def _op(source: Observable[StreamState]) -> Observable[Segment]:
        def subscribe(
            observer: abc.ObserverBase[Segment], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            deltas: list[str] = []
            ended = False
            chars = 0
            first = FirstCut(config.message_limit)

            def close(status: StreamStatus | None) -> None:
                nonlocal ended
                ended = True
                discarded = status in _DISCARDED
                observer.on_next(
                    Preview(kind=SegmentKind.PREVIEW, closing=not discarded, abandoned=discarded)
                )

            def on_next(state: StreamState) -> None:
                nonlocal chars
                if ended:
                    return
                if state.status is not StreamStatus.STREAMING:
                    close(state.status)
                    return
                if state.delta:
                    deltas.append(state.delta)
                    chars += len(state.delta)
                    if first.end is None:
                        end = first.feed(state.delta)
                        if end is None:
                            return
                        # The first message: the text up to its boundary (a prefix, joined once).
                        shown = first.shown("".join(deltas))
                        observer.on_next(
                            Preview(kind=SegmentKind.PREVIEW, deltas=[shown], count=1, chars=len(shown))
                        )
                        return  # the words after the boundary go with the next delta's preview
                    preview = Preview(kind=SegmentKind.PREVIEW, deltas=deltas, count=len(deltas), chars=chars)
                    observer.on_next(preview)

            def on_completed() -> None:
                if not ended:
                    close(None)
                observer.on_completed()

            return source.subscribe(on_next, observer.on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return _op


def edit_flush(
    config: StreamConfig,
    stops: abc.ObserverBase[StopSignal] | None = None,
    embed: ErrorEmbed | None = None,
) -> Operator[StreamState, Segment]:
    """Stage 05 in edit mode: the aggregated flusher's segments, with ``edit_previews`` beside them.

    The pipeline's ``flush`` stage for ``DeliveryMode.EDIT``. Previews (``SegmentKind.PREVIEW``)
    pass stage 06 untouched (they are cleaned already); on the state that ends the stream the
    final segment comes first, so a preview after it is ignored by the delivery.
    """
    segments = flush(config, stops, embed)
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
    frozen: int = 0
    """Leading messages of ``shown`` that are committed: one of them was created with an
    ambiguous answer and could not be found (``rxcord.sinks.lookup``), so it cannot be edited;
    they keep what they show, and the rest of the text is planned after them."""

    _previewed: int = attrs.field(default=0, init=False)
    """Characters of the last preview sent."""
    _start: int = attrs.field(default=0, init=False)
    """Where the text being edited starts in ``shown``: the messages before it are committed
    (the text before a table picture, and the picture), never edited again."""
    _spans: list[tuple[int, int]] = attrs.field(factory=list, init=False)
    """The committed parts' messages (``shown[start:end]``): text before table 0, table 0, ..."""
    _pictures: int = attrs.field(default=0, init=False)
    """Table pictures posted."""
    _final_tables: int = attrs.field(default=0, init=False)
    """Table segments of the final text arrived so far (those a preview posted are reported)."""
    _settled: bool = attrs.field(default=False, init=False)
    """The final text of the part being edited was applied (its extra messages deleted)."""
    _ending: bool = attrs.field(default=False, init=False)
    """A segment of the final text arrived: previews are ignored from now on."""
    _reported: int = attrs.field(default=0, init=False)
    """Leading messages of ``shown`` already reported in a ``Delivery`` (each is reported once)."""

    coalesces = True
    """Queued previews are always merged (``rxcord.sinks.deliver``)."""

    def send(self, item: Segment | TypingPulse) -> Observable[Delivery]:
        """The observable that delivers *item* (lazy: nothing happens until subscribed)."""
        if isinstance(item, TypingPulse):
            if self.shown or self.finished or self.stopped is not None:
                return reactivex.just(Delivery())
            return from_coro(self._typing)
        if isinstance(item, Preview):
            if item.abandoned:  # the previews stay as shown: report them, send nothing
                return reactivex.just(self._report())
            if self.finished or self.stopped is not None or (self._ending and not item.closing):
                return reactivex.just(Delivery())
            if item.closing:  # the final text cleaned to nothing: nothing stays
                return from_coro(_Apply(self, Segment(kind=SegmentKind.TEXT), final=True))
            if not self._grown(item):
                return reactivex.just(Delivery())
            if item.lane is not None:  # the text as the delivery stages make it, then the edit
                return lane_segments(item, item.lane, self.config).pipe(ops.flat_map(self._show))
            return from_coro(_Show(self, item))
        if item.kind in (SegmentKind.THOUGHT, SegmentKind.DETAILS):
            return reactivex.just(Delivery(segment=item))
        if self.stopped is not None:
            return reactivex.just(self._report() if item.kind is SegmentKind.TEXT else Delivery(segment=item))
        if item.kind in _SHOWN:
            return from_coro(_Final(self, item))
        return from_coro(_Apply(self, item, final=True))

    def _show(self, segments: list[Segment]) -> Observable[Delivery]:
        """An intermediate edit showing *segments* (a preview's, through its lane)."""
        return from_coro(_Show(self, segments))

    async def show(self, segments: Sequence[Segment]) -> Delivery:
        """A preview: tables it completes are posted (the text before them committed), the rest edited.

        Live and edit modes deliver tables the same: the text before a table picture is
        finished as its messages, the picture is a message of its own, and the text after it
        grows in new messages. Each table is posted once, by the first preview that holds it.
        """
        texts, tables = _parts(segments)
        if len(tables) < self._pictures:  # a stage changed the tables: the final text settles it
            return Delivery()
        for index in range(self._pictures, len(tables)):
            await self.apply(_text(texts[index]), final=True, finish=False)
            if self.stopped is None:
                await self._post_table(tables[index])
            if self.stopped is not None:
                return self._report()
        return await self.apply(_text(texts[-1]), final=False)

    async def final(self, segment: Segment) -> Delivery:
        """A segment of the final text (``TEXT`` or ``TABLE``), in order.

        A part a preview already committed (the text before a posted table, the table) is
        reported with its messages, not sent again; the rest is delivered as it comes.
        """
        self._ending = True
        committed = self._final_tables < self._pictures
        if segment.kind is SegmentKind.TABLE:
            if committed:
                end = self._spans[2 * self._final_tables + 1][1]
            else:
                if not self._settled:  # no text before it: what previews showed there goes
                    await self.apply(_text(""), final=True, finish=False)
                await self._post_table(segment)
                end = len(self.shown)
            self._final_tables += 1
            return self._delivered(segment, end)
        if committed:
            return self._delivered(segment, self._spans[2 * self._final_tables][1])
        done = await self.apply(segment, final=True)
        self._settled = True
        return done

    async def _post_table(self, segment: Segment) -> None:
        """Commit the text shown so far, post the table's messages (picture), commit them."""
        self._commit()
        planner = self._planner()
        planner.planned = len(self.shown)  # nonces run on; the reply goes on the stream's first message
        for payload in planner.payloads(segment):
            if await self._create(payload) is None:
                break
        self._commit()
        self._pictures += 1

    def _commit(self) -> None:
        self._spans.append((self._start, len(self.shown)))
        self._start = self.frozen = len(self.shown)
        self._settled = False

    def _delivered(self, segment: Segment, end: int) -> Delivery:
        """*segment* delivered as ``shown[reported:end]`` (each message reported once)."""
        start, self._reported = self._reported, max(self._reported, end)
        return Delivery(segment=segment, messages=tuple(self.shown[start:end]), stopped=self.stopped)

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

    def _grown(self, preview: Preview) -> bool:
        # A snapshot costs the whole text: with a sink that edits at once (no bucket wait to
        # merge previews behind), wait for the text to grow by a sixteenth (at most
        # _GROWTH_CAP characters) so the cost of all edits stays near linear.
        wanted = min(max(1, self._previewed // 16), _GROWTH_CAP)
        if preview.chars - self._previewed < wanted:
            return False
        self._previewed = preview.chars
        return True

    def plan(self, text: str) -> list[dict[str, Any]]:
        """The payloads aggregated delivery would send for *text* (``DiscordDelivery.payloads``).

        With committed messages (``frozen``) only the messages after them: the rest of *text*.
        """
        planner = self._planner()
        segment = Segment(kind=SegmentKind.TEXT, text=text)
        planner.planned = self.frozen  # nonces go on numbering; no second reply notice
        if self.frozen == self._start:  # nothing committed in the text being edited
            return planner.payloads(segment)
        first = self._start == 0 and self.context.uses_webhook and self.context.reply_to_message_id
        notice = self._start + (1 if first else 0)
        return planner.payloads(segment, after=[_content(m) for m in self.shown[notice : self.frozen]])

    async def apply(self, segment: Segment, *, final: bool, finish: bool = True) -> Delivery:
        """Make Discord show *segment*: edit what differs, create what is missing, delete the rest.

        Only the text being edited (after the committed messages); *final*: delete the
        messages it does not need; *finish*: and ignore later previews (the stream's end).
        """
        if segment.kind is SegmentKind.ERROR_EMBED:
            planner = self._planner()
            planner.planned = len(self.shown)
            sent = [m for p in planner.payloads(segment) if (m := await self._create(p)) is not None]
            return Delivery(segment=segment, messages=tuple(sent), stopped=self.stopped)
        text = segment.text
        # Blank text plans no message (the reply notice of a webhook persona included), as
        # aggregated delivery drops a blank final segment.
        payloads = self.plan(text) if text.strip() else []
        # Positions run on from the committed messages as planned, even when a create of
        # this pass commits more (its plan already continues after what that message shows).
        base = self.frozen
        for index, payload in enumerate(payloads):
            if self.stopped is not None:
                break
            if base + index >= len(self.shown) or not await self._edit(base + index, payload):
                await self._create(payload)
        if self.stopped is not None:
            return self._report()
        if not final:
            return Delivery()
        while len(self.shown) > max(self.frozen, base + len(payloads)):
            await self._delete(self.shown[-1])
        if self.stopped is not None:
            return self._report()
        if not finish:
            return Delivery()
        self.finished = True
        return self._delivered(segment, len(self.shown))

    def _report(self) -> Delivery:
        """What reached Discord, once: the messages as shown (a stop cut the text short)."""
        if self.finished:
            return Delivery(stopped=self.stopped)
        self.finished = True
        shown = self.shown[self._reported :]
        self._reported = len(self.shown)
        if not shown:
            return Delivery(stopped=self.stopped)
        text = "\n".join(_content(m) for m in shown)
        return Delivery(
            segment=Segment(kind=SegmentKind.TEXT, text=text),
            messages=tuple(shown),
            stopped=self.stopped,
            partial=True,
        )

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
        if self.stopped is not None:
            return None
        if len(self.shown) >= self.config.max_messages:
            self._stop(StopKind.SEND_MESSAGE_LIMIT)
            return None
        try:
            answer = await self.sink.create_message(self.context, payload)
            sent: SentMessage | None = answer
            if answer.message_id is None:
                sent = await self._find(attrs.evolve(answer, payload=answer.payload or payload))
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)
            return None
        except RateLimitError as exc:
            await self._rate_limited(exc)
            raise
        if sent is None:
            return None
        self.shown.append(sent)
        if sent.message_id is None:
            # Possibly shown, never editable: it and the messages before it keep what they
            # show; the rest of the text goes into new messages after it.
            self.frozen = len(self.shown)
            _log.warning(
                "message {n}: Discord's answer was ambiguous and the message was not found; "
                "kept as shown, the rest follows in new messages",
                n=len(self.shown),
            )
        return sent

    async def _find(self, sent: SentMessage) -> SentMessage | None:
        """The message of an ambiguous create: found, sent again if proven absent, or kept id-less."""
        lookup = await find_sent(self.sink, self.context, sent, anchor=self._anchor(), known=self._known())
        if lookup.message is not None:
            return lookup.message
        if not lookup.absent:
            return sent
        # The channel shows it was not stored: sending it again cannot duplicate it.
        again = await self.sink.create_message(self.context, sent.payload)
        if again.message_id is None:
            return attrs.evolve(again, payload=again.payload or sent.payload)
        return again

    def _anchor(self) -> str | None:
        """A message id older than the next create: the stream's last known message, or its reply target."""
        for message in reversed(self.shown):
            if message.message_id is not None:
                return message.message_id
        return self.context.reply_to_message_id

    def _known(self) -> set[str]:
        return {m.message_id for m in self.shown if m.message_id is not None}

    async def _edit(self, index: int, payload: Mapping[str, Any]) -> bool:
        """Make message *index* show *payload*; ``False`` when it is gone and must be created anew."""
        current = self.shown[index]
        if _same(current.payload, payload):
            return True
        if current.message_id is None:
            # Not reached: a message without an id is committed and never planned over.
            self.frozen = max(self.frozen, index + 1)
            return True
        body = {key: payload[key] for key in ("content", "embeds", "allowed_mentions") if key in payload}
        try:
            await self.sink.edit_message(self.context, current.message_id, body)
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)
            return True
        except RateLimitError as exc:
            await self._rate_limited(exc)
            raise
        except DiscordError as exc:
            if (exc.status, exc.code) != (404, _UNKNOWN_MESSAGE):
                raise
            await self._gone(index)
            return False
        self.edits += 1
        self.shown[index] = attrs.evolve(current, payload={**current.payload, **body})
        return True

    async def _rate_limited(self, error: RateLimitError) -> None:
        """A create or an edit spent its 429 budget: the other modes' notice, after the messages shown."""
        planner = self._planner()
        planner.planned = len(self.shown)  # a new message: no reply reference, the nonces run on
        await planner.rate_limit_notice(error)

    async def _gone(self, index: int) -> None:
        """Message *index* was deleted by someone else (404 / 10008 on its edit).

        What it showed is sent again as a new message, which Discord puts at the end of the
        channel: the stream's messages after it are deleted first, so that the text keeps its
        order (they are created again from the same plan). Nothing is lost or shown twice.
        """
        _log.warning("message {n} was deleted meanwhile; sent again after its predecessors", n=index + 1)
        while len(self.shown) > index + 1 and self.stopped is None:
            await self._delete(self.shown[-1])
        self.shown.pop(index)

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


def _text(text: str) -> Segment:
    return Segment(kind=SegmentKind.TEXT, text=text)


def _parts(segments: Sequence[Segment]) -> tuple[list[str], list[Segment]]:
    """The texts around the table pictures (one more than the tables) and the tables, in order."""
    texts: list[list[str]] = [[]]
    tables: list[Segment] = []
    for segment in segments:
        if segment.kind is SegmentKind.TABLE:
            tables.append(segment)
            texts.append([])
        elif segment.kind is SegmentKind.TEXT:
            texts[-1].append(segment.text)
    return ["".join(pieces) for pieces in texts], tables


def _content(message: SentMessage) -> str:
    content = message.payload.get("content")
    return content if isinstance(content, str) else ""


def _same(shown: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    return all(shown.get(key) == wanted.get(key) for key in ("content", "embeds"))


@attrs.frozen
class _Show:
    delivery: EditInPlaceDelivery
    shows: Preview | list[Segment]

    async def __call__(self) -> Delivery:
        shows = self.shows
        if isinstance(shows, Preview):  # no lane: stage 06 alone, computed only now it is sent
            shows = preview_segments(shows.deltas[: shows.count], self.delivery.config)
        return await self.delivery.show(shows)


@attrs.frozen
class _Final:
    delivery: EditInPlaceDelivery
    segment: Segment

    async def __call__(self) -> Delivery:
        return await self.delivery.final(self.segment)


@attrs.frozen
class _Apply:
    delivery: EditInPlaceDelivery
    segment: Segment
    final: bool

    async def __call__(self) -> Delivery:
        return await self.delivery.apply(self.segment, final=self.final)
