"""Application commands and interactions: registration, invocation, callback, follow-ups.

Follow-ups go through the webhook routes (``webhooks``), keyed by the interaction token.

* ``PUT`` (bulk overwrite), ``POST`` (create or replace one by name), ``GET`` and ``DELETE`` on
  ``/applications/{id}/commands`` and ``/applications/{id}/guilds/{guild_id}/commands``.
* ``invoke()`` (the ``POST /_emulator/interactions`` route) finds a registered command by name
  (the guild's first, then global ones), dispatches INTERACTION_CREATE and waits for nothing.
  An option the command declares INTEGER, NUMBER or BOOLEAN given as text (the page's
  ``/cmd n:3``) is sent typed, as Discord sends it; text that is not one is a 400 naming it.
* ``POST /interactions/{id}/{token}/callback``: type 4 posts the original response (ephemeral
  with flag 64: stored but never listed nor dispatched), type 5 a "thinking" placeholder that
  ``PATCH /webhooks/{app}/{token}/messages/@original`` fills in, types 1, 6-9 are recorded.
  A second callback is 400 / 40060; an unknown id or token 404 / 10062. ``?with_response=true``
  answers 200 with the callback response object (discord.py always asks), else 204.
"""

from __future__ import annotations

__all__ = ("Interaction", "Interactions", "install")

import asyncio
import math
import secrets
from typing import TYPE_CHECKING, Any, Final

import attrs
from aiohttp import web

from rxcord.core.errors import ApiError
from rxcord.testing.emulator.guild import EVERYONE_PERMISSIONS
from rxcord.testing.emulator.store import CREATE_FLAGS, EPHEMERAL, LOADING
from rxcord.testing.emulator.validation import (
    form_error,
    query_bool,
    read_json,
    read_payload,
    validate_message,
)
from rxcord.testing.emulator.wire import json_response

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator

TOKEN_LIFETIME: Final = 15 * 60.0
"""Seconds an interaction token can be used for follow-ups (Discord: 15 minutes)."""
ATTACHMENT_SIZE_LIMIT: Final = 10 * 1024 * 1024
_OPTION_TYPES: Final = {bool: 5, int: 4, float: 10, str: 3}
_COMMANDS: Final = "/applications/{application_id}/commands"
_GUILD_COMMANDS: Final = "/applications/{application_id}/guilds/{guild_id}/commands"


@attrs.define
class Interaction:
    """One slash-command invocation and what the bot answered."""

    id: str
    token: str = attrs.field(repr=False)
    channel_id: str
    user: dict[str, Any]
    command: str
    options: list[dict[str, Any]]
    created: float
    payload: dict[str, Any] = attrs.field(repr=False)
    """The INTERACTION_CREATE object."""
    response_type: int | None = None
    """The callback type of the initial response (4 message, 5 deferred, ...)."""
    response: dict[str, Any] | None = None
    """The initial response's ``data``."""
    original_id: str | None = None
    message_ids: list[str] = attrs.Factory(list)
    """The original response and follow-ups, in order."""
    answered: asyncio.Event = attrs.Factory(asyncio.Event, takes_self=False)

    def summary(self, emu: DiscordEmulator) -> dict[str, Any]:
        """The JSON the injection route answers: ids, command, response and messages."""
        messages = [emu.store.messages[mid].message for mid in self.message_ids]
        return {
            "id": self.id,
            "token": self.token,
            "channel_id": self.channel_id,
            "user": self.user,
            "command": self.command,
            "options": self.options,
            "response_type": self.response_type,
            "response": self.response,
            "messages": messages,
        }


