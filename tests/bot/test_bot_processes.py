"""Two ``rxcord bot --config FILE`` processes, one emulator, one real Redis: one bot, two shards.

Process A runs shard 0 of 2 (DMs), process B shard 1 (the emulator's guild: ``(guild_id >> 22)
% 2`` is 1). A ``/stop`` in the guild is delivered to A (``Gateway.interaction_shard``: an
interaction reaching a process that does not run the answer, as through an HTTP interactions
endpoint behind a load balancer), so only Redis can bring it to B. The per-user request cap is
spent half on each process (a DM on A, guild messages on B), so only shared counters hold it.
Readiness is each process's ``bot ready`` line, never a sleep; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import attrs
import pytest
import redis.asyncio as aioredis

from rxcord.bot.invite import permissions_value
from rxcord.bot.scale import namespace
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig
from rxcord.testing.emulator.server import serve
from tests.bot.conftest import GENERAL, EchoProvider, eventually
from tests.redis_server import redis_url

__all__ = ("redis_url",)  # the fixture

READY_WAIT = 120.0
"""Seconds a process may take to log in on a loaded machine (it takes a few)."""
REDIS_ENV = "RXCORD_TEST_SHARED_REDIS"


@attrs.define
class BotProcess:
    """One ``rxcord bot`` subprocess and the lines it wrote to stderr."""

    name: str
    process: asyncio.subprocess.Process
    lines: list[str] = attrs.field(factory=list)
    ready: asyncio.Event = attrs.field(factory=asyncio.Event)
    reader: asyncio.Task[None] | None = None

    async def read(self) -> None:
        assert self.process.stderr is not None
        async for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.lines.append(line)
            if line == "bot ready":
                self.ready.set()

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    async def wait_ready(self) -> None:
        waiter = asyncio.ensure_future(self.ready.wait())
        exited = asyncio.ensure_future(self.process.wait())
        await asyncio.wait({waiter, exited}, timeout=READY_WAIT, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        exited.cancel()
        assert self.ready.is_set(), f"{self.name} not ready:\n" + "\n".join(self.lines[-40:])

    async def stop(self) -> int:
        if self.process.returncode is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.process.wait(), 60)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        if self.reader is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.reader, 10)
        assert self.process.returncode is not None
        return self.process.returncode


def _command() -> list[str]:
    script = Path(sys.executable).parent / "rxcord"
    return [str(script)] if script.exists() else [sys.executable, "-m", "rxcord"]


def _config(emulator: DiscordEmulator, provider: EchoProvider, shard: int) -> str:
    return f"""
[provider]
name = "openai"
model = "echo-1"
api_key_env = ["ECHO_KEY"]
base_url = "{provider.base_url}"
allow_private_network = true

[discord]
base_url = "{emulator.base_url}"
gateway_url = "{emulator.gateway_url}"
status = "Ask me in #general"

[delivery]
mode = "live"

[permissions]
allow_dms = true

[limits]
requests_per_user = 2

[runtime]
gc_tuning = false

