"""The bot: discord.py for the gateway and slash commands, rxcord for every answer.

Built on ``rxcord.discord``: ``Answers`` decides which messages get an answer and runs them
(``Permissions`` from ``[permissions]``; ``/stop`` and ``/kill`` from ``rxcord.discord.commands``);
each answer reads the conversation (``rxcord.discord.read_conversation``), fills the system prompt, and
calls ``rxcord.run_turn`` (key and model fallback; the tool loop only with a ``[tools]``
table) with the ``RestSink`` as the sink and the answer's own stop key, so:

* an addressed follow-up from the same user in the same channel while their answer runs is a
  follow-up interrupt (``StopKind.INTERRUPT``: the buffer is discarded) and their next answer
  starts with the new message; a message not addressed to the bot interrupts nothing;
* ``/stop`` is a graceful stop (``StopKind.USER``: what was generated is flushed), ``/kill``
  aborts (``StopKind.KILL``); both stop one answer (the caller's own, or for a moderator the
  one running), and are answered ephemerally;
* each user gets one answer at a time per channel; different users' answers in one channel,
  and answers in different channels, stream at once;
* SIGINT/SIGTERM stop every running turn gracefully (flushed), wait for them, then close the
  gateway and the HTTP sessions.

Secrets (bot token, API keys, webhook URL) are read from the environment variables the
configuration names, never logged, never shown in a repr.
"""

from __future__ import annotations

__all__ = ("ADAPTERS", "RxcordBot", "Secrets", "answer_permissions", "permitted", "resolve_secrets")

import asyncio
import collections
import contextlib
import datetime as dt
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Final

import aiohttp
import attrs
import discord
import yarl
from discord import app_commands
from loguru import logger

from rxcord import (
    Candidate,
    MissingCredentialError,
    RestSink,
    StopKind,
    StreamConfig,
    StreamContext,
    TransportConfig,
    TurnResult,
    run_turn,
)
from rxcord.bot import reach
from rxcord.bot.admin import install_admin, reload
from rxcord.bot.config import BotConfig, ModelSection, load_tools
from rxcord.bot.failures import log_failures, user_notice
from rxcord.bot.invite import invite_url
from rxcord.bot.limits import Limits
from rxcord.bot.models import ADAPTERS, ModelChoices, ModelSet, model_keys, models_state_path
from rxcord.bot.scale import make_client, shared_limiter, stops_elsewhere
from rxcord.compose import KeyCooldown
from rxcord.discord import (
    Answer,
    Answers,
    ImageFetcher,
    Permissions,
    RestSource,
    end_lines,
    read_conversation,
    show_end,
    writing_reaction,
)
from rxcord.sinks import RateLimiter

_log = logger.bind(stage="bot")

DISCORD_API: Final = "https://discord.com/api/v10"
_WEBHOOK_RE: Final = re.compile(r"/webhooks/(?P<id>\d+)/(?P<token>[^/?#]+)")
_SHUTDOWN_GRACE: Final = 15.0


@attrs.frozen(kw_only=True)
class Secrets:
    """What the environment holds for the bot (never logged: no repr of the values)."""

    token: str = attrs.field(repr=False)
    api_keys: tuple[str, ...] = attrs.field(repr=False)
    """The default model's keys."""
    model_keys: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict, repr=False)
    """Every model's keys, by its ``/model`` name."""
    webhook_id: str | None = None
    webhook_token: str | None = attrs.field(default=None, repr=False)


def resolve_secrets(config: BotConfig, env: Mapping[str, str]) -> Secrets:
    """Read the token, the API keys and the persona webhook from *env* (``MissingCredentialError``)."""
    token = env.get(config.discord.token_env, "")
    if not token:
        raise MissingCredentialError(config.discord.token_env)
    keys = model_keys(config, env)
    webhook_id = webhook_token = None
    if config.persona is not None:
        url = env.get(config.persona.webhook_url_env, "")
        match = _WEBHOOK_RE.search(url)
        if match is None:
            raise MissingCredentialError(config.persona.webhook_url_env)
        webhook_id, webhook_token = match.group("id"), match.group("token")
    return Secrets(
        token=token,
        api_keys=keys[config.default_model.label],
        model_keys=keys,
        webhook_id=webhook_id,
        webhook_token=webhook_token,
    )


