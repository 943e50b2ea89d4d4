"""The README's "Your own discord.py bot", exactly as written, against the emulator's gateway.

The provider is ``tests.bot.conftest.EchoProvider`` on 127.0.0.1 (hence the block's
``transport`` with ``allow_private_network``); users act through ``/_emulator``.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Any

import pytest

import rxcord
from rxcord.testing import point_discord_py
from tests.bot.conftest import eventually
from tests.discord.harness import harness

README = Path(__file__).resolve().parents[2] / "README.md"
HEADING = "## Your own discord.py bot\n"


def _block() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    return code


def test_the_block_has_at_most_15_lines_of_rxcord() -> None:
    lines = [
        line for line in _block().splitlines() if re.search(r"\brxcord\b|answers|Answers|Permissions", line)
    ]
    assert 5 <= len(lines) <= 15, lines


@pytest.mark.timeout(120)
async def test_the_readme_bot_answers_with_the_reply_chain_and_stop_stops_it() -> None:
    namespace: dict[str, Any] = {"__name__": "readme_discord_bot"}
    exec(compile(_block(), "README.md (Your own discord.py bot)", "exec"), namespace)
    async with harness() as world:
        point_discord_py(world.emulator.base_url, world.emulator.gateway_url)
        client = namespace["make_bot"](
            "echo-secret-key",
            model="echo-1",
            base_url=world.provider.base_url,
            transport=rxcord.TransportConfig(allow_private_network=True),
        )
        await client.login(world.emulator.config.token)
        connect = asyncio.create_task(client.connect(reconnect=False))
        try:
            commands = world.emulator.interactions.commands
            await eventually(
                lambda: any(c["name"] == "stop" for s in commands.values() for c in s), what="/stop"
            )
            first = await world.say(f"{world.me} name a colour words=2")
            await eventually(lambda: len(world.bot_messages()) == 1, what="the first answer")
            [reply] = world.bot_messages()
            assert reply["message_reference"]["message_id"] == first["id"]
            await world.say("stall and another one?", reply_to=reply["id"])  # the chain: no mention
            await eventually(lambda: world.provider.written.get(1, 0) >= 12, what="the second answer")
            chain = [
                (m["role"], m["content"])
                for m in world.provider.requests[1]["messages"]
                if m["role"] != "system"
            ]
            assert [role for role, _ in chain] == ["user", "assistant", "user"]
            assert "name a colour" in chain[0][1] and chain[1][1] == reply["content"]
            assert await world.command("stop") == "Stopped alice's answer; what was written stays."
            await eventually(lambda: 1 in world.provider.closed_early, what="the stream to close")
            await eventually(lambda: len(world.bot_messages()) == 2, what="what was written, kept")
            assert world.bot_messages()[-1]["content"].startswith("Answer to stall and another one?: w0 w1")
        finally:
            await client.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await connect
