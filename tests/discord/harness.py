"""A plain discord.py client running ``rxcord.discord.Answers`` against the emulator's gateway.

The provider is ``tests.bot.conftest.EchoProvider`` on 127.0.0.1; users act through the
emulator's ``/_emulator`` routes (messages and slash commands, as they would in Discord).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import attrs
import discord
from discord import app_commands

import rxcord
from rxcord.discord import Answers, Interrupt, Permissions
from rxcord.testing import DiscordEmulator, EmulatorConfig, point_discord_py
from rxcord.testing.emulator.server import serve
from tests.bot.conftest import ALICE, BOB, GENERAL, EchoProvider, eventually

CAROL = "3000000000000000003"
NAMES = {ALICE: "alice", BOB: "bob", CAROL: "carol"}


@attrs.define
class Harness:
    """The emulator, the provider, and one discord.py bot built from ``Answers``."""

    emulator: DiscordEmulator
    provider: EchoProvider
    session: aiohttp.ClientSession
    client: discord.Client | None = None
    answers: Answers | None = None
    _connect: asyncio.Task[None] | None = None

    async def start(
        self,
        *,
        permissions: Permissions | None = None,
        interrupt: Interrupt = Interrupt.ADDRESSED,
        delivery: rxcord.DeliveryMode = rxcord.DeliveryMode.LIVE,
    ) -> Answers:
        point_discord_py(self.emulator.base_url, self.emulator.gateway_url)
        intents = discord.Intents.default()
        intents.message_content = True
        client = discord.Client(intents=intents, allowed_mentions=discord.AllowedMentions.none())
        tree = app_commands.CommandTree(client)
        candidates = rxcord.fallback_order(
            rxcord.OpenAIAdapter(), ["echo-1"], ["echo-secret-key"], base_url=self.provider.base_url
        )
        streamer = rxcord.Streamer(
            sink=rxcord.DiscordPySink.for_client(client),
            transport=rxcord.TransportConfig(allow_private_network=True),
            config=rxcord.StreamConfig(delivery=delivery),
        )
        answers = Answers(client, candidates, streamer=streamer, permissions=permissions, interrupt=interrupt)
        answers.install(tree)
        ready = asyncio.Event()

        @client.event
        async def on_ready() -> None:
            await tree.sync()
            ready.set()

        @client.event
        async def on_message(message: discord.Message) -> None:
            await answers.on_message(message)

        await client.login(self.emulator.config.token)
        self._connect = asyncio.create_task(client.connect(reconnect=False))
        await asyncio.wait_for(ready.wait(), 30)
        self.client, self.answers = client, answers
        return answers

    async def close(self) -> None:
        if self.answers is not None:
            await self.answers.close(grace=5)
        if self.client is not None:
            await self.client.close()
        if self._connect is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._connect

    @property
    def me(self) -> str:
        return f"<@{self.emulator.config.bot_id}>"

    async def say(
        self, content: str, *, author: str = ALICE, channel: str = GENERAL, reply_to: str | None = None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "channel_id": channel,
            "author_id": author,
            "username": NAMES[author],
            "content": content,
        }
        if reply_to is not None:
            body["message_reference"] = {"message_id": reply_to}
        async with self.session.post(f"{self.emulator.base_url}/_emulator/messages", json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
            return result

    async def command(
        self, name: str, *, author: str = ALICE, channel: str = GENERAL, answer: str | None = None
    ) -> str:
        """Run a slash command as *author*; return the bot's ephemeral reply."""
        body: dict[str, Any] = {
            "channel_id": channel,
            "author_id": author,
            "username": NAMES[author],
            "command": name,
        }
        if answer is not None:
            body["options"] = {"answer": answer}
        url = f"{self.emulator.base_url}/_emulator/interactions?wait=true"
        async with self.session.post(url, json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
        assert result["response"]["flags"] & 64  # ephemeral
        text: str = result["response"]["content"]
        return text

    def bot_messages(self, channel: str = GENERAL) -> list[dict[str, Any]]:
        bot_id = self.emulator.config.bot_id
        return [m for m in self.emulator.messages(channel) if m["author"]["id"] == bot_id]

    async def finished(self, count: int) -> None:
        answers = self.answers
        assert answers is not None
        await eventually(lambda: len(answers.finished) >= count, what=f"{count} answers to end")


@contextlib.asynccontextmanager
async def harness() -> AsyncIterator[Harness]:
    provider = EchoProvider()
    await provider.start()
    async with serve(config=EmulatorConfig()) as emulator, aiohttp.ClientSession() as session:
        world = Harness(emulator=emulator, provider=provider, session=session)
        try:
            yield world
        finally:
            await world.close()
            await provider.close()
