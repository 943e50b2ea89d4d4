"""Stage 07 glue: from a segment to Discord messages through a ``DiscordSink``.

For each segment this plans the messages (mention resolution, the
2000-code-point split, payloads with an explicit ``allowed_mentions``, the
reply reference on the first message only, a nonce per message for
idempotent retries) and returns an observable that sends them in order, one
at a time, with the humanizer's pacing as timers on the injected scheduler
(so a stop interrupts a pending delay at once: disposal cancels the timer).

It is the only place that turns sink failures into internal stops:
403 missing access -> ``missing_access``, 404 unknown channel ->
``channel_deleted``, the per-turn message cap -> ``send_message_limit``.
After such a stop nothing more is sent. A message whose 429 budget ran out
(``RateLimitError`` with ``budget_spent``) ends the stream with that error, after
one error notice ("Rate limited") through the same, still usable, route.

With a ``Timeline`` it records each typing call, each message (from the
start of the request to Discord's answer, rate-limit waits included),
each pacing pause and each refusal, on the chain's scheduler clock.
"""

from __future__ import annotations

__all__ = ("DiscordDelivery",)

import random
import secrets
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import reactivex
from loguru import logger
from reactivex import Observable, abc
from reactivex import operators as ops
from reactivex.subject import Subject

from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import DiscordStopError
from rxcord.core.state import Delivery, Segment, SentMessage, TypingPulse
from rxcord.core.types import DeliveryMode, ErrorType, ProviderError, SegmentKind, StopKind, StopSignal
from rxcord.operators.aio import from_coro
from rxcord.operators.light import subscribe_light
from rxcord.operators.markdown.cut_policy import join
from rxcord.operators.mentions import MentionResolver, allowed_mentions, resolve_mentions
from rxcord.operators.timeline import DELIVERY, Timeline
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.error_embed import error_embed
from rxcord.sinks.persona import reply_jump_link, webhook_username
from rxcord.sinks.ratelimit import RateLimitError
from rxcord.sinks.remainder import remainder
from rxcord.sinks.split_message import split_message
from rxcord.sinks.table_picture import table_messages

_log = logger.bind(stage="07-delivery")

_RATE_LIMIT_NOTICE = "Discord kept rate limiting this reply, so the rest of it was not sent."
_TYPING_SECONDS_PER_CHAR = 0.015
_TYPING_CAP = 4.0
MERGE_MESSAGES: Final = 8
"""Queued text is coalesced into at most about this many messages' worth before a send."""


