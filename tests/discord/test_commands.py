"""``/stop`` and ``/kill`` of ``rxcord.discord``: who may stop which answer, through the gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from loguru import logger

from rxcord import DeliveryMode, StopKind, StreamStatus
from rxcord.discord import Answer, Interrupt, Permissions
from tests.bot.conftest import ALICE, BOB, GENERAL, TESTING, eventually
from tests.discord.harness import CAROL, Harness, harness


@pytest.fixture
async def world() -> AsyncIterator[Harness]:
    async with harness() as world:
        yield world


def _replied(message: dict[str, Any]) -> str | None:
    reference: dict[str, str] = message.get("message_reference") or {}
    return reference.get("message_id")


def _status(answer: Answer) -> StreamStatus:
    assert answer.result is not None, answer
    return answer.result.result.status


async def _stalled(world: Harness, text: str = "stall", *, author: str = ALICE, request: int = 0) -> Answer:
    """An answer that wrote twelve words and then waits (the provider stalls until it is stopped)."""
    await world.say(f"{world.me} {text}", author=author)
    await eventually(lambda: world.provider.written.get(request, 0) >= 12, what="twelve words written")
    assert world.answers is not None
    return next(a for a in world.answers.active.values() if a.user_id == author and a.started)


@pytest.mark.timeout(120)
async def test_the_asker_stops_their_answer_and_what_was_written_stays(world: Harness) -> None:
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lines.append, level="INFO", filter="rxcord", format="{message} {extra}")
    try:
        await world.start()
        answer = await _stalled(world)
        assert await world.command("stop") == "Stopped alice's answer; what was written stays."
        await world.finished(1)
    finally:
        logger.remove(handler)
        logger.disable("rxcord")
    assert _status(answer) is StreamStatus.STOPPED_BY_USER and answer.stopped_by == ALICE
    assert world.bot_messages()[-1]["content"].startswith("Answer to stall: w0 w1")
    [used] = [line for line in lines if line.startswith("/stop by user")]
    assert ALICE in used and "#1 alice" in used and "stopped" in used and "bot-commands" in used
    assert world.emulator.config.token not in used


@pytest.mark.timeout(120)
async def test_a_moderator_stops_anyone_s_answer(world: Harness) -> None:
    await world.start(permissions=Permissions(admin_users=[CAROL]))
    answer = await _stalled(world)
    assert await world.command("stop", author=CAROL) == "Stopped alice's answer; what was written stays."
    await world.finished(1)
    assert _status(answer) is StreamStatus.STOPPED_BY_USER and answer.stopped_by == CAROL


@pytest.mark.timeout(120)
async def test_another_user_cannot_stop_an_answer(world: Harness) -> None:
    answers = await world.start()
    answer = await _stalled(world)
    assert await world.command("stop", author=BOB) == "Nothing of yours is being answered here."
    assert await world.command("kill", author=BOB, answer="alice") == (
        "Only alice or a moderator can stop that answer."
    )
    assert answer.stop_kind is None and not answer.done and answers.finished == type(answers.finished)()
    assert await world.command("stop") == "Stopped alice's answer; what was written stays."
    await world.finished(1)


@pytest.mark.timeout(120)
async def test_a_blocked_moderator_cannot_stop(world: Harness) -> None:
    await world.start(permissions=Permissions(admin_users=[BOB], blocked_users=[BOB]))
    answer = await _stalled(world)
    assert await world.command("stop", author=BOB) == "You can't stop answers here."
    assert answer.stop_kind is None and not answer.done
    await world.command("stop")
    await world.finished(1)


@pytest.mark.timeout(120)
async def test_stop_is_refused_in_a_channel_the_bot_does_not_serve(world: Harness) -> None:
    await world.start(permissions=Permissions(allowed_channels=[GENERAL], admin_users=[ALICE]))
    answer = await _stalled(world)
    assert await world.command("stop", channel=TESTING) == "You can't stop answers here."
    assert answer.stop_kind is None and not answer.done
    await world.command("stop")
    await world.finished(1)


@pytest.mark.timeout(120)
async def test_stop_hits_the_right_answer_with_others_running_and_queued(world: Harness) -> None:
    answers = await world.start(interrupt=Interrupt.NEVER, permissions=Permissions(admin_users=[CAROL]))
    first = await _stalled(world, "stall one")  # alice #1, running
    await world.say(f"{world.me} two words=2")  # alice #2, queued behind #1
    bobs = await _stalled(world, "stall three", author=BOB, request=1)  # bob #3, running at once
    queued = next(a for a in answers.active.values() if a.state == "queued")
    assert await world.command("stop", author=BOB) == "Stopped bob's answer; what was written stays."
    await eventually(lambda: bobs.done, what="bob's answer to end")
    assert _status(bobs) is StreamStatus.STOPPED_BY_USER
    assert first.stop_kind is None and queued.stop_kind is None
    assert await world.command("stop", author=CAROL, answer=f"#{queued.number}") == (
        "Stopped alice's answer; what was written stays."
    )
    assert first.stop_kind is None and queued.stop_kind is StopKind.USER
    assert await world.command("stop", author=CAROL) == "Stopped alice's answer; what was written stays."
    await world.finished(3)
    assert _status(first) is StreamStatus.STOPPED_BY_USER
    assert queued.result is None and len(world.provider.requests) == 2  # #2 never called the provider


@pytest.mark.timeout(120)
async def test_kill_closes_the_running_stream_and_the_queued_answers_follow(world: Harness) -> None:
    answers = await world.start(interrupt=Interrupt.NEVER)
    first = await _stalled(world, "stall one")
    await world.say(f"{world.me} two words=2")
    await world.say(f"{world.me} three words=3")
    await eventually(lambda: len(answers.active) == 3, what="two answers queued")
    assert await world.command("kill") == "Aborted alice's answer."
    await world.finished(3)
    assert _status(first) is StreamStatus.KILLED
    await eventually(lambda: 0 in world.provider.closed_early, what="the provider to see the stream closed")
    second, third = list(answers.finished)[1:]
    assert (_status(second), _status(third)) == (StreamStatus.COMPLETED, StreamStatus.COMPLETED)
    shown = {m["id"]: m["content"] for m in world.bot_messages()}
    for answer, ending in ((second, "two words=2: w0 w1"), (third, "three words=3: w0 w1 w2")):
        assert answer.result is not None
        text = "\n\n".join(shown[m.message_id or ""] for m in answer.result.result.messages)
        assert text.endswith(ending), text
    assert second.result is not None and third.result is not None
    assert (
        second.result.result.messages[0].message_id < third.result.result.messages[0].message_id
    )  # in order
    held = [m["id"] for m in world.bot_messages() if _replied(m) == first.message_id]
    assert first.result is not None and [m.message_id for m in first.result.result.messages] == held
    assert all(m["content"] for m in world.bot_messages())


@pytest.mark.timeout(120)
async def test_after_kill_the_half_written_text_keeps_a_marker_and_the_result_lists_it(
    world: Harness,
) -> None:
    world.provider.pace = 0.05  # the kill lands long before a second message is needed
    await world.start(delivery=DeliveryMode.EDIT)
    await world.say(f"{world.me} slow")
    await eventually(lambda: bool(world.bot_messages()), what="the preview")
    assert await world.command("kill") == "Aborted alice's answer."
    await world.finished(1)
    assert world.answers is not None
    [answer] = world.answers.finished
    assert _status(answer) is StreamStatus.KILLED and answer.result is not None
    [shown] = world.bot_messages()
    assert [m.message_id for m in answer.result.result.messages] == [shown["id"]]
    assert shown["content"].startswith("Answer to slow: w0") and shown["content"].endswith("\n-# ✂ aborted")
