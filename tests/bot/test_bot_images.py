"""Image attachments reach a vision model inline (base64), bounded, from Discord's hosts only.

Through the emulator's gateway: the emulator serves the attachment's bytes at its own origin
(the bot's ``[discord] base_url``), the stand-in provider receives the request body.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
import yarl

from rxcord.bot.app import RxcordBot
from rxcord.bot.config import BotConfig, parse_config
from tests.bot.conftest import GENERAL, World, eventually

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2
JPEG = b"\xff\xd8\xff\xe0" + b"j" * 300


def _config(world: World, *, vision: str = "vision = true", context: str = "") -> BotConfig:
    return parse_config(f"""
[provider]
name = "openai"
model = "echo-1"
api_key_env = ["ECHO_KEY"]
base_url = "{world.provider.base_url}"
allow_private_network = true
{vision}

[discord]
base_url = "{world.emulator.base_url}"
gateway_url = "{world.emulator.gateway_url}"

[delivery]
mode = "aggregated"

[context]
{context}
""")


def _served(
    world: World, name: str, data: bytes, *, kind: str = "image/png", size: int = 0
) -> dict[str, Any]:
    """An attachment whose bytes the emulator serves at its own origin (as Discord's CDN would)."""
    number = str(7000 + len(world.emulator.files))
    world.emulator.files[number] = data
    origin = yarl.URL(world.emulator.base_url).origin()
    url = f"{origin}/attachments/{number}/{name}"
    return {"url": url, "filename": name, "content_type": kind, "size": size}


def _me(bot: RxcordBot) -> str:
    assert bot.client.user is not None
    return f"<@{bot.client.user.id}>"


def _user_parts(world: World) -> list[dict[str, Any]]:
    messages = world.provider.requests[0]["messages"]
    content = [m for m in messages if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _system(world: World) -> str:
    messages = world.provider.requests[0]["messages"]
    return "".join(m["content"] for m in messages if m["role"] == "system")


async def _ask(world: World, bot: RxcordBot, attachments: list[dict[str, Any]]) -> None:
    await world.say(GENERAL, f"{_me(bot)} what is this words=1", attachments=attachments)
    await eventually(lambda: len(bot.finished) == 1, what="the answer")


@pytest.mark.timeout(120)
async def test_an_image_attachment_arrives_base64_in_the_providers_request(world: World) -> None:
    bot = await world.bot(_config(world))
    await _ask(
        world, bot, [_served(world, "cat.png", PNG), _served(world, "dog.jpg", JPEG, kind="image/jpeg")]
    )
    images = [part["image_url"]["url"] for part in _user_parts(world) if part["type"] == "image_url"]
    assert images == [
        "data:image/png;base64," + base64.b64encode(PNG).decode(),
        "data:image/jpeg;base64," + base64.b64encode(JPEG).decode(),
    ]
    assert "not sent" not in _system(world)


@pytest.mark.timeout(120)
async def test_oversize_fake_and_foreign_images_are_refused_with_a_note(world: World) -> None:
    bot = await world.bot(_config(world, context="max_image_bytes = 600\nmax_images = 5"))
    files = world.provider.base_url.removesuffix("/v1") + "/files"  # 127.0.0.1, another port
    attachments = [
        _served(world, "said.png", PNG, size=5000),  # declared too big: not downloaded
        _served(world, "big.png", PNG * 2),  # declared nothing, read past the cap: refused
        _served(world, "fake.png", b"<html>not an image</html>"),
        {"url": f"{files}/elsewhere.png", "filename": "elsewhere.png", "content_type": "image/png"},
        _served(world, "ok.png", PNG),
    ]
    await _ask(world, bot, attachments)
    images = [part for part in _user_parts(world) if part["type"] == "image_url"]
    assert [part["image_url"]["url"] for part in images] == [
        "data:image/png;base64," + base64.b64encode(PNG).decode()
    ]
    cap = "larger than [context] max_image_bytes = 600"
    assert (
        f"Image(s) not sent: said.png ({cap}), big.png ({cap}), fake.png (not a PNG, JPEG, GIF or WebP "
        "image), elsewhere.png (not on a Discord attachment host)."
    ) in _system(world)


@pytest.mark.timeout(120)
async def test_a_model_without_vision_gets_no_image_and_a_note(world: World) -> None:
    bot = await world.bot(_config(world, vision=""))  # openai: vision unset is false
    await _ask(world, bot, [_served(world, "cat.png", PNG)])
    assert [part["type"] for part in _user_parts(world)] == ["text"]
    assert "1 image attachment(s) were left out (this model reads no images)." in _system(world)


@pytest.mark.timeout(120)
async def test_only_max_images_are_downloaded(world: World) -> None:
    bot = await world.bot(_config(world, context="max_images = 2"))
    await _ask(world, bot, [_served(world, f"p{i}.png", PNG) for i in range(5)])
    images = [part for part in _user_parts(world) if part["type"] == "image_url"]
    assert len(images) == 2
    assert "3 image attachment(s) were left out (at most 2 images are sent)." in _system(world)


@pytest.mark.parametrize(
    ("provider", "model", "vision", "expected"),
    [
        ("google", "gemini-2.5-flash", "", True),
        ("anthropic", "claude-sonnet-4-5", "", True),
        ("openrouter", "deepseek/deepseek-r1", "", False),
        ("custom", "llama3", "", False),
        ("custom", "llava", "vision = true", True),
        ("google", "gemini-2.5-flash", "vision = false", False),
    ],
)
def test_vision_defaults_per_provider_and_is_set_per_model(
    provider: str, model: str, vision: str, expected: bool
) -> None:
    base = (
        'base_url = "http://127.0.0.1:9/v1"\nallow_private_network = true\n' if provider == "custom" else ""
    )
    config = parse_config(f"""
[[models]]
provider = "{provider}"
model = "{model}"
{base}{vision}
""")
    assert config.default_model.reads_images is expected
