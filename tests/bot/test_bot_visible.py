"""Visible state through the emulator's gateway: the writing reaction, end markers, notes, and
``StreamResult.messages`` equal to what Discord holds after a stop, a kill or an interrupt."""

from __future__ import annotations

from typing import Any

import pytest

from rxcord import StreamStatus
from rxcord.bot.app import RxcordBot
from rxcord.bot.config import parse_config
from rxcord.core.errors import ConfigError
from tests.bot.conftest import ALICE, GENERAL, World, eventually, idle

WRITING = "✍️"
MODES = ("aggregated", "live", "edit")


def _me(bot: RxcordBot) -> str:
    assert bot.client.user is not None
    return f"<@{bot.client.user.id}>"


def _reactions(world: World, message_id: str) -> list[dict[str, Any]]:
    stored = world.emulator.store.messages[message_id]
    return list(stored.message.get("reactions") or [])


async def _held(world: World, channel: str) -> list[tuple[str, str]]:
    """The bot's messages as a client reads them (``GET /_emulator/channels/{id}/messages``)."""
    url = f"{world.emulator.base_url}/_emulator/channels/{channel}/messages"
    async with world.session.get(url) as response:
        assert response.status == 200, await response.text()
        body = await response.json()
    messages = body if isinstance(body, list) else body["messages"]
    bot_id = world.emulator.config.bot_id
    # Not the ephemeral answers to /stop and /kill: only their user sees those.
    return [
        (m["id"], m["content"])
        for m in messages
        if m["author"]["id"] == bot_id and not (m.get("flags", 0) & 64)
    ]


def _listed(bot: RxcordBot, index: int = 0) -> list[tuple[str | None, Any]]:
    turn = bot.finished[index].result
    assert turn is not None
    return [(m.message_id, m.payload.get("content")) for m in turn.result.messages]


def _status(bot: RxcordBot, index: int = 0) -> StreamStatus:
    turn = bot.finished[index].result
    assert turn is not None
    return turn.result.status


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
async def test_the_askers_message_shows_writing_until_the_answer_ended(world: World, mode: str) -> None:
    bot = await world.bot(world.config(mode=mode))
    question = await world.say(GENERAL, f"{_me(bot)} gate words=14")
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="twelve words streamed")
    await eventually(lambda: bool(_reactions(world, question["id"])), what="the writing reaction")
    [shown] = _reactions(world, question["id"])
    assert shown["emoji"]["name"] == WRITING and shown["me"] and shown["count"] == 1
    world.provider.gate.set()
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    await idle(bot)
    assert _status(bot) is StreamStatus.COMPLETED
    assert _reactions(world, question["id"]) == []
    kinds = frozenset({"reaction_add", "reaction_remove", "message_create", "message_update"})
    events = world.emulator.events.recent(kinds)
    order = [
        e.kind
        for e in events
        if e.kind.startswith("reaction")
        or e.data.get("message", {}).get("author", {}).get("id") == world.emulator.config.bot_id
    ]
    assert order[0] == "reaction_add" and order[-1] == "reaction_remove"  # around every bot message
    assert order.count("reaction_add") == order.count("reaction_remove") == 1
    assert "-# " not in world.bot_text(GENERAL)  # a completed answer has no end line


@pytest.mark.timeout(120)
async def test_a_failed_reaction_never_aborts_the_answer(world: World) -> None:
    # Over the emulator's 64 characters: refused (400), as Discord refuses an unknown emoji.
    bot = await world.bot(world.config(f'writing_reaction = "{"x" * 70}"', mode="live"))
    question = await world.say(GENERAL, f"{_me(bot)} words=5")
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    await idle(bot)
    assert _status(bot) is StreamStatus.COMPLETED
    assert world.bot_text(GENERAL) == "Answer to words=5: w0 w1 w2 w3 w4"
    assert _reactions(world, question["id"]) == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
