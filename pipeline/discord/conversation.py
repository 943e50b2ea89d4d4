"""The conversation a Discord message asks about, as the model's context (``rxcord.discord``).

``read_conversation`` walks from the message being answered: its reply chain (a reply to any
part of a multi-message answer brings the whole answer and the question it answered), a
thread's starter message and, when the message replies to nothing, the thread's (or the DM's)
earlier messages; a user's back-to-back messages are one turn (``rxcord.discord.chain``).
``build_conversation`` turns those lines, oldest first, into ``rxcord.Message`` s:

* the assistant's own messages (the bot, its persona webhook) as ``assistant``;
* everyone else's as ``user``, prefixed ``[Alice, id 123]: `` — the display name *and* the
  user id, the name stripped of brackets, so a member nicknamed "Bob" cannot pass as the
  real Bob (adapters send no per-message name); the bot's mention removed;
* images as ``ImagePart`` s for vision models: inline, downloaded by an ``ImageReader``
  (``rxcord.discord.images.ImageFetcher``: Discord's hosts, a size cap, the SSRF guard; a
  refused image is named in a note), or by URL without one; text attachments inline (each
  read through a capped read), other files named in a note.

The context is bounded by ``ContextLimits`` (a message count, a character budget, an image
count, a per-attachment size), kept from the newest message back; whatever was left out is
said in ``Conversation.notes``, which ``Conversation.request`` appends to the system prompt.
The readers of messages (``MessageSource``) live in ``rxcord.discord.sources`` (REST) and
``rxcord.discord.discordpy`` (a discord.py client).
"""

from __future__ import annotations

__all__ = (
    "Attachment",
    "ChatLine",
    "ContextLimits",
    "Conversation",
    "ImageReader",
    "MessageSource",
    "build_conversation",
    "read_conversation",
    "read_images",
    "read_texts",
    "speaker_label",
)

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from rxcord.core.request import (
    ChatRequest,
    ImagePart,
    Message,
    Role,
    SamplerSettings,
    TextPart,
    ToolSpec,
)

if TYPE_CHECKING:
    import discord

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


class _LimitValueError(ValueError):
    """A limit out of range; ``field`` names it (the bot's config error points at the key)."""

    def __init__(self, attribute: attrs.Attribute[Any], message: str) -> None:
        super().__init__(message)
        self.field = attribute.name


