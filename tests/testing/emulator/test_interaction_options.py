"""Options typed as text (the page's ``/cmd n:3``) reach the bot typed as the command declares them."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator
from tests.testing.emulator.support import USER_ID, post

PICK = {
    "name": "pick",
    "description": "typed options",
    "options": [
        {"type": 4, "name": "n", "description": "an integer"},
        {"type": 10, "name": "ratio", "description": "a number"},
        {"type": 5, "name": "loud", "description": "a boolean"},
        {"type": 3, "name": "text", "description": "a string"},
    ],
}


async def _registered(emulator: DiscordEmulator, session: aiohttp.ClientSession) -> None:
    url = f"{emulator.base_url}/applications/{emulator.config.application_id}/commands"
    headers = {"Authorization": f"Bot {emulator.config.token}"}
    async with session.put(url, json=[PICK], headers=headers) as response:
        assert response.status == 200


async def _invoke(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str, options: dict[str, Any]
) -> tuple[int, Any]:
    body = {"channel_id": channel, "author_id": USER_ID, "username": "alice", "command": "pick"}
    return await post(session, f"{emulator.base_url}/_emulator/interactions", {**body, "options": options})


async def test_text_values_are_sent_as_the_declared_types(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    await _registered(emulator, session)
    options = {"n": "3", "ratio": " 0.5", "loud": "true", "text": "42"}
    status, summary = await _invoke(emulator, session, channel, options)
    assert status == 200, summary
    sent = emulator.interactions.by_id[summary["id"]].payload["data"]["options"]
    assert sent == [
        {"name": "n", "type": 4, "value": 3},
        {"name": "ratio", "type": 10, "value": 0.5},
        {"name": "loud", "type": 5, "value": True},
        {"name": "text", "type": 3, "value": "42"},  # a string option stays text
    ]


@pytest.mark.parametrize(
    ("name", "value"), [("n", "three"), ("n", "1.5"), ("ratio", "nan"), ("loud", "maybe")]
)
async def test_text_that_is_not_the_declared_type_is_a_400_naming_the_option(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str, name: str, value: str
) -> None:
    await _registered(emulator, session)
    status, error = await _invoke(emulator, session, channel, {name: value})
    assert status == 400 and error["code"] == 50035
    assert list(error["errors"]["options"]) == [name] and name in str(error["errors"])
    assert emulator.interactions.by_id == {}
