"""Stage 01 from a conversation: Discord messages to the model's context.

``collect`` walks the reply chain from the message that asked (and, in a thread without a
reply, the thread's earlier messages), fetching through the REST sink's rate limiter
(``Fetcher``); ``build_messages`` turns the lines, oldest first, into ``Message`` s: the bot's
own messages as ``assistant``, everyone else's as ``user`` with their display name in front
(``Alice: ...``; adapters do not send a per-message name), the bot's mention removed, images
as ``ImagePart`` s for vision models, text attachments as text. The context is bounded by a
message count and a character budget, kept from the newest message back; whatever was left
out (older messages, images, the end of a long attachment) is told to the model in one note.
"""

from __future__ import annotations

__all__ = ("Attachment", "ChatLine", "Context", "Fetcher", "build_messages", "collect")

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import aiohttp
import attrs
import yarl
from loguru import logger

from rxcord import DiscordError, ImagePart, Message, RateLimiter, Role, TextPart
from rxcord.bot.config import ContextLimits
from rxcord.sinks.ratelimit import Route

_log = logger.bind(stage="bot-context")

_CDN_HOSTS: Final = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
_IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
_TEXT_SUFFIXES: Final = (
    ".txt",
    ".md",
    ".py",
    ".json",
    ".csv",
    ".log",
    ".toml",
    ".yaml",
    ".yml",
    ".js",
    ".ts",
)


@attrs.frozen(kw_only=True)
class Attachment:
    """One attachment of a Discord message."""

    filename: str
    url: str
    content_type: str = ""
    size: int = 0

    @property
    def is_image(self) -> bool:
        """Whether a vision model can read it."""
        return self.content_type.split(";")[0].strip() in _IMAGE_TYPES

    @property
    def is_text(self) -> bool:
        """Whether it is read as text."""
        kind = self.content_type.split(";")[0].strip()
        return (
            kind.startswith("text/") or kind == "application/json" or self.filename.endswith(_TEXT_SUFFIXES)
        )


@attrs.frozen(kw_only=True)
class ChatLine:
    """One Discord message, as the context needs it."""

    id: str
    channel_id: str
    author_id: str
    author_name: str
    content: str = ""
    is_bot: bool = False
    attachments: tuple[Attachment, ...] = ()
    reply_to: str | None = None
    """The id of the message this one replies to."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatLine:
        """From a Discord message object (REST or gateway JSON)."""
        author = data.get("author") or {}
        member = data.get("member") or {}
        name = member.get("nick") or author.get("global_name") or author.get("username") or "user"
        reference = data.get("message_reference") or {}
        attachments = tuple(
            Attachment(
                filename=str(a.get("filename", "")),
                url=str(a.get("url", "")),
                content_type=str(a.get("content_type") or ""),
                size=int(a.get("size") or 0),
            )
            for a in data.get("attachments") or ()
        )
        return cls(
            id=str(data.get("id", "")),
            channel_id=str(data.get("channel_id", "")),
            author_id=str(author.get("id", "")),
            author_name=str(name),
            content=str(data.get("content") or ""),
            is_bot=bool(author.get("bot")),
            attachments=attachments,
            reply_to=str(reference["message_id"]) if reference.get("message_id") else None,
        )


@attrs.frozen(kw_only=True)
class Context:
    """What goes to the model for one answer."""

    messages: tuple[Message, ...]
    notes: tuple[str, ...] = ()
    """What was left out, told to the model (appended to the system prompt)."""
    user_names: tuple[str, ...] = ()
    """Display names of the users in the context, oldest first (placeholders, speaker guard)."""


TextLoader = Callable[[Attachment], Awaitable[str | None]]


class Fetcher:
    """Reads messages over Discord's REST API through the sink's rate limiter (same buckets, same token)."""

    def __init__(
        self, base_url: str, token: str, session: aiohttp.ClientSession, limiter: RateLimiter
    ) -> None:
        self._base = base_url.rstrip("/")
        self._token = token
        self._session = session
        self._limiter = limiter
        # Attachments are read from Discord's CDN only (or the host of the API itself: the
        # emulator), never from wherever a message says: no request to a private address.
        self._file_hosts = {*_CDN_HOSTS, (yarl.URL(self._base).host or "").lower()}

    def __repr__(self) -> str:
        return f"Fetcher({self._base!r})"

    async def message(self, channel_id: str, message_id: str) -> ChatLine | None:
        """One message, or ``None`` when it is gone or unreadable."""
        route = Route("GET", "/channels/{channel_id}/messages/{message_id}", (channel_id,))
        data = await self._get(route, f"/channels/{channel_id}/messages/{message_id}", None)
        return ChatLine.from_json(data) if isinstance(data, Mapping) else None

    async def before(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* messages before *message_id*, oldest first."""
        route = Route("GET", "/channels/{channel_id}/messages", (channel_id,))
        query = {"before": message_id, "limit": str(max(1, min(100, limit)))}
        data = await self._get(route, f"/channels/{channel_id}/messages", query)
        if not isinstance(data, list):
            return []
        return [ChatLine.from_json(item) for item in reversed(data) if isinstance(item, Mapping)]

    async def attachment_text(self, attachment: Attachment, max_chars: int) -> str | None:
        """The attachment's text, at most *max_chars* characters plus one (to tell it was cut)."""
        url = yarl.URL(attachment.url)
        if url.scheme not in ("https", "http") or (url.host or "").lower() not in self._file_hosts:
            _log.info("attachment {name} not read: not on Discord's CDN", name=attachment.filename)
            return None
        try:
            async with self._session.get(attachment.url, timeout=aiohttp.ClientTimeout(total=15)) as response:
                if response.status != 200:
                    return None
                raw = await response.content.read(4 * (max_chars + 1))
        except (aiohttp.ClientError, TimeoutError) as exc:
            _log.warning(
                "attachment {name} unreadable: {error}", name=attachment.filename, error=type(exc).__name__
            )
            return None
        return raw.decode("utf-8", errors="replace")[: max_chars + 1]

    async def _get(self, route: Route, path: str, query: Mapping[str, str] | None) -> Any:
        headers = {"Authorization": f"Bot {self._token}"}
        async with self._limiter.acquire(route) as slot:
            for _ in range(5):
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