def _positive(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value <= 0:
        raise _LimitValueError(attribute, f"must be a positive integer, got {value}")


def _non_negative(_: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if value < 0:
        raise _LimitValueError(attribute, f"must be zero or more, got {value}")


@attrs.frozen(kw_only=True)
class ContextLimits:
    """How much conversation goes to the model (the bot's ``[context]`` table)."""

    max_messages: int = attrs.field(default=25, validator=_positive)
    """Messages read and sent, the one being answered included."""
    max_chars: int = attrs.field(default=40_000, validator=_positive)
    """Characters of text sent, kept from the newest message back."""
    max_images: int = attrs.field(default=4, validator=_non_negative)
    """Images sent to a vision model, the newest first."""
    max_image_bytes: int = attrs.field(default=3_000_000, validator=_non_negative)
    """Per image downloaded for a vision model; a larger one is not sent, with a note. 3 MB keeps
    four images inline (base64: a third more) under Gemini's 20 MB request and within
    Anthropic's 5 MB per image."""
    max_attachment_chars: int = attrs.field(default=20_000, validator=_non_negative)
    """Per text attachment; longer ones are cut, with a note."""
    back_to_back_seconds: int = attrs.field(default=60, validator=_non_negative)
    """A user's message that replies to nothing takes in the same user's message just before it
    when that one is at most this much older (and so on back); ``0`` turns it off."""


@attrs.frozen(kw_only=True)
class Attachment:
    """One attachment of a Discord message."""

    filename: str
    url: str
    content_type: str = ""
    size: int = 0

    @property
    def kind(self) -> str:
        """The media type without parameters (``text/plain``)."""
        return self.content_type.split(";")[0].strip().lower()

    @property
    def is_image(self) -> bool:
        """Whether a vision model can read it."""
        return self.kind in _IMAGE_TYPES

    @property
    def is_text(self) -> bool:
        """Whether it is read as text."""
        kind = self.kind
        return (
            kind.startswith("text/")
            or kind == "application/json"
            or self.filename.lower().endswith(_TEXT_SUFFIXES)
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
    """The id of the message this one replies to (in the same channel)."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChatLine:
        """From a Discord message object (REST or gateway JSON).

        Args:
            data: The message object; a missing field reads as empty.

        Returns:
            The line; ``reply_to`` is set only for a reply within the same channel.
        """
        author = data.get("author") or {}
        member = data.get("member") or {}
        name = member.get("nick") or author.get("global_name") or author.get("username") or "user"
        channel_id = str(data.get("channel_id", ""))
        reference = data.get("message_reference") or {}
        same_channel = str(reference.get("channel_id") or channel_id) == channel_id
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
            channel_id=channel_id,
            author_id=str(author.get("id", "")),
            author_name=str(name),
            content=str(data.get("content") or ""),
            is_bot=bool(author.get("bot")),
            attachments=attachments,
            reply_to=str(reference["message_id"]) if reference.get("message_id") and same_channel else None,
        )


class MessageSource(Protocol):
    """Where the reader fetches messages and attachments (REST, a discord.py client, a fake)."""

    async def message(self, channel_id: str, message_id: str) -> ChatLine | None:
        """One message, or ``None`` when it is gone or unreadable."""
        ...

    async def before(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* (1..100) messages before *message_id*, oldest first."""
        ...

    async def after(self, channel_id: str, message_id: str, limit: int) -> list[ChatLine]:
        """Up to *limit* (1..100) messages after *message_id*, oldest first."""
        ...

    async def attachment_text(self, attachment: Attachment, max_chars: int) -> str | None:
        """The attachment's text, at most *max_chars* + 1 characters (one more tells it was cut).

        ``None`` when it cannot be read (not on Discord's CDN, an error status, a failure).
        """
        ...


class ImageReader(Protocol):
    """Downloads an image attachment for a vision model (``rxcord.discord.images.ImageFetcher``)."""

    async def image(self, attachment: Attachment) -> ImagePart | str:
        """The attachment as an inline ``ImagePart``, or why it is not sent (a short reason)."""
        ...


@attrs.frozen(kw_only=True)
class Conversation:
    """What goes to the model for one answer."""

    messages: tuple[Message, ...]
    """Oldest first; the last one is the message being answered."""
    notes: tuple[str, ...] = ()
    """What was left out (older messages, images, files), to show the model or the user."""
    user_names: tuple[str, ...] = ()
    """Display names of the users in the context, oldest first (placeholders, speaker guard)."""

    def system_prompt(self, system: str | None) -> str | None:
        """*system* with the notes appended (each its own paragraph)."""
        if not self.notes:
            return system
        return "\n\n".join([*([system] if system else []), *self.notes])

    def request(
        self,
        *,
        model: str,
        system: str | None = None,
        sampler: SamplerSettings | None = None,
        tools: Iterable[ToolSpec] = (),
    ) -> ChatRequest:
        """The ``ChatRequest`` for this conversation.

        Args:
            model: The model to ask.
            system: The system prompt; the notes are appended to it.
            sampler: Sampling settings (``max_tokens``, ``temperature``; default: the provider's).
            tools: Tools the model may call.

        Returns:
            A request with these messages, oldest first.
        """
        return ChatRequest(
            model=model,
            messages=self.messages,
            system=self.system_prompt(system),
            tools=tuple(tools),
            sampler=sampler if sampler is not None else SamplerSettings(),
        )


def _strip_mentions(text: str, bot_ids: Iterable[str]) -> str:
    for bot_id in bot_ids:
        text = re.sub(rf"<@!?{re.escape(bot_id)}>", "", text)
    return text.strip()


_NAME_NOISE: Final = re.compile(r"[\[\]\r\n]+")


def speaker_label(line: ChatLine) -> str:
    """``[Alice, id 123]``: the display name (brackets removed, so none closes early) and the id."""
    name = _NAME_NOISE.sub(" ", line.author_name).strip() or "user"
    return f"[{name}, id {line.author_id}]"


@attrs.define
class _Tally:
    """What the limits left out, counted while the lines are built."""

    older: int = 0
    images: int = 0
    refused_images: list[str] = attrs.field(factory=list)
    """``name (reason)`` of each image a reader refused."""
    cut_files: list[str] = attrs.field(factory=list)
    unread_files: list[str] = attrs.field(factory=list)
    other_files: list[str] = attrs.field(factory=list)


def _line_content(
    line: ChatLine, mine: set[str], texts: Mapping[str, str | None], max_chars: int, tally: _Tally
) -> str:
    """A line's text without mentions of *mine*, then its text attachments (cut ones named)."""
    text = _strip_mentions(line.content, mine)
    parts: list[str] = [text] if text else []
    for attachment in line.attachments:
        if attachment.is_image:
            continue
        if not attachment.is_text:
            tally.other_files.append(attachment.filename)
            continue
        body = texts.get(attachment.url)
        if body is None:
            tally.unread_files.append(attachment.filename)
            continue
        if len(body) > max_chars:
            body = body[:max_chars]
            tally.cut_files.append(attachment.filename)
        parts.append(f"<file name={attachment.filename!r}>\n{body}\n</file>")
    return "\n\n".join(parts)


def _left_out_notes(limits: ContextLimits, *, vision: bool, tally: _Tally) -> list[str]:
    """The notes that say what the limits left out of the context."""
    notes: list[str] = []
    if tally.older:
        notes.append(
            f"{tally.older} earlier message(s) of this conversation were left out "
            f"(limits: {limits.max_messages} messages, {limits.max_chars} characters)."
        )
    if tally.images:
        reason = (
            "this model reads no images" if not vision else f"at most {limits.max_images} images are sent"
        )
        notes.append(f"{tally.images} image attachment(s) were left out ({reason}).")
    if tally.refused_images:
        notes.append(f"Image(s) not sent: {', '.join(tally.refused_images)}.")
    if tally.cut_files:
        notes.append(
            f"Text attachment(s) {', '.join(tally.cut_files)} were cut at "
            f"{limits.max_attachment_chars} characters."
        )
    if tally.unread_files:
        notes.append(f"Attachment(s) {', '.join(tally.unread_files)} could not be read.")
    if tally.other_files:
        notes.append(f"Attachment(s) {', '.join(tally.other_files)} were left out (not text or an image).")
    return notes


def _images(
    line: ChatLine, *, vision: bool, room: int, tally: _Tally, read: Mapping[str, ImagePart | str] | None
) -> tuple[list[ImagePart], int]:
    """The line's images a vision model gets, and the slots of *room* they took.

    With *read* (the downloads, by URL) an image not in it was beyond the count, and a refused
    one takes its slot (``read_images`` picked the same images), named in the notes.
    """
    images: list[ImagePart] = []
    used = 0
    for attachment in line.attachments:
        if not attachment.is_image:
            continue
        got = (
            read.get(attachment.url)
            if read is not None
            else ImagePart(mime_type=attachment.kind, url=attachment.url)
        )
        if not vision or used >= room or got is None:
            tally.images += 1
            continue
        used += 1
        if isinstance(got, str):
            tally.refused_images.append(f"{attachment.filename} ({got})")
        else:
            images.append(got)
    return images, used


def build_conversation(
    lines: Sequence[ChatLine],
    *,
    assistant_ids: Iterable[str],
    limits: ContextLimits = ContextLimits(),
    vision: bool = False,
    texts: Mapping[str, str | None] | None = None,
    truncated_before: bool = False,
    images: Mapping[str, ImagePart | str] | None = None,
) -> Conversation:
    """Turn *lines* (oldest first) into the model's messages, within the limits.

    Args:
        lines: The conversation, oldest first; the last one is the message being answered.
        assistant_ids: Authors whose messages are the model's own (the bot, its persona webhook).
        limits: Message count and character budget.
        vision: Whether images are sent.
        texts: The text of text attachments by URL (read by the caller; ``None``: unreadable).
        truncated_before: Older messages exist that were not fetched.
        images: The downloaded images by URL, or why each was refused (``read_images``);
            ``None``: images go by URL.

    Returns:
        The conversation; its notes say what was left out.
    """
    mine = {str(i) for i in assistant_ids}
    texts = texts or {}
    notes: list[str] = []
    tally = _Tally()
    budget = limits.max_chars
    images_left = limits.max_images
    kept: list[Message] = []
    names: list[str] = []
    window = list(lines)[-limits.max_messages :]
    tally.older = len(lines) - len(window) + (1 if truncated_before else 0)
    for index, line in enumerate(reversed(window)):
        assistant = line.author_id in mine
        content = _line_content(line, mine, texts, limits.max_attachment_chars, tally)
        if not assistant:
            content = f"{speaker_label(line)}: {content}"
        if len(content) > budget:
            if index > 0:
                tally.older += len(window) - index
                break
            content = content[:budget]
            notes.append("The message being answered was cut to fit the context budget.")
        budget -= len(content)
        if assistant:
            kept.append(Message(role=Role.ASSISTANT, content=(TextPart(content),)))
            continue
        parts, used = _images(line, vision=vision, room=images_left, tally=tally, read=images)
        images_left -= used
        kept.append(Message(role=Role.USER, content=(TextPart(content), *parts)))
        names.append(line.author_name)
    kept.reverse()
    notes += _left_out_notes(limits, vision=vision, tally=tally)
    unique = tuple(dict.fromkeys(reversed(names)))
    return Conversation(messages=tuple(kept), notes=tuple(notes), user_names=unique)


async def read_texts(
    lines: Iterable[ChatLine], source: MessageSource, max_chars: int
) -> dict[str, str | None]:
    """The text of every text attachment of *lines*, by URL, each read once (capped)."""
    texts: dict[str, str | None] = {}
    for line in lines:
        for attachment in line.attachments:
            if attachment.is_text and attachment.url not in texts:
                texts[attachment.url] = await source.attachment_text(attachment, max_chars)
    return texts


async def read_images(
    lines: Sequence[ChatLine], reader: ImageReader, limits: ContextLimits, *, assistant_ids: Iterable[str]
) -> dict[str, ImagePart | str]:
    """The images ``build_conversation`` would send, downloaded once each (at most ``max_images``).

    The same pick as the builder's: the window's user messages, newest first, each one's
    images in order, so no image is downloaded that the context would not hold by count.
    """
    mine = {str(i) for i in assistant_ids}
    wanted: dict[str, Attachment] = {}
    for line in reversed(list(lines)[-limits.max_messages :]):
        if line.author_id in mine:
            continue
        for attachment in line.attachments:
            if attachment.is_image and len(wanted) < limits.max_images:
                wanted.setdefault(attachment.url, attachment)
    return {url: await reader.image(attachment) for url, attachment in wanted.items()}


async def read_conversation(
    message: discord.Message,
    *,
    me: discord.abc.User,
    limits: ContextLimits = ContextLimits(),
    vision: bool = False,
    source: MessageSource | None = None,
    assistant_ids: Iterable[int | str] = (),
    images: ImageReader | None = None,
) -> Conversation:
    """The conversation that ends with a discord.py *message*, ready for the model.

    Args:
        message: The message being answered.
        me: The bot's user: its messages are the assistant's, its mention is removed.
        limits: How much is read and sent.
        vision: Whether the model reads images.
        source: Where earlier messages are read (default: the message's own client, through
            discord.py).
        assistant_ids: More authors whose messages are the assistant's (a persona webhook).
        images: Downloads images for a vision model, sent inline (``ImageFetcher``); without
            one they are sent by URL.

    Returns:
        The conversation, oldest first, with notes on what was left out.

    Raises:
        rxcord.MissingExtraError: discord.py is not installed.
    """
    from rxcord.discord.chain import collect
    from rxcord.discord.discordpy import DiscordPySource, is_dm, line_from_discord, thread_starter

    source = source if source is not None else DiscordPySource.for_message(message)
    mine = {str(me.id), *(str(i) for i in assistant_ids)}
    trigger = line_from_discord(message)
    thread = thread_starter(message)
    lines, more = await collect(trigger, source, limits, assistant_ids=mine, thread=thread, dm=is_dm(message))
    texts = await read_texts(lines, source, limits.max_attachment_chars)
    read = await read_images(lines, images, limits, assistant_ids=mine) if vision and images else None
    return build_conversation(
        lines,
        assistant_ids=mine,
        limits=limits,
        vision=vision,
        texts=texts,
        truncated_before=more,
        images=read,
    )
