"""An adapter from rxcord's ``DiscordSink`` to discord.py (optional extra ``rxcord[discord]``).

A bot already built on discord.py keeps its client, its connection pool and
its rate limiting: this sink sends through any ``discord.abc.Messageable``
(a channel, a thread, a ``PartialMessageable``). rxcord still plans the
payloads (the 2000-code-point split, explicit ``allowed_mentions``, the
reply on the first message only); this module only translates them into
discord.py's keyword arguments and discord.py's exceptions back into
rxcord's internal stops.

To develop offline against the emulator, point discord.py's REST base at it
before logging in: ``discord.http.Route.BASE = "http://127.0.0.1:PORT/api/v10"``.
"""

from __future__ import annotations

__all__ = ("DiscordPySink",)

from collections.abc import Callable, Mapping
from typing import Any

import attrs
import discord
from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError, UnknownWebhookError
from rxcord.core.state import SentMessage
from rxcord.core.types import StopKind

Resolve = Callable[[StreamContext], discord.abc.Messageable]
"""Finds the discord.py messageable for a stream's context."""

_MISSING_ACCESS = (50001, 50013)
_UNKNOWN_CHANNEL = 10003
_UNKNOWN_WEBHOOK = 10015


def _allowed(spec: Mapping[str, Any] | None) -> discord.AllowedMentions:
    spec = spec or {"parse": []}
    parse = set(spec.get("parse") or ())
    users = spec.get("users") or ()
    roles = spec.get("roles") or ()
    return discord.AllowedMentions(
        everyone="everyone" in parse,
        users=[discord.Object(id=int(u)) for u in users] if users else "users" in parse,
        roles=[discord.Object(id=int(r)) for r in roles] if roles else "roles" in parse,
        replied_user=bool(spec.get("replied_user", False)),
    )


def send_kwargs(context: StreamContext, payload: Mapping[str, Any]) -> dict[str, Any]:
    """discord.py ``send`` keyword arguments for an rxcord payload."""
    kwargs: dict[str, Any] = {"allowed_mentions": _allowed(payload.get("allowed_mentions"))}
    if payload.get("content"):
        kwargs["content"] = payload["content"]
    if payload.get("embeds"):
        kwargs["embeds"] = [discord.Embed.from_dict(dict(e)) for e in payload["embeds"]]
    if payload.get("nonce") is not None:
        kwargs["nonce"] = payload["nonce"]
    reference = payload.get("message_reference")
    if reference:
        kwargs["reference"] = discord.MessageReference(
            message_id=int(reference["message_id"]),
            channel_id=int(context.channel_id),
            fail_if_not_exists=bool(reference.get("fail_if_not_exists", False)),
        )
    return kwargs


def _translate(exc: discord.HTTPException) -> DiscordError:
    status = exc.status
    code = exc.code or None
    text = exc.text or str(exc)
    if status == 403 and code in _MISSING_ACCESS:
        return DiscordStopError(status=status, code=code, message=text, stop_kind=StopKind.MISSING_ACCESS)
    if status == 404 and code == _UNKNOWN_CHANNEL:
        return DiscordStopError(status=status, code=code, message=text, stop_kind=StopKind.CHANNEL_DELETED)
    if status == 404 and code == _UNKNOWN_WEBHOOK:
        return UnknownWebhookError(status=status, code=code, message=text)
    return DiscordError(status=status, code=code, message=text)


@attrs.define
class DiscordPySink:
    """Sends rxcord's payloads through discord.py."""

    resolve: Resolve
    """Maps a stream context to the messageable to send to."""

    @classmethod
    def for_client(cls, client: discord.Client) -> DiscordPySink:
        """A sink that sends to ``client.get_partial_messageable(context.channel_id)``."""

        def resolve(context: StreamContext) -> discord.abc.Messageable:
            return client.get_partial_messageable(int(context.channel_id))

        return cls(resolve)

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        """Send one message through discord.py."""
        target = self.resolve(context)
        try:
            message = await target.send(**send_kwargs(context, payload))
        except discord.HTTPException as exc:
            raise _translate(exc) from exc
        return SentMessage(
            payload=dict(payload), message_id=str(message.id), channel_id=str(message.channel.id)
        )

    async def trigger_typing(self, context: StreamContext) -> None:
        """Show the typing indicator once (discord.py's ``await messageable.typing()``)."""
        try:
            await self.resolve(context).typing()
        except discord.HTTPException as exc:
            raise _translate(exc) from exc
