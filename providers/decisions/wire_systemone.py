"""System One (TypeSafe's format) on a custom endpoint: ``POST <base>/systemone``.

The same named ``noul`` protocol as OpenRouter native. ``<base>`` is the stored
base URL as given (``https://api.typesafe.ai/v1`` for TypeSafe itself): the path
is appended, nothing is guessed. The request identity is the
``x-typesafe-request-id`` response header; usage has no cost. Self-hosted
servers that cut the state say so in ``usage`` (``truncated``,
``state_tokens_dropped``, ``truncated_questions``), which fails validation.
"""

from __future__ import annotations

__all__ = ("REQUEST_ID_HEADER", "SystemOneCodec")

from collections.abc import Mapping
from typing import Final

from rxcord.providers.decisions.codec import bounded_request_id, header
from rxcord.providers.decisions.types import DecisionProtocol
from rxcord.providers.decisions.wire_named import NamedCodec, NamedResponse

REQUEST_ID_HEADER: Final = "x-typesafe-request-id"


class SystemOneCodec(NamedCodec):
    """The System One protocol."""

    protocol: Final = DecisionProtocol.SYSTEMONE

    def url(self, base_url: str) -> str:
        """``<base>/systemone``."""
        return base_url.rstrip("/") + "/systemone"

    def request_id(self, response: NamedResponse, headers: Mapping[str, str]) -> str | None:
        """The ``x-typesafe-request-id`` header."""
        return bounded_request_id(header(headers, REQUEST_ID_HEADER))
