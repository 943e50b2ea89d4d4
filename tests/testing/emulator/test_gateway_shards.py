"""Sharding on the emulator's gateway: IDENTIFY's ``shard``, guild events by ``(guild_id >> 22) % count``."""

from __future__ import annotations

from typing import Any

import aiohttp

from rxcord.testing.emulator import DiscordEmulator
from tests.testing.emulator.support import USER_ID, post
from tests.testing.emulator.test_gateway_protocol import (  # connect: the fixture
    CONTENT,
    DMS,
    GUILD_MESSAGES,
    GUILDS,
    Socket,
    connect,
)

__all__ = ("connect",)  # re-exported so pytest finds the fixture here

DM_CHANNEL = "555000000000000001"


async def _identify(socket: Socket, emulator: DiscordEmulator, shard: list[int] | None) -> dict[str, Any]:
    d: dict[str, Any] = {"token": emulator.config.token, "intents": GUILDS | GUILD_MESSAGES | DMS | CONTENT}
    if shard is not None:
        d["shard"] = shard
    await socket.send(2, d)
    ready = await socket.receive()
    assert ready["t"] == "READY"
    return ready


async def _next_message(socket: Socket) -> dict[str, Any]:
    frame = await socket.receive()
    assert frame["t"] == "MESSAGE_CREATE", frame
    return frame


async def test_the_guild_goes_to_its_shard_and_dms_to_shard_zero(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession, channel: str
) -> None:
    """Two shards: only the guild's shard sees the guild (READY, GUILD_CREATE, its messages); DMs go to 0."""
    owner = (int(emulator.config.guild_id) >> 22) % 2
    sockets = {0: await connect(), 1: await connect()}
    readies = {n: await _identify(sockets[n], emulator, [n, 2]) for n in (0, 1)}
    assert readies[owner]["d"]["guilds"] == [{"id": emulator.config.guild_id, "unavailable": True}]
    assert readies[1 - owner]["d"]["guilds"] == []
    assert [readies[n]["d"]["shard"] for n in (0, 1)] == [[0, 2], [1, 2]]
    assert (await sockets[owner].receive())["t"] == "GUILD_CREATE"
    url = f"{emulator.base_url}/_emulator/messages"
    user = {"author_id": USER_ID, "username": "erin"}
    await post(session, url, {**user, "channel_id": channel, "content": "in the guild"})
    await post(session, url, {**user, "channel_id": DM_CHANNEL, "content": "in a DM"})
    guild_frame = await _next_message(sockets[owner])
    assert guild_frame["d"]["content"] == "in the guild"
    # The other shard's first dispatch is the DM when it is shard 0; nothing for shard 1 otherwise.
    dm_frame = await _next_message(sockets[0]) if owner == 1 else await _next_message(sockets[owner])
    assert dm_frame["d"]["content"] == "in a DM" and "guild_id" not in dm_frame["d"]
    # Each message reached exactly one session.
    assert emulator.counters.gateway["MESSAGE_CREATE"] == 2


async def test_interactions_can_be_routed_to_another_shard(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession, channel: str
) -> None:
    """``Gateway.interaction_shard`` sends a guild's interaction to the named shard, not the guild's."""
    owner = (int(emulator.config.guild_id) >> 22) % 2
    other = 1 - owner
    sockets = {n: await connect() for n in (0, 1)}
    for n in (0, 1):
        await _identify(sockets[n], emulator, [n, 2])
    assert (await sockets[owner].receive())["t"] == "GUILD_CREATE"
    body = [{"name": "ping", "description": "Ping", "type": 1}]
    commands = f"{emulator.base_url}/applications/{emulator.config.application_id}/commands"
    headers = {"Authorization": f"Bot {emulator.config.token}"}
    async with session.put(commands, json=body, headers=headers) as response:
        assert response.status == 200, await response.text()
    emulator.gateway.interaction_shard = other
    invoke = {"channel_id": channel, "author_id": USER_ID, "username": "erin", "command": "ping"}
    status, _ = await post(session, f"{emulator.base_url}/_emulator/interactions", invoke)
    assert status == 200
    frame = await sockets[other].receive()
    assert frame["t"] == "INTERACTION_CREATE" and frame["d"]["guild_id"] == emulator.config.guild_id
    assert emulator.counters.gateway["INTERACTION_CREATE"] == 1


async def test_an_invalid_shard_closes_with_4010(emulator: DiscordEmulator, connect: Any) -> None:
    for shard in ([2, 2], [0], [-1, 2], ["0", "1"]):
        socket = await connect()
        await socket.send(2, {"token": emulator.config.token, "intents": 0, "shard": shard})
        assert await socket.closed_with() == 4010, shard


async def test_without_shard_a_session_gets_everything(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession, channel: str
) -> None:
    """No ``shard`` in IDENTIFY is shard 0 of 1: the guild and DMs (READY has no ``shard``)."""
    socket = await connect()
    ready = await _identify(socket, emulator, None)
    assert "shard" not in ready["d"] and ready["d"]["guilds"]
    assert (await socket.receive())["t"] == "GUILD_CREATE"
    url = f"{emulator.base_url}/_emulator/messages"
    user = {"author_id": USER_ID, "username": "erin"}
    await post(session, url, {**user, "channel_id": channel, "content": "one"})
    await post(session, url, {**user, "channel_id": DM_CHANNEL, "content": "two"})
    assert [(await _next_message(socket))["d"]["content"] for _ in range(2)] == ["one", "two"]
