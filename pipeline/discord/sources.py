"""A ``MessageSource`` over Discord's REST API, and the capped attachment read both sources use.

``RestSource`` reads through the REST sink's rate limiter (same buckets, same token), so
reading a conversation and sending the answer share one budget. Attachments are read from
Discord's CDN only (or the API's own host: the emulator), never from wherever a message
says, and never more than ``4 * (max_chars + 1)`` bytes (a UTF-8 character is at most four).
"""

from __future__ import annotations

__all__ = ("CDN_HOSTS", "RestSource", "read_capped_text")

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

import aiohttp
import yarl
from loguru import logger

from rxcord.core.body import Overflow, read_capped
from rxcord.core.errors import DiscordError
from rxcord.discord.conversation import Attachment, ChatLine
from rxcord.sinks.ratelimit import RateLimiter, Route

_log = logger.bind(stage="conversation")

CDN_HOSTS: Final = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
"""Hosts attachments are read from."""
_ATTEMPTS: Final = 5


async def read_capped_text(
    session: aiohttp.ClientSession, attachment: Attachment, max_chars: int, hosts: Iterable[str]
) -> str | None:
    """An attachment's text, at most *max_chars* + 1 characters (one more tells it was cut).

    Args:
        session: The HTTP session to read with.
        attachment: What to read; only an ``http(s)`` URL on one of *hosts* is read.
        max_chars: Characters wanted; at most ``4 * (max_chars + 1)`` bytes are read.
        hosts: The allowed hosts (lower case).

    Returns:
        The text (invalid UTF-8 replaced), or ``None``: refused host, error status, failure.
    """
    url = yarl.URL(attachment.url)
    if url.scheme not in ("https", "http") or (url.host or "").lower() not in set(hosts):
        _log.info("attachment {name} not read: not on Discord's CDN", name=attachment.filename)
        return None
    cap = 4 * (max_chars + 1)
    try:
        async with session.get(url, timeout=aiohttp.ClientTimeout(total=15)) as response:
            if response.status != 200:
                return None
            # Cut at the cap, not refused: the extra character tells the reader the text was cut.
            body = await read_capped(response.content.readany, cap, overflow=Overflow.TRUNCATE)
    except (aiohttp.ClientError, TimeoutError) as exc:
        _log.warning(
            "attachment {name} unreadable: {error}", name=attachment.filename, error=type(exc).__name__
        )
        return None
    return body.text()[: max_chars + 1]


class RestSource:
    """Reads messages over Discord's REST API through a rate limiter (the REST sink's).

    Args:
        base_url: The API base (``https://discord.com/api/v10``, or the emulator's).
        token: The bot token (sent as ``Authorization: Bot ...``, never logged).
        session: The HTTP session.
        limiter: The rate limiter shared with the sink.
    """

    def __init__(
        self, base_url: str, token: str, session: aiohttp.ClientSession, limiter: RateLimiter
    ) -> None:
        self._base = base_url.rstrip("/")
        self._token = token
        self._session = session
        self._limiter = limiter
        self._file_hosts = {*CDN_HOSTS, (yarl.URL(self._base).host or "").lower()}

    def __repr__(self) -> str:
        return f"RestSource({self._base!r})"

    async def message(self, channel_id: str, message_id: str) -> ChatLine | None:
        """One message, or ``None`` when it is gone or unreadable."""
        route = Route("GET", "/channels/{channel_id}/messages/{message_id}", (channel_id,))
        data = await self._get(route, f"/channels/{channel_id}/messages/{message_id}", None)
        return ChatLine.from_json(data) if isinstance(data, Mapping) else None

    async def before(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* messages before *message_id*, oldest first."""
        return await self._list(channel_id, "before", message_id, limit)

    async def after(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* messages after *message_id*, oldest first."""
        return await self._list(channel_id, "after", message_id, limit)

    async def attachment_text(self, attachment: Attachment, max_chars: int) -> str | None:
        """The attachment's text (capped), read from Discord's CDN or the API's host only."""
        return await read_capped_text(self._session, attachment, max_chars, self._file_hosts)

    async def _list(self, channel_id: str, side: str, message_id: str, limit: int) -> list[ChatLine]:
        route = Route("GET", "/channels/{channel_id}/messages", (channel_id,))
        query = {side: message_id, "limit": str(max(1, min(100, limit)))}
        data = await self._get(route, f"/channels/{channel_id}/messages", query)
        if not isinstance(data, list):
            return []
        lines = [ChatLine.from_json(item) for item in data if isinstance(item, Mapping)]
        # Discord lists newest first either way; the reader wants time order.
        return sorted(lines, key=lambda line: int(line.id) if line.id.isdigit() else 0)

    async def _get(self, route: Route, path: str, query: Mapping[str, str] | None) -> Any:
        headers = {"Authorization": f"Bot {self._token}"}
        async with self._limiter.acquire(route) as slot:
            for _ in range(_ATTEMPTS):
                await slot.wait()
                try:
                    async with self._session.get(
                        self._base + path, params=query, headers=headers
                    ) as response:
                        raw = await response.read()
                        status, answer_headers = response.status, response.headers
                    body = json.loads(raw) if raw else None
                except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
                    _log.warning("{route} failed: {error}", route=route.key, error=type(exc).__name__)
                    return None
                if slot.update(status, answer_headers, body) is not None:
                    continue  # rate limited: the slot waits before the next try
                if status >= 400:
                    _log.info("{route} -> {status}", route=route.key, status=status)
                    return None
                return body
        raise DiscordError(status=429, message=f"{route.key} still rate limited")
