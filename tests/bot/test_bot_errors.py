"""What the operator and the users see of provider failures, through the emulator's gateway.

A stand-in provider on 127.0.0.1 answers per API key: a key named ``status-NNN`` gets that
status with a JSON error body quoting the key, a good key gets a short streamed answer.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs
import pytest
from aiohttp import web
from loguru import logger

from rxcord.bot.app import RxcordBot
from rxcord.bot.config import BotConfig, parse_config
from tests.bot.conftest import GENERAL, World, eventually


@attrs.define
class KeyedProvider:
    """Chat Completions on 127.0.0.1: the request's key decides the answer."""

    calls: list[tuple[str, str]] = attrs.field(factory=list)
    """(model, key) of each request, in order."""
    base_url: str = ""
    runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"

    async def handle(self, request: web.Request) -> web.StreamResponse:
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        body = await request.json()
        self.calls.append((body["model"], key))
        if key.startswith("status-"):
            status = int(key.split("-")[1])
            error = {"error": {"message": f"key {key} refused here", "code": status}}
            return web.json_response(error, status=status)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for delta, finish in (({"role": "assistant", "content": "fine"}, None), ({}, "stop")):
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        return response


@pytest.fixture
async def keyed() -> AsyncIterator[KeyedProvider]:
    provider = KeyedProvider()
    await provider.start()
    yield provider
    assert provider.runner is not None
    await provider.runner.cleanup()


@pytest.fixture
def log() -> Iterator[list[str]]:
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lambda m: lines.append(str(m)), level="INFO", filter="rxcord", format="{message}")
    yield lines
    logger.remove(handler)
    logger.disable("rxcord")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _config(world: World, models: str) -> BotConfig:
    return parse_config(f"""
{models}
[discord]
base_url = "{world.emulator.base_url}"
gateway_url = "{world.emulator.gateway_url}"

[delivery]
mode = "aggregated"
""")


def _model(provider: str, model: str, base_url: str, keys: list[str]) -> str:
    return f"""
[[models]]
provider = "{provider}"
model = "{model}"
base_url = "{base_url}"
allow_private_network = true
api_key_env = {json.dumps(keys)}
"""


async def _ask(world: World, bot: RxcordBot, count: int = 1) -> dict[str, Any]:
    assert bot.client.user is not None
    asked = await world.say(GENERAL, f"<@{bot.client.user.id}> hello")
    await eventually(lambda: len(bot.finished) == count, what="the answer")
    return asked


@pytest.mark.timeout(120)
async def test_an_unreachable_server_is_one_plain_notice_and_a_logged_cause(
    world: World, log: list[str]
) -> None:
    port = _closed_port()
    config = _config(world, _model("openrouter", "m-1", f"http://127.0.0.1:{port}/v1", ["K1"]))
    bot = await world.bot(config, K1="sk-or-v1-secretsecret")
    await _ask(world, bot)
    [notice] = world.bot_messages(GENERAL)
    assert notice["content"] == (
        "-# ⚠ The model's server could not be reached. The bot's operator can see why in its log."
    )
    [failure] = [line for line in log if line.startswith("provider failure")]
    assert f"at 127.0.0.1:{port}: api_error, HTTP -" in failure
    assert "sk-or-v1-secretsecret" not in "\n".join(log)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    ("status", "sentence"),
    [
        (401, "refused the bot's API key or its credit is used up."),
        (429, "is rate limiting the bot. Please try again in a minute."),
        (500, "answered with an error (HTTP 500)."),
    ],
)
async def test_each_failure_status_is_a_neutral_notice_and_a_logged_redacted_body(
    world: World, keyed: KeyedProvider, log: list[str], status: int, sentence: str
) -> None:
    key = f"status-{status}-sk-secret"
    bot = await world.bot(_config(world, _model("openai", "m-1", keyed.base_url, ["K1"])), K1=key)
    await _ask(world, bot)
    [notice] = world.bot_messages(GENERAL)
    assert (
        notice["content"] == f"-# ⚠ The model's server {sentence} The bot's operator can see why in its log."
    )
    assert "127.0.0.1" not in notice["content"] and "OpenAI" not in notice["content"]
    failures = [line for line in log if line.startswith("provider failure")]
    host = keyed.base_url.removeprefix("http://").removesuffix("/v1")
    assert failures and all(f"at {host}:" in line and f"HTTP {status}" in line for line in failures)
    assert all("refused here" in line for line in failures)  # the body, its key redacted
    assert key not in "\n".join(log)


@pytest.mark.timeout(120)
async def test_a_bad_key_cools_across_turns_then_the_next_key_then_the_next_model(
    world: World, keyed: KeyedProvider
) -> None:
    models = _model("openai", "m-1", keyed.base_url, ["K1", "K2"]) + _model(
        "openai", "m-2", keyed.base_url, ["K3"]
    )
    env = {"K1": "status-401-a", "K2": "status-402-b", "K3": "good"}
    bot = await world.bot(_config(world, models), **env)
    await _ask(world, bot)
    assert keyed.calls == [("m-1", "status-401-a"), ("m-1", "status-402-b"), ("m-2", "good")]
    await _ask(world, bot, count=2)  # the same bot's next turn: the bad keys are still cooling
    assert keyed.calls[3:] == [("m-2", "good")]
    assert [m["content"] for m in world.bot_messages(GENERAL)] == ["fine", "fine"]
