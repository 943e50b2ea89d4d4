"""NVIDIA NIM (``integrate.api.nvidia.com``), an OpenAI-compatible endpoint (stages 01-03).

NVIDIA's backend answers some unsupported input (a parameter, an image) with
an opaque 5xx, so its degradation policy retries opaque server errors
(``retry_opaque_5xx``). Reasoning models there stream DeepSeek-style
``reasoning_content``, which the shared normalizer reads and replays. Error
bodies are RFC 7807 problem details (``{"status", "title", "detail"}``),
which ``rxcord.providers.errors`` reads.
"""

from __future__ import annotations

__all__ = ("NVIDIA_BASE_URL", "NVIDIA_POLICY", "NvidiaAdapter")

from typing import ClassVar, Final

import attrs

from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW
from rxcord.providers.base import DegradationPolicy
from rxcord.providers.chat_completions.adapter import (
    OPENAI_COMPATIBLE_MANDATORY,
    OPENAI_COMPATIBLE_REMOVALS,
    ChatCompletionsAdapter,
    WireOptions,
)

NVIDIA_BASE_URL: Final = "https://integrate.api.nvidia.com/v1"
"""The default base URL."""

NVIDIA_POLICY: Final = DegradationPolicy(
    retry_opaque_5xx=True,
    mandatory_body_keys=OPENAI_COMPATIBLE_MANDATORY,
    optional_removals=OPENAI_COMPATIBLE_REMOVALS,
)
"""Degradation policy: opaque 5xx may mean unsupported input."""


@attrs.frozen
class NvidiaAdapter(ChatCompletionsAdapter):
    """The NVIDIA NIM provider (``Authorization: Bearer nvapi-...``)."""

    # NIM serves DeepSeek-R1-style models whose chat template opens <think> in the prompt: hold the start.
    wire: ClassVar[WireOptions] = WireOptions(
        provider="nvidia", default_base_url=NVIDIA_BASE_URL, think_start_window=DEFAULT_START_WINDOW
    )
    policy: DegradationPolicy = NVIDIA_POLICY
    """Parameter degradation policy."""
