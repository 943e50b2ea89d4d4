"""Decoding JSON that came from outside (a provider, Discord) without ``RecursionError``.

``json.loads`` recurses once per nesting level, so a payload nested a few
thousand levels deep raises ``RecursionError`` (not a ``ValueError``) out of
whatever decodes it, and how deep is too deep depends on the caller's stack.
Here the bound is explicit and the same everywhere: more than ``MAX_DEPTH``
levels of arrays and objects is malformed JSON, raised as ``MalformedJsonError``
(an ``RxcordError`` that is also a ``ValueError``, so ``except ValueError``
call sites keep working). Real provider and Discord payloads nest a dozen levels.

``too_deep`` is cheap enough for a hot path: data of at most ``2 * MAX_DEPTH``
characters cannot be nested deeper, and data with fewer opening brackets than
``MAX_DEPTH`` neither; only the rest is scanned (once, linearly).
"""

from __future__ import annotations

__all__ = ("MAX_DEPTH", "loads", "too_deep")

import json
import re
from typing import Any, Final

from rxcord.core.errors import MalformedJsonError

MAX_DEPTH: Final = 512
"""Arrays and objects nested deeper than this are malformed."""

_TOKENS_STR: Final = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)
_TOKENS_BYTES: Final = re.compile(rb'"(?:[^"\\]|\\.)*"?|[\[\]{}]', re.DOTALL)


def too_deep(data: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether *data* nests arrays and objects deeper than *limit* (brackets inside strings ignored)."""
    if len(data) <= 2 * limit:
        return False
    if isinstance(data, bytes):
        if data.count(b"[") + data.count(b"{") <= limit:
            return False
        tokens: Any = _TOKENS_BYTES.finditer(data)
        opening: Any = (ord("["), ord("{"))
        closing: Any = (ord("]"), ord("}"))
    else:
        if data.count("[") + data.count("{") <= limit:
            return False
        tokens = _TOKENS_STR.finditer(data)
        opening, closing = ("[", "{"), ("]", "}")
    depth = 0
    for match in tokens:
        first = match.group()[0]
        if first in opening:
            depth += 1
            if depth > limit:
                return True
        elif first in closing:
            depth -= 1
    return False


def loads(data: str | bytes, *, strict: bool = True) -> Any:
    """``json.loads`` of *data*, with every failure a ``MalformedJsonError``.

    Bytes are decoded as UTF-8 with replacement characters (as the transport always did).

    Raises:
        MalformedJsonError: *data* is not JSON, or is nested deeper than ``MAX_DEPTH``.
    """
    text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
    if too_deep(text):
        raise MalformedJsonError(f"JSON nested deeper than {MAX_DEPTH} levels")
    try:
        return json.loads(text, strict=strict)
    except RecursionError:
        raise MalformedJsonError("JSON nested too deeply for the decoder") from None
    except ValueError as exc:
        raise MalformedJsonError(str(exc)) from None