def answer_permissions(config: BotConfig) -> Permissions:
    """The ``[permissions]`` table as ``rxcord.discord.Permissions`` (the one rule the bot applies)."""
    return Permissions(**attrs.asdict(config.permissions, recurse=False))


def permitted(
    config: BotConfig, *, user_id: str, role_ids: set[str], channel_ids: set[str], dm: bool
) -> bool:
    """Whether the bot may answer this user here (``Permissions.may_ask`` on plain ids).

    Args:
        config: The bot's configuration.
        user_id: The author.
        role_ids: The author's roles in the guild (empty in DMs).
        channel_ids: The channel and, for a thread, its parent.
        dm: A direct message.
    """
    ids = sorted(channel_ids)
    channel = SimpleNamespace(
        id=ids[0] if ids else "0",
        parent_id=ids[1] if len(ids) > 1 else None,
        guild=None if dm else True,
    )
    author = SimpleNamespace(id=user_id, roles=[SimpleNamespace(id=role) for role in role_ids])
    return answer_permissions(config).may_ask(SimpleNamespace(author=author, channel=channel))


async def _nothing() -> None:
    """A close step with nothing to close."""


def _locale_code(locale: object) -> str | None:
    """A guild's ``preferred_locale`` (or an interaction's ``locale``: a ``discord.Locale``) as its code."""
    code = getattr(locale, "value", locale)
    return code if isinstance(code, str) and code else None


