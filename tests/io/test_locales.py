"""Localized notices: locale files as data, the fallback chain, and the notice in the reader's locale."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import discord
import pytest

from rxcord.bot.app import RxcordBot
from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.locale import LocaleText, current_text, locale_chain, normalize_locale, use_locale_text
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ErrorType, ProviderError, StopKind
from rxcord.discord.answers import Answers
from rxcord.discord.commands import run_command
from rxcord.io.locales import (
    MAX_LOCALE_BYTES,
    LocaleCatalog,
    default_catalog,
    locale_scope,
    register_locale_dir,
)
from rxcord.providers.errors import describe_error
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.error_embed import error_embed
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

GERMAN = {
    "error.title.rate_limit": "Ratenlimit erreicht",
    "error.headline.rate_limit": "{provider} begrenzt die Anfragen. Warte oder nimm einen anderen Schlüssel.",
}
RATE_LIMIT = ProviderError(type=ErrorType.RATE_LIMIT, message="slow down", retryable=False, status=429)


def _write(directory: Path, name: str, table: object) -> Path:
    path = directory / name
    path.write_text(json.dumps(table), encoding="utf-8")
    return path


@pytest.fixture
def german_dir(tmp_path: Path) -> Iterator[Path]:
    """A directory with a German catalog, registered for the process while the test runs."""
    _write(tmp_path, "de.json", GERMAN)
    dispose = register_locale_dir(tmp_path)
    try:
        yield tmp_path
    finally:
        dispose()


def test_discord_codes_are_normalized_and_chained() -> None:
    """Discord's spellings, their language, then en-US; junk is no locale."""
    assert normalize_locale("pt-br") == "pt-BR" and normalize_locale("es-419") == "es-419"
    assert normalize_locale("de") == "de" and normalize_locale("../etc") is None
    assert locale_chain("pt-BR") == ("pt-BR", "pt", "en-US")
    assert locale_chain(None) == ("en-US",) and locale_chain("en-US") == ("en-US", "en")


def test_english_ships_as_package_data_with_every_built_in_key() -> None:
    """The shipped en-US file has the title and headline of every error type, with the built-in wording."""
    table = LocaleCatalog().table("en-US")
    assert table is not None
    with use_locale_text(LocaleText()):  # the built-in text
        for kind in ErrorType:
            error = ProviderError(type=kind, message="", retryable=False)
            assert table[f"error.title.{kind.value}"] == error_embed(error)["title"]
            assert table[f"error.headline.{kind.value}"].format(
                provider="OpenAI", status=""
            ) == describe_error(error, provider="openai")
    assert "error.headline.endpoint_not_found" in table


def test_a_second_catalog_in_a_directory_is_used_without_code(german_dir: Path) -> None:
    """A de.json dropped into a registered directory localizes the notice; missing keys fall back."""
    with locale_scope("de"):
        embed = error_embed(RATE_LIMIT, lambda e: describe_error(e, provider="openai"))
        timeout = error_embed(ProviderError(type=ErrorType.TIMEOUT, message="", retryable=False))
    assert embed["title"] == "Ratenlimit erreicht"
    assert embed["description"].startswith("OpenAI begrenzt die Anfragen.")
    assert embed["description"].endswith("slow down")  # the provider's details are not translated
    assert timeout["title"] == "Request timed out"  # not in de.json: en-US
    assert current_text().locale == "en-US"  # the scope ended


def test_a_region_falls_back_to_its_language(german_dir: Path) -> None:
    """de-AT has no file: the de table answers."""
    text = default_catalog().for_locale("de-AT")
    assert text.text("error.title.rate_limit", "Rate limited") == "Ratenlimit erreicht"


def test_a_registered_file_overrides_the_package_and_the_built_in_is_last(tmp_path: Path) -> None:
    """A directory's en-US.json comes first; a key nobody has gives the built-in text."""
    _write(tmp_path, "en-US.json", {"error.title.timeout": "Too slow"})
    catalog = LocaleCatalog(directories=(tmp_path, *LocaleCatalog().directories))
    text = catalog.for_locale("fr")
    assert text.text("error.title.timeout", "Request timed out") == "Too slow"
    assert text.text("no.such.key", "built in {x}", x="1") == "built in 1"


