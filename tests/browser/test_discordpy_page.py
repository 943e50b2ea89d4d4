"""Typed in the page, received by an unmodified discord.py client on the emulator's gateway."""

from __future__ import annotations

import asyncio
import contextlib
import queue
from collections.abc import Iterator
from typing import Any

import discord
import pytest
import yarl
from discord import app_commands
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from rxcord.testing.emulator import DiscordEmulator
from tests.browser.conftest import ServerThread, wait_for

pytestmark = pytest.mark.browser

WAIT = 30.0


class PageBot:
    """A discord.py client with a ``/stop`` command; what it receives lands in thread-safe queues."""

    def __init__(self) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        self.client = discord.Client(intents=intents, guild_ready_timeout=0)
        self.tree = app_commands.CommandTree(self.client)
        self.ready: queue.Queue[bool] = queue.Queue()
        self.messages: queue.Queue[tuple[str, str, int]] = queue.Queue()
        self.commands: queue.Queue[tuple[str, str, int]] = queue.Queue()
        client, tree = self.client, self.tree

        @tree.command(name="stop", description="Stop the answer being streamed (graceful)")
        async def stop(interaction: discord.Interaction) -> None:
            self.commands.put(("stop", interaction.user.name, interaction.channel_id or 0))
            await interaction.response.send_message("Stopping the answer.", ephemeral=True)

        async def setup_hook() -> None:
            await tree.sync()

        async def on_ready() -> None:
            self.ready.put(True)

        async def on_message(message: discord.Message) -> None:
            if message.author != client.user:
                self.messages.put((message.content, message.author.name, message.channel.id))

        client.setup_hook = setup_hook  # type: ignore[method-assign]
        client.event(on_ready)
        client.event(on_message)


@pytest.fixture
def bot(
    emulator: DiscordEmulator, server_thread: ServerThread, monkeypatch: pytest.MonkeyPatch
) -> Iterator[PageBot]:
    """A ready discord.py client (the README's override, undone after the test)."""
    monkeypatch.setattr(discord.http.Route, "BASE", emulator.base_url)
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(emulator.gateway_url))

    async def create() -> PageBot:
        return PageBot()

    page_bot = server_thread.run(create())
    task = server_thread.submit(page_bot.client.start(emulator.config.token))
    try:
        assert page_bot.ready.get(timeout=WAIT)
        yield page_bot
    finally:
        server_thread.run(page_bot.client.close())
        with contextlib.suppress(asyncio.CancelledError, TimeoutError):
            task.result(WAIT)


def _rows(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    script = """
    return [...document.querySelectorAll('#messages .msg')].map((n) => ({
      text: (n.querySelector('.msg-content') || {textContent: ''}).textContent,
      ephemeral: !!n.querySelector('.ephemeral'),
      author: (n.querySelector('.msg-author') || {}).textContent || null}));
    """
    return list(browser.execute_script(script))


def test_a_message_typed_in_the_composer_reaches_discord_py_as_message_create(
    browser: webdriver.Chrome, emulator: DiscordEmulator, bot: PageBot
) -> None:
    channel = emulator.config.channels[0].id
    browser.get(emulator.page_url + "#" + channel)
    wait_for(
        lambda: browser.execute_script("const p = window.rxcordPage; return p && p.ready && p.connected"),
        what="the page",
    )
    name = browser.find_element(By.ID, "me-username")
    name.clear()
    name.send_keys("carol", Keys.TAB)  # "change" fires when the field loses focus
    box = browser.find_element(By.ID, "composer-input")
    box.send_keys("hello from the page, <@" + emulator.config.bot_id + ">")
    box.send_keys(Keys.ENTER)
    content, author, channel_id = bot.messages.get(timeout=WAIT)
    assert content == f"hello from the page, <@{emulator.config.bot_id}>"
    assert author == "carol" and channel_id == int(channel)
    assert bot.messages.empty(), "one message, delivered once"

    # A slash command typed in the composer is an interaction for the bot; its ephemeral answer
    # shows on the page for the user who ran it.
    box.send_keys("/stop")
    box.send_keys(Keys.ENTER)
    assert bot.commands.get(timeout=WAIT) == ("stop", "carol", int(channel))
    rows = wait_for(
        lambda: [row for row in _rows(browser) if row["ephemeral"]], what="the command's ephemeral answer"
    )
    assert [row["text"] for row in rows] == ["Stopping the answer."]
