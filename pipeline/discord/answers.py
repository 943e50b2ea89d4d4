"""The answer manager for a discord.py bot (``rxcord.discord.Answers``).

``await answers.on_message(message)`` decides whether a message gets an answer and runs it:

* **addressed?** a mention of the bot, a reply to one of its messages (or to an assistant id,
  a persona webhook), a ``respond_channels`` channel, or a DM;
* **permitted?** ``Permissions.may_ask``; **admitted?** the ``Admission`` hook (use limits,
  cost caps), asked before any provider call, its refusal posted once;
* **one answer at a time per asker per channel**, in the order they asked; different askers
  in one channel are answered concurrently, and channels are independent;
* an addressed follow-up by the same asker interrupts that asker's running answer
  (``StopKind.INTERRUPT``: its buffer is discarded) and is answered next; a message that is not
  addressed to the bot ("brb, talking to bob") interrupts nothing (``Interrupt`` configures it).

Each answer has its own stop key (``AnswerStops``, a ``StopRegistry`` per answer), so ``/stop``
stops one answer, not a channel, and a stop that arrives before the answer streams is kept
for it (the answer then ends without a provider call). ``Admission.settle`` is always called
for an admitted message, whatever ended its answer.
"""

from __future__ import annotations

__all__ = (
    "Admission",
    "Answer",
    "AnswerFn",
    "AnswerStops",
    "Answers",
    "Interrupt",
)

import asyncio
import collections
import enum
import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs
from loguru import logger

from rxcord.compose.streamer import Streamer
from rxcord.compose.turn import Candidate, TurnResult, run_turn
from rxcord.core.config import StreamContext
from rxcord.core.request import ChatRequest
from rxcord.core.stops import StopHandle, StopRegistry
from rxcord.core.types import StopKind, StopSignal
from rxcord.discord.permissions import Permissions

if TYPE_CHECKING:
    import discord

    from rxcord.discord.conversation import ContextLimits, ImageReader, MessageSource
    from rxcord.discord.elsewhere import StopsElsewhere
    from rxcord.sinks.base import DiscordSink

_log = logger.bind(stage="bot-answers")

DEFAULT_SYSTEM_PROMPT: Final = "You are {bot_name}, a helpful assistant in a Discord chat."
"""``{bot_name}``, ``{user_name}`` and ``{channel_name}`` are filled per message."""
_SHUTDOWN_GRACE: Final = 15.0


class Interrupt(enum.Enum):
    """What a message from an asker whose answer is still running does."""

    ADDRESSED = "addressed"
    """Only a message addressed to the bot interrupts, and is answered next (the default)."""
    ANY = "any"
    """Any message of the asker in that channel interrupts, and is answered next."""
    NEVER = "never"
    """Nothing interrupts: an addressed follow-up waits for the running answer."""


class Admission(Protocol):
    """Use limits and cost caps: asked before an answer's provider call, told how it ended."""

    async def admit(self, message: discord.Message) -> str | None:
        """``None``: answer it; a string: the short refusal posted once (no provider call).

        An empty string refuses without a post: the hook has answered by itself (a reaction).
        """
        ...

    async def settle(self, message: discord.Message, result: TurnResult | None) -> None:
        """Called once for every admitted message when its answer ended (also stopped or failed)."""
        ...


@attrs.define
class AnswerStops(StopRegistry):
    """One answer's stop key: a stop reaches every stream of the answer, and later ones too.

    The answer's streams (fallback attempts, tool-loop rounds) register here as in any
    ``StopRegistry``; a stop raised before a stream opens is replayed to it when it opens, so a
    stop that lands between two rounds, or before the first, is not lost.
    """

    pending: StopSignal | None = None

    def open(self, channel_id: str) -> StopHandle:
        """Register a stream of this answer; an earlier stop reaches it at once."""
        handle = super().open(channel_id)
        if self.pending is not None:
            handle.stop(self.pending.kind, self.pending.reason)
        return handle

    def stop_answer(self, kind: StopKind, reason: str = "") -> bool:
        """Stop the answer (kept for its later streams); return whether a stream was running."""
        self.pending = StopSignal(kind, reason)
        running = False
        for channel in self.active():
            running = self.stop(channel, kind, reason) or running
        return running


