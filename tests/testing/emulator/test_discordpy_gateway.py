"""An unmodified discord.py client against the emulator's gateway and REST API."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import discord
import pytest
import yarl
from discord import app_commands

from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig, point_discord_py
from tests.testing.emulator.support import USER_ID, eventually, next_item, post, running


class Bot:
    """A discord.py client with a slash command tree; what it sees lands in queues."""

    def __init__(self, emulator: DiscordEmulator) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        self.emulator = emulator
        self.client = discord.Client(intents=intents, guild_ready_timeout=0)
        self.tree = app_commands.CommandTree(self.client)
        self.ready: asyncio.Queue[list[str]] = asyncio.Queue()
        self.messages: asyncio.Queue[discord.Message] = asyncio.Queue()
        self.commands: asyncio.Queue[discord.Interaction] = asyncio.Queue()
        client, tree = self.client, self.tree

        @tree.command(name="ask", description="Ask the bot")
        async def ask(interaction: discord.Interaction, prompt: str, loud: bool = False) -> None:
            self.commands.put_nowait(interaction)
            await interaction.response.send_message(f"asked: {prompt} loud={loud}", ephemeral=True)
            await interaction.followup.send(f"answer to {prompt}")

        @tree.command(name="slow", description="Deferred answer")
        async def slow(interaction: discord.Interaction) -> None:
            await interaction.response.defer(thinking=True)
            await interaction.edit_original_response(content="done thinking")

        async def setup_hook() -> None:
            await tree.sync()

        async def on_ready() -> None:
            self.ready.put_nowait([channel.name for channel in client.get_all_channels()])

        async def on_message(message: discord.Message) -> None:
            self.messages.put_nowait(message)
            if message.author != client.user and message.content.startswith("!echo "):
                await message.channel.send(message.content.removeprefix("!echo "))

        client.setup_hook = setup_hook  # type: ignore[method-assign]
        client.event(on_ready)
        client.event(on_message)


@pytest.fixture
async def bot(emulator: DiscordEmulator, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Bot]:
    """A connected, ready discord.py bot (REST and gateway pointed at the emulator)."""
    monkeypatch.setattr(discord.http.Route, "BASE", emulator.base_url)
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(emulator.gateway_url))
    bot = Bot(emulator)
    async with running(lambda: bot.client.start(emulator.config.token), bot.client.close):
        await next_item(bot.ready)
        yield bot


def _as_user(channel: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"channel_id": channel, "author_id": USER_ID, "username": "alice", "content": content, **extra}


async def test_client_gets_ready_with_the_guild_and_its_text_channels(
    emulator: DiscordEmulator, bot: Bot
) -> None:
    """READY then GUILD_CREATE: the client knows the guild, its channels, itself and its member."""
    [guild] = bot.client.guilds
    assert guild.id == int(emulator.config.guild_id)
    assert [c.name for c in guild.text_channels] == [c.name for c in emulator.config.channels]
    assert bot.client.user is not None and bot.client.user.id == int(emulator.config.bot_id)
    assert guild.me is not None and guild.me.guild_permissions.send_messages
    counts = emulator.counters.gateway
    assert counts["identify"] == 1 and counts["READY"] == 1 and counts["GUILD_CREATE"] == 1


async def test_injected_message_reaches_the_client_and_its_answer_is_stored(
    emulator: DiscordEmulator, bot: Bot, session: aiohttp.ClientSession, channel: str
) -> None:
    """POST /_emulator/messages: MESSAGE_CREATE as that user; the bot's reply is a REST create."""
    status, created = await post(
        session, f"{emulator.base_url}/_emulator/messages", _as_user(channel, "!echo hi")
    )
    assert status == 200 and created["author"]["username"] == "alice"
    received = await next_item(bot.messages)
    assert received.id == int(created["id"]) and received.content == "!echo hi"
    assert received.author.name == "alice" and isinstance(received.author, discord.Member)
    assert received.guild is not None and received.channel.id == int(channel)
    echoed = await next_item(bot.messages)
    assert echoed.author == bot.client.user and echoed.content == "hi"
    assert [m["content"] for m in emulator.messages(channel)] == ["!echo hi", "hi"]


async def test_replies_edits_and_deletes_are_dispatched(
    emulator: DiscordEmulator, bot: Bot, session: aiohttp.ClientSession, channel: str
) -> None:
    """A user's reply carries its reference; the bot's edit and delete reach the client's cache."""
    edits: asyncio.Queue[discord.RawMessageUpdateEvent] = asyncio.Queue()
    deletes: asyncio.Queue[discord.RawMessageDeleteEvent] = asyncio.Queue()
    bot.client.event(_put_into(edits, "on_raw_message_edit"))
    bot.client.event(_put_into(deletes, "on_raw_message_delete"))
    target = bot.client.get_channel(int(channel))
    assert isinstance(target, discord.TextChannel)
    sent = await target.send("first")
    await next_item(bot.messages)
    _, reply = await post(
        session,
        f"{emulator.base_url}/_emulator/messages",
        _as_user(channel, "reply", message_reference={"message_id": str(sent.id)}),
    )
    received = await next_item(bot.messages)
    assert received.reference is not None and received.reference.message_id == sent.id
    await sent.edit(content="first, edited")
    edit = await next_item(edits)
    assert edit.message_id == sent.id and edit.data["content"] == "first, edited"
    await sent.delete()
    delete = await next_item(deletes)
    assert delete.message_id == sent.id
    assert [m["id"] for m in emulator.messages(channel)] == [reply["id"]]


