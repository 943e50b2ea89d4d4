"""Webhook persona names are repaired to what Discord accepts."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rxcord.sinks.payload_rules import check_message_payload
from rxcord.sinks.persona import webhook_username


def test_valid_name_kept() -> None:
    """A valid name is unchanged."""
    assert webhook_username("Mira the Owl") == "Mira the Owl"


def test_forbidden_words_removed() -> None:
    """discord/clyde (any case), @ # : and fences are removed; removal cannot form a new word."""
    assert webhook_username("Discord Helper") == "Helper"
    assert webhook_username("disclydecord bot") == "bot"
    assert webhook_username("a@b#c:d```e") == "abcde"


def test_unrepairable_names_fall_back() -> None:
    """Empty, reserved or all-forbidden names give no override."""
    assert webhook_username("") is None and webhook_username(None) is None
    assert webhook_username("everyone") is None and webhook_username("@here") is None
    assert webhook_username("Clyde") is None


def test_length_capped() -> None:
    """Names are cut to 80 characters."""
    assert len(webhook_username("x" * 200) or "") == 80


@given(st.text(max_size=120))
def test_emulator_accepts_every_repaired_name(name: str) -> None:
    """Whatever the model or config says, the emulator (Discord's rules) accepts the override."""
    username = webhook_username(name)
    payload = {"content": "hi"} | ({"username": username} if username else {})
    assert check_message_payload(payload, webhook=True) is None
