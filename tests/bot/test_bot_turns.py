"""Through the emulator's gateway: a DM continues from its history; back-to-back messages are one turn."""

from __future__ import annotations

import pytest

from rxcord.bot.app import RxcordBot
from tests.bot.conftest import ALICE, BOB, GENERAL, World, eventually, idle

DM = "1300000000000000077"
"""A numeric channel outside the emulator's guild: a DM channel on the gateway."""


def _me(bot: RxcordBot) -> str:
    assert bot.client.user is not None
    return f"<@{bot.client.user.id}>"


def _chat(world: World, request: int) -> list[tuple[str, str]]:
    messages = world.provider.requests[request]["messages"]
    return [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in messages
        if m["role"] != "system"
    ]


@pytest.mark.timeout(120)
async def test_a_dm_that_replies_to_nothing_continues_the_dm(world: World) -> None:
    bot = await world.bot(world.config("[permissions]\nallow_dms = true\n", mode="aggregated"))
    await world.say(DM, "my name is alice words=2")
    await eventually(lambda: len(bot.finished) == 1, what="the first DM answer")
    await idle(bot)
    first_answer = world.bot_text(DM)
    await world.say(DM, "what is my name? words=1")  # a new message, replying to nothing
    await eventually(lambda: len(bot.finished) == 2, what="the second DM answer")
    assert _chat(world, 1) == [
        ("user", f"[alice, id {ALICE}]: my name is alice words=2"),
        ("assistant", first_answer),
        ("user", f"[alice, id {ALICE}]: what is my name? words=1"),
    ]


@pytest.mark.timeout(120)
async def test_back_to_back_messages_reach_the_model_with_the_question(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    await world.say(GENERAL, "unrelated chatter", author=BOB, name="bob")
    await world.say(GENERAL, "look at this: 2 + 2")  # not addressed: no answer
    await world.say(GENERAL, f"{_me(bot)} what is it? words=1")
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    await idle(bot)
    assert len(world.provider.requests) == 1
    assert _chat(world, 0) == [
        ("user", f"[alice, id {ALICE}]: look at this: 2 + 2"),
        ("user", f"[alice, id {ALICE}]: what is it? words=1"),
    ]
