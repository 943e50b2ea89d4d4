"""OpenRouter, the model router (stages 01-03).

Differences from plain Chat Completions, all options of the shared wire:

* reasoning control is ``reasoning: {"effort": ...}``; ``reasoning``,
  ``provider`` (routing and data policy) and ``models`` (fallbacks) are never
  degraded away: dropping them changes reasoning replay or where the prompt
  may go;
* a 502 may mean the router picked an incompatible backend, so it qualifies
  for degradation (``degrade_on_502``);
* usage (with ``cost``) arrives in a chunk after the tool-call finish: the
  normalizer holds the ``done`` chunk and the calls until it arrives or the
  stream ends, so a tool call keeps its cost and tokens;
* the chunk-level ``provider`` names the backend that served the request, for
  the thought-log footer (``serving_provider``);
* optional attribution headers ``HTTP-Referer`` and ``X-Title``.
"""

from __future__ import annotations

__all__ = ("OPENROUTER_BASE_URL", "OPENROUTER_POLICY", "OpenRouterAdapter")

from typing import ClassVar, Final

import attrs

from rxcord.providers.base import DegradationPolicy
from rxcord.providers.chat_completions.adapter import (
    OPENAI_COMPATIBLE_MANDATORY,
    OPENAI_COMPATIBLE_REMOVALS,
    ChatCompletionsAdapter,
    WireOptions,
)

OPENROUTER_BASE_URL: Final = "https://openrouter.ai/api/v1"
"""The default base URL."""

OPENROUTER_POLICY: Final = DegradationPolicy(
    degrade_on_502=True,
    mandatory_body_keys=OPENAI_COMPATIBLE_MANDATORY | {"reasoning", "provider", "models", "route"},
    optional_removals=OPENAI_COMPATIBLE_REMOVALS,
)
"""Degradation policy: a 502 qualifies; routing and reasoning fields are mandatory."""


@attrs.frozen(kw_only=True)
class OpenRouterAdapter(ChatCompletionsAdapter):
    """The OpenRouter provider.

    Args:
        site_url: Sent as ``HTTP-Referer`` (OpenRouter's app attribution), when set.
        app_name: Sent as ``X-Title``, when set.
        policy: Parameter degradation policy.
    """

    wire: ClassVar[WireOptions] = WireOptions(
        provider="openrouter",
        default_base_url=OPENROUTER_BASE_URL,
        reasoning_style="openrouter",
        hold_for_usage=True,
    )
    decision_protocols: ClassVar[tuple[str, ...]] = ("openrouter",)
    """The Decision capability: native ``/api/alpha/decisions`` (``rxcord.providers.decisions``)."""
    site_url: str | None = None
    app_name: str | None = None
    policy: DegradationPolicy = OPENROUTER_POLICY

    def extra_headers(self) -> dict[str, str]:
        """The attribution headers that are set."""
        headers: dict[str, str] = {}
        if self.site_url:
            headers["HTTP-Referer"] = self.site_url
        if self.app_name:
            headers["X-Title"] = self.app_name
        return headers
