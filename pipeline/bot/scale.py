"""Several processes of one bot (``[scale]``): what they share through Redis, and the gateway's shards.

With ``[scale] redis_url_env`` every piece of state that must hold across processes lives in
Redis: Discord's rate limits (``rxcord.sinks.RedisStore``: one token's budget, whatever process
spends it), the limits' counters (``rxcord.bot.counters.RedisCounters``) and ``/stop`` /
``/kill`` (``rxcord.discord.StopsElsewhere``, over the library's Redis stop bus). Everything is
keyed by the token's digest, so two bots on one Redis never share a budget, and the token never
reaches a key.

``shard_count`` / ``shard_ids`` run the gateway as discord.py's ``AutoShardedClient``: Discord
sends each guild's events to shard ``(guild_id >> 22) % shard_count`` and DMs to shard 0, so
each process answers the guilds of its shards.
"""

from __future__ import annotations

__all__ = ("make_client", "namespace", "presence", "redis_url", "shared_limiter", "stops_elsewhere")

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rxcord import MissingCredentialError
from rxcord.bot.config import BotConfig
from rxcord.discord import Answers, StopsElsewhere
from rxcord.sinks import RateLimiter, make_limiter

if TYPE_CHECKING:  # discord.py only where a client is made: the counters need just the namespace
    import discord


def redis_url(config: BotConfig, env: Mapping[str, str]) -> str | None:
    """The shared Redis URL; ``None`` without ``[scale] redis_url_env`` (unset: MissingCredentialError)."""
    variable = config.scale.redis_url_env
    if variable is None:
        return None
    url = env.get(variable, "")
    if not url:
        raise MissingCredentialError(variable)
    return url


def namespace(token: str) -> str:
    """The Redis namespace of one bot token: a short digest (the token never reaches a key or a log)."""
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def shared_limiter(config: BotConfig, env: Mapping[str, str], token: str) -> RateLimiter:
    """Discord's rate limiter: in this process, or its state in Redis shared by every process."""
    url = redis_url(config, env)
    if url is None:
        return make_limiter(None)
    return make_limiter(url, namespace=namespace(token))


def stops_elsewhere(
    config: BotConfig, env: Mapping[str, str], token: str, answers: Answers
) -> StopsElsewhere | None:
    """``/stop`` and ``/kill`` across processes (``None`` with one process: no Redis)."""
    url = redis_url(config, env)
    return StopsElsewhere(answers, url, namespace=namespace(token)) if url is not None else None


def presence(config: BotConfig) -> discord.CustomActivity | None:
    """The status line under the bot's name (``[discord] status``; ``""``: none)."""
    import discord

    status = config.discord.status.strip()
    return discord.CustomActivity(name=status) if status else None


def make_client(config: BotConfig, intents: discord.Intents, **options: Any) -> discord.Client:
    """A ``discord.Client``, or an ``AutoShardedClient`` running ``[scale]``'s shards of this process."""
    import discord

    scale = config.scale
    options.setdefault("activity", presence(config))
    if scale.shard_count is None:
        return discord.Client(intents=intents, **options)
    if scale.shard_ids:
        options["shard_ids"] = list(scale.shard_ids)
    return discord.AutoShardedClient(intents=intents, shard_count=scale.shard_count, **options)
