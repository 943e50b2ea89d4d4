"""`rxcord chat` (live use), driven against the replay server and the Discord emulator on 127.0.0.1."""

from __future__ import annotations

import asyncio

import pytest

from rxcord.cli.main import main
from rxcord.testing.emulator import DiscordEmulator
from rxcord.testing.replay import ReplayServer
from tests.conftest import DEMO_DATA

THINK = (DEMO_DATA / "openai_think_leak.sse").read_bytes()


def test_missing_key_is_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without the provider's key variable: exit 2 and one line that names it."""
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    code = main(["chat", "--provider", "openrouter", "--model", "m", "hello"])
    err = capsys.readouterr().err
    assert code == 2 and err == "rxcord: OPENROUTER_API_KEY is not set\n"


async def test_chat_streams_to_the_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With a key and --base-url, the reply streams to stdout; the key goes as a bearer."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-chat-test")
    async with ReplayServer(body=THINK) as server:
        code = await asyncio.to_thread(
            main,
            [
                "chat",
                "--allow-loopback",
                "--provider",
                "openai",
                "--model",
                "gpt-test",
                "--base-url",
                server.base_url,
                "hi",
            ],
        )
    out = capsys.readouterr().out
    assert code == 0 and "Stones remember rain" in out and "haiku about rivers" not in out
    assert server.requests[0].headers["Authorization"] == "Bearer sk-chat-test"
    assert server.requests[0].body["model"] == "gpt-test"


async def test_chat_delivers_to_a_discord_channel(monkeypatch: pytest.MonkeyPatch) -> None:
    """--discord-channel with DISCORD_BOT_TOKEN and a Discord base URL setting delivers into the emulator."""
    async with DiscordEmulator() as emulator, ReplayServer(body=THINK) as server:
        monkeypatch.setenv("NVIDIA_API_KEY", "nvapi-test")
        monkeypatch.setenv("DISCORD_BOT_TOKEN", emulator.config.token)
        monkeypatch.setenv("RXCORD_DISCORD_BASE_URL", emulator.base_url)
        argv = [
            "chat",
            "--allow-loopback",
            "--provider",
            "nvidia",
            "--model",
            "m",
            "--base-url",
            server.base_url,
        ]
        code = await asyncio.to_thread(
            main, [*argv, "--discord-channel", "880", "--delivery", "aggregated", "hi"]
        )
        assert code == 0
        [message] = emulator.messages("880")
    assert message["content"].startswith("Stones remember rain")


async def test_chat_delivers_through_a_webhook_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """--webhook-url posts through the webhook (the URL's token is the credential)."""
    async with DiscordEmulator() as emulator, ReplayServer(body=THINK) as server:
        hook = emulator.add_webhook("890")
        monkeypatch.setenv("RXCORD_API_KEY", "local")
        url = f"{emulator.base_url}/webhooks/{hook.id}/{hook.token}"
        argv = [
            "chat",
            "--allow-loopback",
            "--provider",
            "custom",
            "--model",
            "m",
            "--base-url",
            server.base_url,
            "--webhook-url",
            url,
        ]
        code = await asyncio.to_thread(main, [*argv, "hi"])
        assert code == 0
        [message] = emulator.messages("890")
    assert message["webhook_id"] == hook.id and message["content"].startswith("Stones")


def test_custom_endpoint_without_loopback_permission_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom endpoint on 127.0.0.1 is refused without --allow-loopback, and the refusal names it."""
    monkeypatch.setenv("RXCORD_API_KEY", "local")
    code = main(["chat", "--provider", "custom", "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "hi"])
    out = capsys.readouterr().out
    assert code == 0 and "loopback" in out and "--allow-loopback" in out
