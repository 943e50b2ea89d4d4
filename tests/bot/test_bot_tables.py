"""The bot's ``[delivery] tables`` setting: read as a ``TableStyle``, a wrong value named with its line."""

from __future__ import annotations

from importlib import resources

import pytest

from rxcord.bot.config import parse_config
from rxcord.sinks import TableStyle

EXAMPLE = (resources.files("rxcord.bot") / "example.toml").read_text()


def test_the_example_sends_tables_as_pictures() -> None:
    assert parse_config(EXAMPLE).delivery.tables is TableStyle.PICTURE


def test_monospace_is_read_as_the_enum() -> None:
    config = parse_config(EXAMPLE.replace('tables = "picture"', 'tables = "monospace"'))
    assert config.delivery.tables is TableStyle.MONOSPACE


def test_a_wrong_value_names_the_setting_and_the_choices() -> None:
    with pytest.raises(Exception, match=r"delivery\.tables: must be one of picture, monospace"):
        parse_config(EXAMPLE.replace('tables = "picture"', 'tables = "pictures"'))
