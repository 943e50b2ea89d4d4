"""Members and roles through the emulator's own routes, so permission rules can be tried end to end.

* ``POST /_emulator/members`` ``{"guild_id", "user_id", "roles"}`` (optional ``"username"``):
  creates the member or sets its roles to exactly ``roles`` (role ids as strings); an id the
  guild does not know yet becomes a role without permissions (so a bot's ``moderator_roles``
  can be tried without creating the role first). Answers 200 with the member object (``user``,
  ``roles``, ...) and its computed ``permissions``; GUILD_MEMBER_ADD / UPDATE follow.
* ``POST /_emulator/roles`` ``{"guild_id", "role_id", "name", "permissions"}`` (``role_id``
  optional: a new id; ``name`` and ``permissions`` optional on an update): creates or updates a
  role; ``permissions`` is Discord's bitfield, a string of digits (``"8192"``: Manage Messages)
  or an int; the guild id as ``role_id`` changes ``@everyone``. Answers 200 with the role
  object; GUILD_ROLE_CREATE / UPDATE follow.

The roles then appear in MESSAGE_CREATE's ``member.roles``, in an interaction's ``member.roles``,
and in the interaction's ``member.permissions`` and ``app_permissions`` (the bot's own, when it
is given roles too), computed as module ``guild`` describes. A bad field answers 400 with
Discord's ``Invalid Form Body`` tree naming it. The Host and Origin checks of every route
(``origin``) apply.
"""

from __future__ import annotations

__all__ = ("install", "set_member", "upsert_role")

from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from rxcord.core.errors import ApiError
from rxcord.testing.emulator.config import API_PREFIX
from rxcord.testing.emulator.guild import ALL_PERMISSIONS
from rxcord.testing.emulator.validation import form_error, read_payload
from rxcord.testing.emulator.wire import json_response, unique, user_object

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator

PREFIX: Final = API_PREFIX + "/_emulator"
MAX_ROLES: Final = 250
"""Discord's cap on a guild's roles; a member cannot hold more."""


def install(emu: DiscordEmulator) -> None:
    """Add ``POST /_emulator/members`` and ``POST /_emulator/roles``."""
    emu.add_plain("POST", PREFIX + "/members", post_member)
    emu.add_plain("POST", PREFIX + "/roles", post_role)


def _invalid(field: str, code: str, message: str) -> ApiError:
    return form_error([((field,), code, f"{field}: {message}")])


def _snowflake(value: Any, field: str) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str) or not value.isdigit() or not 1 <= len(value) <= 20:
        raise _invalid(field, "NUMBER_TYPE_COERCE", "must be a snowflake (a string of digits).")
    return value


def _guild(emu: DiscordEmulator, body: dict[str, Any]) -> None:
    if _snowflake(body.get("guild_id"), "guild_id") != emu.guild.id:
        raise _invalid("guild_id", "UNKNOWN_GUILD", f"the emulator's guild is {emu.guild.id}.")


def _roles(emu: DiscordEmulator, raw: Any) -> list[str]:
    if not isinstance(raw, list) or len(raw) > MAX_ROLES:
        raise _invalid("roles", "BASE_TYPE_ARRAY", f"must be a list of at most {MAX_ROLES} role ids.")
    roles = unique(_snowflake(item, "roles") for item in raw)
    if emu.guild.id in roles:
        raise _invalid("roles", "EVERYONE_ROLE", "@everyone (the guild id) is everyone's role; leave it out.")
    return roles


def _permissions(raw: Any) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, str) and raw.isdigit():
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= ALL_PERMISSIONS:
        raise _invalid("permissions", "NUMBER_TYPE_COERCE", "must be a permission bitfield (digits).")
    return raw


def _name(raw: Any, field: str, limit: int) -> str | None:
    if raw is None:
        return None
    if not isinstance(raw, str) or not 1 <= len(raw.strip()) <= limit:
        raise _invalid(field, "BASE_TYPE_BAD_LENGTH", f"must be between 1 and {limit} in length.")
    return raw


def set_member(emu: DiscordEmulator, body: dict[str, Any]) -> dict[str, Any]:
    """What ``POST /_emulator/members`` does: validate, then create or update the member."""
    _guild(emu, body)
    user_id = _snowflake(body.get("user_id"), "user_id")
    roles = _roles(emu, body.get("roles"))
    username = _name(body.get("username"), "username", 32)
    guild = emu.guild
    if user_id == emu.config.bot_id:
        user = emu.store.bot_user()
    elif username is not None:
        user = user_object(user_id, username)
    else:
        user = guild.users.get(user_id) or user_object(user_id, f"user-{user_id[-4:]}")
    member = guild.set_member(user, roles)
    return {**member, "permissions": str(guild.permissions(user_id))}


def upsert_role(emu: DiscordEmulator, body: dict[str, Any]) -> dict[str, Any]:
    """What ``POST /_emulator/roles`` does: validate, then create or update the role."""
    _guild(emu, body)
    raw_id = body.get("role_id")
    role_id = emu.store.snowflake() if raw_id is None else _snowflake(raw_id, "role_id")
    name = _name(body.get("name"), "name", 100)
    permissions = _permissions(body.get("permissions"))
    if role_id not in emu.guild.roles and len(emu.guild.roles) >= MAX_ROLES:
        raise ApiError(400, 30005, "Maximum number of guild roles reached (250)")
    return emu.guild.upsert_role(role_id, name, permissions)


async def post_member(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /_emulator/members`` (see the module docstring)."""
    return json_response(200, set_member(emu, await read_payload(request)))


async def post_role(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``POST /_emulator/roles`` (see the module docstring)."""
    return json_response(200, upsert_role(emu, await read_payload(request)))