@attrs.define(eq=False)
class Answer:
    """One message being answered (queued, streaming, or done)."""

    number: int
    """Counts answers from 1 for this ``Answers``: what ``/stop answer:<n>`` names."""
    channel_id: str
    user_id: str
    user_name: str
    message_id: str
    message: Any = attrs.field(repr=False)
    """The ``discord.Message`` being answered."""
    stops: AnswerStops = attrs.field(factory=AnswerStops, repr=False)
    task: asyncio.Task[TurnResult | None] | None = attrs.field(default=None, repr=False)
    started: bool = False
    """The asker's earlier answer here ended: this one reads its conversation and streams."""
    streaming: bool = False
    """The provider was called (the bot's own answer function sets it)."""
    result: TurnResult | None = None
    error: Exception | None = None
    """What ended the answer when it failed instead of giving a result."""
    notice_sent: bool = False
    stopped_by: str | None = None
    """Who stopped it (a user id, ``"follow-up"``, ``"shutdown"``)."""

    @property
    def done(self) -> bool:
        """Whether the answer has ended."""
        return self.task is not None and self.task.done()

    @property
    def state(self) -> str:
        """``queued``, ``running`` or ``done``."""
        return "done" if self.done else "running" if self.started else "queued"

    @property
    def stop_kind(self) -> StopKind | None:
        """The stop asked for this answer, if any."""
        return self.stops.pending.kind if self.stops.pending is not None else None

    def describe(self) -> str:
        """``#3 alice (running)``: how commands and logs name it (no message text)."""
        return f"#{self.number} {self.user_name} ({self.state})"


AnswerFn = Callable[[Answer], Awaitable[TurnResult | None]]
"""Produces one answer (``None``: it ended before streaming); the default reads the
conversation with ``read_conversation`` and streams it with ``run_turn``."""
FailureNotice = Callable[[Answer, Exception], Awaitable[bool]]


