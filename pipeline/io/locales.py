"""The locale catalog: message tables read from one JSON file per locale, as data.

English ships as package data (``rxcord/data/locales/en-US.json``). Another locale is a file
named by its Discord code (``de.json``, ``pt-BR.json``, ``es-419.json``) holding an object of
message keys to text; no code changes: drop it into the package's ``data/locales`` folder, or
into a directory registered with ``register_locale_dir`` (the bot's ``locale_dirs``), whose files
take precedence over the package's. Keys missing from a file fall back along the chain of
``rxcord.core.locale`` (the language, ``en-US``, the built-in text).

Files are read once per catalog, on first use of their locale, bounded like every other JSON
reader (``MAX_LOCALE_BYTES``, ``safe_json`` nesting): a file that is too big, not JSON or not an
object is skipped with a warning (its locale then falls back), never an exception in a notice.
"""

from __future__ import annotations

__all__ = (
    "MAX_LOCALE_BYTES",
    "LocaleCatalog",
    "default_catalog",
    "locale_scope",
    "register_locale_dir",
)

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Final

import attrs
from loguru import logger

from rxcord.core import safe_json
from rxcord.core.errors import MalformedJsonError
from rxcord.core.locale import LocaleText, locale_chain, normalize_locale, use_locale_text

_log = logger.bind(stage="locale")

MAX_LOCALE_BYTES: Final = 256 * 1024
"""Bound on one locale file (a catalog of notices is a few kilobytes)."""

_SUFFIX: Final = ".json"


def _package_dir() -> Traversable:
    return resources.files("rxcord.data") / "locales"


def _read_table(path: Traversable) -> Mapping[str, object] | None:
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_LOCALE_BYTES + 1)
    except OSError as exc:
        _log.warning("locale file {name} unreadable: {error}", name=path.name, error=type(exc).__name__)
        return None
    if len(raw) > MAX_LOCALE_BYTES:
        _log.warning("locale file {name} skipped: over {limit} bytes", name=path.name, limit=MAX_LOCALE_BYTES)
        return None
    try:
        table = safe_json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, MalformedJsonError) as exc:
        _log.warning(
            "locale file {name} skipped: not JSON ({error})", name=path.name, error=type(exc).__name__
        )
        return None
    if not isinstance(table, dict):
        _log.warning("locale file {name} skipped: not an object of message keys", name=path.name)
        return None
    return table


def _index(directory: Traversable) -> dict[str, Traversable]:
    """The directory's locale files by normalized code (names that are no locale code are ignored)."""
    files: dict[str, Traversable] = {}
    try:
        entries = list(directory.iterdir()) if directory.is_dir() else []
    except OSError:
        entries = []
    for entry in entries:
        name = entry.name
        if not name.endswith(_SUFFIX) or not entry.is_file():
            continue
        code = normalize_locale(name[: -len(_SUFFIX)])
        if code is not None:
            files[code] = entry
    return files


@attrs.define
class LocaleCatalog:
    """Message tables by locale from *directories* (the first that has a locale wins)."""

    directories: Sequence[Traversable | Path] = attrs.field(factory=lambda: (_package_dir(),))
    _indexes: list[dict[str, Traversable]] | None = attrs.field(default=None, init=False, repr=False)
    _tables: dict[str, Mapping[str, object] | None] = attrs.field(factory=dict, init=False, repr=False)

    def table(self, code: str) -> Mapping[str, object] | None:
        """The table of locale *code* (normalized), read on first use; ``None`` if there is none."""
        if code not in self._tables:
            self._tables[code] = self._load(code)
        return self._tables[code]

    def for_locale(self, code: str | None) -> LocaleText:
        """The text of *code*'s fallback chain (an unknown or missing locale: ``en-US``)."""
        pairs = []
        for locale in locale_chain(code):
            table = self.table(locale)
            if table is not None:
                pairs.append((locale, table))
        return LocaleText(locale=normalize_locale(code) or "en-US", tables=tuple(pairs))

    def _load(self, code: str) -> Mapping[str, object] | None:
        if self._indexes is None:
            self._indexes = [_index(directory) for directory in self.directories]
        for index in self._indexes:
            path = index.get(code)
            if path is not None:
                table = _read_table(path)
                if table is not None:
                    return table
        return None


@attrs.define
class _Registered:
    """The directories registered for the process, and the catalog made from them."""

    dirs: list[tuple[object, Path]] = attrs.field(factory=list)
    catalog: LocaleCatalog | None = None


_REGISTERED: Final = _Registered()


def register_locale_dir(directory: str | Path) -> Callable[[], None]:
    """Add a directory of locale files ahead of the package's; the disposer removes it (once)."""
    token = object()
    _REGISTERED.dirs.insert(0, (token, Path(directory)))
    _REGISTERED.catalog = None

    def dispose() -> None:
        for index, (entry, _) in enumerate(_REGISTERED.dirs):
            if entry is token:
                del _REGISTERED.dirs[index]
                _REGISTERED.catalog = None
                return

    return dispose


def default_catalog() -> LocaleCatalog:
    """The process's catalog: the registered directories, then the package's locale files."""
    if _REGISTERED.catalog is None:
        dirs = (*(path for _, path in _REGISTERED.dirs), _package_dir())
        _REGISTERED.catalog = LocaleCatalog(directories=dirs)
    return _REGISTERED.catalog


@contextmanager
def locale_scope(code: str | None, catalog: LocaleCatalog | None = None) -> Iterator[None]:
    """Bind *code*'s text for the block; ``None`` leaves the text already bound (or English)."""
    if code is None:
        yield
        return
    with use_locale_text((catalog or default_catalog()).for_locale(code)):
        yield
