"""The Dockerfile and compose.yaml at the repository root: they parse, and name what the code reads."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import yaml

from rxcord.bot.config import DiscordSection, parse_config

ROOT = Path(__file__).resolve().parents[1]


def _instructions() -> list[tuple[str, str]]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def _example() -> str:
    return resources.files("rxcord.bot").joinpath("example.toml").read_text(encoding="utf-8")


def test_the_image_is_slim_python_runs_as_a_user_and_starts_the_bot_on_the_mounted_config() -> None:
    steps = _instructions()
    assert steps[0] == ("FROM", "python:3.11-slim")
    runs = " ".join(arg for op, arg in steps if op == "RUN")
    assert 'pip install ".[bot,redis]"' in runs and "useradd" in runs
    users = [arg for op, arg in steps if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    cmd = json.loads(next(arg for op, arg in reversed(steps) if op == "CMD"))
    assert cmd == ["rxcord", "bot", "--config", "/config/bot.toml"]


def test_compose_runs_the_bot_and_redis_with_the_variables_the_config_names() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"bot", "redis"}
    bot = services["bot"]
    assert bot["build"] == "." and "redis" in bot["depends_on"]
    # The mount is where the image's CMD reads the config.
    assert any(volume.endswith(":/config") for volume in bot["volumes"])
    env = bot["environment"]
    example = parse_config(_example())
    named = {example.discord.token_env, *(v for m in example.all_models for v in m.api_key_env)}
    assert DiscordSection().token_env in named
    assert named <= set(env), named - set(env)
    for variable in named:  # secrets come from the operator's environment, never written here
        assert str(env[variable]).startswith("${"), variable
    # The example's [scale] line names the variable compose sets to the redis service.
    scale = re.search(r'^#?\s*redis_url_env = "([A-Z_]+)"', _example(), re.MULTILINE)
    assert scale is not None
    assert env[scale.group(1)] == "redis://redis:6379/0"
    assert services["redis"]["image"].startswith("redis:")
