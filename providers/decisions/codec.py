"""What the three protocol modules share: the codec shape and the bounded identities.

A codec translates between the capability's attrs types and one protocol's
wire models (with the strict cattrs converter), in three steps so the call
can report spend before it judges the verdict:

1. ``build_body``: the request document;
2. ``read_usage``: validated usage (``None`` when the body has none) and the
   explicit truncation report, if any;
3. ``read_verdict``: the ordered answers, the returned model id and the
   provider's request identity.
"""

from __future__ import annotations

__all__ = ("Codec", "Verdict", "bounded_model", "bounded_request_id", "usage_object")

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol

import attrs

from rxcord.core.errors import DecisionValidationError
from rxcord.core.types import Usage
from rxcord.providers.decisions.types import Answer, DecisionProtocol, Question
from rxcord.providers.decisions.validate import TruncationReport

_REQUEST_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:\-]{0,127}")
"""A provider request identity kept in a result: at most 128 safe characters."""
_MODEL_RE: Final = re.compile(r"[A-Za-z0-9~][A-Za-z0-9._:/@+\-~]{0,255}")


@attrs.frozen(kw_only=True)
class Verdict:
    """The validated answer of one response."""

    answers: tuple[Answer, ...]
    model: str
    provider_request_id: str | None = None


class Codec(Protocol):
    """One protocol's translation."""

    @property
    def protocol(self) -> DecisionProtocol:
        """Which protocol this is."""
        ...

    def url(self, base_url: str) -> str:
        """The POST URL for *base_url*."""
        ...

    def build_body(self, model: str, evidence: str, questions: Sequence[Question]) -> dict[str, Any]:
        """The JSON request document."""
        ...

    def read_usage(self, document: Mapping[str, Any]) -> tuple[Usage | None, TruncationReport | None]:
        """Validated usage and the truncation report (raises ``DecisionValidationError``)."""
        ...

    def read_verdict(
        self, questions: Sequence[Question], document: Mapping[str, Any], headers: Mapping[str, str]
    ) -> Verdict:
        """The answers in question order (raises ``DecisionValidationError``)."""
        ...


def bounded_request_id(value: object) -> str | None:
    """*value* if it is a safe, bounded request identity; otherwise ``None`` (never an error)."""
    if isinstance(value, str) and _REQUEST_ID_RE.fullmatch(value):
        return value
    return None


def bounded_model(value: object) -> str:
    """The returned model id; a missing or unbounded one fails validation."""
    if isinstance(value, str) and _MODEL_RE.fullmatch(value):
        return value
    raise DecisionValidationError("invalid-model", "the returned model id is missing or malformed")


def usage_object(document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The body's ``usage`` object; ``None`` when absent or null; anything else is invalid usage."""
    usage = document.get("usage")
    if usage is None:
        return None
    if not isinstance(usage, Mapping):
        raise DecisionValidationError("invalid-usage", "usage is not an object")
    return usage


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value, case-insensitively."""
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None
