"""The discord.py adapter, with discord.py's real HTTP client pointed at the emulator."""

from __future__ import annotations

from collections.abc import AsyncIterator

import discord
import pytest

from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import DiscordError, DiscordStopError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import StopKind, StreamStatus
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.discordpy import DiscordPySink
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig
from rxcord.testing.replay import ReplayServer
from tests.conftest import DEMO_DATA

LOCAL = TransportConfig(allow_private_network=True)  # the replay server is on 127.0.0.1


@pytest.fixture
async def emulated_client(
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[discord.Client, DiscordEmulator]]:
    """A logged-in discord.py client whose REST calls go to the emulator on 127.0.0.1."""
    emulator = DiscordEmulator(EmulatorConfig(forbidden_channels={"666"}))
    base_url = await emulator.start()
    monkeypatch.setattr(discord.http.Route, "BASE", base_url)
    client = discord.Client(intents=discord.Intents.none())
    await client.login(emulator.config.token)
    try:
        yield client, emulator
    finally:
        await client.close()
        await emulator.close()


async def test_stream_delivers_through_discordpy(
    emulated_client: tuple[discord.Client, DiscordEmulator],
) -> None:
    """A full stream reaches the emulator through discord.py, mentions suppressed, in order."""
    client, emulator = emulated_client
    async with ReplayServer(body=(DEMO_DATA / "openrouter_reasoning_code.sse").read_bytes()) as server:
        from rxcord.providers.openrouter import OpenRouterAdapter

        result = await stream_to_discord(
            OpenRouterAdapter(),
            ChatRequest(model="m", messages=(Message.user("hi"),)),
            sink=DiscordPySink.for_client(client),
            base_url=server.base_url,
            api_key="k",
            transport=LOCAL,
            context=StreamContext(channel_id="4242"),
            config=StreamConfig(),
        )
    assert result.status is StreamStatus.COMPLETED
    stored = emulator.messages("4242")
    assert [m["content"] for m in stored] == [m.payload["content"] for m in result.messages]
    assert len(stored) >= 2 and all(len(m["content"]) <= 2000 for m in stored)
    assert all(m["allowed_mentions"]["parse"] == [] for m in stored)


async def test_missing_access_becomes_internal_stop(
    emulated_client: tuple[discord.Client, DiscordEmulator],
) -> None:
    """discord.py's Forbidden (50001) maps to the missing_access stop."""
    client, _ = emulated_client
    sink = DiscordPySink.for_client(client)
    with pytest.raises(DiscordStopError) as exc:
        await sink.create_message(StreamContext(channel_id="666"), {"content": "hi"})
    assert exc.value.stop_kind is StopKind.MISSING_ACCESS


async def test_missing_access_ends_stream_with_status(
    emulated_client: tuple[discord.Client, DiscordEmulator],
) -> None:
    """In a stream, a 403 ends it with status missing_access instead of raising."""
    client, _ = emulated_client
    async with ReplayServer(body=(DEMO_DATA / "openai_think_leak.sse").read_bytes()) as server:
        result = await stream_to_discord(
            OpenAIAdapter(),
            ChatRequest(model="m", messages=(Message.user("hi"),)),
            sink=DiscordPySink.for_client(client),
            base_url=server.base_url,
            api_key="k",
            transport=LOCAL,
            context=StreamContext(channel_id="666"),
        )
    assert result.status is StreamStatus.MISSING_ACCESS and result.messages == ()


async def test_webhook_context_goes_through_the_webhook(
    emulated_client: tuple[discord.Client, DiscordEmulator],
) -> None:
    """A webhook context is sent by the webhook (persona name repaired, into the thread), not by the bot."""
    client, emulator = emulated_client
    hook = emulator.add_webhook("4243")
    sink = DiscordPySink.for_client(client)
    context = StreamContext(
        channel_id="4243", webhook_id=hook.id, webhook_token=hook.token, persona_username="Clyde Helper"
    )
    sent = await sink.create_message(
        context, {"content": "as the persona", "allowed_mentions": {"parse": []}}
    )
    (stored,) = emulator.messages("4243")
    assert stored["content"] == "as the persona" and sent.message_id == stored["id"]
    assert stored.get("webhook_id") == hook.id
    assert stored["author"]["username"] == "Helper"


async def test_webhook_context_without_a_factory_is_refused_clearly() -> None:
    """A sink built without a webhook factory refuses webhook contexts instead of posting as the bot."""
    sent: list[object] = []

    class Target:
        async def send(self, **kwargs: object) -> None:
            sent.append(kwargs)

    sink = DiscordPySink(lambda context: Target())  # type: ignore[arg-type,return-value]
    with pytest.raises(DiscordError, match="webhook factory"):
        await sink.create_message(
            StreamContext(channel_id="1", webhook_id="2", webhook_token="t"), {"content": "x"}
        )
    assert sent == []
