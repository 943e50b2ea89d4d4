"""Threads: started by the bot over REST or by a user, announced as THREAD_CREATE, messages inside them."""

from __future__ import annotations

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator
from tests.testing.emulator.support import USER_ID, WAIT, post

BOT = {"Authorization": "Bot emulator-token"}


async def test_bot_starts_a_thread_from_a_message(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    """The thread has the starter's id; the starter shows it; GET /channels/{id} reads it."""
    _, starter = await post(
        session,
        f"{emulator.base_url}/_emulator/messages",
        {"channel_id": channel, "author_id": USER_ID, "username": "alice", "content": "long question"},
    )
    url = f"{emulator.base_url}/channels/{channel}/messages/{starter['id']}/threads"
    async with session.post(url, json={"name": "about that"}, headers=BOT) as resp:
        assert resp.status == 201
        thread = await resp.json()
    assert thread["id"] == starter["id"] and thread["parent_id"] == channel and thread["type"] == 11
    async with session.post(url, json={"name": "again"}, headers=BOT) as resp:
        assert resp.status == 400 and (await resp.json())["code"] == 160004
    async with session.get(f"{emulator.base_url}/channels/{thread['id']}", headers=BOT) as resp:
        assert (await resp.json())["name"] == "about that"
    [stored] = emulator.messages(channel)
    assert stored["thread"]["id"] == thread["id"] and stored["flags"] & 32
    assert emulator.guild.guild_id_of(thread["id"]) == emulator.config.guild_id
    assert emulator.guild.guild_object()["threads"] == [thread]


async def test_user_thread_is_dispatched_and_takes_messages(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    async with session.ws_connect(emulator.gateway_url) as ws:
        assert (await ws.receive_json(timeout=WAIT))["op"] == 10
        await ws.send_json({"op": 2, "d": {"token": emulator.config.token, "intents": 1 | 512 | 32768}})
        assert (await ws.receive_json(timeout=WAIT))["t"] == "READY"
        assert (await ws.receive_json(timeout=WAIT))["t"] == "GUILD_CREATE"
        user = {"channel_id": channel, "author_id": USER_ID, "username": "alice"}
        status, thread = await post(
            session, f"{emulator.base_url}/_emulator/threads", {**user, "name": "side talk"}
        )
        assert status == 200 and thread["owner_id"] == USER_ID
        created = await ws.receive_json(timeout=WAIT)
        assert created["t"] == "THREAD_CREATE" and created["d"]["newly_created"] is True
        await post(
            session,
            f"{emulator.base_url}/_emulator/messages",
            {**user, "channel_id": thread["id"], "content": "in here"},
        )
        message = await ws.receive_json(timeout=WAIT)
        assert message["t"] == "MESSAGE_CREATE" and message["d"]["channel_id"] == thread["id"]
        assert message["d"]["guild_id"] == emulator.config.guild_id
    async with session.get(f"{emulator.base_url}/_emulator/channels") as resp:
        listed = [c["id"] for c in await resp.json()]
    assert listed == [*(c.id for c in emulator.config.channels), thread["id"]]


@pytest.mark.parametrize("body", [{"name": ""}, {"name": "x" * 101}, {}])
async def test_thread_names_are_validated(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str, body: dict[str, str]
) -> None:
    async with session.post(
        f"{emulator.base_url}/channels/{channel}/threads", json=body, headers=BOT
    ) as resp:
        assert resp.status == 400 and (await resp.json())["code"] == 50035
    assert emulator.guild.threads == {}


async def test_threads_only_in_guild_text_channels(
    emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    async with session.post(
        f"{emulator.base_url}/channels/4242/threads", json={"name": "dm"}, headers=BOT
    ) as resp:
        assert resp.status == 400 and (await resp.json())["code"] == 50024