[scale]
redis_url_env = "{REDIS_ENV}"
shard_count = 2
shard_ids = [{shard}]
"""


@attrs.define
class Cluster:
    emulator: DiscordEmulator
    provider: EchoProvider
    session: aiohttp.ClientSession
    processes: dict[str, BotProcess]
    token: str
    redis_url: str

    async def say(self, channel: str, content: str, author: str) -> dict[str, Any]:
        body = {"channel_id": channel, "author_id": author, "username": "alice", "content": content}
        async with self.session.post(f"{self.emulator.base_url}/_emulator/messages", json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
            return result

    async def command(self, channel: str, name: str, author: str) -> dict[str, Any]:
        body = {"channel_id": channel, "author_id": author, "username": "alice", "command": name}
        url = f"{self.emulator.base_url}/_emulator/interactions?wait=true"
        async with self.session.post(url, json=body) as response:
            assert response.status == 200, await response.text()
            result: dict[str, Any] = await response.json()
            return result

    async def interaction(self, interaction_id: str) -> dict[str, Any]:
        url = f"{self.emulator.base_url}/_emulator/interactions/{interaction_id}"
        async with self.session.get(url) as response:
            result: dict[str, Any] = await response.json()
            return result

    def bot_messages(self, channel: str) -> list[dict[str, Any]]:
        bot_id = self.emulator.config.bot_id
        return [m for m in self.emulator.messages(channel) if m["author"]["id"] == bot_id]


@pytest.fixture
async def cluster(redis_url: str, tmp_path: Path) -> AsyncIterator[Cluster]:
    # A token of its own: the Redis namespace (rate limits, stops) is its digest, fresh per run.
    token = "emulator-" + secrets.token_hex(8)
    provider = EchoProvider(pace=0.02)
    await provider.start()
    processes: dict[str, BotProcess] = {}
    async with (
        serve(config=EmulatorConfig(token=token)) as emulator,
        aiohttp.ClientSession() as session,
    ):
        env = {
            **os.environ,
            "DISCORD_BOT_TOKEN": token,
            "ECHO_KEY": "echo-secret-key",
            REDIS_ENV: redis_url,
        }
        try:
            for name, shard in (("A", 0), ("B", 1)):
                folder = tmp_path / name  # each process its own folder, as on its own machine
                folder.mkdir()
                (folder / "bot.toml").write_text(_config(emulator, provider, shard))
                process = await asyncio.create_subprocess_exec(
                    *_command(),
                    "bot",
                    "--config",
                    str(folder / "bot.toml"),
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE,
                )
                processes[name] = BotProcess(name, process)
                processes[name].reader = asyncio.create_task(processes[name].read())
            for process in processes.values():
                await process.wait_ready()
            yield Cluster(emulator, provider, session, processes, token, redis_url)
        finally:
            codes = {name: await process.stop() for name, process in processes.items()}
            await provider.close()
    assert codes == {"A": 0, "B": 0}, codes


async def test_two_processes_share_stop_limits_and_rate_limits(cluster: Cluster) -> None:
    """A /stop handled by the process without the answer stops it; one per-user cap over both."""
    emulator, provider = cluster.emulator, cluster.provider
    a, b = cluster.processes["A"], cluster.processes["B"]
    guild_shard = (int(emulator.config.guild_id) >> 22) % 2
    assert guild_shard == 1  # B (shard 1) runs the guild, A (shard 0) the DMs
    alice = str(3_100_000_000_000_000_000 + secrets.randbelow(10**15))  # fresh counters per run
    bot = f"<@{emulator.config.bot_id}>"

    # Both print the invite link with the permissions the bot needs.
    invite = (
        f"invite: https://discord.com/oauth2/authorize?client_id={emulator.config.application_id}"
        f"&scope=bot+applications.commands&permissions={permissions_value()}"
    )
    assert a.said(invite) and b.said(invite)
    # One session per process, each on its own shard.
    assert sorted(session.shard for session in emulator.gateway.identified()) == [(0, 2), (1, 2)]

    # 1. A long answer in the guild: B streams it.
    question = await cluster.say(GENERAL, f"{bot} slow story", alice)
    await eventually(lambda: provider.written.get(0, 0) > 3, 60, "the answer to stream")
    assert b.said(f"answering message {question['id']}") and not a.said(f"answering message {question['id']}")

    # 2. /stop in the guild, delivered to A: A finds nothing, asks over Redis; B stops it.
    emulator.gateway.interaction_shard = 0
    invoked = await cluster.command(GENERAL, "stop", alice)
    emulator.gateway.interaction_shard = None

    async def reply() -> str:
        messages = (await cluster.interaction(invoked["id"]))["messages"]
        return str(messages[0].get("content") or "") if messages else ""

    loop = asyncio.get_running_loop()
    end = loop.time() + 60
    while not (text := await reply()) and loop.time() < end:
        await asyncio.sleep(0.05)
    assert text == "Stopped alice's answer; what was written stays.", text
    await eventually(lambda: 0 in provider.closed_early, 60, "the provider stream to be closed")
    assert b.said("from another process on #1 alice") and a.said("/stop by user")
    await eventually(lambda: "stopped" in (cluster.bot_messages(GENERAL) or [{}])[-1].get("content", ""), 60)
    words_at_stop = provider.written[0]
    assert words_at_stop < provider.endless  # it did not run to its end

    # 3. The cap (2 requests per user) is spent across both: a DM on A, then the guild on B.
    dm = str(4_100_000_000_000_000_000 + secrets.randbelow(10**15))
    await cluster.say(dm, "hello there", alice)
    await eventually(lambda: len(provider.requests) == 2, 60, "the DM's provider call")
    await eventually(lambda: bool(cluster.bot_messages(dm)), 60, "the DM's answer")
    assert a.said("answering message") and provider.last_user_text(1).endswith("hello there")
    await cluster.say(GENERAL, f"{bot} one more", alice)
    refusal = "You have used 2 of 2 requests this hour"
    await eventually(
        lambda: any(refusal in (m.get("content") or "") for m in cluster.bot_messages(GENERAL)),
        60,
        "the refusal",
    )
    assert len(provider.requests) == 2  # refused before any provider call

    # Discord's rate limits: one budget for the token, whatever process spends it.
    assert emulator.counters.rate_limited == 0
    # Both processes keep that budget in the one Redis: the global meter, and the routes of B's
    # guild channel and of A's DM, under the token's namespace (an in-process limiter writes none).
    prefix = f"rxcord:{{{namespace(cluster.token)}}}"
    keys = await _keys(cluster.redis_url, prefix + "*")
    assert prefix + ":global" in keys, keys
    channels = {key.rpartition(":")[2] for key in keys if key.startswith((prefix + ":r:", prefix + ":b:"))}
    assert {GENERAL, dm} <= channels, keys


async def _keys(url: str, pattern: str) -> list[str]:
    client = aioredis.Redis.from_url(url, decode_responses=True)
    try:
        return sorted([key async for key in client.scan_iter(match=pattern)])
    finally:
        await client.aclose()
