"""The bot's limits end to end: the emulator's gateway and REST API, a local provider, a real bot."""

from __future__ import annotations

import pytest

from tests.bot.conftest import GENERAL, RANDOM, TESTING, World, eventually, idle


def _me(bot: object) -> str:
    user = bot.client.user  # type: ignore[attr-defined]
    return f"<@{user.id}>"


@pytest.mark.timeout(120)
async def test_a_request_over_the_per_user_limit_is_refused_once_without_a_provider_call(
    world: World,
) -> None:
    bot = await world.bot(world.config("[limits]\nrequests_per_user = 2\n", mode="aggregated"))
    for channel in (GENERAL, TESTING):
        await world.say(channel, f"{_me(bot)} hello words=1")
        await eventually(lambda c=channel: len(world.bot_messages(c)) == 1, what=f"the answer in {channel}")
    await world.say(RANDOM, f"{_me(bot)} one more words=1")
    await eventually(lambda: len(world.bot_messages(RANDOM)) == 1, what="the refusal")
    await idle(bot)
    refusal = world.bot_messages(RANDOM)[0]["content"]
    assert refusal.startswith("You have used 2 of 2 requests this hour; try again in ")
    assert refusal.endswith("-# [limits] requests_per_user")
    assert len(world.provider.requests) == 2  # the third message reached no provider
    assert len(world.bot_messages(RANDOM)) == 1  # posted once
