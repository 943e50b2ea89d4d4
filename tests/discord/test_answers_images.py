"""``Answers`` (any discord.py bot) sends a vision model its images inline, through the emulator."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import pytest
import yarl

from rxcord.discord import ContextLimits, ImageFetcher
from tests.bot.conftest import ALICE, GENERAL
from tests.discord.harness import Harness, harness

PNG = b"\x89PNG\r\n\x1a\n" + b"i" * 200


@pytest.fixture
async def world() -> AsyncIterator[Harness]:
    async with harness() as world:
        yield world


async def _ask_with_images(world: Harness) -> list[dict[str, str]]:
    world.emulator.files["8001"] = PNG
    origin = yarl.URL(world.emulator.base_url).origin()
    attachment = {
        "url": f"{origin}/attachments/8001/cat.png",
        "filename": "cat.png",
        "content_type": "image/png",
    }
    body = {
        "channel_id": GENERAL,
        "author_id": ALICE,
        "username": "alice",
        "content": f"{world.me} what is this words=1",
        "attachments": [attachment],
    }
    async with world.session.post(f"{world.emulator.base_url}/_emulator/messages", json=body) as response:
        assert response.status == 200, await response.text()
    await world.finished(1)
    messages = world.provider.requests[0]["messages"]
    content = [m for m in messages if m["role"] == "user"][-1]["content"]
    return [part for part in content if isinstance(part, dict) and part.get("type") == "image_url"]


@pytest.mark.timeout(120)
async def test_a_vision_answer_gets_the_emulators_image_inline(world: Harness) -> None:
    answers = await world.start()
    answers.vision = True
    answers.images = ImageFetcher.for_api(1000, world.emulator.base_url)
    [image] = await _ask_with_images(world)
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(PNG).decode()


@pytest.mark.timeout(120)
async def test_by_default_only_discords_hosts_are_read_and_the_refusal_is_a_note(world: Harness) -> None:
    answers = await world.start()
    answers.vision, answers.limits = True, ContextLimits(max_image_bytes=1000)
    assert await _ask_with_images(world) == []
    system = "".join(m["content"] for m in world.provider.requests[0]["messages"] if m["role"] == "system")
    assert "Image(s) not sent: cat.png (not on a Discord attachment host)." in system
