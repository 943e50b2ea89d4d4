"""Channel and thread routes: read a channel, start a thread (from a message or on its own).

Threads are public threads (type 11) of the guild's text channels; the gateway announces each
with THREAD_CREATE, and messages in a thread are guild messages like any other.
"""

from __future__ import annotations

__all__ = ("install", "start_thread")

from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from rxcord.core.errors import ApiError
from rxcord.testing.emulator.validation import form_error, read_payload
from rxcord.testing.emulator.wire import json_response

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator

ROUTE_CHANNEL: Final = "GET /channels/{channel_id}"
ROUTE_THREAD_FROM_MESSAGE: Final = "POST /channels/{channel_id}/messages/{message_id}/threads"
ROUTE_THREAD: Final = "POST /channels/{channel_id}/threads"
HAS_THREAD: Final = 32


def install(emu: DiscordEmulator) -> None:
    """Add the channel read and the two thread-start routes."""
    emu.add(ROUTE_CHANNEL, get_channel)
    emu.add(ROUTE_THREAD_FROM_MESSAGE, thread_from_message)
    emu.add(ROUTE_THREAD, thread_without_message)


def start_thread(
    emu: DiscordEmulator, parent_id: str, name: Any, owner_id: str, message_id: str | None = None
) -> dict[str, Any]:
    """Start a thread in a guild text channel (from ``message_id`` if given); publishes ``thread_create``."""
    guild = emu.guild
    if not guild.has_channel(parent_id) or parent_id in guild.threads:
        raise ApiError(400, 50024, "Cannot execute action on this channel type")
    if not isinstance(name, str) or not 1 <= len(name) <= 100:
        raise form_error([(("name",), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")])
    store = emu.store
    starter = store.get_in(parent_id, message_id) if message_id is not None else None
    if starter is not None and starter.id in guild.threads:
        raise ApiError(400, 160004, "A thread has already been created for this message")
    thread_id = starter.id if starter is not None else store.snowflake()
    thread = guild.add_thread(thread_id, parent_id, name, owner_id, store.iso(store.now()))
    if starter is not None:
        starter.message["flags"] = starter.message.get("flags", 0) | HAS_THREAD
        starter.message["thread"] = thread
    emu.events.publish("thread_create", {"thread": thread})
    return thread


async def get_channel(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /channels/{channel_id}``: a guild text channel, a thread or a DM channel."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    return json_response(200, emu.guild.channel_object(channel_id))


async def thread_from_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /channels/{channel_id}/messages/{message_id}/threads`` as the bot."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    body = await read_payload(request)
    thread = start_thread(
        emu, channel_id, body.get("name"), emu.config.bot_id, request.match_info["message_id"]
    )
    return json_response(201, thread)


async def thread_without_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /channels/{channel_id}/threads`` as the bot."""
    channel_id = request.match_info["channel_id"]
    emu.check_channel(channel_id)
    body = await read_payload(request)
    return json_response(201, start_thread(emu, channel_id, body.get("name"), emu.config.bot_id))
