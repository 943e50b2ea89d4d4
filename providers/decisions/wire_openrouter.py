"""OpenRouter native Decisions: ``POST https://openrouter.ai/api/alpha/decisions``.

The path sits outside the usual ``/api/v1`` prefix, so the URL is built from
the base's origin: ``https://openrouter.ai``, ``https://openrouter.ai/api`` and
``https://openrouter.ai/api/v1`` all give ``https://openrouter.ai/api/alpha/decisions``.
The request identity is the body's ``id`` (``gen-dec-...``); usage may carry
the USD ``cost``. Error bodies are ``{"error": {"code", "message", "metadata"}}``.
"""

from __future__ import annotations

__all__ = ("OPENROUTER_DECISIONS_ORIGIN", "OpenRouterCodec")

from collections.abc import Mapping
from typing import Final

from rxcord.providers.decisions.codec import bounded_request_id
from rxcord.providers.decisions.types import DecisionProtocol
from rxcord.providers.decisions.wire_named import NamedCodec, NamedResponse

OPENROUTER_DECISIONS_ORIGIN: Final = "https://openrouter.ai"
"""Where the native path lives (the default base URL)."""


class OpenRouterCodec(NamedCodec):
    """The OpenRouter native protocol."""

    protocol: Final = DecisionProtocol.OPENROUTER

    def url(self, base_url: str) -> str:
        """``<origin>/api/alpha/decisions`` (a trailing ``/api`` or ``/api/v1`` is dropped)."""
        base = base_url.rstrip("/")
        for suffix in ("/api/v1", "/api"):
            if base.endswith(suffix):
                base = base[: -len(suffix)]
                break
        return f"{base}/api/alpha/decisions"

    def request_id(self, response: NamedResponse, headers: Mapping[str, str]) -> str | None:
        """The body's ``id``."""
        return bounded_request_id(response.id)