class Interactions:
    """Registered commands and the interactions invoked on them."""

    def __init__(self, emu: DiscordEmulator) -> None:
        self.emu = emu
        self.commands: dict[str | None, list[dict[str, Any]]] = {}
        """Commands per guild id (``None``: global), in registration order."""
        self.by_id: dict[str, Interaction] = {}

    # -- registration ---------------------------------------------------------

    def _command(self, body: Any, guild_id: str | None, existing: dict[str, Any] | None) -> dict[str, Any]:
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) or not body["name"]:
            problem = (("name",), "BASE_TYPE_REQUIRED", "This field is required")
            raise form_error([problem])
        command = {
            "type": 1,
            "description": "",
            "options": [],
            "default_member_permissions": None,
            "dm_permission": True,
            "nsfw": False,
            "contexts": None,
            "integration_types": [0],
            **body,
            "id": existing["id"] if existing is not None else self.emu.store.snowflake(),
            "application_id": self.emu.config.application_id,
            "version": self.emu.store.snowflake(),
        }
        if guild_id is not None:
            command["guild_id"] = guild_id
        return command

    def overwrite(self, guild_id: str | None, bodies: Any) -> list[dict[str, Any]]:
        """Replace a scope's commands (a bulk overwrite); ids are kept for names that stay."""
        if not isinstance(bodies, list):
            raise ApiError(400, 50035, "Invalid Form Body")
        old = {command["name"]: command for command in self.commands.get(guild_id, [])}
        commands = [self._command(body, guild_id, old.get(str(body.get("name")))) for body in bodies]
        self.commands[guild_id] = commands
        return commands

    def upsert(self, guild_id: str | None, body: Any) -> tuple[dict[str, Any], bool]:
        """Create one command or replace the one with its name; returns it and whether it is new."""
        scope = self.commands.setdefault(guild_id, [])
        name = body.get("name") if isinstance(body, dict) else None
        for index, existing in enumerate(scope):
            if existing["name"] == name:
                scope[index] = self._command(body, guild_id, existing)
                return scope[index], False
        command = self._command(body, guild_id, None)
        scope.append(command)
        return command, True

    def find(self, name: str, guild_id: str | None) -> dict[str, Any] | None:
        """The command a user would pick by name: the guild's first, then a global one."""
        scopes = [guild_id, None] if guild_id is not None else [None]
        for scope in scopes:
            for command in self.commands.get(scope, []):
                if command["name"] == name:
                    return command
        return None

    # -- invocation -------------------------------------------------------------

    def invoke(
        self, channel_id: str, user: dict[str, Any], command_name: str, options: Any = None
    ) -> Interaction:
        """Invoke a registered slash command as ``user`` in ``channel_id`` (dispatches INTERACTION_CREATE)."""
        emu = self.emu
        cfg = emu.config
        guild_id = emu.guild.guild_id_of(channel_id)
        command = self.find(command_name, guild_id)
        if command is None:
            known = sorted({c["name"] for scope in self.commands.values() for c in scope})
            raise ApiError(404, 10063, f"Unknown application command {command_name!r}; registered: {known}")
        option_list = _options(options, command)
        interaction_id = emu.store.snowflake()
        token = "aW50ZXJhY3Rpb24" + secrets.token_urlsafe(48)
        data: dict[str, Any] = {"id": command["id"], "name": command["name"], "type": command.get("type", 1)}
        if option_list:
            data["options"] = option_list
        if "guild_id" in command:
            data["guild_id"] = command["guild_id"]
        # In a guild both are the computed permissions (module guild): the caller's and the bot's.
        app_permissions = (
            str(emu.guild.permissions(cfg.bot_id)) if guild_id is not None else EVERYONE_PERMISSIONS
        )
        payload: dict[str, Any] = {
            "id": interaction_id,
            "application_id": cfg.application_id,
            "type": 2,
            "data": data,
            "channel_id": channel_id,
            "channel": emu.guild.channel_object(channel_id),
            "token": token,
            "version": 1,
            "app_permissions": app_permissions,
            "locale": "en-US",
            "entitlements": [],
            "attachment_size_limit": ATTACHMENT_SIZE_LIMIT,
        }
        if guild_id is not None:
            member = emu.guild.member(user)
            payload.update(
                guild_id=guild_id,
                guild_locale="en-US",
                member={**member, "permissions": str(emu.guild.permissions(str(user["id"])))},
                authorizing_integration_owners={"0": guild_id},
                context=0,
            )
        else:
            payload.update(user=user, authorizing_integration_owners={"1": str(user["id"])}, context=1)
        interaction = Interaction(
            id=interaction_id,
            token=token,
            channel_id=channel_id,
            user=user,
            command=command["name"],
            options=option_list,
            created=emu.store.now(),
            payload=payload,
        )
        self.by_id[interaction_id] = interaction
        emu.events.publish("interaction_create", {"interaction": payload})
        return interaction

    def by_token(self, application_id: str, token: str) -> Interaction | None:
        """The live interaction whose follow-up webhook is ``/webhooks/{application_id}/{token}``."""
        if application_id != self.emu.config.application_id:
            return None
        now = self.emu.store.now()
        for interaction in reversed(self.by_id.values()):
            if secrets.compare_digest(interaction.token, token):
                return interaction if now - interaction.created <= TOKEN_LIFETIME else None
        return None

    def _message(self, interaction: Interaction, data: dict[str, Any], *, original: bool) -> dict[str, Any]:
        emu = self.emu
        extra: dict[str, Any] = {
            "webhook_id": emu.config.application_id,
            "application_id": emu.config.application_id,
            "interaction_metadata": {
                "id": interaction.id,
                "type": 2,
                "name": interaction.command,
                "user": interaction.user,
                "authorizing_integration_owners": interaction.payload["authorizing_integration_owners"],
            },
        }
        if original:
            extra["type"] = 20
        message = emu.store.create(
            interaction.channel_id,
            data,
            author=emu.store.bot_user(),
            webhook_id=emu.config.application_id,
            extra=extra,
            flags_mask=CREATE_FLAGS | EPHEMERAL | LOADING,
        )
        interaction.message_ids.append(str(message["id"]))
        return message

    def follow_up(self, interaction: Interaction, payload: dict[str, Any]) -> dict[str, Any]:
        """A follow-up message (``POST /webhooks/{app}/{token}``)."""
        return self._message(interaction, payload, original=False)

    def respond(self, interaction: Interaction, body: dict[str, Any]) -> dict[str, Any] | None:
        """Apply the initial response; returns the message it created, if any."""
        if interaction.response_type is not None:
            raise ApiError(400, 40060, "Interaction has already been acknowledged.")
        kind = body.get("type")
        if not isinstance(kind, int) or kind not in (1, 4, 5, 6, 7, 8, 9):
            problem = (("type",), "BASE_TYPE_CHOICES", "Value must be one of (1, 4, 5, 6, 7, 8, 9).")
            raise form_error([problem])
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        assert isinstance(data, dict)
        message: dict[str, Any] | None = None
        if kind == 4:
            validate_message(data, webhook=True)
            message = self._message(interaction, data, original=True)
        elif kind == 5:
            placeholder = {"content": "", "flags": LOADING | (int(data.get("flags") or 0) & EPHEMERAL)}
            message = self._message(interaction, placeholder, original=True)
        if message is not None:
            interaction.original_id = str(message["id"])
        interaction.response_type = kind
        interaction.response = data
        interaction.answered.set()
        self.emu.events.publish(
            "interaction_response",
            {
                "interaction_id": interaction.id,
                "type": kind,
                "data": data,
                "message_id": interaction.original_id,
            },
        )
        return message


