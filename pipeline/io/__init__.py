"""rxcord.io: I/O beside the stream that is neither a provider nor Discord.

The package is the room; this module is its façade: the Redis stop bus and the locale catalog.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "default_catalog": "rxcord.io.locales",
    "LocaleCatalog": "rxcord.io.locales",
    "RedisStopBus": "rxcord.io.stop_bus",
    "register_locale_dir": "rxcord.io.locales",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.io.locales import LocaleCatalog as LocaleCatalog
    from rxcord.io.locales import default_catalog as default_catalog
    from rxcord.io.locales import register_locale_dir as register_locale_dir
    from rxcord.io.stop_bus import RedisStopBus as RedisStopBus
