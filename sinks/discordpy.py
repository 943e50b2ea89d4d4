"""An adapter from rxcord's ``DiscordSink`` to discord.py (optional extra ``rxcord[discord]``).

A bot already built on discord.py keeps its client, its connection pool and
its rate limiting: this sink sends through any ``discord.abc.Messageable``
(a channel, a thread, a ``PartialMessageable``). rxcord still plans the
payloads (the 2000-code-point split, explicit ``allowed_mentions``, the
reply on the first message only); this module only translates them into
discord.py's keyword arguments and discord.py's exceptions back into
rxcord's internal stops.

Webhook contexts (``StreamContext.webhook_id`` / ``webhook_token``) are honoured
when the sink has a ``webhook`` factory (``DiscordPySink.for_client`` builds one
on the client's session): the message goes through ``discord.Webhook.send`` with
the persona's name (repaired by ``rxcord.sinks.persona.webhook_username``) and
avatar, into ``thread_id`` if set, ``wait=True``. Without a factory such a
context fails with a ``DiscordError`` that says so, instead of posting as the bot.
discord.py owns retries and rate limits on this path (it has no nonce for
webhooks either).

To develop offline against the emulator, point discord.py's REST base at it
before logging in: ``discord.http.Route.BASE = "http://127.0.0.1:PORT/api/v10"``.
"""

from __future__ import annotations

__all__ = ("DiscordPySink", "WebhookFactory", "send_kwargs", "webhook_kwargs")

import io
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError, MissingExtraError, UnknownWebhookError

try:
    import discord
except ImportError as exc:  # the name says what to install, not a bare ModuleNotFoundError
    raise MissingExtraError("discord", "discord", "rxcord.DiscordPySink", package="discord.py") from exc
from rxcord.core.state import SentMessage
from rxcord.core.types import StopKind
from rxcord.sinks.persona import webhook_username
from rxcord.sinks.uploads import split_uploads

Resolve = Callable[[StreamContext], discord.abc.Messageable]
"""Finds the discord.py messageable for a stream's context."""
WebhookFactory = Callable[[StreamContext], discord.Webhook]
"""Builds the discord.py webhook for a context that carries a webhook id and token."""

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
    files = _files(payload)
    if files:
        kwargs["files"] = files
    reference = payload.get("message_reference")
    if reference:
        kwargs["reference"] = discord.MessageReference(
            message_id=int(reference["message_id"]),
            channel_id=int(context.channel_id),
            fail_if_not_exists=bool(reference.get("fail_if_not_exists", False)),
        )
    return kwargs


def _files(payload: Mapping[str, Any]) -> list[discord.File]:
    """The payload's uploads (``rxcord.sinks.uploads``) as discord.py files, described as planned."""
    _, uploads = split_uploads(payload)
    named = {item.get("id"): item for item in payload.get("attachments") or () if isinstance(item, Mapping)}
    return [
        discord.File(
            io.BytesIO(upload.data), filename=upload.filename, description=named.get(n, {}).get("description")
        )
        for n, upload in enumerate(uploads)
    ]


def webhook_kwargs(context: StreamContext, payload: Mapping[str, Any]) -> dict[str, Any]:
    """discord.py ``Webhook.send`` keyword arguments for an rxcord payload (no reply, no nonce)."""
    kwargs = send_kwargs(context, payload)
    kwargs.pop("reference", None)
    kwargs.pop("nonce", None)
    username = webhook_username(payload.get("username") or context.persona_username)
    if username is not None:
        kwargs["username"] = username
    avatar = payload.get("avatar_url") or context.persona_avatar_url
    if avatar:
        kwargs["avatar_url"] = avatar
    if context.thread_id is not None:
        kwargs["thread"] = discord.Object(id=int(context.thread_id))
    kwargs["wait"] = True
    return kwargs