def _options(options: Any, command: dict[str, Any]) -> list[dict[str, Any]]:
    """Options as Discord sends them, from ``{"name": value}`` or ``[{"name", "value"}]``."""
    if options is None:
        return []
    declared = {str(o.get("name")): o for o in command.get("options") or [] if isinstance(o, dict)}
    pairs: list[tuple[str, Any, Any]]
    if isinstance(options, dict):
        pairs = [(str(name), value, None) for name, value in options.items()]
    elif isinstance(options, list) and all(isinstance(o, dict) and "name" in o for o in options):
        pairs = [(str(o["name"]), o.get("value"), o.get("type")) for o in options]
    else:
        raise ApiError(400, 50035, 'options must be an object {"name": value} or a list of {"name", "value"}')
    result = []
    for name, value, given in pairs:
        kind = given or declared.get(name, {}).get("type") or _OPTION_TYPES.get(type(value), 3)
        result.append({"name": name, "type": kind, "value": _typed(name, kind, value)})
    return result


def _typed(name: str, kind: Any, value: Any) -> Any:
    """A value typed as text (the page's ``/cmd n:3``) as Discord sends its option type, else 400."""
    if not isinstance(value, str) or kind not in _PARSERS:
        return value
    try:
        return _PARSERS[kind](value.strip())
    except ValueError:
        labels = {4: "an integer", 10: "a number", 5: "true or false"}
        problem = (("options", name), "BASE_TYPE_COERCE", f"option {name!r} must be {labels[kind]}")
        raise form_error([problem]) from None


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "yes", "1"):
        return True
    if text.lower() in ("false", "no", "0"):
        return False
    raise ValueError(text)


