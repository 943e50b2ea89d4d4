"""The real bot against the emulator's gateway and REST API, with a local fake provider (127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import attrs
import pytest
from aiohttp import web

from rxcord.bot.app import RxcordBot
from rxcord.bot.config import BotConfig, parse_config
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig
from rxcord.testing.emulator.server import serve

GENERAL = "1200000000000000010"
TESTING = "1200000000000000011"
RANDOM = "1200000000000000012"
ALICE = "3000000000000000001"
BOB = "3000000000000000002"


@attrs.define
class EchoProvider:
    """An OpenAI-compatible streaming endpoint: answers ``Answer to <last user text>: w0 w1 ...``.

    The last user message decides the answer: ``slow`` makes it stream until the client goes
    away (up to ``endless`` words, ``pace`` seconds apart); ``stall`` writes twelve words and then
    nothing until the client goes away; ``gate`` waits after twelve words until ``gate`` is set;
    ``words=N`` sets the length; a ``think`` reply starts
    with a reasoning block in ``reasoning_content``.
    """

    pace: float = 0.005
    endless: int = 4000
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    written: dict[int, int] = attrs.field(factory=dict)
    """Words written per request number."""
    closed_early: set[int] = attrs.field(factory=set)
    gate: asyncio.Event = attrs.field(factory=asyncio.Event)
    """``gate`` answers wait after twelve words until this is set."""
    active: int = 0
    max_active: int = 0
    """Most requests streaming at the same time."""
    base_url: str = ""
    _runner: web.AppRunner | None = None

    async def start(self) -> str:
        app = web.Application()
        app.router.add_route("GET", "/files/{name}", self._file)
        app.router.add_route("POST", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    def last_user_text(self, index: int = -1) -> str:
        messages = self.requests[index]["messages"]
        last = next(m for m in reversed(messages) if m["role"] == "user")
        content = last["content"]
        return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)

    async def _file(self, request: web.Request) -> web.Response:
        return web.Response(text=f"contents of {request.match_info['name']}", content_type="text/plain")

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        number = len(self.requests)
        self.requests.append(body)
        self.written[number] = 0
        prompt = self.last_user_text(number)
        slow = "slow" in prompt or "stall" in prompt
        count = self.endless if slow else 12
        for token in prompt.split():
            if token.startswith("words="):
                count = int(token.removeprefix("words="))
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        self.active += 1
        self.max_active = max(self.max_active, self.active)

        async def send(delta: dict[str, Any], finish: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            chunk = {
                "id": "x",
                "object": "chat.completion.chunk",
                "model": body.get("model"),
                "choices": [choice],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        try:
            asked_tools = body.get("tools") and "tool" in prompt
            if asked_tools and not any(m.get("role") == "tool" for m in body["messages"]):
                # A tool call first; the answer comes once the tool's result is in the context.
                call = {"index": 0, "id": "call_1", "type": "function"}
                call["function"] = {"name": "lookup", "arguments": '{"word": "gate"}'}
                await send({"role": "assistant", "tool_calls": [call]}, "tool_calls")
                await response.write(b"data: [DONE]\n\n")
                await response.write_eof()
                return response
            if "think" in prompt:
                await send({"reasoning_content": "secret reasoning that must never show"})
            await send({"role": "assistant", "content": f"Answer to {prompt.split(':', 1)[-1].strip()}:"})
            for index in range(count):
                if request.transport is None or request.transport.is_closing():
                    self.closed_early.add(number)
                    return response
                await send({"content": f" w{index}"})
                self.written[number] += 1
                if slow or self.pace:
                    await asyncio.sleep(self.pace)
                if "gate" in prompt and index == 11:
                    await self.gate.wait()  # twelve words, then wait for the test
                while "stall" in prompt and index == 11:  # twelve words, then silence until the client leaves
                    if request.transport is None or request.transport.is_closing():
                        self.closed_early.add(number)
                        return response
                    await asyncio.sleep(0.01)
            await send({}, "stop")
            await response.write(b"data: [DONE]\n\n")
            await response.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            self.closed_early.add(number)
        finally:
            self.active -= 1
        return response


@attrs.define
class World:
    """The emulator, the provider and a way to act as a user."""

    emulator: DiscordEmulator
    provider: EchoProvider
    session: aiohttp.ClientSession
    bots: list[RxcordBot] = attrs.field(factory=list)

    def config(self, extra: str = "", *, mode: str = "live") -> BotConfig:
        text = f"""
[provider]
name = "openai"
model = "echo-1"
api_key_env = ["ECHO_KEY"]
base_url = "{self.provider.base_url}"
allow_private_network = true

[discord]
base_url = "{self.emulator.base_url}"
gateway_url = "{self.emulator.gateway_url}"

[prompt]
system = "You are {{bot_name}} in #{{channel_name}}; users: {{user_names}}."

[delivery]
mode = "{mode}"
{extra}
"""
        return parse_config(text)

    async def bot(self, config: BotConfig, **more_env: str) -> RxcordBot:
        env = {"DISCORD_BOT_TOKEN": self.emulator.config.token, "ECHO_KEY": "echo-secret-key", **more_env}
        bot = RxcordBot(config, env=env)
        self.bots.append(bot)
        await asyncio.wait_for(bot.start(), 30)
        return bot

    async def say(
        self,
        channel: str,
        content: str,
        *,
        author: str = ALICE,
        name: str = "alice",
        reply_to: str | None = None,
        attachments: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "channel_id": channel,
            "author_id": author,
            "username": name,
            "content": content,
        }
        if attachments:
            body["attachments"] = attachments
        if reply_to is not None:
            body["message_reference"] = {"message_id": reply_to}
        async with self.session.post(f"{self.emulator.base_url}/_emulator/messages", json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
            return result

    async def command(self, channel: str, name: str, *, author: str = ALICE) -> dict[str, Any]:
        body = {"channel_id": channel, "author_id": author, "username": "alice", "command": name}
        url = f"{self.emulator.base_url}/_emulator/interactions?wait=true"
        async with self.session.post(url, json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
            return result

    def bot_messages(self, channel: str) -> list[dict[str, Any]]:
        bot_id = self.emulator.config.bot_id
        return [m for m in self.emulator.messages(channel) if m["author"]["id"] == bot_id]

    def bot_text(self, channel: str) -> str:
        return "\n".join(m.get("content") or "" for m in self.bot_messages(channel))


async def eventually(check: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Wait until *check()* holds (polling; the timeout only guards a hang)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not check():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


async def idle(bot: RxcordBot) -> None:
    """Until the bot has no turn running."""
    await eventually(lambda: not bot.turns, what="the bot's turns to end")


@pytest.fixture
async def world() -> AsyncIterator[World]:
    provider = EchoProvider()
    await provider.start()
    async with serve(config=EmulatorConfig()) as emulator, aiohttp.ClientSession() as session:
        world = World(emulator=emulator, provider=provider, session=session)
        try:
            yield world
        finally:
            for bot in world.bots:
                await bot.close()
            await provider.close()


Waiter = Callable[[], Awaitable[None]]
