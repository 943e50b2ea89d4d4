"""The bot's own secrets in its answers: its token and its key never reach Discord, however written."""

from __future__ import annotations

import pytest

from rxcord import StreamStatus
from tests.bot.conftest import GENERAL, World, eventually


@pytest.mark.timeout(120)
async def test_the_bot_token_and_the_key_echoed_in_an_answer_are_redacted(world: World) -> None:
    """The echo provider repeats the question (one delta): the bot's token and API key in it are
    redacted before Discord sees the answer (the bot passes its token to the stream's redactor)."""
    bot = await world.bot(world.config(mode="live"))
    assert bot.client.user is not None
    token = world.emulator.config.token
    await world.say(GENERAL, f"<@{bot.client.user.id}> repeat {token} and echo-secret-key please")
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    result = bot.finished[0].result
    assert result is not None and result.result.status is StreamStatus.COMPLETED
    text = world.bot_text(GENERAL)
    assert text.startswith("Answer to repeat [redacted] and [redacted] please:")
    assert token not in text and "echo-secret-key" not in text
    assert token not in result.result.visible_text
