"""A turn that fails in delivery ends with a typed error on the turn and a notice in the channel."""

from __future__ import annotations

import pytest

from rxcord.core.errors import DiscordError
from rxcord.testing.emulator import ROUTE_CREATE, Fault
from tests.bot.conftest import GENERAL, World, eventually


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["edit", "aggregated"])
async def test_a_refused_answer_gives_a_typed_error_and_a_notice(world: World, mode: str) -> None:
    bot = await world.bot(world.config(mode=mode))
    assert bot.client.user is not None
    # Discord refuses the answer's first message (a 400 is never retried); the notice then goes through.
    world.emulator.inject(Fault("error", route=ROUTE_CREATE, status=400, count=1))
    asked = await world.say(GENERAL, f"<@{bot.client.user.id}> hello words=5")
    await eventually(lambda: len(bot.finished) == 1, what="the turn to end")
    turn = bot.finished[0]
    assert turn.result is None
    assert isinstance(turn.error, DiscordError) and turn.error.status == 400
    assert turn.notice_sent
    [notice] = world.bot_messages(GENERAL)
    assert "could not be delivered (DiscordError)" in notice["content"]
    assert notice["message_reference"]["message_id"] == asked["id"]
