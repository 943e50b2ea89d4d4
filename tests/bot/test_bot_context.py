"""The bot's context through the emulator's gateway and REST: split answers, thread starters, names."""

from __future__ import annotations

import pytest

from rxcord.bot.app import RxcordBot
from tests.bot.conftest import ALICE, BOB, GENERAL, World, eventually, idle


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
async def test_a_reply_to_the_last_part_of_a_split_answer_sends_the_whole_answer(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    question = await world.say(GENERAL, f"{_me(bot)} long words=900")
    await eventually(lambda: len(bot.finished) == 1, what="the long answer")
    await idle(bot)
    parts = world.bot_messages(GENERAL)
    assert len(parts) >= 2  # more than one Discord message: 900 words pass 2000 characters
    assert parts[0]["message_reference"]["message_id"] == question["id"]
    assert all(not part.get("message_reference") for part in parts[1:])  # what the reader relies on
    await world.say(GENERAL, "and the end? words=1", reply_to=parts[-1]["id"])
    await eventually(lambda: len(world.provider.requests) == 2, what="the second request")
    await idle(bot)
    assert _chat(world, 1) == [
        ("user", f"[alice, id {ALICE}]: long words=900"),
        *(("assistant", part["content"]) for part in parts),
        ("user", f"[alice, id {ALICE}]: and the end? words=1"),
    ]


@pytest.mark.timeout(120)
async def test_a_thread_started_from_a_message_sends_its_starter(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    starter = await world.say(GENERAL, "plans for saturday", author=BOB, name="Alice")  # a nickname
    url = f"{world.emulator.base_url}/_emulator/threads"
    body = {"channel_id": GENERAL, "author_id": BOB, "username": "bob", "name": "saturday"}
    async with world.session.post(url, json={**body, "message_id": starter["id"]}) as response:
        assert response.status == 200, await response.text()
        thread = (await response.json())["id"]
    await world.say(thread, f"{_me(bot)} where to? words=2")
    await eventually(lambda: len(bot.finished) == 1, what="the answer in the thread")
    assert _chat(world, 0) == [
        ("user", f"[Alice, id {BOB}]: plans for saturday"),  # the same name, told apart by the id
        ("user", f"[alice, id {ALICE}]: where to? words=2"),
    ]
