"""The bot's use and cost caps: ``Limits``, the answer manager's admission check.

Before a message is answered, ``admit`` asks the counters (``rxcord.bot.counters``) whether
every ``[limits]`` cap leaves room: requests per user per window, running answers per user and
per channel, tokens and cost per user and per guild per UTC day. A refused message gets one
short text naming the limit and when it resets ("You have used 20 of 20 requests this hour;
try again in 12 min"), which the answer manager posts once, and no provider call.

``settle`` runs for every admitted message, also after a stop, a kill, an interrupt or a
failure: it frees the message's concurrency leases and charges what the answer used. A stopped
or interrupted answer charges its estimated usage (``Usage.estimated``: the prompt's tokens
included), like a finished one its reported usage. The cost is the provider's reported cost
when it gave one (OpenRouter's ``usage.cost``), else the tokens priced by ``[prices]``; with
neither, the tokens count and the cost is unknown (cost caps do not see that answer; a warning
says so once per model).
"""

from __future__ import annotations

__all__ = ("REACTION", "Limits", "answered_model", "charge_of", "refusal_text")

import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Final

from loguru import logger

from rxcord import MissingCredentialError, TurnResult
from rxcord.bot.config import BotConfig, LimitsSection, ModelPrice
from rxcord.bot.counters import MEMORY, Ask, Charge, CounterStore, RedisCounters, Refusal, SqliteCounters
from rxcord.bot.scale import namespace
from rxcord.io import default_catalog

if TYPE_CHECKING:
    import discord

_log = logger.bind(stage="limits")

REACTION: Final = "⏳"
"""The reaction a refused message gets with ``[limits] refusal = "reaction"``."""

_WHAT: Final = {
    "concurrent_per_user": (
        "limits.concurrent_per_user",
        "You already have {used} of {limit} answers running",
    ),
    "concurrent_per_channel": (
        "limits.concurrent_per_channel",
        "{used} of {limit} answers are already running in this channel",
    ),
    "requests_per_user": ("limits.requests_per_user", "You have used {used} of {limit} requests {period}"),
    "tokens_per_user_per_day": ("limits.tokens_per_user", "You have used {used} of {limit} tokens today"),
    "tokens_per_guild_per_day": (
        "limits.tokens_per_guild",
        "This server has used {used} of {limit} tokens today",
    ),
    "cost_per_user_per_day": ("limits.cost_per_user", "You have used ${used} of ${limit} today"),
    "cost_per_guild_per_day": ("limits.cost_per_guild", "This server has used ${used} of ${limit} today"),
}


def answered_model(result: TurnResult) -> str | None:
    """The model of the turn's last attempt (its label is ``provider:model#keyN``)."""
    if not result.attempts:
        return None
    label = result.attempts[-1].label
    model = label.partition(":")[2].rpartition("#key")[0]
    return model or None


def charge_of(result: TurnResult | None, prices: Mapping[str, ModelPrice]) -> tuple[Charge, str | None]:
    """What *result* costs, and the model whose price was missing (``None``: cost known or nothing used)."""
    usage = result.usage if result is not None else None
    if result is None or usage is None:
        return Charge(), None
    tokens = usage.input_tokens + usage.output_tokens
    if usage.cost is not None:
        return Charge(tokens=tokens, cost=usage.cost), None
    model = answered_model(result)
    price = prices.get(model) if model is not None else None
    if price is None:
        return Charge(tokens=tokens, cost=None), model or "?"
    cost = (
        usage.input_tokens * price.input_per_million + usage.output_tokens * price.output_per_million
    ) / 1e6
    return Charge(tokens=tokens, cost=cost), None


