"""``[runtime]``: the bot tunes the collector at start and restores it on shutdown."""

from __future__ import annotations

import gc
from importlib import resources
from typing import Any

import pytest

from rxcord.bot import app, runtime
from rxcord.bot.config import parse_config
from rxcord.bot.run import serve_bot
from rxcord.core.errors import ConfigError

MINIMAL = '[provider]\nname = "openai"\nmodel = "m"\napi_key_env = ["K"]\n'


class _FakeBot:
    """Starts, is closed at once, and notes the collector's thresholds while running."""

    def __init__(self, config: Any, **_: Any) -> None:
        self.config = config

    def reload_from_signal(self) -> None:
        pass

    async def start(self) -> None:
        pass

    async def wait_closed(self) -> None:
        pass

    async def close(self) -> None:
        pass


@pytest.mark.parametrize("tuning", [True, False])
async def test_serve_bot_tunes_the_collector_while_running_and_restores_it(
    tuning: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app, "RxcordBot", _FakeBot)
    config = parse_config(MINIMAL + f"[runtime]\ngc_tuning = {str(tuning).lower()}\n")
    before = gc.get_threshold()
    seen: list[tuple[tuple[int, int, int], int]] = []
    await serve_bot(config, ready=lambda: seen.append((gc.get_threshold(), gc.get_freeze_count())))
    [(running, frozen)] = seen
    if tuning:
        assert running == runtime.TUNED_THRESHOLDS and frozen > 0
    else:
        assert running == before
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_gc_tuning_is_on_by_default_and_in_the_example() -> None:
    assert parse_config(MINIMAL).runtime.gc_tuning is True
    example = parse_config((resources.files("rxcord.bot") / "example.toml").read_text())
    assert example.runtime.gc_tuning is True


def test_a_wrong_runtime_key_names_itself() -> None:
    with pytest.raises(ConfigError, match="gc_tunning"):
        parse_config(MINIMAL + "[runtime]\ngc_tunning = true\n", source="bot.toml")