class RxcordBot:
    """The bot (``rxcord bot``): ``await bot.start()``, then ``await bot.wait_closed()``.

    Args:
        config: The checked configuration.
        env: Where secrets are read from (``os.environ``).
        gateway_url: The gateway to connect to (default: Discord's; the emulator prints its own).
        now: The clock for the ``{date}`` and ``{time}`` placeholders.
    """

    def __init__(
        self,
        config: BotConfig,
        *,
        env: Mapping[str, str] | None = None,
        now: Callable[[], dt.datetime] | None = None,
        config_path: str | Path | None = None,
    ) -> None:
        self.config = config
        self.config_path = Path(config_path) if config_path is not None else None
        """The file ``/reload`` and SIGHUP read again (``None``: the bot was built from a config in code)."""
        self._env = os.environ if env is None else env
        self.secrets = resolve_secrets(config, self._env)
        self.models = ModelSet.build(config, self.secrets.model_keys)
        """The ``[[models]]``, each with its fallback order (swapped whole by a reload)."""
        self.candidates: list[Candidate] = list(self.models.candidates(config.default_model.label))
        """The default model's fallback order."""
        self.adapter = self.candidates[0].adapter
        self.choices = ModelChoices(models_state_path(config))
        """What ``/model`` chose, per channel or everywhere (next to the limits' counters)."""
        self.reloads: list[str | None] = []
        """Each reload's outcome: ``None`` applied, else the one-line reason it was refused."""
        self._reloading: asyncio.Future[str | None] | None = None
        self.cooldown = KeyCooldown(clock=time.monotonic)
        """Keys that failed for themselves (401/402/403), skipped across turns while it runs."""
        self.tools = load_tools(config.tools) if config.tools is not None else None
        """The tool loop's tools and handler (``[tools]``), or ``None``: the loop is off."""
        self._now = now or (lambda: dt.datetime.now(dt.UTC))
        self._session: aiohttp.ClientSession | None = None
        self._limiter: RateLimiter = shared_limiter(config, self._env, self.secrets.token)
        """Discord's rate limits: in this process, or shared in Redis by every process (``[scale]``)."""
        self._sink: RestSink | None = None
        self._source: RestSource | None = None
        self._webhook_channel: str | None = None
        self._connect: asyncio.Task[None] | None = None
        self._closing = False
        self.ready = asyncio.Event()
        self.client = self._make_client()
        self.limits = Limits.from_config(config, os.environ if env is None else env)
        """The ``[limits]`` caps, asked before every answer (their counters: SQLite or Redis)."""
        self.answers = Answers(
            self.client,
            self.candidates,
            permissions=answer_permissions(config),
            assistant_ids=[self.secrets.webhook_id] if self.secrets.webhook_id else [],
            answer=lambda answer: self._answer(answer, answer.message),
            failure_notice=self._failure_notice,
            admission=self.limits,
        )
        self.elsewhere = stops_elsewhere(config, self._env, self.secrets.token, self.answers)
        """``/stop`` and ``/kill`` reaching the bot's other processes (with ``[scale] redis_url_env``)."""
        self.tree = app_commands.CommandTree(self.client)
        self.answers.install(self.tree)
        install_admin(self.tree, self)

    @property
    def turns(self) -> Mapping[int, Answer]:
        """The answers queued or running, by number."""
        return self.answers.active

    @property
    def finished(self) -> collections.deque[Answer]:
        """The latest answers that ended, oldest first.

        Their ``result``: ``None`` if stopped before streaming, or if the answer failed (then its
        ``error``).
        """
        return self.answers.finished

    def __repr__(self) -> str:
        default = self.config.default_model
        return f"RxcordBot(provider={default.provider!r}, model={default.model!r})"

    # -- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Log in, connect to the gateway and wait until READY (slash commands are synced then)."""
        base = self.config.discord.base_url.rstrip("/")
        if base != DISCORD_API:
            discord.http.Route.BASE = base
        gateway = self.config.discord.gateway_url
        if gateway:
            discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway)
        self._session = aiohttp.ClientSession()
        self._sink = RestSink(base, self.secrets.token, session=self._session, limiter=self._limiter)
        self._source = RestSource(base, self.secrets.token, self._session, self._limiter)
        if self.secrets.webhook_id is not None:
            self._webhook_channel = await self._webhook_channel_id(base)
        if self.elsewhere is not None:
            await self.elsewhere.start()  # before the gateway: a /stop may come with the first event
            self.answers.elsewhere = self.elsewhere
        # Each failure to reach Discord is one line naming its setting (rxcord.bot.reach).
        token_env = self.config.discord.token_env
        await reach.login(self.client, self.secrets.token, base=base, token_env=token_env)
        await reach.probe_gateway(gateway)
        self._connect = await reach.connect(self.client, self.ready, gateway)
        _log.info(
            "bot ready as {name} ({provider}:{model}, {mode} delivery)",
            name=self.client.user.name if self.client.user else "?",
            provider=self.config.default_model.provider,
            model=self.config.default_model.model,
            mode=self.config.delivery.mode.value,
        )

    @property
    def invite_url(self) -> str:
        """The link that adds the bot to a server with the permissions it needs (after ``start``)."""
        return invite_url(self.client.application_id or (self.client.user.id if self.client.user else 0))

    async def wait_closed(self) -> None:
        """Until the gateway connection ends (``close``)."""
        if self._connect is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._connect

    async def close(self) -> None:
        """Graceful shutdown: stop every running turn with a flush, wait for them, close everything."""
        if self._closing:
            return
        self._closing = True
        _log.info("shutting down: {n} running answer(s) stopped and flushed", n=len(self.answers.active))
        # Every step runs, whatever failed before it (a close before start, after a failed start).
        await reach.close_steps(
            ("answers", lambda: self.answers.close(StopKind.USER, grace=_SHUTDOWN_GRACE)),
            ("limits", self.limits.close),  # after the answers: each settled its counters first
            ("other processes", self.elsewhere.close if self.elsewhere is not None else _nothing),
            ("gateway", self.client.close),
            ("connection", self._connection_ended),
            ("http session", self._session.close if self._session is not None else _nothing),
            ("rate limiter", self._limiter.aclose),
        )

    async def _connection_ended(self) -> None:
        if self._connect is not None:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._connect

    # -- discord.py wiring -----------------------------------------------------------------------------

    def _make_client(self) -> discord.Client:
        intents = discord.Intents.default()
        intents.message_content = True
        client = make_client(self.config, intents, allowed_mentions=discord.AllowedMentions.none())
        bot = self

        @client.event
        async def on_ready() -> None:
            if not bot.ready.is_set():
                try:
                    await bot.tree.sync()
                except discord.HTTPException as exc:
                    _log.warning("slash commands not registered: {error}", error=exc.status)
                bot.ready.set()

        @client.event
        async def on_message(message: discord.Message) -> None:
            await bot.on_message(message)

        return client

    async def on_message(self, message: discord.Message) -> None:
        """Hand *message* to ``Answers`` (addressed, permitted: answered; a follow-up interrupts)."""
        if not self._closing:
            await self.answers.on_message(message)

    async def _failure_notice(self, turn: Answer, error: Exception) -> bool:
        """Tell the channel that the answer failed: as the bot, replying, best effort.

        As the bot even for a persona: the persona's webhook may be what failed. The text names
        the error's type only (its message could quote a payload).
        """
        if self._sink is None:
            return False
        context = StreamContext(channel_id=turn.channel_id, reply_to_message_id=turn.message_id)
        payload = {
            "content": f"-# ⚠ The answer could not be delivered ({type(error).__name__}). Please ask again.",
            "allowed_mentions": {"parse": []},
            "message_reference": {"message_id": turn.message_id, "fail_if_not_exists": False},
        }
        try:
            await self._sink.create_message(context, payload)
        except Exception as exc:
            _log.warning("the failure notice was not sent either: {error}", error=type(exc).__name__)
            return False
        return True

    async def _notice(self, target: StreamContext, text: str) -> bool:
        """Post a turn's notice (``rxcord.bot.failures``) as the bot, replying; best effort."""
        assert self._sink is not None
        payload = {
            "content": f"-# {text}",
            "allowed_mentions": {"parse": []},
            "message_reference": {"message_id": target.reply_to_message_id, "fail_if_not_exists": False},
        }
        context = StreamContext(channel_id=target.channel_id, reply_to_message_id=target.reply_to_message_id)
        try:
            await self._sink.create_message(context, payload)
        except Exception as exc:
            _log.warning("the notice was not sent: {error}", error=type(exc).__name__)
            return False
        return True

    async def _answer(self, turn: Answer, message: discord.Message) -> TurnResult | None:
        assert self._sink is not None and self._source is not None
        # One configuration for the whole answer: a reload meanwhile applies to the next ones.
        config, models, tools = self.config, self.models, self.tools
        selected = self.model_for(message.channel, models)
        me = self.client.user
        assert me is not None
        context = await read_conversation(
            message,
            me=me,
            limits=config.context,
            vision=selected.reads_images,
            images=ImageFetcher.for_api(config.context.max_image_bytes, config.discord.base_url),
            source=self._source,  # REST through the sink's rate limiter, not discord.py's
            assistant_ids=[self.secrets.webhook_id] if self.secrets.webhook_id else [],
        )
        request = context.request(
            model=selected.model,  # each candidate sends its own model and parameters
            system=self._system_prompt(
                message, context.user_names, me.display_name, config=config, model=selected.model
            ),
            tools=tools.specs if tools is not None else (),
        )
        stream_config = StreamConfig(
            delivery=config.delivery.mode,
            tables=config.delivery.tables,
            persona_name=(
                config.persona.username if config.persona and config.persona.username else me.display_name
            ),
            speaker_names=tuple(name for name in context.user_names if name),
            suppress_user_errors=True,  # the bot's own notice below: no host, port or provider prose
        )
        if turn.stops.pending is not None:
            return None  # stopped while its conversation was read: no provider call
        turn.streaming = True
        _log.info(
            "answering message {message} in channel {channel} ({n} messages of context)",
            message=turn.message_id,
            channel=turn.channel_id,
            n=len(context.messages),
        )
        target = self._stream_context(message)
        markers = config.delivery.markers
        async with writing_reaction(message, markers.writing, me):  # the asker sees it is being written
            candidates = models.candidates(selected.label)
            result = await run_turn(
                candidates,
                request,
                sink=self._sink,
                context=target,
                config=stream_config,
                registry=turn.stops,  # this answer's own stop key: /stop reaches it alone
                session=self._session,
                transport=TransportConfig(),  # each candidate carries its model's allow_private_network
                tool_handler=tools.handle if tools is not None else None,
                max_rounds=config.tools.max_rounds if config.tools is not None else 0,
                cooldown=self.cooldown,
                secrets=(self.secrets.token,),  # redacted by value, the text stream too (the sink hides it)
            )
        _log.info(
            "answer in channel {channel}: {status}, {n} message(s)",
            channel=turn.channel_id,
            status=result.result.status.value,
            n=len(result.result.messages),
        )
        log_failures(result, candidates, secrets=(self.secrets.token,))
        notice = user_notice(result, candidates, locale=target.locale)
        if notice is not None:
            result = attrs.evolve(result, notice_sent=await self._notice(target, notice))
        # How it ended (stopped, aborted, interrupted) and what the context left out, under the answer.
        ending = end_lines(result.result.status, context.notes, markers, target.locale)
        return await show_end(self._sink, target, result, ending)

    def model_for(self, channel: Any, models: ModelSet | None = None) -> ModelSection:
        """The model answering in *channel*.

        ``/model``'s choice for it (a thread: or its parent's), else the one chosen for every
        channel, else the default (a choice no longer configured is ignored).
        """
        models = models or self.models
        ids = [str(channel.id)]
        parent = getattr(channel, "parent_id", None)
        if parent is not None:
            ids.append(str(parent))
        return models.get(self.choices.chosen(ids)) or models.default

    # -- reload ----------------------------------------------------------------------------------------

    def apply(self, config: BotConfig) -> None:
        """Run *config* from the next answer on (checked by ``rxcord.bot.admin.reload``).

        Models, keys, permissions, limits and prices, prompt, context, delivery and tools swap at
        once; running answers finish with what they started with.
        """
        secrets = resolve_secrets(config, self._env)
        models = ModelSet.build(config, secrets.model_keys)
        tools = load_tools(config.tools) if config.tools is not None else None
        self.limits.retune(config.limits, config.prices)
        self.secrets = attrs.evolve(self.secrets, api_keys=secrets.api_keys, model_keys=secrets.model_keys)
        self.config, self.models, self.tools = config, models, tools
        self.candidates = list(models.candidates(config.default_model.label))
        self.adapter = self.candidates[0].adapter
        self.answers.permissions = answer_permissions(config)
        self.answers.candidates = tuple(self.candidates)
        dropped = self.choices.keep_only(models.labels)
        if dropped:
            _log.warning(
                "/model choices of {models} dropped: no such model any more", models=", ".join(dropped)
            )

    def reload_from_signal(self) -> None:
        """SIGHUP: reload the config file (``rxcord bot`` installs this handler)."""
        if not self._closing:
            self._reloading = asyncio.ensure_future(reload(self))

    def _stream_context(self, message: discord.Message) -> StreamContext:
        channel = message.channel
        guild_id = str(message.guild.id) if message.guild is not None else None
        locale = _locale_code(getattr(message.guild, "preferred_locale", None))
        channel_id = str(channel.id)
        persona = self.config.persona
        parent = str(channel.parent_id) if isinstance(channel, discord.Thread) and channel.parent_id else None
        if (
            persona is not None
            and self._webhook_channel is not None
            and self._webhook_channel in (channel_id, parent)
        ):
            return StreamContext(
                channel_id=channel_id,
                guild_id=guild_id,
                reply_to_message_id=str(message.id),
                thread_id=channel_id if parent is not None else None,
                webhook_id=self.secrets.webhook_id,
                webhook_token=self.secrets.webhook_token,
                persona_username=persona.username,
                persona_avatar_url=persona.avatar_url,
                locale=locale,
            )
        return StreamContext(
            channel_id=channel_id, guild_id=guild_id, reply_to_message_id=str(message.id), locale=locale
        )

    def _system_prompt(
        self,
        message: discord.Message,
        user_names: tuple[str, ...],
        bot_name: str,
        *,
        config: BotConfig | None = None,
        model: str | None = None,
    ) -> str:
        config = config or self.config
        now = self._now()
        channel_name = getattr(message.channel, "name", None) or "direct messages"
        values = {
            "date": now.strftime("%A, %Y-%m-%d"),
            "time": now.strftime("%H:%M %Z").strip(),
            "bot_name": bot_name,
            "user_name": message.author.display_name,
            "user_names": ", ".join(user_names) or message.author.display_name,
            "channel_name": channel_name,
            "model": model or config.default_model.model,
        }
        return config.prompt.system.format_map(values)

    async def _webhook_channel_id(self, base: str) -> str | None:
        assert self._session is not None and self.secrets.webhook_id and self.secrets.webhook_token
        url = f"{base}/webhooks/{self.secrets.webhook_id}/{self.secrets.webhook_token}"
        try:
            async with self._session.get(url) as response:
                data: Any = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            _log.warning(
                "persona webhook unreadable ({error}); answering as the bot", error=type(exc).__name__
            )
            return None
        channel = data.get("channel_id") if isinstance(data, dict) else None
        if channel is None:
            _log.warning("persona webhook not found; answering as the bot")
        return str(channel) if channel is not None else None
