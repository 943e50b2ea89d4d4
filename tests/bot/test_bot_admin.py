"""Admin controls through the emulator's gateway: ``[[models]]``, ``/model``, ``/reload`` and SIGHUP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loguru import logger

from rxcord.bot.admin import complete_models
from rxcord.bot.app import RxcordBot
from rxcord.bot.config import BotConfig, load_config
from rxcord.bot.run import serve_bot
from tests.bot.conftest import ALICE, BOB, GENERAL, RANDOM, TESTING, World, eventually, idle

ADMIN = ALICE  # alice is the admin, bob is not


def config_text(
    world: World, *, models: str | None = None, extra: str = "", state: Path | None = None
) -> str:
    """Two models on the echo provider: ``deep`` (OpenRouter, the default) and ``fast`` (OpenAI)."""
    base = world.provider.base_url
    models = (
        models
        or f"""
[[models]]
name = "fast"
provider = "openai"
model = "fast-1"
api_key_env = ["ECHO_KEY"]
base_url = "{base}"
allow_private_network = true
temperature = 0.25
max_tokens = 50
extra_body = {{ top_a = 0.1, metadata = {{ team = "blue" }} }}

[[models]]
name = "deep"
provider = "openrouter"
model = "deep-1"
default = true
api_key_env = ["ECHO_KEY"]
base_url = "{base}"
allow_private_network = true
reasoning_effort = "high"

[models.routing]
order = ["DeepInfra", "Together"]
allow_fallbacks = false
"""
    )
    limits = f'\n[limits]\nstate_file = "{state}"\n' if state is not None else ""
    return f"""{models}
[discord]
base_url = "{world.emulator.base_url}"
gateway_url = "{world.emulator.gateway_url}"

[delivery]
mode = "live"

[permissions]
admin_users = ["{ADMIN}"]
{limits}{extra}
"""


async def start(world: World, path: Path) -> RxcordBot:
    env = {"DISCORD_BOT_TOKEN": world.emulator.config.token, "ECHO_KEY": "echo-secret-key"}
    bot = RxcordBot(load_config(path), env=env, config_path=path)
    world.bots.append(bot)
    await asyncio.wait_for(bot.start(), 30)
    return bot


async def command(world: World, channel: str, which: str, author: str = ALICE, **options: str) -> str:
    """Invoke a slash command and return the bot's reply, checked ephemeral."""
    body: dict[str, Any] = {"channel_id": channel, "author_id": author, "username": "u", "command": which}
    if options:
        body["options"] = options
    url = f"{world.emulator.base_url}/_emulator/interactions?wait=true"
    async with world.session.post(url, json=body) as response:
        assert response.status == 200, await response.text()
        answer: dict[str, Any] = await response.json()
    assert answer["response"]["flags"] & 64  # ephemeral: only the caller sees it
    content: str = answer["response"]["content"]
    return content


async def ask(world: World, bot: RxcordBot, channel: str, text: str = "hi words=2") -> dict[str, Any]:
    """One addressed message; returns the request body the provider received for it."""
    before = len(world.provider.requests)
    await world.say(channel, f"<@{world.emulator.config.bot_id}> {text}")
    await eventually(lambda: len(world.provider.requests) > before, what="the provider request")
    await idle(bot)
    return world.provider.requests[before]


@pytest.fixture
def config_file(tmp_path: Path, world: World) -> Path:
    path = tmp_path / "bot.toml"
    path.write_text(config_text(world, state=tmp_path / "limits.sqlite3"), encoding="utf-8")
    return path


@contextlib.contextmanager
def captured_log() -> Iterator[list[str]]:
    lines: list[str] = []
    handler = logger.add(lambda m: lines.append(str(m)), level="INFO", filter="rxcord")
    logger.enable("rxcord")
    try:
        yield lines
    finally:
        logger.remove(handler)
        logger.disable("rxcord")


