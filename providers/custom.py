"""A custom OpenAI-compatible endpoint (vLLM, llama.cpp, LM Studio, a proxy) (stages 01-03).

The base URL is required (there is no default); the API key is optional
(local servers often have none). The SSRF guard on the endpoint's address
belongs to the transport (``rxcord.providers.ssrf``), applied on every attempt.

Verbatim tool calling: models served this way sometimes write a tool call
into the text instead of the ``tool_calls`` field. With
``verbatim_tool_calling`` on and ``tool_names`` given, the normalizer runs
``rxcord.operators.verbatim_tools.VerbatimToolParser`` over the visible content
(after the think-tag and spill guards) and turns such calls into
``function_call`` chunks. The shared normalizer also drops a delta that
resends the whole content so far (see ``rxcord.providers.chat_completions.normalizer``).
"""

from __future__ import annotations

__all__ = ("CUSTOM_POLICY", "CustomAdapter")

from typing import ClassVar, Final

import attrs

from rxcord.core.config import Guards
from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW, WHOLE_REPLY
from rxcord.providers.base import DegradationPolicy
from rxcord.providers.chat_completions.adapter import (
    OPENAI_COMPATIBLE_MANDATORY,
    OPENAI_COMPATIBLE_REMOVALS,
    ChatCompletionsAdapter,
    WireOptions,
)

CUSTOM_POLICY: Final = DegradationPolicy(
    mandatory_body_keys=OPENAI_COMPATIBLE_MANDATORY,
    optional_removals=OPENAI_COMPATIBLE_REMOVALS,
)
"""Degradation policy: named parameters and the shared static list."""


@attrs.frozen
class CustomAdapter(ChatCompletionsAdapter):
    """A custom OpenAI-compatible endpoint.

    Args:
        tool_names: The exposed tool names (the verbatim parser only knows these).
        verbatim_tool_calling: Recover tool calls written as text.
        think_opened_by_template: The model's chat template opens ``<think>`` in the prompt
            (DeepSeek-R1 and Qwen3 style on llama.cpp/vLLM), so the reply starts inside a
            reasoning block and only ``</think>`` appears: everything before it is held and
            routed to reasoning, however long (live text starts after ``</think>``; a reply
            that never closes the block is shown whole at the end; a graceful stop before
            ``</think>`` keeps what was held as reasoning).
        policy: Parameter degradation policy.
    """

    wire: ClassVar[WireOptions] = WireOptions(provider="custom", default_base_url=None)
    decision_protocols: ClassVar[tuple[str, ...]] = ("systemone", "openai")
    """The Decision capability on custom endpoints: System One or OpenAI Decisions."""
    tool_names: frozenset[str] = frozenset()
    verbatim_tool_calling: bool = False
    think_opened_by_template: bool = False
    policy: DegradationPolicy = CUSTOM_POLICY

    @property
    def guards(self) -> Guards:
        """The think and spill guards, a start window for template-opened blocks, verbatim tool calls."""
        window = WHOLE_REPLY if self.think_opened_by_template else DEFAULT_START_WINDOW
        tools = self.tool_names if self.verbatim_tool_calling else frozenset()
        return Guards(think_tags=True, think_start_window=window, spill=True, verbatim_tools=tools)