def _edit_kwargs(payload: Mapping[str, Any]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"allowed_mentions": _allowed(payload.get("allowed_mentions"))}
    if "content" in payload:
        kwargs["content"] = payload["content"]
    if "embeds" in payload:
        kwargs["embeds"] = [discord.Embed.from_dict(dict(e)) for e in payload["embeds"] or ()]
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
    """Sends rxcord's payloads through discord.py (bot messages, and webhooks with a factory)."""

    resolve: Resolve
    """Maps a stream context to the messageable to send to."""
    webhook: WebhookFactory | None = None
    """Builds the webhook for a webhook context; ``None``: such contexts are refused with a clear error."""

    @classmethod
    def for_client(cls, client: discord.Client) -> DiscordPySink:
        """Sends to ``client.get_partial_messageable(channel_id)``; webhooks on the client's session."""

        def resolve(context: StreamContext) -> discord.abc.Messageable:
            return client.get_partial_messageable(int(context.channel_id))

        def webhook(context: StreamContext) -> discord.Webhook:
            return discord.Webhook.partial(
                int(context.webhook_id or 0), context.webhook_token or "", client=client
            )

        return cls(resolve, webhook)

    def _webhook_for(self, context: StreamContext) -> discord.Webhook | None:
        if not context.uses_webhook:
            return None
        if self.webhook is None:
            raise DiscordError(
                status=0,
                message=(
                    "DiscordPySink cannot deliver through a webhook without a webhook factory: "
                    "build it with DiscordPySink.for_client(client) or pass webhook=...; "
                    "not sent as the bot instead"
                ),
            )
        return self.webhook(context)

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        """Send one message through discord.py (the context's webhook when it has one)."""
        try:
            hook = self._webhook_for(context)
            if hook is not None:
                message: Any = await hook.send(**webhook_kwargs(context, payload))
            else:
                message = await self.resolve(context).send(**send_kwargs(context, payload))
        except discord.HTTPException as exc:
            raise _translate(exc) from exc
        return SentMessage(
            payload=split_uploads(payload)[0], message_id=str(message.id), channel_id=str(message.channel.id)
        )

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        """Edit a message the bot (or the context's webhook) sent."""
        kwargs = _edit_kwargs(payload)
        try:
            hook = self._webhook_for(context)
            if hook is not None:
                if context.thread_id is not None:
                    kwargs["thread"] = discord.Object(id=int(context.thread_id))
                message: Any = await hook.edit_message(int(message_id), **kwargs)
            else:
                message = await self._partial(context, message_id).edit(**kwargs)
        except discord.HTTPException as exc:
            raise _translate(exc) from exc
        return SentMessage(payload=dict(payload), message_id=message_id, channel_id=str(message.channel.id))

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        """Delete a message; one already gone counts as deleted."""
        try:
            hook = self._webhook_for(context)
            if hook is not None:
                thread = (
                    discord.Object(id=int(context.thread_id)) if context.thread_id else discord.utils.MISSING
                )
                await hook.delete_message(int(message_id), thread=thread)
            else:
                await self._partial(context, message_id).delete()
        except discord.HTTPException as exc:
            if exc.status == 404 and exc.code == 10008:  # Unknown Message: already gone
                return
            raise _translate(exc) from exc

    async def recent_messages(self, context: StreamContext, limit: int) -> list[dict[str, Any]] | None:
        """The channel's latest messages, newest first (``messageable.history``); ``None`` if unreadable."""
        history = getattr(self.resolve(context), "history", None)
        if history is None:
            return None
        out: list[dict[str, Any]] = []
        try:
            async for message in history(limit=limit):
                out.append(_as_discord(message))
        except discord.HTTPException:
            return None
        return out

    def _partial(self, context: StreamContext, message_id: str) -> Any:
        target = self.resolve(context)
        partial = getattr(target, "get_partial_message", None)
        if partial is None:
            raise DiscordError(status=0, message=f"{type(target).__name__} cannot edit or delete messages")
        return partial(int(message_id))

    async def trigger_typing(self, context: StreamContext) -> None:
        """Show the typing indicator once (discord.py's ``await messageable.typing()``)."""
        try:
            await self.resolve(context).typing()
        except discord.HTTPException as exc:
            raise _translate(exc) from exc


def _as_discord(message: Any) -> dict[str, Any]:
    """A discord.py message as the fields of Discord's message object a lookup reads."""
    out: dict[str, Any] = {
        "id": str(message.id),
        "channel_id": str(message.channel.id),
        "content": message.content or "",
        "embeds": [embed.to_dict() for embed in message.embeds],
        "author": {"bot": bool(getattr(message.author, "bot", False))},
    }
    if message.webhook_id is not None:
        out["webhook_id"] = str(message.webhook_id)
    if getattr(message, "nonce", None) is not None:
        out["nonce"] = message.nonce
    return out