async def test_each_models_parameters_reach_its_request_body(world: World, config_file: Path) -> None:
    bot = await start(world, config_file)
    deep = await ask(world, bot, GENERAL)
    assert deep["model"] == "deep-1"
    assert deep["reasoning"] == {"effort": "high"}  # OpenRouter's spelling of reasoning_effort
    assert deep["provider"] == {"order": ["DeepInfra", "Together"], "allow_fallbacks": False}
    assert "temperature" not in deep and "top_a" not in deep
    assert "now use **fast**" in await command(world, GENERAL, "model", name="fast")
    fast = await ask(world, bot, GENERAL)
    assert fast["model"] == "fast-1"
    assert fast["temperature"] == 0.25 and fast["max_completion_tokens"] == 50
    assert fast["top_a"] == 0.1 and fast["metadata"] == {"team": "blue"}  # extra_body, merged as is
    assert "provider" not in fast and "reasoning" not in fast  # no other model's parameters
    assert fast["stream"] is True and fast["messages"][-1]["role"] == "user"


async def test_model_lists_for_anyone_and_switches_for_an_admin_only(world: World, config_file: Path) -> None:
    bot = await start(world, config_file)
    listing = await command(world, GENERAL, "model", author=BOB)
    assert "**fast**: openai `fast-1`" in listing
    assert "**deep**: openrouter `deep-1` ← answers here, default" in listing
    refused = await command(world, GENERAL, "model", author=BOB, name="fast")
    assert refused == "Only the bot's admins can do that ([permissions] admin_users)."
    assert (await ask(world, bot, GENERAL))["model"] == "deep-1"  # the refusal changed nothing
    unknown = await command(world, GENERAL, "model", name="huge")
    assert unknown == "No model is named 'huge'; configured: fast, deep."
    switched = await command(world, GENERAL, "model", name="fast")
    assert switched == "Answers in this channel now use **fast** (openai `fast-1`)."
    assert (await ask(world, bot, GENERAL))["model"] == "fast-1"
    assert "**fast**: openai `fast-1` ← answers here" in await command(world, GENERAL, "model")


async def test_model_autocompletes_the_configured_names(world: World, config_file: Path) -> None:
    bot = await start(world, config_file)
    registered = world.emulator.interactions.find("model", None)
    assert registered is not None
    name = next(o for o in registered["options"] if o["name"] == "name")
    assert name["autocomplete"] is True  # Discord asks the bot for the choices as one types
    assert [c.value for c in complete_models(bot, "")] == ["fast", "deep"]
    assert [c.value for c in complete_models(bot, "DE")] == ["deep"]
    scope = next(o for o in registered["options"] if o["name"] == "scope")
    assert [c["value"] for c in scope["choices"]] == ["channel", "global"]


async def test_a_channel_choice_wins_over_the_global_one(world: World, config_file: Path) -> None:
    bot = await start(world, config_file)
    assert "every channel" in await command(world, GENERAL, "model", name="fast", scope="global")
    assert (await ask(world, bot, GENERAL))["model"] == "fast-1"
    assert (await ask(world, bot, TESTING))["model"] == "fast-1"
    assert "this channel" in await command(world, TESTING, "model", name="deep", scope="channel")
    assert (await ask(world, bot, TESTING))["model"] == "deep-1"
    assert (await ask(world, bot, GENERAL))["model"] == "fast-1"  # only that channel changed
    # A global switch is for every channel: the channel choices go.
    await command(world, GENERAL, "model", name="deep", scope="global")
    await command(world, GENERAL, "model", name="fast", scope="global")
    assert (await ask(world, bot, TESTING))["model"] == "fast-1"


async def test_the_choices_survive_a_restart(world: World, config_file: Path, tmp_path: Path) -> None:
    bot = await start(world, config_file)
    await command(world, TESTING, "model", name="deep", scope="global")
    await command(world, GENERAL, "model", name="fast")
    await bot.close()
    world.bots.remove(bot)
    saved = json.loads((tmp_path / "rxcord-models.json").read_text(encoding="utf-8"))
    assert saved == {"channels": {GENERAL: "fast"}, "everywhere": "deep"}
    assert not list(tmp_path.glob("*.tmp"))  # written whole, then renamed over the file
    again = await start(world, config_file)
    assert (await ask(world, again, GENERAL))["model"] == "fast-1"
    assert (await ask(world, again, TESTING))["model"] == "deep-1"


