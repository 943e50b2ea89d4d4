"""Localized text: a locale's message tables, looked up with fallbacks, and the ambient locale.

Discord gives each guild a preferred locale and each interaction its user's, as codes such as
``en-US``, ``de``, ``pt-BR`` or ``es-419``. User-facing text (the error notice's title and
headline) is looked up by key in the tables of the stream's locale: the exact locale, then its
language (``pt`` for ``pt-BR``), then ``en-US``, then the built-in English text written beside
the key in the code. A translation that cannot be used (not a string, an unknown ``{field}``, a
stray brace) is skipped, with a warning, for the next table: a bad catalog never breaks a notice.

This module is pure (no I/O): the tables are read from locale files by ``rxcord.io.locales``
and bound for a stream with ``use_locale_text`` by the composition layer; the stage functions
that render text read ``current_text()``. Placeholders are plain ``{name}`` fields (``{{`` and
``}}`` for braces), substituted in one pass: no attribute or index access, whatever a file holds.
"""

from __future__ import annotations

__all__ = (
    "DEFAULT_LOCALE",
    "LocaleText",
    "current_text",
    "locale_chain",
    "normalize_locale",
    "use_locale_text",
)

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

import attrs
from loguru import logger

_log = logger.bind(stage="locale")

DEFAULT_LOCALE: Final = "en-US"
"""The fallback locale (the built-in text is its wording)."""

_CODE: Final = re.compile(r"([A-Za-z]{2,3})(?:[-_]([A-Za-z]{2}|[0-9]{3}))?")
_FIELD: Final = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")


def normalize_locale(code: str | None) -> str | None:
    """*code* in Discord's spelling (``pt-BR``, ``de``, ``es-419``), or ``None`` if it is not one."""
    if not code:
        return None
    match = _CODE.fullmatch(code.strip())
    if match is None:
        return None
    language, region = match.group(1).lower(), match.group(2)
    return f"{language}-{region.upper()}" if region else language


def locale_chain(code: str | None) -> tuple[str, ...]:
    """The locales to look in, in order: the locale, its language, ``en-US`` (no repeats)."""
    chain: list[str] = []
    normal = normalize_locale(code)
    if normal is not None:
        chain.append(normal)
        chain.append(normal.split("-")[0])
    chain.append(DEFAULT_LOCALE)
    return tuple(dict.fromkeys(chain))


class _UnusableError(Exception):
    """A translation that cannot be filled in (an unknown field, a stray brace)."""


def _fill(template: str, fields: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name is None or name not in fields:
            raise _UnusableError(token)
        return fields[name]

    return _FIELD.sub(one, template)


@attrs.frozen
class LocaleText:
    """The message tables of one locale's fallback chain, most specific first."""

    locale: str = DEFAULT_LOCALE
    """The locale asked for (normalized), for logs."""
    tables: tuple[tuple[str, Mapping[str, object]], ...] = ()
    """``(locale, table)`` pairs in lookup order; the built-in text comes after them."""

    def text(self, key: str, default: str, **fields: str) -> str:
        """The text for *key*: the first usable translation in the chain, else *default*.

        *fields* fill the ``{name}`` placeholders (the built-in *default* uses the same ones).
        """
        for locale, table in self.tables:
            template = table.get(key)
            if template is None:
                continue
            if isinstance(template, str):
                try:
                    return _fill(template, fields)
                except _UnusableError as exc:
                    problem = f"placeholder {exc.args[0]} is not one of {sorted(fields)}"
            else:
                problem = "not a string"
            _log.warning(
                "locale {locale}: message {key} skipped ({problem})", locale=locale, key=key, problem=problem
            )
        return _fill(default, fields)


_BUILT_IN: Final = LocaleText()
_current: ContextVar[LocaleText] = ContextVar("rxcord_locale_text", default=_BUILT_IN)


def current_text() -> LocaleText:
    """The locale text bound for the current stream (the built-in English when none is)."""
    return _current.get()


@contextmanager
def use_locale_text(text: LocaleText) -> Iterator[LocaleText]:
    """Bind *text* for the work inside the block (and the tasks it starts); restored after."""
    token = _current.set(text)
    try:
        yield text
    finally:
        _current.reset(token)
