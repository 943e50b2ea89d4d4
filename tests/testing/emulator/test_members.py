"""``POST /_emulator/members`` and ``/_emulator/roles``: schema, errors, and what the gateway sends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator
from rxcord.testing.emulator.guild import ALL_PERMISSIONS, EVERYONE_PERMISSIONS, MANAGE_MESSAGES
from tests.testing.emulator.support import USER_ID, post
from tests.testing.emulator.test_gateway_protocol import CONTENT, GUILD_MESSAGES, GUILDS, Socket

MODS = "1300000000000000001"
HELPERS = "1300000000000000002"


@pytest.fixture
async def socket(emulator: DiscordEmulator, session: aiohttp.ClientSession) -> AsyncIterator[Socket]:
    """A raw gateway session with GUILDS, GUILD_MESSAGES and MESSAGE_CONTENT, past GUILD_CREATE."""
    async with session.ws_connect(emulator.gateway_url + "?v=10&encoding=json") as ws:
        raw = Socket(ws)
        assert (await raw.receive())["op"] == 10
        await raw.identify(emulator.config.token, GUILDS | GUILD_MESSAGES | CONTENT)
        yield raw


async def _until(socket: Socket, name: str) -> dict[str, Any]:
    """The next dispatch called *name* (others in between are skipped)."""
    while True:
        frame = await socket.receive()
        if frame["t"] == name:
            data: dict[str, Any] = frame["d"]
            return data


def _member(emulator: DiscordEmulator, user_id: str = USER_ID, **extra: Any) -> dict[str, Any]:
    return {"guild_id": emulator.config.guild_id, "user_id": user_id, **extra}


async def test_a_member_gets_roles_and_unknown_ids_become_roles(
    emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    base = emulator.base_url
    status, role = await post(
        session,
        f"{base}/_emulator/roles",
        {"guild_id": emulator.config.guild_id, "role_id": MODS, "name": "mods", "permissions": "8192"},
    )
    assert status == 200 and role["id"] == MODS and role["permissions"] == "8192" and role["name"] == "mods"
    status, member = await post(
        session, f"{base}/_emulator/members", _member(emulator, roles=[MODS, HELPERS], username="alice")
    )
    assert status == 200, member
    assert member["user"]["id"] == USER_ID and member["user"]["username"] == "alice"
    assert member["roles"] == [MODS, HELPERS]
    assert int(member["permissions"]) == int(EVERYONE_PERMISSIONS) | MANAGE_MESSAGES
    async with session.get(f"{base}/_emulator/guild") as response:
        guild = await response.json()
    roles = {r["id"]: r for r in guild["roles"]}
    assert list(roles) == [emulator.config.guild_id, MODS, HELPERS]
    assert roles[HELPERS]["permissions"] == "0"  # named by the member route only: no permissions
    [listed] = [m for m in guild["members"] if m["user"]["id"] == USER_ID]
    assert listed["roles"] == [MODS, HELPERS]
    # Updating sets exactly the roles given.
    status, member = await post(session, f"{base}/_emulator/members", _member(emulator, roles=[]))
    assert status == 200 and member["roles"] == [] and member["user"]["username"] == "alice"
    assert member["permissions"] == EVERYONE_PERMISSIONS


@pytest.mark.parametrize(
    ("route", "change", "field"),
    [
        ("members", {"guild_id": None}, "guild_id"),
        ("members", {"guild_id": "1200000000000000099"}, "guild_id"),
        ("members", {"user_id": "alice"}, "user_id"),
        ("members", {"roles": None}, "roles"),
        ("members", {"roles": "1300000000000000001"}, "roles"),
        ("members", {"roles": ["mods"]}, "roles"),
        ("members", {"roles": ["1200000000000000001"]}, "roles"),  # @everyone
        ("members", {"username": ""}, "username"),
        ("roles", {"permissions": "lots"}, "permissions"),
        ("roles", {"permissions": -1}, "permissions"),
        ("roles", {"role_id": "x"}, "role_id"),
        ("roles", {"name": 3}, "name"),
    ],
)
async def test_a_bad_field_is_a_400_naming_it(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, route: str, change: dict[str, Any], field: str
) -> None:
    body = _member(emulator, roles=[MODS], role_id=MODS, permissions="8192")
    body.update(change)
    status, answer = await post(session, f"{emulator.base_url}/_emulator/{route}", body)
    assert status == 400, answer
    assert answer["code"] == 50035 and list(answer["errors"]) == [field]
    assert field in answer["errors"][field]["_errors"][0]["message"]
    assert emulator.guild.member_roles == {} and list(emulator.guild.roles) == [emulator.config.guild_id]


async def test_a_foreign_origin_is_refused_before_any_change(
    emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    url = f"{emulator.base_url}/_emulator/members"
    headers = {"Origin": "https://evil.example"}
    async with session.post(url, json=_member(emulator, roles=[MODS]), headers=headers) as response:
        assert response.status == 403
    assert emulator.guild.member_roles == {} and MODS not in emulator.guild.roles


async def test_roles_reach_message_create_and_the_guild_role_events(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, socket: Socket, channel: str
) -> None:
    base = emulator.base_url
    await post(session, f"{base}/_emulator/members", _member(emulator, roles=[MODS]))
    created = await _until(socket, "GUILD_ROLE_CREATE")
    assert created == {"guild_id": emulator.config.guild_id, "role": {**created["role"], "id": MODS}}
    await post(session, f"{base}/_emulator/roles", {"guild_id": emulator.config.guild_id, "role_id": MODS})
    body = {"channel_id": channel, "author_id": USER_ID, "username": "alice", "content": "hi"}
    await post(session, f"{base}/_emulator/messages", body)
    message = await _until(socket, "MESSAGE_CREATE")
    assert message["member"]["roles"] == [MODS] and message["author"]["id"] == USER_ID
    await post(
        session,
        f"{base}/_emulator/roles",
        {"guild_id": emulator.config.guild_id, "role_id": MODS, "permissions": 8192},
    )
    updated = await _until(socket, "GUILD_ROLE_UPDATE")
    assert updated["role"]["permissions"] == "8192" and updated["role"]["id"] == MODS


async def test_interactions_carry_roles_and_computed_permissions(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, socket: Socket, channel: str
) -> None:
    base = emulator.base_url
    headers = {"Authorization": f"Bot {emulator.config.token}"}
    url = f"{base}/applications/{emulator.config.application_id}/commands"
    async with session.put(url, json=[{"name": "stop", "description": "stop"}], headers=headers) as response:
        assert response.status == 200
    guild_id = emulator.config.guild_id
    invoke = {"channel_id": channel, "author_id": USER_ID, "username": "alice", "command": "stop"}

    async def interaction() -> dict[str, Any]:
        status, _ = await post(session, f"{base}/_emulator/interactions", invoke)
        assert status == 200
        return await _until(socket, "INTERACTION_CREATE")

    plain = await interaction()
    assert plain["member"]["roles"] == [] and plain["member"]["permissions"] == EVERYONE_PERMISSIONS
    assert not int(plain["member"]["permissions"]) & MANAGE_MESSAGES
    await post(
        session, f"{base}/_emulator/roles", {"guild_id": guild_id, "role_id": MODS, "permissions": "8192"}
    )
    await post(session, f"{base}/_emulator/members", _member(emulator, roles=[MODS]))
    moderator = await interaction()
    assert moderator["member"]["roles"] == [MODS]
    assert int(moderator["member"]["permissions"]) & MANAGE_MESSAGES
    assert moderator["app_permissions"] == EVERYONE_PERMISSIONS  # the bot has no role yet
    # An administrator role means every permission; the bot's own roles give app_permissions.
    await post(
        session, f"{base}/_emulator/roles", {"guild_id": guild_id, "role_id": HELPERS, "permissions": "8"}
    )
    status, bot = await post(
        session, f"{base}/_emulator/members", _member(emulator, emulator.config.bot_id, roles=[HELPERS])
    )
    assert status == 200 and bot["user"]["bot"] is True
    await post(session, f"{base}/_emulator/members", _member(emulator, roles=[HELPERS]))
    admin = await interaction()
    assert admin["member"]["permissions"] == admin["app_permissions"] == str(ALL_PERMISSIONS)
    # @everyone's own permissions change through the roles route (the guild id as role_id).
    await post(session, f"{base}/_emulator/members", _member(emulator, roles=[]))
    await post(
        session, f"{base}/_emulator/roles", {"guild_id": guild_id, "role_id": guild_id, "permissions": "0"}
    )
    nothing = await interaction()
    assert nothing["member"]["permissions"] == "0"