async def test_a_corrupt_choices_file_is_moved_aside_and_the_default_answers(
    world: World, config_file: Path, tmp_path: Path
) -> None:
    (tmp_path / "rxcord-models.json").write_text("{not json", encoding="utf-8")
    with captured_log() as log:
        bot = await start(world, config_file)
    assert (tmp_path / "rxcord-models.json.corrupt").read_text(encoding="utf-8") == "{not json"
    assert any("/model choices unreadable" in line for line in log)
    assert (await ask(world, bot, GENERAL))["model"] == "deep-1"


async def test_a_failing_model_falls_back_to_the_next_with_its_own_parameters(
    world: World, tmp_path: Path
) -> None:
    with socket.socket() as probe:  # a port with nothing listening: the connection is refused
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]
    base = world.provider.base_url
    models = f"""
[[models]]
name = "gone"
provider = "openai"
model = "gone-1"
api_key_env = ["ECHO_KEY"]
base_url = "http://127.0.0.1:{dead}/v1"
allow_private_network = true
temperature = 0.9

[[models]]
name = "fast"
provider = "openai"
model = "fast-1"
api_key_env = ["ECHO_KEY"]
base_url = "{base}"
allow_private_network = true
max_tokens = 7
"""
    path = tmp_path / "bot.toml"
    path.write_text(config_text(world, models=models), encoding="utf-8")
    bot = await start(world, path)
    body = await ask(world, bot, GENERAL)
    assert body["model"] == "fast-1" and body["max_completion_tokens"] == 7
    assert "temperature" not in body  # the failed model's parameters stay with it
    assert len(world.provider.requests) == 1
    result = bot.finished[-1].result
    assert result is not None
    assert [a.label for a in result.attempts] == ["openai:gone-1#key1", "openai:fast-1#key1"]


async def test_a_bad_reload_keeps_the_running_config_and_says_why(world: World, config_file: Path) -> None:
    bot = await start(world, config_file)
    good = config_file.read_text(encoding="utf-8")
    config_file.write_text(good.replace("temperature = 0.25", 'temperature = "warm"'), encoding="utf-8")
    refused = await command(world, GENERAL, "reload", author=BOB)
    assert refused == "Only the bot's admins can do that ([permissions] admin_users)."
    assert bot.reloads == []  # a refused caller does not even read the file
    with captured_log() as log:
        reply = await command(world, GENERAL, "reload")
    line = bot.reloads[-1]
    assert line is not None and line.endswith(
        "bot.toml:9: models[1].temperature: must be a float, got 'warm'"
    )
    assert reply == f"Reload refused; the running configuration is kept.\n`{line}`"
    assert any("reload refused" in entry and "models[1].temperature" in entry for entry in log)
    assert (await ask(world, bot, GENERAL))["model"] == "deep-1"  # still the old configuration
    # What only a restart can change refuses the reload too.
    config_file.write_text(
        good.replace("[delivery]", "[runtime]\ngc_tuning = false\n\n[delivery]"), encoding="utf-8"
    )
    assert await command(world, GENERAL, "reload") == (
        "Reload refused; the running configuration is kept.\n`[runtime] changes only at a restart`"
    )


