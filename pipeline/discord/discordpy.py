"""The conversation reader's discord.py side (optional extra ``rxcord[discord]``).

``line_from_discord`` turns a ``discord.Message`` into a ``ChatLine``; ``DiscordPySource``
reads earlier messages through the discord.py client that received the message (its
connection pool and rate limiting), attachments through a capped read on Discord's CDN.
"""

from __future__ import annotations

__all__ = ("DiscordPySource", "is_dm", "line_from_discord", "thread_starter")

from collections.abc import Callable
from typing import Any

import aiohttp
from loguru import logger

from rxcord.core.errors import MissingExtraError
from rxcord.discord.conversation import Attachment, ChatLine
from rxcord.discord.sources import CDN_HOSTS, read_capped_text

try:
    import discord
except ImportError as exc:  # the name says what to install, not a bare ModuleNotFoundError
    raise MissingExtraError(
        "discord", "discord", "rxcord.discord.read_conversation", package="discord.py"
    ) from exc

_log = logger.bind(stage="conversation")

Channels = Callable[[int], Any]
"""Finds a channel (anything with ``fetch_message`` and ``history``) by id."""


def line_from_discord(message: discord.Message) -> ChatLine:
    """The ``ChatLine`` of a discord.py message (a reply to another channel replies to nothing)."""
    reference = message.reference
    reply_to = (
        str(reference.message_id)
        if reference is not None and reference.message_id and reference.channel_id == message.channel.id
        else None
    )
    return ChatLine(
        id=str(message.id),
        channel_id=str(message.channel.id),
        author_id=str(message.author.id),
        author_name=message.author.display_name,
        content=message.content,
        is_bot=message.author.bot,
        attachments=tuple(
            Attachment(filename=a.filename, url=a.url, content_type=a.content_type or "", size=a.size)
            for a in message.attachments
        ),
        reply_to=reply_to,
    )


def thread_starter(message: discord.Message) -> tuple[str, str] | None:
    """``(parent channel id, thread id)`` when *message* is in a thread: where its starter is."""
    channel = message.channel
    if isinstance(channel, discord.Thread) and channel.parent_id:
        return str(channel.parent_id), str(channel.id)
    return None


def is_dm(message: discord.Message) -> bool:
    """Whether *message* is a direct message (its earlier messages are the conversation)."""
    return isinstance(message.channel, discord.DMChannel)


class DiscordPySource:
    """Reads messages through a discord.py client (its cache first, then its REST calls).

    Args:
        channels: Finds a channel by id (``client.get_partial_messageable``: no cache needed).
        session: The HTTP session attachments are read with (default: one per read).
    """

    def __init__(self, channels: Channels, *, session: aiohttp.ClientSession | None = None) -> None:
        self._channels = channels
        self._session = session

    @classmethod
    def for_client(
        cls, client: discord.Client, *, session: aiohttp.ClientSession | None = None
    ) -> DiscordPySource:
        """A source reading through *client* (any channel it can see)."""
        return cls(client.get_partial_messageable, session=session)

    @classmethod
    def for_message(cls, message: discord.Message) -> DiscordPySource:
        """A source reading through the channel of *message* (and its thread's parent)."""
        channel = message.channel
        known: dict[int, Any] = {channel.id: channel}
        parent = getattr(channel, "parent", None)
        if parent is not None:
            known[parent.id] = parent
        return cls(known.get)

    def __repr__(self) -> str:
        return "DiscordPySource()"

    async def message(self, channel_id: str, message_id: str) -> ChatLine | None:
        """One message, or ``None`` when it is gone, unreadable or in an unknown channel."""
        channel = self._channels(int(channel_id))
        if channel is None:
            return None
        try:
            found = await channel.fetch_message(int(message_id))
        except discord.HTTPException as exc:
            _log.info("message {id} unreadable: {error}", id=message_id, error=type(exc).__name__)
            return None
        return line_from_discord(found)

    async def before(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* messages before *message_id*, oldest first."""
        return await self._history(channel_id, limit, before=discord.Object(int(message_id)))

    async def after(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* messages after *message_id*, oldest first."""
        return await self._history(channel_id, limit, after=discord.Object(int(message_id)))

    async def attachment_text(self, attachment: Attachment, max_chars: int) -> str | None:
        """The attachment's text (capped), read from Discord's CDN only."""
        if self._session is not None:
            return await read_capped_text(self._session, attachment, max_chars, CDN_HOSTS)
        async with aiohttp.ClientSession() as session:
            return await read_capped_text(session, attachment, max_chars, CDN_HOSTS)

    async def _history(self, channel_id: str, limit: int, **side: discord.Object) -> list[ChatLine]:
        channel = self._channels(int(channel_id))
        if channel is None:
            return []
        lines: list[ChatLine] = []
        try:
            async for found in channel.history(limit=max(1, min(100, limit)), **side):
                lines.append(line_from_discord(found))
        except discord.HTTPException as exc:
            _log.info("history of {id} unreadable: {error}", id=channel_id, error=type(exc).__name__)
            return []
        return sorted(lines, key=lambda line: int(line.id))