def _number(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)  # Discord's NUMBER options are finite
    return number


_PARSERS: Final[dict[int, Any]] = {4: int, 10: _number, 5: _boolean}


def install(emu: DiscordEmulator) -> Interactions:
    """Add the command registration routes and the interaction callback; return the registry."""
    registry = Interactions(emu)
    for template in (_COMMANDS, _GUILD_COMMANDS):
        emu.add(f"GET {template}", list_commands)
        emu.add(f"PUT {template}", overwrite_commands)
        emu.add(f"POST {template}", create_command)
        emu.add(f"DELETE {template}/{{command_id}}", delete_command)
    emu.add("POST /interactions/{interaction_id}/{interaction_token}/callback", callback, auth=False)
    return registry


def _scope(emu: DiscordEmulator, request: web.Request) -> str | None:
    if request.match_info["application_id"] != emu.config.application_id:
        raise ApiError(403, 50001, "Missing Access")
    return request.match_info.get("guild_id")


async def list_commands(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /applications/{id}[/guilds/{guild_id}]/commands``."""
    return json_response(200, emu.interactions.commands.get(_scope(emu, request), []))


async def overwrite_commands(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``PUT /applications/{id}[/guilds/{guild_id}]/commands``: the list replaces the scope's."""
    scope = _scope(emu, request)
    bodies = await read_json(request)
    return json_response(200, emu.interactions.overwrite(scope, bodies))


async def create_command(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /applications/{id}[/guilds/{guild_id}]/commands``: 201 when new, 200 when replaced."""
    scope = _scope(emu, request)
    command, new = emu.interactions.upsert(scope, await read_payload(request))
    return json_response(201 if new else 200, command)


async def delete_command(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``DELETE /applications/{id}[/guilds/{guild_id}]/commands/{command_id}``."""
    scope = _scope(emu, request)
    commands = emu.interactions.commands.get(scope, [])
    kept = [c for c in commands if c["id"] != request.match_info["command_id"]]
    if len(kept) == len(commands):
        raise ApiError(404, 10063, "Unknown application command")
    emu.interactions.commands[scope] = kept
    return web.Response(status=204)


async def callback(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /interactions/{id}/{token}/callback``."""
    interaction = emu.interactions.by_id.get(request.match_info["interaction_id"])
    if interaction is None or not secrets.compare_digest(
        interaction.token, request.match_info["interaction_token"]
    ):
        raise ApiError(404, 10062, "Unknown interaction")
    message = emu.interactions.respond(interaction, await read_payload(request))
    if not query_bool(request.query.get("with_response"), "with_response"):
        return web.Response(status=204)
    kind = interaction.response_type
    body: dict[str, Any] = {
        "interaction": {
            "id": interaction.id,
            "type": 2,
            "response_message_id": interaction.original_id,
            "response_message_loading": kind == 5,
            "response_message_ephemeral": bool(message is not None and message["flags"] & EPHEMERAL),
            "activity_instance_id": None,
        }
    }
    if message is not None:
        body["resource"] = {"type": kind, "message": message}
    return json_response(200, body)