def _wait(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 60:
        return f"{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{hours} h {rest} min" if rest else f"{hours} h"


def _period(window_seconds: int) -> str:
    named = {3600: "this hour", 86_400: "today", 60: "this minute"}
    return named.get(window_seconds) or f"in {_wait(window_seconds)}"


def _amount(setting: str, value: float) -> str:
    return f"{value:.2f}" if setting.startswith("cost") else str(int(value))


def refusal_text(refusal: Refusal, limits: LimitsSection, now: float, *, locale: str | None = None) -> str:
    """The short reply: which limit, how much of it is used, when it resets; the setting's name below."""
    copy = default_catalog().for_locale(locale)
    key, default = _WHAT[refusal.setting]
    fields = {
        "used": _amount(refusal.setting, refusal.used),
        "limit": _amount(refusal.setting, refusal.limit),
        "period": _period(limits.window_seconds),
    }
    text = copy.text(key, default, **fields)
    if refusal.resets_at is None:
        after = copy.text("limits.after_answer", "try again when one of them has finished")
    else:
        after = copy.text("limits.try_again", "try again in {wait}", wait=_wait(refusal.resets_at - now))
    return f"{text}; {after}.\n-# [limits] {refusal.setting}"


class Limits:
    """The ``[limits]`` caps, as the answer manager's ``Admission``.

    Args:
        limits: The ``[limits]`` table.
        prices: The ``[prices]`` tables (dollars per million tokens, by model).
        store: Where the counters live (``SqliteCounters`` or ``RedisCounters``).
        clock: Epoch seconds (injected: tests pass their own; the bot, ``time.time``).
    """

    def __init__(
        self,
        limits: LimitsSection,
        prices: Mapping[str, ModelPrice],
        *,
        store: CounterStore,
        clock: Callable[[], float],
    ) -> None:
        self.limits = limits
        self.prices = dict(prices)
        self._store = store
        self._clock = clock
        self._admitted: dict[str, Ask] = {}
        """Admitted messages not yet settled, by message id (their leases' owners)."""
        self._unpriced: set[str] = set()

    @classmethod
    def from_config(
        cls, config: BotConfig, env: Mapping[str, str], *, clock: Callable[[], float] = time.time
    ) -> Limits:
        """SQLite at ``[limits] state_file``, or Redis when ``[scale] redis_url_env`` names one."""
        variable = config.scale.redis_url_env
        store: CounterStore
        if variable is not None:
            url = env.get(variable, "")
            if not url:
                raise MissingCredentialError(variable)
            # One bot's counters apart from another's on the same Redis: its token's digest.
            token = env.get(config.discord.token_env, "")
            store = RedisCounters(url, config.limits, prefix=f"rxcord:limits:{namespace(token)}")
        else:
            # load_config always names a file (next to the config); a config built in code
            # without one keeps the counters in memory, for this process's life.
            store = SqliteCounters(config.limits.state_file or MEMORY, config.limits)
        return cls(config.limits, config.prices, store=store, clock=clock)

    async def check(
        self, *, user: str, channel: str, guild: str | None, message_id: str, locale: str | None = None
    ) -> str | None:
        """Admit (``None``) or refuse (the refusal's text) one message; an admitted one must be settled."""
        ask = Ask(user=user, channel=channel, guild=guild, lease=message_id, now=self._clock())
        refusal = await self._store.admit(ask)
        if refusal is None:
            self._admitted[message_id] = ask
            return None
        _log.info(
            "refused message {message} of user {user}: [limits] {setting} ({used} of {limit})",
            message=message_id,
            user=user,
            setting=refusal.setting,
            used=refusal.used,
            limit=refusal.limit,
        )
        return refusal_text(refusal, self.limits, ask.now, locale=locale)

    async def release(self, message_id: str, result: TurnResult | None) -> None:
        """Free the message's leases and charge what its answer used (estimated usage included)."""
        ask = self._admitted.pop(message_id, None)
        if ask is None:
            _log.warning("settle for message {message}, which was not admitted", message=message_id)
            return
        charge, unpriced = charge_of(result, self.prices)
        if unpriced is not None and unpriced not in self._unpriced:
            self._unpriced.add(unpriced)
            _log.warning(
                "model {model} reported no cost and has no [prices] entry: "
                "its tokens count, its cost is unknown",
                model=unpriced,
            )
        await self._store.settle(ask, charge, self._clock())

    async def admit(self, message: discord.Message) -> str | None:
        """``Admission.admit``: ``None`` to answer; the refusal text (reply mode) or ``""`` (reacted)."""
        guild = message.guild
        locale = getattr(guild, "preferred_locale", None)
        text = await self.check(
            user=str(message.author.id),
            channel=str(message.channel.id),
            guild=str(guild.id) if guild is not None else None,
            message_id=str(message.id),
            locale=getattr(locale, "value", locale) if locale is not None else None,
        )
        if text is None or self.limits.refusal == "reply":
            return text
        try:
            await message.add_reaction(REACTION)
        except Exception as exc:  # a refusal signal is best effort: never an unhandled error
            _log.warning("refusal reaction not added: {error}", error=type(exc).__name__)
        return ""

    async def settle(self, message: discord.Message, result: TurnResult | None) -> None:
        """``Admission.settle``: always called for an admitted message."""
        await self.release(str(message.id), result)

    def retune(self, limits: LimitsSection, prices: Mapping[str, ModelPrice]) -> None:
        """A reload's caps and prices: the next admit uses them; counters and leases stay as they are."""
        self.limits = limits
        self.prices = dict(prices)
        self._store.retune(limits)

    async def close(self) -> None:
        """Close the counters' store."""
        await self._store.close()
