"""Acting as a user, and watching: the emulator's own routes under ``{base}/_emulator/``.

None of these is Discord's; they need no token and have no rate limits.

* ``POST /_emulator/messages`` ``{"channel_id", "author_id", "username", "content"}`` (optional
  ``"message_reference": {"message_id": ...}`` for a reply, ``"attachments": [{"filename",
  "url", "content_type", "size"}]``): a message as that user; MESSAGE_CREATE is dispatched to
  connected clients; answers the message object.
* ``POST /_emulator/interactions`` ``{"channel_id", "author_id", "username", "command",
  "options"}`` (options ``{"name": value}`` or ``[{"name", "value"}]``): invokes a registered
  slash command as that user (INTERACTION_CREATE); answers the interaction (id, token, and, with
  ``?wait=true``, the bot's response once it arrived, up to 10 s). ``GET
  /_emulator/interactions/{id}`` reads it again.
* ``POST /_emulator/typing`` ``{"channel_id", "author_id", "username"}``: TYPING_START as that user.
* ``POST /_emulator/threads`` ``{"channel_id", "author_id", "username", "name"}`` (optional
  ``"message_id"``: the thread starts from that message): a public thread (THREAD_CREATE);
  post into it with its id as ``channel_id``.
* ``GET /_emulator/channels``: the guild's text channels, its threads, then every other channel
  that has messages (``guild_id`` null); ``GET /_emulator/channels/{id}/messages``: that channel's
  messages, oldest first, ephemeral ones included (flag 64); ``GET /_emulator/guild`` and
  ``GET /_emulator/commands``: the guild object and the registered commands.
* ``POST /_emulator/members`` ``{"guild_id", "user_id", "roles"}`` and ``POST /_emulator/roles``
  ``{"guild_id", "role_id", "name", "permissions"}``: a member's roles and a role's permissions
  (module ``members``).
* ``GET /_emulator/events``: server-sent events, one per emulator event (``message_create``,
  ``message_update``, ``message_delete``, ``typing_start``, ``thread_create``, ``member_add``,
  ``member_update``, ``role_create``, ``role_update``, ``interaction_create``,
  ``interaction_response``, ``rate_limit``, ``bucket_exhausted``), ``data`` a JSON object,
  ``id`` its number; ``Last-Event-ID`` (or ``?since=N``) replays the retained history after N.
"""

from __future__ import annotations

__all__ = ("install", "user_command", "user_message")

import asyncio
import contextlib
import json
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from rxcord.core.errors import ApiError
from rxcord.testing.emulator import members, threads
from rxcord.testing.emulator.config import API_PREFIX
from rxcord.testing.emulator.events import EmulatorEvent
from rxcord.testing.emulator.validation import form_error, query_bool, read_payload
from rxcord.testing.emulator.wire import json_response

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator
    from rxcord.testing.emulator.interactions import Interaction

PREFIX: Final = API_PREFIX + "/_emulator"
_KEEPALIVE: Final = 15.0
_QUEUE: Final = 10_000
_WAIT: Final = 10.0
_STREAMS: Final = web.AppKey("rxcord_sse_streams", set[asyncio.Queue[EmulatorEvent | None]])


def install(emu: DiscordEmulator) -> None:
    """Add the ``/_emulator/`` routes."""
    emu.add_plain("POST", PREFIX + "/messages", post_message)
    emu.add_plain("POST", PREFIX + "/interactions", post_interaction)
    emu.add_plain("GET", PREFIX + "/interactions/{interaction_id}", get_interaction)
    emu.add_plain("POST", PREFIX + "/typing", post_typing)
    emu.add_plain("POST", PREFIX + "/threads", post_thread)
    emu.add_plain("GET", PREFIX + "/channels", list_channels)
    emu.add_plain("GET", PREFIX + "/channels/{channel_id}/messages", channel_messages)
    emu.add_plain("GET", PREFIX + "/guild", guild)
    emu.add_plain("GET", PREFIX + "/commands", commands)
    emu.add_plain("GET", PREFIX + "/events", events)
    members.install(emu)  # POST /_emulator/members and /_emulator/roles
    streams: set[asyncio.Queue[EmulatorEvent | None]] = set()
    emu.app[_STREAMS] = streams

    async def end_streams(app: web.Application) -> None:
        for queue in list(streams):
            queue.put_nowait(None)

    emu.app.on_shutdown.append(end_streams)