async def test_a_stopped_answer_ends_with_the_marker_and_lists_what_discord_holds(
    world: World, mode: str
) -> None:
    world.provider.pace = 0.02
    bot = await world.bot(world.config(mode=mode))
    await world.say(GENERAL, f"{_me(bot)} slow")
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="the answer to stream")
    if mode == "edit":
        await eventually(lambda: bool(world.bot_messages(GENERAL)), what="the preview")
    await world.command(GENERAL, "stop")
    await eventually(lambda: len(bot.finished) == 1, what="the stopped answer")
    await idle(bot)
    assert _status(bot) is StreamStatus.STOPPED_BY_USER
    held = await _held(world, GENERAL)
    assert held and held[-1][1].startswith("Answer to slow: w0") and held[-1][1].endswith("\n-# ⏹ stopped")
    assert _listed(bot) == held


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", MODES)
async def test_after_kill_the_result_lists_exactly_what_discord_holds(world: World, mode: str) -> None:
    bot = await world.bot(world.config(mode=mode))
    await world.say(GENERAL, f"{_me(bot)} slow")  # thousands of words: several parts
    if mode == "aggregated":  # nothing is sent before the end: the kill leaves nothing
        await eventually(lambda: world.provider.written.get(0, 0) >= 50, what="the answer to stream")
    else:
        await eventually(lambda: bool(world.bot_messages(GENERAL)), what="a first part in Discord")
    await world.command(GENERAL, "kill")
    await eventually(lambda: len(bot.finished) == 1, what="the killed answer")
    await idle(bot)
    assert _status(bot) is StreamStatus.KILLED
    held = await _held(world, GENERAL)
    assert _listed(bot) == held
    if mode == "aggregated":
        assert held == []
    else:
        # The last line of the last message: appended, or one more message when the part was full.
        assert held and held[-1][1].split("\n")[-1] == "-# ✂ aborted"


@pytest.mark.timeout(120)
async def test_an_interrupted_answer_says_so_and_lists_what_discord_holds(world: World) -> None:
    world.provider.pace = 0.02
    bot = await world.bot(world.config(mode="edit"))
    await world.say(GENERAL, f"{_me(bot)} slow")
    await eventually(lambda: bool(world.bot_messages(GENERAL)), what="the preview")
    await world.say(GENERAL, f"{_me(bot)} never mind words=2")  # an addressed follow-up interrupts
    await eventually(lambda: len(bot.finished) == 2, what="both answers")
    await idle(bot)
    assert _status(bot, 0) is StreamStatus.FOLLOW_UP_INTERRUPT
    first = _listed(bot, 0)
    held = await _held(world, GENERAL)
    assert first == held[: len(first)]
    # Edit mode's preview stays, and says it was cut.
    assert first and str(first[-1][1]).endswith("\n-# ↩ interrupted")


@pytest.mark.timeout(120)
async def test_markers_are_configurable_and_can_be_turned_off(world: World) -> None:
    world.provider.pace = 0.02
    extra = 'stopped_marker = "(stopped)"\nwriting_reaction = ""'
    bot = await world.bot(world.config(extra, mode="edit"))
    question = await world.say(GENERAL, f"{_me(bot)} slow")
    await eventually(lambda: bool(world.bot_messages(GENERAL)), what="the preview")
    assert _reactions(world, question["id"]) == []  # no writing reaction
    await world.command(GENERAL, "stop")
    await eventually(lambda: len(bot.finished) == 1, what="the stopped answer")
    await idle(bot)
    [(_, shown)] = await _held(world, GENERAL)
    assert shown.startswith("Answer to slow: w0") and shown.endswith("\n-# (stopped)")
    assert not world.emulator.events.recent(frozenset({"reaction_add"}))


@pytest.mark.timeout(120)
@pytest.mark.parametrize("show", [True, False])
async def test_what_the_context_left_out_is_noted_under_the_answer(world: World, show: bool) -> None:
    image = {"filename": "cat.png", "url": "https://cdn.discordapp.com/cat.png", "content_type": "image/png"}
    zipped = {
        "filename": "src.zip",
        "url": "https://cdn.discordapp.com/src.zip",
        "content_type": "application/zip",
    }
    extra = "" if show else "show_notes = false"
    bot = await world.bot(world.config(extra, mode="aggregated"))  # vision is off
    await world.say(GENERAL, f"{_me(bot)} what is this? words=3", attachments=[image, zipped])
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    await idle(bot)
    [(_, shown)] = await _held(world, GENERAL)
    noted = shown.split("\n")[1:]
    if not show:
        assert noted == []
        return
    assert noted == [
        "-# ⚠ 1 image attachment(s) were left out (this model reads no images).",
        "-# ⚠ Attachment(s) src.zip were left out (not text or an image).",
    ]
    assert _listed(bot) == [(m_id, text) for m_id, text in await _held(world, GENERAL)]
    system = world.provider.requests[0]["messages"][0]["content"]
    assert "src.zip" in system  # the model is told too
    assert world.provider.last_user_text().startswith(f"[alice, id {ALICE}]")


def test_a_marker_is_one_short_line() -> None:
    base = '[provider]\nname = "openai"\nmodel = "m"\n[delivery]\n'
    with pytest.raises(ConfigError, match=r"delivery.stopped_marker: must be one short line"):
        parse_config(base + 'stopped_marker = "a\\nb"\n')
    with pytest.raises(ConfigError, match=r":6: delivery.writing_reaction: must be one short line"):
        parse_config(base + 'mode = "edit"\nwriting_reaction = "' + "x" * 101 + '"\n')
    assert parse_config(base + 'killed_marker = ""\n').delivery.markers.killed == ""
