"""``DiscordPySource`` and ``read_conversation`` through an unmodified discord.py client (REST only).

The client logs in against the emulator (``point_discord_py``) without opening the gateway:
``fetch_message`` and ``history`` are REST calls, what the reader uses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest

from rxcord.discord import DiscordPySource, read_conversation
from rxcord.discord.chain import collect
from rxcord.discord.conversation import ContextLimits
from rxcord.testing import DiscordEmulator, EmulatorConfig, point_discord_py
from rxcord.testing.emulator.server import serve

GENERAL = "1200000000000000010"
ALICE = "3000000000000000001"


@pytest.fixture
async def world() -> AsyncIterator[tuple[DiscordEmulator, discord.Client, aiohttp.ClientSession]]:
    async with serve(config=EmulatorConfig()) as emulator, aiohttp.ClientSession() as session:
        point_discord_py(emulator.base_url, emulator.gateway_url)
        client = discord.Client(intents=discord.Intents.default())
        await client.login(emulator.config.token)
        try:
            yield emulator, client, session
        finally:
            await client.close()


async def _post(session: aiohttp.ClientSession, emu: DiscordEmulator, content: str, **more: Any) -> str:
    body = {"channel_id": GENERAL, "author_id": ALICE, "username": "alice", "content": content, **more}
    async with session.post(f"{emu.base_url}/_emulator/messages", json=body) as response:
        assert response.status == 200, await response.text()
        return str((await response.json())["id"])


async def _answer_in_parts(session: aiohttp.ClientSession, emu: DiscordEmulator, question: str) -> list[str]:
    headers = {"Authorization": f"Bot {emu.config.token}"}
    ids: list[str] = []
    for n, text in enumerate(["part one", "part two", "part three"]):
        body: dict[str, Any] = {"content": text}
        if n == 0:
            body["message_reference"] = {"message_id": question}  # only the first part replies
        url = f"{emu.base_url}/channels/{GENERAL}/messages"
        async with session.post(url, json=body, headers=headers) as response:
            assert response.status == 200, await response.text()
            ids.append(str((await response.json())["id"]))
    return ids


async def test_a_discord_py_client_reads_a_split_answer_whole(
    world: tuple[DiscordEmulator, discord.Client, aiohttp.ClientSession],
) -> None:
    emulator, client, session = world
    question = await _post(session, emulator, "the question")
    parts = await _answer_in_parts(session, emulator, question)
    trigger = await _post(session, emulator, "and then?", message_reference={"message_id": parts[1]})
    source = DiscordPySource.for_client(client)
    line = await source.message(GENERAL, trigger)
    assert line is not None and line.reply_to == parts[1]
    lines, more = await collect(line, source, ContextLimits(), assistant_ids={emulator.config.bot_id})
    assert [x.id for x in lines] == [question, *parts, trigger] and not more
    assert await source.message(GENERAL, "1") is None  # gone: None, not an exception


async def test_read_conversation_defaults_to_the_message_s_own_channel(
    world: tuple[DiscordEmulator, discord.Client, aiohttp.ClientSession],
) -> None:
    emulator, client, session = world
    question = await _post(session, emulator, "the question")
    parts = await _answer_in_parts(session, emulator, question)
    trigger = await _post(
        session, emulator, f"<@{emulator.config.bot_id}> more", message_reference={"message_id": parts[2]}
    )
    message = await client.get_partial_messageable(int(GENERAL)).fetch_message(int(trigger))
    assert client.user is not None
    conversation = await read_conversation(message, me=client.user)
    assert [(m.role.value, m.text) for m in conversation.messages] == [
        ("user", f"[alice, id {ALICE}]: the question"),
        ("assistant", "part one"),
        ("assistant", "part two"),
        ("assistant", "part three"),
        ("user", f"[alice, id {ALICE}]: more"),
    ]
    assert conversation.notes == ()
