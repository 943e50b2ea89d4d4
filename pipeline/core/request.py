"""Stage 01 input: a provider-neutral chat request (a leaf module).

Adapters in ``providers/`` translate a ``ChatRequest`` to their native
payload (OpenAI Chat Completions, Gemini ``streamGenerateContent``,
Anthropic Messages). Provider-specific replay fields that must go back
unchanged (Gemini ``thoughtSignature``, OpenRouter ``reasoning_details``,
DeepSeek-style ``reasoning_content``, Anthropic thinking blocks with their
``signature``) travel on ``Message.thoughts``, ``Message.replay`` and
``FunctionCall.thought_signature`` / ``FunctionCall.replay``.
"""

from __future__ import annotations

__all__ = (
    "RESERVED_EXTRA_KEYS",
    "ChatRequest",
    "ImagePart",
    "Message",
    "Role",
    "SamplerSettings",
    "TextPart",
    "ToolSpec",
)

import enum
from collections.abc import Mapping
from typing import Any, Final, TypeAlias

import attrs

from rxcord.core.errors import InputError
from rxcord.core.types import FunctionCall, ThoughtLogEntry

RESERVED_EXTRA_KEYS: Final = frozenset({"model", "messages", "contents", "stream", "stream_options"})
"""Body fields ``ChatRequest.extra`` may not set: the request itself says them (the model, the
context in the Chat Completions and Gemini spellings, streaming and its usage report)."""


class Role(str, enum.Enum):
    """Who wrote a context item."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


@attrs.frozen
class TextPart:
    """Plain text content."""

    text: str


@attrs.frozen(kw_only=True)
class ImagePart:
    """An image, by URL or inline base64 data."""

    mime_type: str = "image/png"
    url: str | None = None
    data_b64: str | None = attrs.field(default=None, repr=False)
    """Inline data (kept out of reprs: it can be megabytes)."""


ContentPart: TypeAlias = TextPart | ImagePart


@attrs.frozen(kw_only=True)
class Message:
    """One context item: a user or assistant turn, a tool result."""

    role: Role
    content: tuple[ContentPart, ...] = ()
    tool_calls: tuple[FunctionCall, ...] = ()
    """Calls an assistant turn made (replayed with their ids and signatures)."""
    tool_call_id: str | None = None
    """For ``TOOL`` messages: the id of the call this is the result of."""
    name: str | None = None
    """For ``TOOL`` messages: the tool's name (Gemini needs it)."""
    thoughts: tuple[ThoughtLogEntry, ...] = ()
    """Reasoning of an assistant turn to replay (Anthropic thinking blocks with signature)."""
    replay: Mapping[str, Any] = attrs.field(factory=dict)
    """Provider-specific fields replayed unchanged (``reasoning_details``, ``reasoning_content``)."""

    @classmethod
    def user(cls, text: str, *images: ImagePart) -> Message:
        """A user turn with text and optional images."""
        return cls(role=Role.USER, content=(TextPart(text), *images))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant turn with text."""
        return cls(role=Role.ASSISTANT, content=(TextPart(text),))

    @property
    def text(self) -> str:
        """The concatenated text parts."""
        return "".join(part.text for part in self.content if isinstance(part, TextPart))


@attrs.frozen(kw_only=True)
class ToolSpec:
    """A tool the model may call, described by a JSON schema."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object", "properties": {}})


@attrs.frozen(kw_only=True)
class SamplerSettings:
    """Sampling parameters; ``None`` means "not sent"."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None
    reasoning_effort: str | None = None
    """``low``/``medium``/``high`` where the provider supports reasoning control."""


def _no_reserved_keys(_: Any, __: Any, value: Mapping[str, Any]) -> None:
    taken = sorted(RESERVED_EXTRA_KEYS.intersection(value))
    if taken:
        raise InputError(f"extra body fields cannot set {', '.join(taken)}: the request sets them")


@attrs.frozen(kw_only=True)
class ChatRequest:
    """A provider-neutral request."""

    model: str
    messages: tuple[Message, ...] = ()
    system: str | None = None
    tools: tuple[ToolSpec, ...] = ()
    stop: tuple[str, ...] = ()
    sampler: SamplerSettings = SamplerSettings()
    prefill: str | None = None
    """Assistant prefill: the reply continues this text."""
    extra: Mapping[str, Any] = attrs.field(factory=dict, validator=_no_reserved_keys)
    """Provider-specific body fields added as is (``provider`` routing for OpenRouter, ...); never
    one of ``RESERVED_EXTRA_KEYS`` (``InputError``): an extra field cannot swap the model, the
    context or the streaming the rest of the chain relies on."""

    @property
    def tool_names(self) -> frozenset[str]:
        """Names of the exposed tools."""
        return frozenset(tool.name for tool in self.tools)