def test_unusable_translations_fall_back_with_a_warning(tmp_path: Path) -> None:
    """Unknown fields, stray braces, attribute access and non-strings are skipped for the next table."""
    _write(
        tmp_path,
        "xx.json",
        {"a": "{provider.__class__}", "b": "oops {", "c": 7, "d": "{{literal}} {provider}"},
    )
    text = LocaleCatalog(directories=(tmp_path,)).for_locale("xx")
    assert text.text("a", "A {provider}", provider="P") == "A P"
    assert text.text("b", "B", provider="P") == "B"
    assert text.text("c", "C") == "C"
    assert text.text("d", "D", provider="P") == "{literal} P"


def test_bad_files_are_skipped(tmp_path: Path) -> None:
    """Not JSON, not an object, too big: the locale falls back, nothing raises."""
    (tmp_path / "aa.json").write_text("{not json", encoding="utf-8")
    _write(tmp_path, "bb.json", ["a", "list"])
    (tmp_path / "cc.json").write_text('{"k": "' + "x" * MAX_LOCALE_BYTES + '"}', encoding="utf-8")
    _write(tmp_path, "not a locale.json", {"k": "v"})
    catalog = LocaleCatalog(directories=(tmp_path,))
    for code in ("aa", "bb", "cc"):
        assert catalog.table(code) is None
        assert catalog.for_locale(code).text("k", "fallback") == "fallback"


def _failure() -> tuple[int, str, bytes]:
    return (429, "application/json", b'{"error": {"message": "slow down", "type": "rate_limit"}}')


async def test_run_turn_posts_its_notice_in_the_context_locale(german_dir: Path) -> None:
    """StreamContext(locale='de'): the turn's one notice is German; without a locale, English."""
    request = ChatRequest(model="m", messages=(Message.user("hi"),))
    titles: list[Any] = []
    for locale in ("de", None):
        sink = MemorySink()
        async with ReplayServer(body=b"", responses=[_failure()]) as server:
            candidates = fallback_order(OpenAIAdapter(), ["m"], ["k"], base_url=server.base_url)
            await run_turn(
                candidates,
                request,
                sink=sink,
                context=StreamContext(locale=locale),
                config=StreamConfig(),
                transport=TransportConfig(allow_private_network=True),
            )
        (payload,) = sink.payloads
        titles.append(payload["embeds"][0]["title"])
    assert titles == ["Ratenlimit erreicht", "Rate limited"]


def test_the_bot_passes_the_guild_preferred_locale() -> None:
    """The bot's stream context carries the guild's preferred locale as its Discord code."""
    guild = SimpleNamespace(id=7, preferred_locale=discord.Locale.brazil_portuguese)
    message = SimpleNamespace(id=9, guild=guild, channel=SimpleNamespace(id=5))
    bot = SimpleNamespace(config=SimpleNamespace(persona=None), _webhook_channel=None)
    context = RxcordBot._stream_context(bot, message)  # type: ignore[arg-type]
    assert context.locale == "pt-BR"
    direct = SimpleNamespace(id=9, guild=None, channel=SimpleNamespace(id=5))
    assert RxcordBot._stream_context(bot, direct).locale is None  # type: ignore[arg-type]


async def test_stop_commands_answer_in_the_interaction_locale(german_dir: Path) -> None:
    """/stop's ephemeral reply uses the interaction's locale; a key de.json lacks stays English."""
    (german_dir / "de.json").write_text(
        json.dumps({**GERMAN, "command.nothing_running": "Hier wird gerade nichts geschrieben."}),
        encoding="utf-8",
    )
    dispose = register_locale_dir(german_dir)  # a new catalog: the file was rewritten
    sent: list[str] = []

    async def send_message(text: str, ephemeral: bool) -> None:
        sent.append(text)

    try:
        for locale in (discord.Locale.german, discord.Locale.american_english):
            interaction = SimpleNamespace(
                channel=SimpleNamespace(id=5, guild=SimpleNamespace(id=7)),
                channel_id=5,
                guild_id=7,
                user=SimpleNamespace(id=9, roles=[]),
                permissions=None,
                locale=locale,
                response=SimpleNamespace(send_message=send_message),
            )
            await run_command(Answers(SimpleNamespace(user=None)), interaction, StopKind.USER)  # type: ignore[arg-type]
    finally:
        dispose()
    assert sent == ["Hier wird gerade nichts geschrieben.", "Nothing is being written here."]