class Answers:
    """Runs the answers of a discord.py client (see the module docstring).

    Args:
        client: The connected ``discord.Client`` (its ``user`` is the bot).
        candidates: Tried in order (``rxcord.fallback_order``); unused with a custom *answer*.
        streamer: Stream through this ``Streamer`` (its sink, session, secrets) instead of
            ``run_turn`` with *sink*.
        sink: Where answers go (default: ``DiscordPySink.for_client(client)``).
        permissions: Who may ask and who may stop.
        limits: How much conversation is read (``ContextLimits()``).
        system_prompt: A template (``{bot_name}``, ``{user_name}``, ``{channel_name}``) or a
            function of the message.
        admission: Use limits and cost caps (``Admission``).
        interrupt: Which follow-ups interrupt the asker's running answer.
        assistant_ids: More authors whose messages are the assistant's (a persona webhook's id):
            replying to them addresses the bot too.
        vision: Send image attachments to the model.
        images: Downloads them, sent inline (default: ``ImageFetcher`` on Discord's attachment
            hosts, ``limits.max_image_bytes``; ``ImageFetcher.for_api`` adds the emulator's).
        source: Where conversations are read (default: discord.py, from the message).
        answer: Replace how one answer is produced (the ready bot's REST path).
        failure_notice: Tell the channel an answer failed (default: a short reply).
        history: How many ended answers ``finished`` keeps.
    """

    def __init__(
        self,
        client: discord.Client,
        candidates: Sequence[Candidate] = (),
        *,
        streamer: Streamer | None = None,
        sink: DiscordSink | None = None,
        permissions: Permissions | None = None,
        limits: ContextLimits | None = None,
        system_prompt: str | Callable[[discord.Message], str] = DEFAULT_SYSTEM_PROMPT,
        admission: Admission | None = None,
        interrupt: Interrupt = Interrupt.ADDRESSED,
        assistant_ids: Iterable[int | str] = (),
        vision: bool = False,
        images: ImageReader | None = None,
        source: MessageSource | None = None,
        answer: AnswerFn | None = None,
        failure_notice: FailureNotice | None = None,
        history: int = 100,
    ) -> None:
        self.client = client
        self.candidates = tuple(candidates)
        self.streamer = streamer
        self.sink = sink
        self.permissions = permissions or Permissions()
        self.limits = limits
        self.system_prompt = system_prompt
        self.admission = admission
        self.interrupt = interrupt
        self.assistant_ids = frozenset(str(i) for i in assistant_ids)
        self.vision = vision
        self.images = images
        self.source = source
        self._answer: AnswerFn = answer or self._default_answer
        self._notice = failure_notice or _reply_notice
        self.active: dict[int, Answer] = {}
        """Answers queued or running, by number (oldest first)."""
        self.finished: collections.deque[Answer] = collections.deque(maxlen=history)
        """The latest answers that ended, oldest first."""
        self._latest: dict[tuple[str, str], Answer] = {}
        self._numbers = itertools.count(1)
        self.closing = False
        self.elsewhere: StopsElsewhere | None = None
        """The bot's other processes (``rxcord.discord.StopsElsewhere``): a ``/stop`` or ``/kill``
        that finds nothing here asks them."""

    def __repr__(self) -> str:
        return f"Answers(active={len(self.active)}, interrupt={self.interrupt.value!r})"

    # -- which messages get an answer ------------------------------------------------------------

    def addressed(self, message: discord.Message) -> bool:
        """A DM, a mention of the bot, a ``respond_channels`` message, or a reply to the assistant."""
        me = self.client.user
        if me is None:
            return False
        channel = message.channel
        if getattr(channel, "guild", None) is None and getattr(channel, "guild_id", None) is None:
            return True  # a DM talks to the bot
        if any(user.id == me.id for user in message.mentions):
            return True
        if str(channel.id) in self.permissions.respond_channels:
            return True
        resolved = message.reference.resolved if message.reference is not None else None
        author = getattr(resolved, "author", None)
        if author is None:
            return False
        mine = {str(me.id), *self.assistant_ids}
        return str(author.id) in mine or str(getattr(resolved, "webhook_id", None)) in mine

    def in_channel(self, channel_id: str) -> tuple[Answer, ...]:
        """The answers queued or running in *channel_id*, oldest first."""
        return tuple(a for a in self.active.values() if a.channel_id == channel_id and not a.done)

    async def on_message(self, message: discord.Message) -> Answer | None:
        """Answer *message* if it is addressed, permitted and admitted; return its ``Answer``."""
        me = self.client.user
        author = message.author
        if self.closing or me is None or author.id == me.id or author.bot or message.webhook_id:
            return None
        key = (str(message.channel.id), str(author.id))
        if not self._wanted(message, self._running(key)):
            return None
        if not self.permissions.may_ask(message):
            _log.info(
                "not answering user {user} in channel {channel}: not permitted", user=key[1], channel=key[0]
            )
            return None
        if self.admission is not None:
            refusal = await self.admission.admit(message)
            if refusal is not None:
                if refusal:  # "": the hook answered by itself (a reaction), nothing to post
                    await _post_refusal(message, refusal)
                return None
        return self._start(message, key)

    def _running(self, key: tuple[str, str]) -> Answer | None:
        latest = self._latest.get(key)
        return latest if latest is not None and not latest.done else None

    def _wanted(self, message: discord.Message, running: Answer | None) -> bool:
        if running is not None and self.interrupt is Interrupt.ANY:
            return True
        return self.addressed(message)

    def _start(self, message: discord.Message, key: tuple[str, str]) -> Answer:
        running = self._running(key)  # read again: admission may have awaited
        if running is not None and self.interrupt is not Interrupt.NEVER:
            _log.info("follow-up: interrupting answer {answer}", answer=running.describe())
            self.stop(running, StopKind.INTERRUPT, by="follow-up")
        answer = Answer(
            number=next(self._numbers),
            channel_id=key[0],
            user_id=key[1],
            user_name=message.author.display_name,
            message_id=str(message.id),
            message=message,
        )
        previous = running.task if running is not None else None
        answer.task = asyncio.create_task(self._run(answer, previous))
        self.active[answer.number] = answer
        self._latest[key] = answer
        return answer

    # -- stopping --------------------------------------------------------------------------------

    def stop(self, answer: Answer, kind: StopKind, *, by: str = "") -> bool:
        """Stop *answer* (``USER`` flushes, ``KILL`` aborts, ``INTERRUPT`` discards).

        Returns whether it was still queued or running. A queued answer ends without calling
        the provider; a running one stops through its own stop key (other answers go on).
        """
        if answer.done:
            return False
        if answer.stops.pending is None:
            answer.stopped_by = by or None
        answer.stops.stop_answer(kind, by)
        return True

    async def close(self, kind: StopKind = StopKind.USER, *, grace: float = _SHUTDOWN_GRACE) -> None:
        """Stop every answer (flushed by default) and wait for them; no new answer starts."""
        self.closing = True
        running = [a for a in self.active.values() if not a.done]
        for answer in running:
            self.stop(answer, kind, by="shutdown")
        tasks = [a.task for a in running if a.task is not None]
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=grace)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def install(self, tree: Any) -> None:
        """Register ``/stop`` and ``/kill`` for these answers on a ``discord.app_commands.CommandTree``."""
        from rxcord.discord.commands import install

        install(tree, self)

    # -- running one answer ----------------------------------------------------------------------

    async def _run(
        self, answer: Answer, previous: asyncio.Task[TurnResult | None] | None
    ) -> TurnResult | None:
        try:
            if previous is not None:
                await asyncio.wait([previous])  # the asker's answers here, in the order asked
            answer.started = True
            if answer.stops.pending is not None:
                _log.info("answer {answer} stopped before it streamed", answer=answer.describe())
                return None
            answer.result = await self._answer(answer)
            return answer.result
        except Exception as exc:
            _log.exception(
                "answer {answer} failed: {error}", answer=answer.describe(), error=type(exc).__name__
            )
            answer.error = exc
            answer.notice_sent = await self._notice(answer, exc)
            return None
        finally:
            await self._settle(answer)
            self.finished.append(answer)
            self.active.pop(answer.number, None)
            key = (answer.channel_id, answer.user_id)
            if self._latest.get(key) is answer:
                del self._latest[key]

    async def _settle(self, answer: Answer) -> None:
        if self.admission is None:
            return
        try:
            await self.admission.settle(answer.message, answer.result)
        except Exception as exc:  # the accounting's failure must not hide the answer's outcome
            _log.error(
                "admission.settle failed for {answer}: {error}",
                answer=answer.describe(),
                error=type(exc).__name__,
            )

    async def _default_answer(self, answer: Answer) -> TurnResult | None:
        from rxcord.discord.conversation import ContextLimits, read_conversation
        from rxcord.discord.images import ImageFetcher

        message = answer.message
        me = self.client.user
        assert me is not None
        limits = self.limits or ContextLimits()
        conversation = await read_conversation(
            message,
            me=me,
            limits=limits,
            vision=self.vision,
            images=self.images or ImageFetcher(max_bytes=limits.max_image_bytes),
            source=self.source,
            assistant_ids=self.assistant_ids,
        )
        if answer.stops.pending is not None:
            return None  # stopped while reading: no provider call
        system = self._system(message, me.display_name)
        if conversation.notes:
            system = "\n\n".join([system, *conversation.notes])
        model = self.candidates[0].model if self.candidates else ""
        request = ChatRequest(model=model, messages=conversation.messages, system=system)
        context = _context(message)
        answer.streaming = True
        if self.streamer is not None:
            result = await self.streamer.turn(
                self.candidates, request, context=context, registry=answer.stops
            )
            return await _show_end(self.streamer.sink, context, result)
        sink = self._sink()
        result = await run_turn(self.candidates, request, sink=sink, context=context, registry=answer.stops)
        return await _show_end(sink, context, result)

    def _system(self, message: discord.Message, bot_name: str) -> str:
        if callable(self.system_prompt):
            return self.system_prompt(message)
        values = {
            "bot_name": bot_name,
            "user_name": message.author.display_name,
            "channel_name": getattr(message.channel, "name", None) or "direct messages",
        }
        return self.system_prompt.format_map(collections.defaultdict(str, values))

    def _sink(self) -> DiscordSink:
        if self.sink is None:
            from rxcord.sinks.discordpy import DiscordPySink

            self.sink = DiscordPySink.for_client(self.client)
        return self.sink


