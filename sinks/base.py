"""The seam between delivery logic and Discord I/O (httpx-transport style).

Stage 07 logic (chunking, payload building, pacing) never touches HTTP; it
calls a ``DiscordSink``. The REST sink, the webhook route, the discord.py
adapter and the in-memory sink all implement this protocol, so tests and
notebooks can swap them freely.
"""

from __future__ import annotations

__all__ = ("RECENT_LIMIT", "DiscordSink", "EditableSink", "ReadableSink", "recent_messages")

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

from rxcord.core.config import StreamContext
from rxcord.core.state import SentMessage

RECENT_LIMIT: Final = 50
"""Messages read back to find one whose create got an ambiguous answer (Discord allows 1-100)."""


class DiscordSink(Protocol):
    """Sends messages and typing indicators to one Discord target.

    Implementations raise ``rxcord.core.errors.DiscordStopError`` for failures
    that must stop the stream (403 missing access -> ``missing_access``,
    404 unknown channel -> ``channel_deleted``), ``UnknownWebhookError`` for a
    dead webhook and ``DiscordError`` for anything else they could not
    recover from (after their own bounded retries of 429 and 5xx).
    """

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        """Send one message (channel message, or webhook execution when the context has a webhook)."""
        ...

    async def trigger_typing(self, context: StreamContext) -> None:
        """Show the typing indicator in the context's channel (lasts 10 s)."""
        ...


class EditableSink(DiscordSink, Protocol):
    """A ``DiscordSink`` that can also edit and delete the messages it sent (edit-in-place delivery).

    Bot messages use ``PATCH`` / ``DELETE /channels/{channel_id}/messages/{message_id}``,
    webhook messages ``/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}``
    (``thread_id`` from the context); each route has its own rate-limit bucket.
    ``RestSink``, ``MemorySink`` and ``DiscordPySink`` implement it.
    """

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        """Replace the content (and embeds) of message ``message_id``; resend ``allowed_mentions``."""
        ...

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        """Delete message ``message_id`` (a message already gone counts as deleted)."""
        ...


class ReadableSink(Protocol):
    """A sink that can read back the latest messages of a context's channel.

    Edit-in-place delivery uses it to find a message whose create got an ambiguous answer
    (a 500 or a reset after Discord stored it, a 2xx without a usable body), so that it can
    go on editing it. Discord lists messages only for the bot token
    (``GET /channels/{channel_id}/messages?limit=N``, needs ``READ_MESSAGE_HISTORY``); a
    webhook token can fetch a message by id only, so a webhook-only sink cannot read.
    """

    async def recent_messages(self, context: StreamContext, limit: int) -> Sequence[Mapping[str, Any]] | None:
        """The channel's latest *limit* messages, newest first, as Discord's message objects.

        ``None`` when this sink cannot read the channel (no bot token, no permission): the
        caller then cannot tell a message that is there from one that is not.
        """
        ...


async def recent_messages(
    sink: object, context: StreamContext, limit: int = RECENT_LIMIT
) -> Sequence[Mapping[str, Any]] | None:
    """*sink*'s ``recent_messages``, or ``None`` for a sink without it (it cannot read)."""
    read = getattr(sink, "recent_messages", None)
    if not callable(read):
        return None
    found: Sequence[Mapping[str, Any]] | None = await read(context, limit)
    return found
