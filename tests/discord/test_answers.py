"""``rxcord.discord.Answers`` in a plain discord.py bot, through the emulator's gateway."""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rxcord import StreamStatus
from rxcord.discord import Answer, Interrupt
from tests.bot.conftest import ALICE, BOB, eventually
from tests.discord.harness import Harness, harness


@pytest.fixture
async def world() -> AsyncIterator[Harness]:
    async with harness() as world:
        yield world


def _status(answer: Answer) -> StreamStatus:
    assert answer.result is not None, answer
    return answer.result.result.status


@pytest.mark.timeout(120)
async def test_two_users_in_one_channel_are_answered_at_the_same_time(world: Harness) -> None:
    """Both answers stream before either ends (the bot used to run one answer per channel)."""
    answers = await world.start()
    alice = await world.say(f"{world.me} gate alice words=14", author=ALICE)
    bob = await world.say(f"{world.me} gate bob words=14", author=BOB)
    # Each answer writes twelve words and waits for the gate: two requests open at once.
    await eventually(lambda: world.provider.max_active == 2, what="both answers streaming")
    assert len(answers.active) == 2 and not answers.finished
    world.provider.gate.set()
    await world.finished(2)
    assert {_status(a) for a in answers.finished} == {StreamStatus.COMPLETED}
    replies = {m["message_reference"]["message_id"]: m["content"] for m in world.bot_messages()}
    words = " ".join(f"w{i}" for i in range(14))
    assert replies[alice["id"]] == f"Answer to gate alice words=14: {words}"
    assert replies[bob["id"]] == f"Answer to gate bob words=14: {words}"


@pytest.mark.timeout(120)
async def test_only_an_addressed_follow_up_interrupts(world: Harness) -> None:
    answers = await world.start()
    await world.say(f"{world.me} slow one")
    await eventually(lambda: world.provider.written.get(0, 0) >= 5, what="the first answer to stream")
    await world.say("lol brb, talking to bob")  # same asker, not addressed to the bot
    await world.say(f"{world.me} actually, words=3")
    await world.finished(2)
    first, second = answers.finished
    assert _status(first) is StreamStatus.FOLLOW_UP_INTERRUPT and first.stopped_by == "follow-up"
    assert _status(second) is StreamStatus.COMPLETED
    assert len(world.provider.requests) == 2  # "brb" was neither answered nor an interrupt
    assert world.provider.last_user_text(1).endswith("actually, words=3")
    assert world.bot_messages()[-1]["content"] == "Answer to actually, words=3: w0 w1 w2"


@pytest.mark.timeout(120)
async def test_a_reply_to_the_bot_is_addressed_and_another_user_does_not_interrupt(world: Harness) -> None:
    answers = await world.start()
    await world.say(f"{world.me} words=2")
    await world.finished(1)
    [reply] = world.bot_messages()
    await world.say("slow go on", reply_to=reply["id"])  # a reply to the bot: addressed
    await eventually(lambda: world.provider.written.get(1, 0) >= 3, what="the reply's answer")
    await world.say(f"{world.me} words=2", author=BOB)  # bob's message leaves alice's answer alone
    await eventually(lambda: len(answers.finished) == 2, what="bob's answer")
    assert answers.finished[1].user_id == BOB and _status(answers.finished[1]) is StreamStatus.COMPLETED
    [running] = answers.active.values()
    assert running.user_id == ALICE and running.stop_kind is None
    context = world.provider.requests[1]["messages"]
    assert any(m["role"] == "assistant" and "Answer to words=2" in m["content"] for m in context)


@pytest.mark.timeout(120)
async def test_a_stop_before_streaming_makes_no_provider_call(world: Harness) -> None:
    """An answer queued behind its asker's earlier one, stopped, ends without a request."""
    answers = await world.start(interrupt=Interrupt.NEVER)
    await world.say(f"{world.me} stall one")
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="the first answer")
    await world.say(f"{world.me} two words=2")
    await eventually(lambda: len(answers.active) == 2, what="the second answer queued")
    queued = max(answers.active.values(), key=lambda a: a.number)
    assert queued.state == "queued"
    text = await world.command("stop", answer=f"#{queued.number}")
    assert text == "Stopped alice's answer; what was written stays."
    assert await world.command("stop") == text  # now the running one (the queued one is stopped)
    await world.finished(2)
    assert queued.result is None and len(world.provider.requests) == 1


class Gate:
    """An ``Admission`` refusing messages that say "over", recording every call."""

    def __init__(self) -> None:
        self.admitted: list[str] = []
        self.settled: list[tuple[str, StreamStatus | None]] = []

    async def admit(self, message: Any) -> str | None:
        if "quietly" in message.content:
            return ""  # refused, the hook answered by itself (as a reaction does)
        if "over" in message.content:
            return "You have used 20 of 20 requests this hour"
        self.admitted.append(message.content)
        return None

    async def settle(self, message: Any, result: Any) -> None:
        self.settled.append((message.content, result.result.status if result is not None else None))


@pytest.mark.timeout(120)
async def test_admission_refuses_before_the_provider_and_settles_every_admitted_answer(
    world: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = importlib.import_module("rxcord.discord.answers")
    posted: list[str] = []
    post = module._post_refusal

    async def recording(message: Any, text: str) -> None:
        posted.append(text)
        await post(message, text)

    monkeypatch.setattr(module, "_post_refusal", recording)
    gate = Gate()
    answers = await world.start()
    answers.admission = gate
    await world.say(f"{world.me} over the limit words=2")
    await eventually(lambda: len(world.bot_messages()) == 1, what="the refusal")
    assert world.bot_messages()[0]["content"] == "You have used 20 of 20 requests this hour"
    assert world.provider.requests == [] and not answers.active
    await world.say(f"{world.me} refused quietly words=2")
    await world.say(f"{world.me} over again words=2")  # the second refusal shows the first posted nothing
    await eventually(lambda: len(world.bot_messages()) == 2, what="the second refusal")
    assert [m["content"] for m in world.bot_messages()] == ["You have used 20 of 20 requests this hour"] * 2
    assert posted == ["You have used 20 of 20 requests this hour"] * 2  # no empty post was tried
    assert world.provider.requests == [] and not answers.active
    await world.say(f"{world.me} slow one")
    await eventually(lambda: world.provider.written.get(0, 0) >= 3, what="the first answer")
    await world.say(f"{world.me} two words=2")  # interrupts "one"
    await world.finished(2)
    assert gate.settled == [
        (f"{world.me} slow one", StreamStatus.FOLLOW_UP_INTERRUPT),
        (f"{world.me} two words=2", StreamStatus.COMPLETED),
    ]
    assert len(gate.admitted) == 2 and len(world.provider.requests) == 2