async def collect(
    trigger: ChatLine,
    fetch: Fetcher,
    limits: ContextLimits,
    *,
    in_thread: bool = False,
) -> tuple[list[ChatLine], bool]:
    """The conversation that ends with *trigger*, oldest first, and whether older messages exist.

    The reply chain is followed first; in a thread, a message that replies to nothing takes the
    thread's earlier messages instead. At most ``limits.max_messages`` lines.
    """
    lines = [trigger]
    more = False
    current = trigger
    seen = {trigger.id}
    while current.reply_to is not None:
        if len(lines) >= limits.max_messages:
            more = True
            break
        parent = await fetch.message(current.channel_id, current.reply_to)
        if parent is None or parent.id in seen:
            break
        seen.add(parent.id)
        lines.append(parent)
        current = parent
    if in_thread and trigger.reply_to is None and len(lines) < limits.max_messages:
        wanted = limits.max_messages - len(lines)
        earlier = await fetch.before(trigger.channel_id, trigger.id, wanted + 1)
        if len(earlier) > wanted:
            more = True
            earlier = earlier[-wanted:]
        lines.extend(reversed(earlier))
    lines.reverse()
    return lines, more


def _strip_mentions(text: str, bot_ids: Iterable[str]) -> str:
    for bot_id in bot_ids:
        text = re.sub(rf"<@!?{re.escape(bot_id)}>", "", text)
    return text.strip()


def _line_content(
    line: ChatLine, mine: set[str], texts: Mapping[str, str | None], max_chars: int, cut_files: list[str]
) -> str:
    """A line's text without mentions of *mine*, then its readable text attachments (cut ones named)."""
    text = _strip_mentions(line.content, mine)
    parts: list[str] = [text] if text else []
    for attachment in line.attachments:
        if attachment.is_text and attachment.url in texts:
            body = texts[attachment.url]
            if body is None:
                continue
            if len(body) > max_chars:
                body = body[:max_chars]
                cut_files.append(attachment.filename)
            parts.append(f"<file name={attachment.filename!r}>\n{body}\n</file>")
    return "\n\n".join(parts)


def _left_out_notes(
    limits: ContextLimits, *, vision: bool, older: int, images: int, cut_files: list[str]
) -> list[str]:
    """The notes that tell the model what the limits left out of its context."""
    notes: list[str] = []
    if older:
        notes.append(
            f"{older} earlier message(s) of this conversation were left out "
            f"(limits: {limits.max_messages} messages, {limits.max_chars} characters)."
        )
    if images:
        reason = (
            "this model reads no images" if not vision else f"at most {limits.max_images} images are sent"
        )
        notes.append(f"{images} image attachment(s) were left out ({reason}).")
    if cut_files:
        notes.append(
            f"Text attachment(s) {', '.join(cut_files)} were cut at {limits.max_attachment_chars} characters."
        )
    return notes


def build_messages(
    lines: Sequence[ChatLine],
    *,
    assistant_ids: Iterable[str],
    limits: ContextLimits,
    vision: bool,
    texts: Mapping[str, str | None] | None = None,
    truncated_before: bool = False,
) -> Context:
    """Turn *lines* (oldest first) into the model's messages, within the limits.

    Args:
        lines: The conversation, oldest first; the last one is the message being answered.
        assistant_ids: Authors whose messages are the model's own (the bot, its persona webhook).
        limits: Message count and character budget.
        vision: Whether images are sent.
        texts: The text of text attachments by URL (read by the caller; ``None``: unreadable).
        truncated_before: Older messages exist that were not fetched.
    """
    mine = set(assistant_ids)
    texts = texts or {}
    notes: list[str] = []
    dropped_images = 0
    cut_files: list[str] = []
    budget = limits.max_chars
    images_left = limits.max_images
    kept: list[Message] = []
    names: list[str] = []
    window = list(lines)[-limits.max_messages :]
    older = len(lines) - len(window) + (1 if truncated_before else 0)
    for index, line in enumerate(reversed(window)):
        assistant = line.author_id in mine
        content = _line_content(line, mine, texts, limits.max_attachment_chars, cut_files)
        if not assistant:
            content = f"{line.author_name}: {content}"
        if len(content) > budget:
            if index == 0:
                content = content[:budget]
                notes.append("The message being answered was cut to fit the context budget.")
            else:
                older += len(window) - index
                break
        budget -= len(content)
        images: list[ImagePart] = []
        for attachment in line.attachments:
            if not attachment.is_image:
                continue
            if vision and images_left > 0:
                images_left -= 1
                images.append(ImagePart(mime_type=attachment.content_type.split(";")[0], url=attachment.url))
            else:
                dropped_images += 1
        if assistant:
            kept.append(Message(role=Role.ASSISTANT, content=(TextPart(content),)))
        else:
            kept.append(Message(role=Role.USER, content=(TextPart(content), *images)))
            names.append(line.author_name)
    kept.reverse()
    notes += _left_out_notes(limits, vision=vision, older=older, images=dropped_images, cut_files=cut_files)
    unique = tuple(dict.fromkeys(reversed(names)))
    return Context(messages=tuple(kept), notes=tuple(notes), user_names=unique)
