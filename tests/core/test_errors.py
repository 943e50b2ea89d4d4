"""One exception tree: every public exception class rxcord defines lives in ``rxcord.core.errors``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import rxcord
from rxcord.core import errors
from rxcord.core.errors import RxcordError

# Modules that need an optional extra to import; walked when the extra is installed.
_OPTIONAL = {"redis", "discord", "matplotlib"}


def _modules() -> list[ModuleType]:
    found = [rxcord]
    for info in pkgutil.walk_packages(rxcord.__path__, prefix="rxcord."):
        if info.name.endswith("__main__"):
            continue  # running it is the CLI, not a definition
        try:
            found.append(importlib.import_module(info.name))
        except ImportError as exc:
            if exc.name is None or exc.name.split(".")[0] not in _OPTIONAL:
                raise
    return found


def _public_exceptions_defined_in(module: ModuleType) -> list[type[BaseException]]:
    """rxcord's public exception classes *module* holds that are not the tree's own classes.

    A module that raises a tree class imports it from ``rxcord.core.errors`` (the same object);
    anything else of rxcord's (whatever façade adopted it) was defined outside the tree.
    """
    return [
        value
        for name, value in vars(module).items()
        if not name.startswith("_")
        and inspect.isclass(value)
        and issubclass(value, BaseException)
        and value.__module__.split(".")[0] == "rxcord"
        and getattr(errors, value.__name__, None) is not value
    ]


def test_every_public_exception_class_is_defined_in_core_errors() -> None:
    """No module but rxcord.core.errors defines a public exception class."""
    modules = _modules()
    assert len(modules) > 50  # the walk really saw the package
    strays = {
        f"{module.__name__}.{cls.__name__}"
        for module in modules
        if module is not errors
        for cls in _public_exceptions_defined_in(module)
    }
    assert strays == set()


def test_the_tree_is_one_tree_under_rxcord_error() -> None:
    """Every exception class in core.errors derives from RxcordError and is listed in __all__."""
    exceptions = [
        value
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_")
    ]
    assert len(exceptions) >= 23
    assert [cls.__name__ for cls in exceptions if not issubclass(cls, RxcordError)] == []
    assert {cls.__name__ for cls in exceptions} <= set(errors.__all__)


@pytest.mark.parametrize(
    "name",
    sorted(
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value) and issubclass(value, BaseException) and not name.startswith("_")
    ),
)
def test_each_exception_says_when_it_is_raised(name: str) -> None:
    """Each class has a docstring of its own (when it is raised; what the caller does)."""
    doc = vars(getattr(errors, name)).get("__doc__") or ""
    assert len(doc.split()) >= 5, name


def test_a_stray_exception_class_is_found() -> None:
    """The check sees a public exception defined outside the tree (it can fail)."""
    module = ModuleType("rxcord.fake_room")
    source = "class StrayError(Exception):\n    pass\n"
    exec(compile(source, __file__, "exec"), vars(module))
    assert [cls.__name__ for cls in _public_exceptions_defined_in(module)] == ["StrayError"]