def _snowflake_field(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.isdigit():
        raise form_error([((name,), "NUMBER_TYPE_COERCE", f"{name} must be a snowflake (digits).")])
    return value


def _actor(emu: DiscordEmulator, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The channel and the user object of an injection body (the user is remembered as a member)."""
    channel_id = _snowflake_field(body, "channel_id")
    emu.check_channel(channel_id)
    author_id = _snowflake_field(body, "author_id")
    if author_id == emu.config.bot_id:
        raise form_error([(("author_id",), "AUTHOR_IS_BOT", "Act as the bot through the REST API.")])
    username = body.get("username")
    if username is None:
        username = f"user-{author_id[-4:]}"
    if not isinstance(username, str) or not 1 <= len(username) <= 32:
        raise form_error([(("username",), "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 32 in length.")])
    return channel_id, emu.guild.remember(author_id, username)


async def post_message(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """A message from a user (see the module docstring)."""
    return json_response(200, user_message(emu, await read_payload(request)))


def user_message(emu: DiscordEmulator, body: dict[str, Any]) -> dict[str, Any]:
    """Validate an injection body and store its message (MESSAGE_CREATE); returns the message object."""
    channel_id, user = _actor(emu, body)
    content = body.get("content", "")
    if not isinstance(content, str) or len(content) > 4000:
        raise form_error([(("content",), "BASE_TYPE_MAX_LENGTH", "Must be a string of 4000 or fewer.")])
    attachments = _attachments(emu, body.get("attachments"))
    if not content.strip() and not attachments:
        raise ApiError(400, 50006, "Cannot send an empty message")
    payload: dict[str, Any] = {"content": content}
    reference = emu.store.reference(channel_id, body.get("message_reference"))
    return emu.store.create(
        channel_id, payload, author=user, reference=reference, extra={"attachments": attachments}
    )


def _attachments(emu: DiscordEmulator, raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(a, dict) and a.get("url") for a in raw):
        problem = (("attachments",), "BASE_TYPE_ARRAY", "A list of objects with at least a url.")
        raise form_error([problem])
    result = []
    for item in raw:
        url = str(item["url"])
        result.append(
            {
                "id": emu.store.snowflake(),
                "filename": str(item.get("filename") or url.rsplit("/", 1)[-1] or "file"),
                "size": int(item.get("size") or 0),
                "url": url,
                "proxy_url": url,
                **({"content_type": item["content_type"]} if item.get("content_type") else {}),
                **{k: item[k] for k in ("width", "height", "description") if k in item},
            }
        )
    return result


async def post_interaction(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """A slash command invoked by a user (see the module docstring)."""
    interaction = user_command(emu, await read_payload(request))
    if query_bool(request.query.get("wait")):
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(interaction.answered.wait(), _WAIT)
    return json_response(200, interaction.summary(emu))


def user_command(emu: DiscordEmulator, body: dict[str, Any]) -> Interaction:
    """Validate an invocation body and invoke the command (INTERACTION_CREATE)."""
    channel_id, user = _actor(emu, body)
    command = body.get("command")
    if not isinstance(command, str) or not command:
        raise form_error([(("command",), "BASE_TYPE_REQUIRED", "This field is required")])
    return emu.interactions.invoke(channel_id, user, command.removeprefix("/"), body.get("options"))


async def get_interaction(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """An invoked interaction and the bot's answers so far."""
    interaction = emu.interactions.by_id.get(request.match_info["interaction_id"])
    if interaction is None:
        raise ApiError(404, 10062, "Unknown interaction")
    return json_response(200, interaction.summary(emu))


async def post_typing(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """A user starts typing."""
    channel_id, user = _actor(emu, await read_payload(request))
    emu.publish_typing(channel_id, str(user["id"]))
    return web.Response(status=204)


async def post_thread(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """A user starts a thread in a guild text channel (from ``message_id`` when given)."""
    body = await read_payload(request)
    channel_id, user = _actor(emu, body)
    message_id = body.get("message_id")
    started = threads.start_thread(
        emu,
        channel_id,
        body.get("name"),
        str(user["id"]),
        str(message_id) if message_id is not None else None,
    )
    return json_response(200, started)


async def list_channels(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """The guild's channels, then the other channels that have messages."""
    channels = [*emu.guild.channel_objects(), *emu.guild.threads.values()]
    known = {channel["id"] for channel in channels}
    for channel_id in emu.store.channels:
        if channel_id not in known:
            known.add(channel_id)
            channels.append({**emu.guild.channel_object(channel_id), "guild_id": None})
    return json_response(200, channels)


async def channel_messages(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """A channel's messages, oldest first, ephemeral ones included."""
    channel_id = request.match_info["channel_id"]
    live = emu.store.live(channel_id, ephemeral=True)
    return json_response(200, [stored.message for stored in live])


async def guild(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """The guild as GUILD_CREATE announces it."""
    return json_response(200, emu.guild.guild_object())


async def commands(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """Every registered command (global and guild)."""
    found = [command for scope in emu.interactions.commands.values() for command in scope]
    return json_response(200, found)


def _sse(event: EmulatorEvent) -> bytes:
    return f"id: {event.id}\nevent: {event.kind}\ndata: {json.dumps(event.data)}\n\n".encode()


async def events(emu: DiscordEmulator, request: web.Request) -> web.StreamResponse:
    """Server-sent events of everything that happens (see the module docstring)."""
    since_raw = request.headers.get("Last-Event-ID") or request.query.get("since")
    since = int(since_raw) if since_raw is not None and since_raw.isdigit() else None
    queue: asyncio.Queue[EmulatorEvent | None] = asyncio.Queue(_QUEUE)
    streams = request.app[_STREAMS]

    def listener(event: EmulatorEvent) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            queue.put_nowait(event)

    backlog = [e for e in emu.events.recent() if since is not None and e.id > since]
    unsubscribe = emu.events.subscribe(listener)
    streams.add(queue)
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    )
    try:
        await response.prepare(request)
        await response.write(b": rxcord emulator events\n\n")
        for event in backlog:
            await response.write(_sse(event))
        while True:
            try:
                item = await asyncio.wait_for(queue.get(), _KEEPALIVE)
            except TimeoutError:
                await response.write(b": keepalive\n\n")
                continue
            if item is None:
                break
            await response.write(_sse(item))
    except ConnectionError:
        pass
    finally:
        unsubscribe()
        streams.discard(queue)
    return response
