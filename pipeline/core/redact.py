"""Secrets redacted by value: the one redactor built from the configured credentials.

``rxcord.providers.errors.scrub`` recognises key *shapes* (``sk-...``, ``Bearer``
tokens, ``key=`` parameters); a custom endpoint's key, a bot token or a webhook
token has no recognisable shape. A ``Redactor`` is built from the exact
configured values (``Redactor.of(api_key, bot_token, webhook_token)``, or
``credentials_in`` the request's headers and URL) and replaces each of them,
and its percent-encoded form, with ``[redacted]`` in text, bytes, decoded JSON
values, exceptions and ``ProviderError``s: wherever provider or Discord text
is kept or shown. The transport applies it to every byte it reads; the stream
runner to the result's error and the error embed.

Values shorter than ``MIN_SECRET_LENGTH`` characters are not redacted: a
placeholder such as vLLM's ``EMPTY`` protects nothing, and replacing every
occurrence of a short word would garble every message.
"""

from __future__ import annotations

__all__ = ("MIN_SECRET_LENGTH", "REDACTED", "RedactedException", "Redactor", "credentials_in")

from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlsplit

import attrs
from rxcord.core.errors import RxcordError
from rxcord.core.types import ProviderError

REDACTED: Final = "[redacted]"
MIN_SECRET_LENGTH: Final = 8
_MAX_DEPTH: Final = 64
"""Deeper parts of a value are replaced whole (``_DEEP``): the walk never nears the recursion limit."""
_DEEP: Final = "[redacted: nested too deeply]"

_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})
_AUTH_SCHEMES: Final = ("bearer ", "bot ", "basic ", "token ")
_CREDENTIAL_PARAMS: Final = frozenset(
    {"key", "api_key", "api-key", "apikey", "access_token", "token", "auth"}
)


def credentials_in(headers: Mapping[str, str], url: str = "") -> tuple[str, ...]:
    """The credentials a request carries: auth header values (without their scheme) and key parameters."""
    found: list[str] = []
    for name, value in headers.items():
        if name.lower() in _CREDENTIAL_HEADERS and value:
            credential = value
            for scheme in _AUTH_SCHEMES:
                if value.lower().startswith(scheme):
                    credential = value[len(scheme) :].strip()
                    break
            found.append(credential)
    if "?" in url:
        for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=False):
            if name.lower() in _CREDENTIAL_PARAMS:
                found.append(value)
    return tuple(found)


class RedactedException(RxcordError):
    """Stands in for an exception whose text carried a secret (``original_error`` of a redacted error)."""

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        """The original exception's type name."""

    def __repr__(self) -> str:
        return f"RedactedException({self.kind!r}, {str(self)!r})"


@attrs.frozen(repr=False)
class Redactor:
    """Replaces the exact configured secrets; an empty redactor changes nothing (and is falsy)."""

    needles: tuple[str, ...] = ()
    """The values replaced, longest first (each secret and its percent-encoded form)."""
    _needles_bytes: tuple[bytes, ...] = attrs.field(init=False)

    @_needles_bytes.default
    def _encode(self) -> tuple[bytes, ...]:
        return tuple(needle.encode() for needle in self.needles)

    @classmethod
    def of(cls, *secrets: str | None) -> Redactor:
        """A redactor for *secrets* (``None``, empty and short values are skipped)."""
        return cls(_needles(secrets))

    def __or__(self, other: Redactor) -> Redactor:
        return Redactor(_needles((*self.needles, *other.needles)))

    def __bool__(self) -> bool:
        return bool(self.needles)

    def __repr__(self) -> str:
        return f"Redactor(<{len(self.needles)} values>)"

    def text(self, text: str) -> str:
        """*text* with every secret replaced."""
        for needle in self.needles:
            if needle in text:
                text = text.replace(needle, REDACTED)
        return text

    def data(self, data: bytes) -> bytes:
        """*data* (UTF-8 bytes) with every secret replaced."""
        for needle in self._needles_bytes:
            if needle in data:
                data = data.replace(needle, b"[redacted]")
        return data

    def contains(self, text: str) -> bool:
        """Whether *text* holds a secret."""
        return any(needle in text for needle in self.needles)

    def value(self, value: object) -> Any:
        """*value* with every secret replaced.

        Strings, bytes, mappings and sequences are walked; an exception whose text holds a
        secret becomes a ``RedactedException``; anything else is kept when its repr is clean.
        """
        if not self.needles:
            return value
        return self._value(value, 0)

    def _value(self, value: object, depth: int) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (bytes, bytearray)):
            return self.data(bytes(value))
        if depth >= _MAX_DEPTH:
            return _DEEP
        if isinstance(value, Mapping):
            return {self._value(key, depth + 1): self._value(item, depth + 1) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            items = [self._value(item, depth + 1) for item in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, BaseException):
            text = f"{type(value).__name__}: {value}"
            if self.contains(text) or self.contains(repr(value)):
                return RedactedException(type(value).__name__, self.text(str(value)))
            return value
        if self.contains(repr(value)):
            return self.text(repr(value))
        return value

    def error(self, error: ProviderError) -> ProviderError:
        """*error* with its message and ``original_error`` redacted (itself when nothing changes)."""
        if not self.needles:
            return error
        message = self.text(error.message)
        code = self.text(error.code) if isinstance(error.code, str) else error.code
        original = self._value(error.original_error, 0)
        if message == error.message and code == error.code and original is error.original_error:
            return error
        return attrs.evolve(error, message=message, code=code, original_error=original)


def _needles(secrets: Iterable[str | None]) -> tuple[str, ...]:
    found: set[str] = set()
    for secret in secrets:
        value = (secret or "").strip()
        if len(value) < MIN_SECRET_LENGTH:
            continue
        found.add(value)
        found.add(quote(value, safe=""))
    return tuple(sorted(found, key=lambda needle: (-len(needle), needle)))