def _put_into(queue: asyncio.Queue[Any], name: str) -> Any:
    async def handler(event: Any) -> None:
        queue.put_nowait(event)

    handler.__name__ = name
    return handler


async def test_heartbeats_are_acknowledged() -> None:
    """With a short interval the client beats repeatedly and every beat is acknowledged (latency known)."""
    async with DiscordEmulator(EmulatorConfig(heartbeat_interval_ms=30)) as emulator:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(discord.http.Route, "BASE", discord.http.Route.BASE)
            patch.setattr(
                discord.gateway.DiscordWebSocket,
                "DEFAULT_GATEWAY",
                discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY,
            )
            point_discord_py(emulator.base_url, emulator.gateway_url)
            bot = Bot(emulator)
            async with running(lambda: bot.client.start(emulator.config.token), bot.client.close):
                await next_item(bot.ready)
                await eventually(lambda: emulator.counters.gateway["heartbeat"] >= 5, "five heartbeats")
                assert math.isfinite(bot.client.latency) and bot.client.latency >= 0
            assert emulator.base_url == discord.http.Route.BASE  # point_discord_py did the override
        assert emulator.base_url != discord.http.Route.BASE


async def test_resume_gets_invalid_session_and_the_client_identifies_again(
    emulator: DiscordEmulator, bot: Bot, session: aiohttp.ClientSession, channel: str
) -> None:
    """After RECONNECT the client RESUMEs; INVALID_SESSION makes it IDENTIFY anew, and it works after."""
    emulator.gateway.reconnect_all()
    counts = emulator.counters.gateway
    await eventually(
        lambda: counts["resume"] == 1 and counts["identify"] == 2, "a resume, then a second identify"
    )
    await eventually(lambda: len(emulator.gateway.identified()) == 1, "one live session")
    await post(session, f"{emulator.base_url}/_emulator/messages", _as_user(channel, "still there?"))
    received = await next_item(bot.messages)
    assert received.content == "still there?"


async def test_slash_command_is_an_interaction_and_the_callback_and_follow_up_work(
    emulator: DiscordEmulator, bot: Bot, session: aiohttp.ClientSession, channel: str
) -> None:
    """Commands synced at start-up; an invocation runs the command; the ephemeral answer is not listed."""
    registered = [c["name"] for c in emulator.interactions.commands[None]]
    assert sorted(registered) == ["ask", "slow"]
    status, summary = await post(
        session,
        f"{emulator.base_url}/_emulator/interactions?wait=true",
        {
            "channel_id": channel,
            "author_id": USER_ID,
            "username": "alice",
            "command": "ask",
            "options": {"prompt": "2+2?", "loud": True},
        },
    )
    assert status == 200
    interaction = await next_item(bot.commands)
    assert interaction.user.name == "alice" and interaction.channel_id == int(channel)
    assert summary["response_type"] == 4 and summary["response"]["flags"] == 64
    assert summary["response"]["content"] == "asked: 2+2? loud=True"
    follow_up = await next_item(bot.messages)
    assert follow_up.content == "answer to 2+2?"
    assert [m["content"] for m in emulator.messages(channel)] == ["answer to 2+2?"]
    _, again = await _get(session, f"{emulator.base_url}/_emulator/interactions/{summary['id']}")
    assert [m["content"] for m in again["messages"]] == ["asked: 2+2? loud=True", "answer to 2+2?"]


async def test_deferred_command_edits_its_original_response(
    emulator: DiscordEmulator, bot: Bot, session: aiohttp.ClientSession, channel: str
) -> None:
    """defer() posts a loading placeholder; edit_original_response fills it (PATCH @original)."""
    edits: asyncio.Queue[discord.RawMessageUpdateEvent] = asyncio.Queue()
    bot.client.event(_put_into(edits, "on_raw_message_edit"))
    _, summary = await post(
        session,
        f"{emulator.base_url}/_emulator/interactions",
        {"channel_id": channel, "author_id": USER_ID, "username": "bob", "command": "/slow"},
    )
    edit = await next_item(edits)
    assert edit.data["content"] == "done thinking"
    interaction = emulator.interactions.by_id[summary["id"]]
    assert interaction.response_type == 5
    [message] = emulator.messages(channel)
    assert message["id"] == interaction.original_id and message["content"] == "done thinking"
    assert message["type"] == 20 and message["flags"] & 128 == 0


async def _get(session: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    async with session.get(url) as resp:
        return resp.status, await resp.json()
