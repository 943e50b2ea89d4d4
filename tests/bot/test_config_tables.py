"""Every table the bot reads is shown to the operator: in the bundled example.toml and in README.

The tables are read from ``BotConfig`` itself, so a table added to the loader and left out of
the example or the README fails here. The example's commented-out tables and keys are checked
too: uncommented, the file still loads, so what it suggests is what the loader takes.
"""

from __future__ import annotations

import re
import sys
import tomllib
import types
from importlib import resources
from pathlib import Path

import attrs
import pytest

import rxcord
from rxcord.bot.config import BotConfig, parse_config

README = Path(__file__).resolve().parents[2] / "README.md"
TABLES = tuple(field.name for field in attrs.fields(BotConfig))
# A commented table header ("# [scale]", "# [prices.\"m\"]") or key line ("# shard_count = 2").
COMMENTED = re.compile(r"^# ?((?:\[\[?[\w.\"/-]+\]\]?|\w+ = ).*)$")


def _example() -> str:
    return (resources.files("rxcord.bot") / "example.toml").read_text(encoding="utf-8")


def _run_a_bot() -> str:
    return README.read_text(encoding="utf-8").split("## Run a bot\n", 1)[1].split("\n## ", 1)[0]


def _header(table: str) -> re.Pattern[str]:
    """``[table]``, ``[[table]]`` or ``[table."key"]``, at the start of a line, commented or not."""
    return re.compile(rf"^(?:# ?)?\[\[?{table}[\].]", re.M)


def _live(line: str) -> str:
    """*line* uncommented when it is a commented table header, or a key line TOML by itself.

    (A line such as ``# only = [], ignore = []`` lists several keys in short: it stays a comment.)
    """
    match = COMMENTED.match(line)
    if match is None:
        return line
    text = match.group(1)
    if text.startswith("["):
        return text
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return line
    return text


def _uncommented(text: str) -> str:
    """*text* with its commented table headers and key lines made live."""
    return "\n".join(_live(line) for line in text.splitlines()) + "\n"


def _without_block(text: str, header: str) -> tuple[str, str]:
    """*text* without the table starting at *header* (to the next blank line), and that table."""
    start = text.index(header)
    end = text.index("\n\n", start)
    return text[:start] + text[end:], text[start:end] + "\n"


def test_the_tables_are_the_loaders() -> None:
    # The list the checks below use: if it were empty or wrong, they would prove nothing.
    assert {"models", "provider", "discord", "limits", "prices", "scale"} <= set(TABLES)


@pytest.mark.parametrize("table", TABLES)
def test_every_table_is_in_the_example(table: str) -> None:
    assert _header(table).search(_example()), f"example.toml does not show [{table}]"


@pytest.mark.parametrize("table", TABLES)
def test_every_table_is_in_the_readme(table: str) -> None:
    section = _run_a_bot()
    assert re.search(rf"\[\[?{table}[\].]", section), f"README's 'Run a bot' does not show [{table}]"


def test_the_example_loads_with_every_commented_table_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # The example's [tools] names a module the operator writes: stand one in.
    tools = types.ModuleType("mybot.tools")
    tools.TOOLS = [
        rxcord.ToolSpec(name="lookup", description="Look a word up.", parameters={"type": "object"})
    ]  # type: ignore[attr-defined]

    async def handle(call: rxcord.FunctionCall) -> str:
        return "found"

    tools.handle = handle  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mybot", types.ModuleType("mybot"))
    monkeypatch.setitem(sys.modules, "mybot.tools", tools)

    live = _uncommented(_example())
    # [provider] is the one-model shorthand for [[models]], never with it: checked on its own.
    rest, shorthand = _without_block(live, "[provider]\n")
    config = parse_config(rest, source="example.toml")
    assert config.persona is not None and config.tools is not None and config.scale.shard_count == 2
    assert config.prices and config.delivery.stopped_marker
    assert [m.model for m in parse_config(shorthand).all_models] == [
        "deepseek/deepseek-r1",
        "openai/gpt-4o-mini",
    ]
