"""``StopsElsewhere``: /stop and /kill reaching an answer in another process, over a real Redis.

Two ``StopsElsewhere`` on one Redis stand for two processes: "here" has no answer, "there" runs
alice's. Each question is decided by ``decide`` in the process holding the answer.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import attrs
import pytest

from rxcord import StopKind
from rxcord.discord import Answer, Answers, Permissions, StopsElsewhere
from tests.redis_server import redis_url

__all__ = ("redis_url",)  # the fixture

CHANNEL, GUILD = "1200000000000000010", "1200000000000000001"
ALICE, BOB, CAROL = "3000000000000000001", "3000000000000000002", "3000000000000000003"
MODERATOR_ROLE = "5000000000000000077"


@attrs.define
class Processes:
    here: StopsElsewhere
    there: StopsElsewhere
    answer: Answer


def _answers(permissions: Permissions) -> Answers:
    client: Any = SimpleNamespace(user=SimpleNamespace(id=1))
    return Answers(client, permissions=permissions)


def _user(user_id: str, *roles: str) -> Any:
    return SimpleNamespace(id=int(user_id), roles=[SimpleNamespace(id=int(r)) for r in roles])


def _channel(channel_id: str = CHANNEL) -> Any:
    return SimpleNamespace(id=int(channel_id), guild_id=int(GUILD), guild=None, parent_id=None)


@pytest.fixture
async def processes(redis_url: str) -> AsyncIterator[Processes]:
    permissions = Permissions(moderator_roles=(MODERATOR_ROLE,))
    namespace = "test-" + secrets.token_hex(6)
    here = StopsElsewhere(_answers(permissions), redis_url, namespace=namespace, wait=20.0)
    there_answers = _answers(permissions)
    there = StopsElsewhere(there_answers, redis_url, namespace=namespace, wait=20.0)
    answer = Answer(
        number=1, channel_id=CHANNEL, user_id=ALICE, user_name="alice", message_id="9", message=None
    )
    answer.task = asyncio.ensure_future(asyncio.get_running_loop().create_future())
    answer.started = True
    there_answers.active[answer.number] = answer
    await here.start()
    await there.start()
    try:
        yield Processes(here, there, answer)
    finally:
        answer.task.cancel()
        await here.close()
        await there.close()


async def test_the_asker_stops_their_answer_in_the_other_process(processes: Processes) -> None:
    decision = await processes.here.stop(_user(ALICE), _channel(), StopKind.USER, None, manage_messages=False)
    assert decision is not None and decision.outcome == "stopped"
    assert decision.default.format(**decision.fields) == "Stopped alice's answer; what was written stays."
    assert processes.answer.stop_kind is StopKind.USER and processes.answer.stopped_by == ALICE
    assert processes.there.stopped_here == 1 and processes.here.stopped_here == 0


async def test_someone_else_is_refused_by_the_process_holding_the_answer(processes: Processes) -> None:
    processes.here.wait = 0.3  # nobody replies: nothing of bob's anywhere, and he is no moderator
    decision = await processes.here.stop(_user(BOB), _channel(), StopKind.KILL, None, manage_messages=False)
    assert decision is None
    processes.here.wait = 20.0
    picked = await processes.here.stop(_user(BOB), _channel(), StopKind.KILL, "alice", manage_messages=False)
    assert picked is not None and picked.outcome == "refused"
    assert picked.default.format(**picked.fields) == "Only alice or a moderator can stop that answer."
    assert processes.answer.stop_kind is None  # still running


async def test_a_moderator_role_travels_with_the_question(processes: Processes) -> None:
    """The holder has no member cache for carol: her roles come with the question."""
    decision = await processes.here.stop(
        _user(CAROL, MODERATOR_ROLE), _channel(), StopKind.KILL, None, manage_messages=False
    )
    assert decision is not None and decision.outcome == "stopped"
    assert processes.answer.stop_kind is StopKind.KILL


async def test_nothing_anywhere_is_none_after_the_wait(processes: Processes) -> None:
    processes.here.wait = 0.3
    other = "1200000000000000099"
    assert (
        await processes.here.stop(_user(ALICE), _channel(other), StopKind.USER, None, manage_messages=False)
        is None
    )
    assert processes.answer.stop_kind is None


async def test_malformed_questions_are_ignored(processes: Processes) -> None:
    bus = processes.here.bus
    for reason in ("not json", json.dumps([1]), json.dumps({"caller": "x"}), json.dumps({"request": "r"})):
        await bus.publish(f"ask:{CHANNEL}", StopKind.KILL, reason)
    # Then a good question still gets its answer: the reader survived every bad one.
    decision = await processes.here.stop(_user(ALICE), _channel(), StopKind.USER, None, manage_messages=False)
    assert decision is not None and decision.outcome == "stopped"
    assert processes.answer.stop_kind is StopKind.USER and processes.there.stopped_here == 1
