"""How a public façade exports names: lazily (PEP 562), each object carrying its façade's name.

``import rxcord`` and each room's façade (``rxcord.operators``, ``rxcord.testing``, ...) list
their names in a mapping *name -> defining module* and hand it to :func:`lazy_exports`. A name
is imported on first use, so importing a façade stays cheap and optional extras (discord.py,
redis, matplotlib) load only when their names are used.

On first use the object is *adopted*: a class or function defined in an internal module gets
its façade's name as ``__module__``, so reprs, tracebacks, pickling and the docs say
``rxcord.testing.DiscordEmulator`` and not the internal path that may move between releases.
An object has one home façade: once adopted, another façade exporting it leaves it alone.
"""

from __future__ import annotations

__all__ = ("FACADES", "adopt", "keep_exports_over_submodules", "lazy_exports")

import importlib
import inspect
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any

import attrs

FACADES: set[str] = set()
"""Every façade that called :func:`lazy_exports`: an object already carrying one stays put."""


def adopt(facade: str, value: Any) -> Any:
    """Give a class or function defined inside rxcord the façade's name as ``__module__``."""
    if not (inspect.isclass(value) or inspect.isfunction(value)):
        return value  # constants, type aliases, modules: nothing to rename
    module = getattr(value, "__module__", "")
    if not module.startswith("rxcord.") or module in FACADES:
        return value
    if inspect.isclass(value) and attrs.has(value):
        _resolve_annotations(value)
    value.__module__ = facade
    return value


def _resolve_annotations(cls: type[Any]) -> None:
    # typing.get_type_hints (cattrs, attrs.resolve_types) resolves a class's string annotations
    # in ``sys.modules[cls.__module__]``: resolve them now, in the defining module, before the
    # name changes. An annotation only importable under TYPE_CHECKING stays a string, as before.
    try:
        attrs.resolve_types(cls)
    except (NameError, TypeError, AttributeError):
        return


def lazy_exports(
    facade: str,
    exports: Mapping[str, str],
    *,
    former: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return the ``__getattr__`` and ``__dir__`` of a façade module.

    ``exports`` maps each public name to the module defining it; ``former`` maps old names of
    renamed exports to their current name (importable, kept out of ``__all__``).
    """
    FACADES.add(facade)
    renamed = dict(former or {})

    def __getattr__(name: str) -> Any:
        namespace = vars(sys.modules[facade])
        if name in renamed:
            value = getattr(sys.modules[facade], renamed[name])
        elif name in exports:
            value = adopt(facade, getattr(importlib.import_module(exports[name]), name))
        else:
            raise AttributeError(f"module {facade!r} has no attribute {name!r}")
        namespace[name] = value  # later lookups skip __getattr__
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[facade]), *exports})

    return __getattr__, __dir__


class _ExportsWin(types.ModuleType):
    """A façade's module type: a submodule never hides the export it shares a name with."""

    _exports: frozenset[str] = frozenset()

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._exports and isinstance(value, types.ModuleType):
            return  # the module stays reachable as sys.modules[...] and by ``from ... import``
        super().__setattr__(name, value)


def keep_exports_over_submodules(facade: str, exports: Mapping[str, str]) -> None:
    """Keep a package façade's exported names over its submodules of the same name.

    Importing ``pkg.deliver`` binds the module as the package's ``deliver`` attribute (the
    import system does so for every submodule), which would make ``pkg.deliver`` the module or
    the exported function depending on import order. With this, the exported name wins.
    """
    kind = type("_ExportsWin", (_ExportsWin,), {"_exports": frozenset(exports)})
    sys.modules[facade].__class__ = kind
