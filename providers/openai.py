"""OpenAI Chat Completions (stages 01-03).

The wire is ``rxcord.providers.chat_completions``; this adapter sets OpenAI's options:
the default base URL, ``max_completion_tokens`` (reasoning models reject
``max_tokens``), no ``top_k`` (OpenAI rejects it) and a top-level
``reasoning_effort``. A 502 alone is not taken as a payload incompatibility.

At its own host (``api.openai.com``) no think-tag start window is held: OpenAI's models never
stream reasoning as text, so the first visible text is shown at once (openers are still caught
anywhere). Any other base URL (vLLM, Ollama, LM Studio, a proxy) may serve an open-weight model
whose chat template opened ``<think>``, and keeps the window (``WireOptions.tagless_origins``).
"""

from __future__ import annotations

__all__ = ("OPENAI_BASE_URL", "OPENAI_ORIGIN", "OPENAI_POLICY", "OpenAIAdapter")

from typing import ClassVar, Final

import attrs

from rxcord.providers.base import DegradationPolicy
from rxcord.providers.chat_completions.adapter import (
    OPENAI_COMPATIBLE_MANDATORY,
    OPENAI_COMPATIBLE_REMOVALS,
    ChatCompletionsAdapter,
    WireOptions,
)

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
"""The default base URL."""

OPENAI_ORIGIN: Final = "https://api.openai.com"
"""OpenAI's own API: its reasoning models keep reasoning out of the content (no start window)."""

OPENAI_POLICY: Final = DegradationPolicy(
    mandatory_body_keys=OPENAI_COMPATIBLE_MANDATORY,
    optional_removals=OPENAI_COMPATIBLE_REMOVALS,
)
"""Degradation policy: named parameters and the shared static list; no 502 or opaque 5xx retries."""


@attrs.frozen
class OpenAIAdapter(ChatCompletionsAdapter):
    """The OpenAI provider (``Authorization: Bearer``)."""

    wire: ClassVar[WireOptions] = WireOptions(
        provider="openai",
        default_base_url=OPENAI_BASE_URL,
        max_tokens_key="max_completion_tokens",
        send_top_k=False,
        max_stop=4,
        tagless_origins=frozenset({OPENAI_ORIGIN}),
    )
    policy: DegradationPolicy = OPENAI_POLICY
    """Parameter degradation policy."""