async def _show_end(sink: Any, context: StreamContext, result: TurnResult) -> TurnResult:
    # A stopped, aborted or interrupted answer says so under its text (rxcord.discord.visible).
    from rxcord.discord.visible import Markers, end_lines, show_end

    ending = end_lines(result.result.status, (), Markers(), context.locale)
    return await show_end(sink, context, result, ending)


def _context(message: discord.Message) -> StreamContext:
    guild = message.guild
    return StreamContext(
        channel_id=str(message.channel.id),
        guild_id=str(guild.id) if guild is not None else None,
        reply_to_message_id=str(message.id),
    )


async def _post_refusal(message: discord.Message, text: str) -> None:
    import discord

    try:
        await message.reply(text, mention_author=False, allowed_mentions=discord.AllowedMentions.none())
    except discord.HTTPException as exc:
        _log.warning("the refusal was not posted: {error}", error=exc.status)


async def _reply_notice(answer: Answer, error: Exception) -> bool:
    """The channel is told the answer failed (the error's type only: its text may quote a payload)."""
    import discord

    text = f"-# ⚠ The answer could not be delivered ({type(error).__name__}). Please ask again."
    try:
        await answer.message.reply(
            text, mention_author=False, allowed_mentions=discord.AllowedMentions.none()
        )
    except discord.HTTPException as exc:
        _log.warning("the failure notice was not sent either: {error}", error=exc.status)
        return False
    return True
