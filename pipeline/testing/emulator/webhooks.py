"""Webhook routes: execute, read the webhook, and get / edit / delete its messages.

Interaction follow-ups use the same routes, keyed by the application id and the interaction
token (``POST /webhooks/{application_id}/{token}``, ``.../messages/@original``); the
``interactions`` module resolves those.
"""

from __future__ import annotations

__all__ = ("install", "resolve_webhook")

import secrets
from typing import TYPE_CHECKING, Any

from aiohttp import web

from rxcord.core.errors import ApiError
from rxcord.sinks.payload_rules import form_problems
from rxcord.testing.emulator.config import (
    ROUTE_EXECUTE,
    ROUTE_WEBHOOK,
    ROUTE_WEBHOOK_DELETE,
    ROUTE_WEBHOOK_EDIT,
    ROUTE_WEBHOOK_GET,
    EmulatedWebhook,
)
from rxcord.testing.emulator.limits import Window
from rxcord.testing.emulator.store import Stored
from rxcord.testing.emulator.uploads import uploaded
from rxcord.testing.emulator.validation import form_error, query_bool, read_payload, validate_message
from rxcord.testing.emulator.wire import json_response

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator
    from rxcord.testing.emulator.interactions import Interaction


def install(emu: DiscordEmulator) -> None:
    """Add the webhook routes; executes, edits and deletes each get their own bucket."""
    cfg = emu.config
    emu.add(ROUTE_EXECUTE, execute_webhook, Window(cfg.webhook_limit, cfg.webhook_window), auth=False)
    emu.add(ROUTE_WEBHOOK, get_webhook, auth=False)
    emu.add(ROUTE_WEBHOOK_GET, get_webhook_message, auth=False)
    emu.add(
        ROUTE_WEBHOOK_EDIT, edit_webhook_message, Window(cfg.webhook_limit, cfg.webhook_window), auth=False
    )
    emu.add(
        ROUTE_WEBHOOK_DELETE,
        delete_webhook_message,
        Window(cfg.webhook_limit, cfg.webhook_window),
        auth=False,
    )


def resolve_webhook(emu: DiscordEmulator, request: web.Request) -> tuple[EmulatedWebhook, Interaction | None]:
    """The webhook (or interaction follow-up webhook) a request names, else 404 / 10015 or 401 / 50027."""
    webhook_id = request.match_info["webhook_id"]
    token = request.match_info["webhook_token"]
    interaction = emu.interactions.by_token(webhook_id, token)
    if interaction is not None:
        hook = EmulatedWebhook(
            id=emu.config.application_id,
            token=token,
            channel_id=interaction.channel_id,
            name=emu.config.bot_username,
        )
        return hook, interaction
    known = emu.webhooks.get(webhook_id)
    if known is None:
        raise ApiError(404, 10015, "Unknown Webhook")
    if not secrets.compare_digest(known.token, token):
        raise ApiError(401, 50027, "Invalid Webhook Token")
    return known, None


async def execute_webhook(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /webhooks/{id}/{token}`` (``?wait=true`` answers the message, else 204)."""
    hook, interaction = resolve_webhook(emu, request)
    wait = query_bool(request.query.get("wait"))
    channel_id = request.query.get("thread_id") or hook.channel_id
    if channel_id in emu.config.deleted_channels:
        raise ApiError(404, 10003, "Unknown Channel")
    payload = await read_payload(request)
    validate_message(payload, webhook=True)
    if payload.get("message_reference") is not None:
        emu.counters.ignored_webhook_references += 1
    if interaction is not None:
        message = emu.interactions.follow_up(interaction, payload)
    else:
        author: dict[str, Any] = {
            "id": hook.id,
            "username": payload.get("username") or hook.name,
            "discriminator": "0000",
            "avatar": None,
            "bot": True,
        }
        files = await uploaded(emu, request, payload)
        extra = {"attachments": files}
        message = emu.store.create(channel_id, payload, author=author, webhook_id=hook.id, extra=extra)
    emu.counters.messages_created += 1
    return json_response(200, message) if wait else web.Response(status=204)


async def get_webhook(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /webhooks/{id}/{token}``."""
    hook, interaction = resolve_webhook(emu, request)
    body = {
        "id": hook.id,
        "type": 3 if interaction is not None else 1,
        "channel_id": hook.channel_id,
        "guild_id": emu.guild.guild_id_of(hook.channel_id),
        "name": hook.name,
        "avatar": None,
        "token": hook.token,
        "application_id": emu.config.application_id if interaction is not None else None,
    }
    return json_response(200, body)


def _webhook_message(emu: DiscordEmulator, request: web.Request) -> Stored:
    hook, interaction = resolve_webhook(emu, request)
    message_id = request.match_info["message_id"]
    if message_id == "@original":
        if interaction is None or interaction.original_id is None:
            raise ApiError(404, 10008, "Unknown Message")
        message_id = interaction.original_id
    stored = emu.store.messages.get(message_id)
    if stored is None or stored.deleted or stored.message.get("webhook_id") != hook.id:
        raise ApiError(404, 10008, "Unknown Message")
    if interaction is not None and stored.id not in interaction.message_ids:
        raise ApiError(404, 10008, "Unknown Message")
    return stored


async def get_webhook_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /webhooks/{id}/{token}/messages/{message_id | @original}``."""
    return json_response(200, _webhook_message(emu, request).message)


async def edit_webhook_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``PATCH /webhooks/{id}/{token}/messages/{message_id | @original}``."""
    stored = _webhook_message(emu, request)
    payload = await read_payload(request)
    problems = form_problems(payload, webhook=True)
    if problems:
        raise form_error(problems)
    return json_response(200, emu.store.edit(stored, payload, webhook=True))


async def delete_webhook_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``DELETE /webhooks/{id}/{token}/messages/{message_id | @original}``."""
    emu.store.delete(_webhook_message(emu, request))
    return web.Response(status=204)
