"""Who may ``/stop`` another user's answer, by the roles the emulator's members route gives.

The roles travel as Discord sends them: GUILD_ROLE_CREATE to the bot, ``member.roles`` and the
computed ``member.permissions`` in INTERACTION_CREATE, read by an unmodified discord.py client.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from rxcord import StreamStatus
from rxcord.discord import Answer, Permissions
from tests.bot.conftest import ALICE, BOB, eventually
from tests.discord.harness import CAROL, Harness, harness

MODS = "1300000000000000001"
CLEANERS = "1300000000000000002"
MANAGE_MESSAGES = 1 << 13
REFUSED = "Only alice or a moderator can stop that answer."


@pytest.fixture
async def world() -> AsyncIterator[Harness]:
    async with harness() as world:
        yield world


async def _emulator(world: Harness, route: str, body: dict[str, Any]) -> dict[str, Any]:
    body = {"guild_id": world.emulator.config.guild_id, **body}
    async with world.session.post(f"{world.emulator.base_url}/_emulator/{route}", json=body) as response:
        assert response.status == 200, await response.text()
        answer: dict[str, Any] = await response.json()
        return answer


async def _stalled(world: Harness) -> Answer:
    """Alice's answer, twelve words written, the provider waiting until it is stopped."""
    await world.say(f"{world.me} stall", author=ALICE)
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="twelve words written")
    assert world.answers is not None
    return next(a for a in world.answers.active.values() if a.user_id == ALICE and a.started)


def _stopped_by(answer: Answer, user: str) -> bool:
    result = answer.result
    return (
        result is not None
        and result.result.status is StreamStatus.STOPPED_BY_USER
        and answer.stopped_by == user
    )


@pytest.mark.timeout(120)
async def test_a_moderator_role_stops_another_users_answer_and_a_plain_member_is_refused(
    world: Harness,
) -> None:
    await world.start(permissions=Permissions(moderator_roles=[MODS]))
    carol = await _emulator(world, "members", {"user_id": CAROL, "roles": [MODS], "username": "carol"})
    assert carol["roles"] == [MODS]
    answer = await _stalled(world)
    assert await world.command("stop", author=BOB, answer="alice") == REFUSED
    assert answer.stop_kind is None and not answer.done
    assert await world.command("stop", author=CAROL, answer="alice") == (
        "Stopped alice's answer; what was written stays."
    )
    await world.finished(1)
    assert _stopped_by(answer, CAROL)


@pytest.mark.timeout(120)
async def test_manage_messages_from_a_role_stops_it_and_losing_the_role_takes_it_back(
    world: Harness,
) -> None:
    await world.start()  # no moderator roles: Discord's Manage Messages decides
    role = await _emulator(
        world, "roles", {"role_id": CLEANERS, "name": "cleaners", "permissions": str(MANAGE_MESSAGES)}
    )
    assert int(role["permissions"]) == MANAGE_MESSAGES
    await _emulator(world, "members", {"user_id": CAROL, "roles": [CLEANERS], "username": "carol"})
    await _emulator(world, "members", {"user_id": CAROL, "roles": []})  # removed again
    answer = await _stalled(world)
    assert await world.command("stop", author=CAROL, answer="alice") == REFUSED
    assert answer.stop_kind is None and not answer.done
    await _emulator(world, "members", {"user_id": CAROL, "roles": [CLEANERS]})
    assert await world.command("stop", author=CAROL, answer="alice") == (
        "Stopped alice's answer; what was written stays."
    )
    await world.finished(1)
    assert _stopped_by(answer, CAROL)
