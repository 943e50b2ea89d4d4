"""Start-up failures to reach Discord are one line naming the setting; ``close()`` never raises."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from rxcord.bot.app import RxcordBot
from rxcord.bot.config import BotConfig, parse_config
from rxcord.bot.run import bot_command
from rxcord.discord import DiscordUnreachableError
from tests.bot.conftest import World


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _text(base_url: str, gateway_url: str) -> str:
    return f"""
[provider]
name = "custom"
model = "m"
base_url = "http://127.0.0.1:9/v1"
allow_private_network = true
api_key_env = ["MODEL_KEY"]

[discord]
base_url = "{base_url}"
gateway_url = "{gateway_url}"
"""


def _config(base_url: str, gateway_url: str) -> BotConfig:
    return parse_config(_text(base_url, gateway_url))


async def _refused(bot: RxcordBot) -> str:
    with pytest.raises(DiscordUnreachableError) as caught:
        await bot.start()
    await bot.close()  # after a failed start: no raise
    await bot.close()  # and twice
    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    return message


@pytest.mark.timeout(60)
async def test_a_wrong_api_port_names_discord_base_url(world: World) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/api/v10"
    bot = RxcordBot(
        _config(base, world.emulator.gateway_url), env={"DISCORD_BOT_TOKEN": "t", "MODEL_KEY": "k"}
    )
    message = await _refused(bot)
    assert message.startswith(f"cannot reach discord.base_url = {base} (")


@pytest.mark.timeout(60)
async def test_a_wrong_gateway_port_names_discord_gateway_url(world: World) -> None:
    gateway = f"ws://127.0.0.1:{_closed_port()}/gateway"
    token = world.emulator.config.token
    bot = RxcordBot(
        _config(world.emulator.base_url, gateway), env={"DISCORD_BOT_TOKEN": token, "MODEL_KEY": "k"}
    )
    message = await _refused(bot)
    assert message.startswith(f"cannot reach discord.gateway_url = {gateway} (")


@pytest.mark.timeout(60)
async def test_a_refused_token_names_discord_token_env(world: World) -> None:
    config = _config(world.emulator.base_url, world.emulator.gateway_url)
    bot = RxcordBot(config, env={"DISCORD_BOT_TOKEN": "not-the-token", "MODEL_KEY": "k"})
    message = await _refused(bot)
    assert message == "Discord refused the bot token in $DISCORD_BOT_TOKEN (discord.token_env)"
    assert "not-the-token" not in message


@pytest.mark.timeout(60)
async def test_a_wrong_api_path_names_discord_base_url(world: World) -> None:
    base = world.emulator.base_url.replace("/api/v10", "/nothing")
    bot = RxcordBot(
        _config(base, world.emulator.gateway_url),
        env={"DISCORD_BOT_TOKEN": world.emulator.config.token, "MODEL_KEY": "k"},
    )
    message = await _refused(bot)
    assert message.startswith(f"discord.base_url = {base} answered HTTP 404")


async def test_close_before_start_and_twice_never_raises() -> None:
    bot = RxcordBot(
        _config("http://127.0.0.1:9/api/v10", "ws://127.0.0.1:9/gateway"),
        env={"DISCORD_BOT_TOKEN": "t", "MODEL_KEY": "k"},
    )
    await bot.close()
    await bot.close()
    assert bot._closing


def test_rxcord_bot_prints_one_line_and_exits_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = f"http://127.0.0.1:{_closed_port()}/api/v10"
    path = tmp_path / "bot.toml"
    path.write_text(_text(base, f"ws://127.0.0.1:{_closed_port()}/gateway"), encoding="utf-8")
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "t")
    monkeypatch.setenv("MODEL_KEY", "k")
    lines: list[str] = []
    assert bot_command(str(path), err=lines.append) == 2
    assert len(lines) == 1 and lines[0].startswith(f"rxcord bot: cannot reach discord.base_url = {base} (")
