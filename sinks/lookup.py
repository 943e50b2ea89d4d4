"""Find a message whose create got an ambiguous answer (edit-in-place delivery).

A create can end without a message id while Discord may have stored the message: a 500 or
a connection reset after the request was written (webhooks are not retried then), or a 2xx
whose body could not be read (not JSON, too large). Aggregated and live delivery never
touch a message again, so for them that is the end of it; edit mode must edit the message
later, so it looks for it:

1. **Bot messages: the same nonce again.** A bot create carries ``nonce`` and
   ``enforce_nonce``; sent again, Discord answers with the message it stored (or stores it
   now, if the first attempt never arrived): exactly once either way.
2. **Read the channel back** (``ReadableSink.recent_messages``, the bot token's
   ``GET /channels/{channel_id}/messages``): the newest message this stream does not know
   yet with the create's nonce, or (webhooks: no nonce) the same webhook and the same
   content. When the listing reaches back past the create (it holds a message older than
   the create, or fewer messages than asked) and the message is not in it, it was not
   stored: ``Lookup.absent``.
3. Otherwise nothing is known (a webhook-only sink cannot list messages): the caller keeps
   the message as possibly shown, and never edits it.
"""

from __future__ import annotations

__all__ = ("Lookup", "find_sent")

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

import attrs
from loguru import logger

from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError
from rxcord.core.state import SentMessage
from rxcord.sinks.base import RECENT_LIMIT, DiscordSink, recent_messages

_log = logger.bind(stage="07-lookup")

_NONCE_RETRIES: Final = 2
"""Creates sent again with the same nonce before the channel is read back."""


@attrs.frozen
class Lookup:
    """What could be learnt about a message whose create got no message id."""

    message: SentMessage | None = None
    """The message with its id, when found."""
    absent: bool = False
    """The channel was read back past the create and the message is not there: not stored."""


async def find_sent(
    sink: DiscordSink,
    context: StreamContext,
    sent: SentMessage,
    *,
    anchor: str | None,
    known: Collection[str],
) -> Lookup:
    """Find *sent* (answered without an id) in Discord; see the module docstring.

    Args:
        sink: The sink that sent it.
        context: Where it was sent.
        sent: The create's answer (its ``payload`` is the request's, nonce included).
        anchor: The id of a message known to be older than the create (the stream's last
            message, or the message it replies to).
        known: Ids this stream already holds (never taken for the one looked for).

    Raises:
        DiscordStopError: the stream must stop (the channel is gone, access was lost).
    """
    payload = sent.payload
    try:
        if _has_nonce(context, payload):
            for _ in range(_NONCE_RETRIES):
                again = await sink.create_message(context, payload)
                if again.message_id is not None:
                    return Lookup(message=attrs.evolve(sent, message_id=again.message_id))
        listing = await recent_messages(sink, context, RECENT_LIMIT)
    except DiscordStopError:
        raise
    except DiscordError as exc:
        _log.warning("looking for a message failed ({error}): not known", error=type(exc).__name__)
        return Lookup()
    if listing is None:
        return Lookup()
    for message in listing:
        found = str(message.get("id"))
        if found not in known and _matches(message, payload, context):
            return Lookup(message=attrs.evolve(sent, message_id=found))
    return Lookup(absent=_reaches_back(listing, anchor))


def _has_nonce(context: StreamContext, payload: Mapping[str, Any]) -> bool:
    if context.uses_webhook:
        return False
    return payload.get("nonce") is not None and bool(payload.get("enforce_nonce"))


def _matches(message: Mapping[str, Any], payload: Mapping[str, Any], context: StreamContext) -> bool:
    nonce = payload.get("nonce")
    if nonce is not None and message.get("nonce") is not None:
        return str(message["nonce"]) == str(nonce)
    webhook = message.get("webhook_id")
    if context.uses_webhook:
        if webhook is None or str(webhook) != context.webhook_id:
            return False
    elif webhook is not None or not _by_bot(message):
        return False
    if str(message.get("content") or "") != str(payload.get("content") or ""):
        return False
    return _titles(message.get("embeds")) == _titles(payload.get("embeds"))


def _by_bot(message: Mapping[str, Any]) -> bool:
    author = message.get("author")
    return not isinstance(author, Mapping) or bool(author.get("bot"))


def _titles(embeds: Any) -> list[Any]:
    if not isinstance(embeds, list | tuple):
        return []
    return [embed.get("title") if isinstance(embed, Mapping) else None for embed in embeds]


def _reaches_back(listing: Sequence[Mapping[str, Any]], anchor: str | None) -> bool:
    """Whether *listing* (newest first) covers the time of the create."""
    if len(listing) < RECENT_LIMIT:
        return True  # the whole channel was read
    if anchor is None or not anchor.isdigit():
        return False
    return any(str(m.get("id", "")).isdigit() and int(str(m["id"])) <= int(anchor) for m in listing)
