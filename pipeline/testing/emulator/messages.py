"""Channel message routes: create (replies, ``enforce_nonce``), edit, delete, get, list, typing."""

from __future__ import annotations

__all__ = ("install",)

from typing import TYPE_CHECKING

from aiohttp import web

from rxcord.core.errors import ApiError
from rxcord.sinks.payload_rules import form_problems
from rxcord.testing.emulator.config import (
    ROUTE_CREATE,
    ROUTE_DELETE,
    ROUTE_EDIT,
    ROUTE_GET,
    ROUTE_LIST,
    ROUTE_TYPING,
)
from rxcord.testing.emulator.limits import Window
from rxcord.testing.emulator.uploads import uploaded
from rxcord.testing.emulator.validation import form_error, read_payload, validate_message
from rxcord.testing.emulator.wire import json_response

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator


def install(emu: DiscordEmulator) -> None:
    """Add the channel message routes; creates, edits and deletes each get their own bucket."""
    cfg = emu.config
    emu.add(ROUTE_CREATE, create_message, Window(cfg.channel_limit, cfg.channel_window))
    emu.add(ROUTE_EDIT, edit_message, Window(cfg.channel_limit, cfg.channel_window))
    emu.add(ROUTE_DELETE, delete_message, Window(cfg.channel_limit, cfg.channel_window))
    emu.add(ROUTE_LIST, list_messages)
    emu.add(ROUTE_GET, get_message)
    emu.add(ROUTE_TYPING, typing)


async def create_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /channels/{channel_id}/messages`` as the bot."""
    store = emu.store
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    payload = await read_payload(request)
    validate_message(payload, webhook=False)
    author = store.bot_user()
    nonce = payload.get("nonce")
    nonce_key: tuple[str, str, str] | None = None
    now = store.now()
    if payload.get("enforce_nonce") is True and nonce is not None:
        nonce_key = (channel_id, str(author["id"]), str(nonce))
        seen = store.nonces.get(nonce_key)
        if seen is not None and now - seen[1] <= emu.config.nonce_window:
            earlier = store.messages[seen[0]]
            if earlier.deleted:
                raise ApiError(404, 10008, "Unknown Message")
            emu.counters.nonce_dedupes += 1
            return json_response(200, earlier.message)
    reference = store.reference(channel_id, payload.get("message_reference"))
    files = await uploaded(emu, request, payload)
    message = store.create(
        channel_id, payload, author=author, reference=reference, extra={"attachments": files}
    )
    emu.counters.messages_created += 1
    if nonce_key is not None:
        if len(store.nonces) >= 10_000:
            store.forget_nonces(now)
        store.nonces[nonce_key] = (str(message["id"]), now)
    return json_response(200, message)


async def edit_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``PATCH /channels/{channel_id}/messages/{message_id}``: only the bot's own content is editable."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    stored = emu.store.get_in(channel_id, request.match_info["message_id"])
    payload = await read_payload(request)
    problems = form_problems(payload, webhook=False)
    if problems:
        raise form_error(problems)
    if stored.author_id != emu.config.bot_id and ("content" in payload or "embeds" in payload):
        raise ApiError(403, 50005, "Cannot edit a message authored by another user")
    return json_response(200, emu.store.edit(stored, payload, webhook=False))


async def delete_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``DELETE /channels/{channel_id}/messages/{message_id}``."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    emu.store.delete(emu.store.get_in(channel_id, request.match_info["message_id"]))
    return web.Response(status=204)


async def get_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /channels/{channel_id}/messages/{message_id}``."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    stored = emu.store.get_in(channel_id, request.match_info["message_id"])
    if stored.ephemeral:
        raise ApiError(404, 10008, "Unknown Message")
    return json_response(200, stored.message)


async def list_messages(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /channels/{channel_id}/messages?limit=N``: newest first (``before`` / ``after`` ids too)."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    raw = request.query.get("limit", "50")
    try:
        limit = int(raw)
    except ValueError:
        limit = -1
    if not 1 <= limit <= 100:
        problem = (("limit",), "NUMBER_TYPE_MAX", "Value must be between 1 and 100.")
        raise form_error([problem])
    live = emu.store.live(channel_id)
    before, after = request.query.get("before"), request.query.get("after")
    if before is not None and before.isdigit():
        live = [s for s in live if int(s.id) < int(before)]
        chosen = live[-limit:]
    elif after is not None and after.isdigit():
        chosen = [s for s in live if int(s.id) > int(after)][:limit]
    else:
        chosen = live[-limit:]
    return json_response(200, [stored.message for stored in reversed(chosen)])


async def typing(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /channels/{channel_id}/typing``: counted, and ``TYPING_START`` for the bot."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    emu.counters.typing[channel_id] += 1
    emu.publish_typing(channel_id, emu.config.bot_id)
    return web.Response(status=204)
