"""What a person runs: `rxcord emulator`, the offline provider and `rxcord bot`, as processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest

GENERAL = "1200000000000000010"


def _line(stream: IO[str], prefix: str, proc: subprocess.Popen[str]) -> str:
    for line in stream:
        if line.startswith(prefix):
            return line.strip()
    raise AssertionError(f"{proc.args} ended (code {proc.poll()}) before printing {prefix!r}")


def _spawn(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


def _json(url: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in started:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.timeout(180)
def test_emulator_offline_provider_and_bot_as_processes(
    tmp_path: Path, processes: list[subprocess.Popen[str]]
) -> None:
    emulator = _spawn("-m", "rxcord", "emulator")
    processes.append(emulator)
    assert emulator.stdout is not None
    base = _line(emulator.stdout, "http://", emulator)
    token = _line(emulator.stdout, "bot token: ", emulator).removeprefix("bot token: ")
    gateway = _line(emulator.stdout, "gateway: ", emulator).removeprefix("gateway: ")
    provider = _spawn("-m", "rxcord.bot.offline", "--pace", "0")
    processes.append(provider)
    assert provider.stdout is not None
    provider_url = _line(provider.stdout, "provider: ", provider).split()[1]
    config = tmp_path / "bot.toml"
    config.write_text(
        f"""
[provider]
name = "openrouter"
model = "deepseek/deepseek-r1"
api_key_env = ["OFFLINE_KEY"]
base_url = "{provider_url}"
allow_private_network = true

[discord]
base_url = "{base}"
gateway_url = "{gateway}"

[delivery]
mode = "edit"
"""
    )
    bot = _spawn(
        "-m", "rxcord", "bot", "--config", str(config), env={"DISCORD_BOT_TOKEN": token, "OFFLINE_KEY": "x"}
    )
    processes.append(bot)
    assert bot.stdout is not None
    _line(bot.stdout, "bot ready", bot)
    me = _json(f"{base}/_emulator/guild")  # the emulator is up and the bot connected
    assert me["id"]
    _json(
        f"{base}/_emulator/messages",
        {
            "channel_id": GENERAL,
            "author_id": "300000000000000001",
            "username": "alice",
            "content": "hi <@1100000000000000001>",
        },
    )
    deadline = time.monotonic() + 120
    while True:
        messages = _json(f"{base}/_emulator/channels/{GENERAL}/messages")
        answers = [m for m in messages if m["author"]["id"] == "1100000000000000001"]
        if len(answers) == 2 and answers[-1]["content"].endswith("a version for numpy arrays!"):
            break
        assert time.monotonic() < deadline, f"no full answer: {answers}"
        time.sleep(0.05)
    assert answers[0]["content"].startswith("Here is a streaming moving average.")
    assert [len(m["content"]) for m in answers] == [1963, 1548]  # what aggregated delivery sends
    bot.send_signal(signal.SIGTERM)
    assert bot.wait(timeout=30) == 0
    output = bot.stdout.read()
    assert "emulator-token" not in output and "OFFLINE_KEY=x" not in output