async def test_a_good_reload_swaps_everything_and_a_running_answer_finishes_on_the_old(
    world: World, config_file: Path
) -> None:
    bot = await start(world, config_file)
    await world.say(GENERAL, f"<@{world.emulator.config.bot_id}> gate please")
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="twelve words written")
    text = config_file.read_text(encoding="utf-8")
    text = text.replace('model = "deep-1"', 'model = "deep-2"').replace(
        "[delivery]", '[prompt]\nsystem = "Reloaded prompt for {bot_name}."\n\n[delivery]'
    )
    text = text.replace(f'admin_users = ["{ADMIN}"]', f'admin_users = ["{ADMIN}"]\nblocked_users = ["{BOB}"]')
    config_file.write_text(text, encoding="utf-8")
    assert await command(world, TESTING, "reload") == "Reloaded: 2 model(s), default **deep**."
    world.provider.gate.set()
    await idle(bot)
    first = bot.finished[-1].result
    assert first is not None and first.result.status.value == "completed"
    assert world.provider.requests[0]["model"] == "deep-1"  # it began, and ended, on the old model
    assert "Answer to gate please: w0" in world.bot_text(GENERAL)  # the running answer was not dropped
    body = await ask(world, bot, TESTING)
    assert body["model"] == "deep-2"
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith("Reloaded prompt for ")
    # bob is blocked now: his message gets no provider call, alice's next one does.
    await world.say(TESTING, f"<@{world.emulator.config.bot_id}> and me? words=1", author=BOB, name="bob")
    after = await ask(world, bot, TESTING, "only alice words=1")
    assert len(world.provider.requests) == 3
    assert "only alice" in after["messages"][-1]["content"] and "and me" not in json.dumps(after)


async def test_sighup_reloads_the_file_the_bot_was_started_with(
    world: World, config_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ready = asyncio.Event()
    env = {"DISCORD_BOT_TOKEN": world.emulator.config.token, "ECHO_KEY": "echo-secret-key"}
    config: BotConfig = load_config(config_file)
    served = asyncio.create_task(serve_bot(config, ready=ready.set, config_path=config_file, env=env))
    try:
        await asyncio.wait_for(ready.wait(), 30)
        config_file.write_text(
            config_file.read_text(encoding="utf-8").replace('model = "deep-1"', 'model = "deep-3"'),
            encoding="utf-8",
        )
        before = len(world.provider.requests)
        with captured_log() as log:
            os.kill(os.getpid(), signal.SIGHUP)  # serve_bot installed the handler in this process
            await eventually(lambda: any("configuration reloaded" in line for line in log), what="the reload")
        await world.say(GENERAL, f"<@{world.emulator.config.bot_id}> after the signal words=1")
        await eventually(lambda: len(world.provider.requests) > before, what="the request after SIGHUP")
        assert world.provider.requests[before]["model"] == "deep-3"
    finally:
        served.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await served


async def test_a_reload_changes_the_caps_and_keeps_the_counts(world: World, config_file: Path) -> None:
    bot = await start(world, config_file)
    await ask(world, bot, GENERAL)
    await ask(world, bot, TESTING)
    text = config_file.read_text(encoding="utf-8")
    config_file.write_text(text.replace("[limits]\n", "[limits]\nrequests_per_user = 2\n"), encoding="utf-8")
    assert (await command(world, GENERAL, "reload")).startswith("Reloaded")
    await world.say(RANDOM, f"<@{world.emulator.config.bot_id}> a third words=1")
    await eventually(lambda: len(world.bot_messages(RANDOM)) == 1, what="the refusal")
    await idle(bot)
    refusal = world.bot_messages(RANDOM)[0]["content"]
    assert refusal.startswith("You have used 2 of 2 requests this hour")  # the two before the reload
    assert len(world.provider.requests) == 2


async def test_the_sighup_handler_with_a_bad_file_keeps_the_running_config(
    world: World, config_file: Path
) -> None:
    bot = await start(world, config_file)
    config_file.write_text('[[models]]\nprovider = "nobody"\nmodel = "m"\n', encoding="utf-8")
    with captured_log() as log:
        bot.reload_from_signal()  # what rxcord bot runs on SIGHUP
        await eventually(lambda: bool(bot.reloads), what="the reload")
    assert bot.reloads == [
        f"{config_file}:2: models[1].provider: must be one of openai, openrouter, "
        "google, anthropic, nvidia, custom, got 'nobody'"
    ]
    assert any("reload refused, the running configuration is kept" in line for line in log)
    assert (await ask(world, bot, GENERAL))["model"] == "deep-1"