@attrs.define
class DiscordDelivery:
    """Delivers one stream's segments to one Discord target (per stream: it counts messages)."""

    sink: DiscordSink
    context: StreamContext
    config: StreamConfig
    stops: abc.ObserverBase[StopSignal] | None = None
    resolver: MentionResolver | None = None
    nonce_prefix: str = attrs.field(factory=lambda: secrets.token_hex(6))
    planned: int = 0
    """Messages planned so far (numbers the nonces; the first carries the reply)."""
    delivered: int = 0
    """Messages Discord accepted."""
    held: list[SentMessage] = attrs.field(factory=list)
    """Every message Discord accepted, in order: what the channel holds of this stream (this
    delivery never edits or deletes). Read when a kill disposed a send's ``Delivery`` before
    it was reported, so that ``StreamResult.messages`` still lists what stays in Discord."""
    typing_calls: int = 0
    stopped: StopKind | None = None
    timeline: Timeline | None = None
    """Records typing calls, sends, pauses and refusals (``None``: nothing is recorded)."""
    signals: Observable[StopSignal] | None = None
    """The stream's stop signals (default: *stops*, when it is also observable, as a stop subject is)."""
    _rng: random.Random | None = attrs.field(init=False, default=None)
    """The pacing pauses' random part, seeded from ``config.render.seed``; made for the first pause."""
    _hurry: bool = attrs.field(init=False, default=False)
    """A user stop or an interrupt arrived: no more pacing pauses."""
    _cut: Subject[None] | None = attrs.field(init=False, default=None)
    """Fires when a stop cuts the pause in progress; made for the first pause (a subject, its
    lock and its list held for the stream's life by every delivery, when most never pause)."""
    _dropped: bool = attrs.field(init=False, default=False)
    """An interrupt discarded at least one message."""

    def __attrs_post_init__(self) -> None:
        signals = self.signals
        if signals is None and isinstance(self.stops, Observable):
            signals = self.stops
        if signals is not None:
            # For the delivery's life (the stream's): one light subscriber, not reactivex's wrapper.
            subscribe_light(signals, self._on_stop)

    def _on_stop(self, signal: StopSignal) -> None:
        """Stops are obeyed at once: pauses end; an interrupt (or a kill) discards what is still queued.

        A user stop only ends the pacing (the rest of the text is still sent, as the
        flusher releases it). Internal stops raised by this delivery are handled in ``_stop``.
        """
        kind = signal.kind
        if kind not in (StopKind.USER, StopKind.INTERRUPT, StopKind.KILL):
            return
        self._hurry = True
        if kind is not StopKind.USER and self.stopped is None:
            self.stopped = kind
            _log.info("delivery interrupted: {kind}; queued messages discarded", kind=kind.value)
        if self._cut is not None:
            self._cut.on_next(None)

    def _outcome(self) -> StopKind | None:
        """The stop to report on a delivery: an interrupt only when it discarded something."""
        if self.stopped in (StopKind.INTERRUPT, StopKind.KILL) and not self._dropped:
            return None
        return self.stopped

    def send(self, item: Segment | TypingPulse) -> Observable[Delivery]:
        """The observable that delivers *item* (lazy: nothing happens until subscribed)."""
        if isinstance(item, TypingPulse):
            if self.stopped is not None:
                return reactivex.just(Delivery())
            return from_coro(self._typing)
        if item.kind in (SegmentKind.THOUGHT, SegmentKind.DETAILS):
            return reactivex.just(Delivery(segment=item))
        if self.stopped is not None:
            if self.stopped in (StopKind.INTERRUPT, StopKind.KILL):
                self._dropped = True
            return reactivex.just(Delivery(segment=item, stopped=self._outcome()))
        if self.config.render.paced_messages and self.config.delivery is DeliveryMode.LIVE:
            steps = self._steps(item)
            return reactivex.concat(*steps).pipe(ops.to_list(), ops.map(_Pack(self, item)))
        # One coroutine sends the segment's messages in order: one task, not one per message
        # and the observables that chain them (disposal cancels it, as it would a step).
        return from_coro(_SendAll(self, item))

    @property
    def coalesces(self) -> bool:
        """Whether queued text may be merged (live delivery without split or pacing modifiers)."""
        render = self.config.render
        modifiers = render.sentence_splitting or render.punctuation_splits or render.paced_messages
        return self.config.delivery is DeliveryMode.LIVE and not modifiers

    def merge(
        self, first: Segment | TypingPulse, second: Segment | TypingPulse
    ) -> Segment | TypingPulse | None:
        """Coalesce two items that queued behind a send in flight (``rxcord.sinks.deliver``).

        Adjacent text segments become one (stage 07 then splits it into as few messages as
        the limit allows) until the merged text holds ``MERGE_MESSAGES`` messages' worth; a
        queued typing pulse is dropped (the next message ends typing anyway). Anything else
        stays apart.
        """
        if isinstance(second, TypingPulse):
            return first
        if isinstance(first, TypingPulse):
            return second
        # Bounded: a long queue merged into one text would copy it at every merge and split it
        # in one step (quadratic, and the loop held for the whole backlog).
        full = len(first.text) >= MERGE_MESSAGES * self.config.message_limit
        if first.kind is SegmentKind.TEXT and second.kind is SegmentKind.TEXT and not full:
            return Segment(kind=SegmentKind.TEXT, text=join(first.text, second.text), final=second.final)
        return None

    def payloads(self, segment: Segment, after: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The message payloads for *segment* (pure planning; no I/O).

        *after*: contents of messages that already show the start of the text (edit mode's
        committed messages); only the rest of the text is planned (``rxcord.sinks.remainder``).
        """
        if segment.kind is SegmentKind.ERROR_EMBED:
            return [self._payload({"embeds": [dict(segment.embed or {})]}, users=())]
        if segment.kind is SegmentKind.TABLE:
            # A table's cells are shown as drawn: no mention in it pings anyone.
            first = self._reply_notices()
            bodies = table_messages(segment.text, self.config.message_limit)
            return first + [self._payload(body, users=()) for body in bodies]
        text, users = resolve_mentions(segment.text, self.resolver)
        if after:
            text = remainder(text, after)
        out = self._reply_notices()
        for piece in split_message(text, self.config.message_limit):
            out.append(self._payload({"content": piece}, users=users))
        return out

    def _reply_notices(self) -> list[dict[str, Any]]:
        """The reply notice a webhook's first message needs (webhooks cannot reply), or none."""
        if self.planned == 0 and self.context.uses_webhook and self.context.reply_to_message_id:
            return [self._payload({"content": self._reply_notice()}, users=())]
        return []

    def _steps(self, segment: Segment) -> list[Observable[SentMessage | None]]:
        """Paced delivery: each message after a typing pause on the scheduler (a stop cuts the wait)."""
        steps: list[Observable[SentMessage | None]] = []
        for index, payload in enumerate(self.payloads(segment)):
            if self.delivered > 0 or index > 0:
                steps.append(reactivex.defer(_Pause(self, len(payload.get("content", "")))))
            steps.append(from_coro(_Send(self, payload)))
        return steps

    def _pause(self, length: int) -> Observable[SentMessage | None]:
        # Typing, then a delay scaled to the message length plus a seeded random pause; a stop
        # cuts the pause at once (and skips those not yet started).
        if self._rng is None:
            self._rng = random.Random(self.config.render.seed)
        delay = min(_TYPING_CAP, length * _TYPING_SECONDS_PER_CHAR) + self._rng.uniform(0.0, 0.6)
        if self._hurry:
            return reactivex.empty()
        if self._cut is None:
            self._cut = Subject()
        typing: Observable[Any] = from_coro(self._typing)
        wait: Observable[Any] = reactivex.timer(delay).pipe(ops.take_until(self._cut))
        if self.timeline is not None:
            wait = reactivex.defer(_Paused(self.timeline, delay, wait))
        return reactivex.concat(typing, wait).pipe(ops.ignore_elements())

    def _payload(self, body: Mapping[str, Any], *, users: tuple[str, ...]) -> dict[str, Any]:
        payload = dict(body)
        ctx = self.context
        first = self.planned == 0
        payload["allowed_mentions"] = allowed_mentions(
            users, allow_everyone=self.config.allow_everyone, allow_roles=self.config.allow_roles
        )
        if ctx.uses_webhook:
            username = webhook_username(ctx.persona_username)
            if username:
                payload["username"] = username
            if ctx.persona_avatar_url:
                payload["avatar_url"] = ctx.persona_avatar_url
        else:
            payload["nonce"] = f"{self.nonce_prefix}{self.planned:05d}"[:25]
            payload["enforce_nonce"] = True
            if first and ctx.reply_to_message_id:
                payload["message_reference"] = {
                    "message_id": ctx.reply_to_message_id,
                    "fail_if_not_exists": False,
                }
        self.planned += 1
        return payload

    def _reply_notice(self) -> str:
        return f"-# ↪ reply to {reply_jump_link(self.context)}"

    async def _typing(self) -> Delivery:
        self.typing_calls += 1
        timeline = self.timeline
        start = timeline.now() if timeline is not None and timeline.bound else None
        try:
            await self.sink.trigger_typing(self.context)
        except DiscordStopError as exc:
            self._stop(exc.stop_kind)
        except Exception as exc:
            # Typing is best effort: a 5xx, a 429 or a dropped connection never aborts the reply.
            _log.warning("typing indicator failed, ignored: {error}", error=type(exc).__name__)
        if start is not None and timeline is not None:
            timeline.record(DELIVERY, "typing", t=start, duration=timeline.now() - start)
        return Delivery(typing=1)

    async def _send_one(self, payload: Mapping[str, Any]) -> SentMessage | None:
        if self.stopped is not None:
            if self.stopped in (StopKind.INTERRUPT, StopKind.KILL):
                self._dropped = True
            return None
        if self.delivered >= self.config.max_messages:
            self._stop(StopKind.SEND_MESSAGE_LIMIT)
            return None
        timeline = self.timeline
        start = timeline.now() if timeline is not None and timeline.bound else None
        try:
            sent = await self.sink.create_message(self.context, payload)
        except DiscordStopError as exc:
            if start is not None and timeline is not None:
                timeline.record(
                    DELIVERY, "refused", exc.stop_kind.value, t=start, duration=timeline.now() - start
                )
            self._stop(exc.stop_kind)
            return None
        except RateLimitError as exc:
            await self.rate_limit_notice(exc)
            raise
        self.delivered += 1
        self.held.append(sent)
        if start is not None and timeline is not None:
            detail = f"message {self.delivered}: {len(payload.get('content') or '')} chars"
            timeline.record(DELIVERY, "send", detail, t=start, duration=timeline.now() - start)
        return sent

    async def rate_limit_notice(self, error: RateLimitError) -> None:
        """The error notice after a request spent its 429 budget (best effort; the stream still fails).

        The one rule for every delivery mode (edit mode calls it too): posted only when *error*
        spent its budget, as the route is then closed only briefly, so the user learns why the
        reply stops; not after a ban (every route closed) nor with ``suppress_user_errors``.
        """
        if not error.budget_spent or self.config.suppress_user_errors:
            return
        notice = ProviderError(
            type=ErrorType.RATE_LIMIT, message=_RATE_LIMIT_NOTICE, retryable=False, status=429
        )
        for payload in self.payloads(Segment(kind=SegmentKind.ERROR_EMBED, embed=error_embed(notice))):
            try:
                await self.sink.create_message(self.context, payload)
            except Exception as exc:  # the RateLimitError ends the stream either way
                _log.warning("rate-limit notice not delivered: {error}", error=type(exc).__name__)
                return

    def _stop(self, kind: StopKind) -> None:
        if self.stopped is not None:
            return
        self.stopped = kind
        _log.warning("delivery stopped: {kind}", kind=kind.value)
        if self.stops is not None:
            self.stops.on_next(StopSignal(kind, "delivery"))


@attrs.frozen
class _Send:
    delivery: DiscordDelivery
    payload: Mapping[str, Any]

    async def __call__(self) -> SentMessage | None:
        return await self.delivery._send_one(self.payload)


@attrs.frozen
class _SendAll:
    """Plans a segment's messages when its turn comes, then sends them one after another."""

    delivery: DiscordDelivery
    segment: Segment

    async def __call__(self) -> Delivery:
        sent: list[SentMessage] = []
        payloads = self.delivery.payloads(self.segment)
        for payload in payloads:
            message = await self.delivery._send_one(payload)
            if message is not None:
                sent.append(message)
        return Delivery(
            segment=self.segment,
            messages=tuple(sent),
            stopped=self.delivery._outcome(),
            partial=len(sent) < len(payloads),
        )


@attrs.frozen
class _Pause:
    """Plans a pacing pause when its turn comes (so a stop that came first skips it)."""

    delivery: DiscordDelivery
    length: int

    def __call__(self, _: abc.SchedulerBase) -> Observable[SentMessage | None]:
        return self.delivery._pause(self.length)


@attrs.frozen
class _Paused:
    """Records a pacing pause when its timer starts."""

    timeline: Timeline
    delay: float
    timer: Observable[Any]

    def __call__(self, _: abc.SchedulerBase) -> Observable[Any]:
        self.timeline.record(DELIVERY, "pause", f"{self.delay:.2f} s", duration=self.delay)
        return self.timer


@attrs.frozen
class _Pack:
    delivery: DiscordDelivery
    segment: Segment

    def __call__(self, sent: list[SentMessage | None]) -> Delivery:
        messages = tuple(m for m in sent if m is not None)
        partial = len(messages) < len(sent)  # a skipped send is a None; pauses emit nothing
        return Delivery(
            segment=self.segment, messages=messages, stopped=self.delivery._outcome(), partial=partial
        )
