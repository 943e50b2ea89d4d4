"""The strict cattrs converter the protocols translate their wire models with.

cattrs' default hooks coerce (``float("0.5")``, ``int(True)``); a verdict must
not be guessed at, so the primitives here accept exactly their JSON type:
``str`` a string, ``int`` an integer (never a bool), ``float`` an integer or
a finite float (never a bool, never NaN or an infinity), ``bool`` a bool.
Anything else raises, and the caller turns that into a validation failure.
"""

from __future__ import annotations

__all__ = ("structure", "unstructure")

import math
from typing import Any, TypeVar

import cattrs

from rxcord.core.errors import DecisionWireError

_T = TypeVar("_T")


def _str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _int(value: Any, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _float(value: Any, _: type) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"expected a number, got {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError("expected a finite number")
    return number


def _bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected a boolean, got {type(value).__name__}")
    return value


def _make() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=False)
    converter.register_structure_hook(str, _str)
    converter.register_structure_hook(int, _int)
    converter.register_structure_hook(float, _float)
    converter.register_structure_hook(bool, _bool)
    return converter


_CONVERTER = _make()


def structure(document: Any, cls: type[_T]) -> _T:
    """*document* as *cls*, strictly; raises ``DecisionWireError`` (its message names no values)."""
    try:
        return _CONVERTER.structure(document, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise DecisionWireError(f"{cls.__name__}: {_describe(exc)}") from exc


def unstructure(obj: object) -> Any:
    """*obj* (a wire model) as plain JSON data, ``None`` fields left out."""
    return _drop_none(_CONVERTER.unstructure(obj))


def _drop_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _drop_none(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [_drop_none(item) for item in value]
    return value


def _describe(exc: BaseException) -> str:
    if isinstance(exc, cattrs.BaseValidationError):
        notes = cattrs.transform_error(exc)
        return "; ".join(notes[:3]) if notes else exc.message
    return type(exc).__name__
