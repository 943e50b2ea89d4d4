"""Anthropic's Messages API behind the ``ProviderAdapter`` protocol (stages 01-03).

``AnthropicAdapter`` posts stage 01's body (``rxcord.providers.anthropic.request``) to
``{base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``, builds stage 03's
normalizer (``rxcord.providers.anthropic.normalizer``) per stream, and reads commitment,
rejection and the end of a stream from the events.
"""

from __future__ import annotations

__all__ = ("ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "AnthropicAdapter")

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rxcord.core.config import Guards
from rxcord.core.request import ChatRequest
from rxcord.core.types import ChunkNormalizer, ProviderError, RawStreamChunk
from rxcord.providers.anthropic.normalizer import PROVIDER, AnthropicNormalizer
from rxcord.providers.anthropic.request import build_anthropic_body, thinking_budget
from rxcord.providers.base import DegradationPolicy, HttpRequest
from rxcord.providers.errors import classify_stream_error, describe_error
from rxcord.providers.unrecognized import RecognitionCheck

ANTHROPIC_VERSION: Final = "2023-06-01"
"""The ``anthropic-version`` header sent with every request."""

ANTHROPIC_BASE_URL: Final = "https://api.anthropic.com"
"""The public API base URL (used when no base URL is given)."""

_POLICY: Final = DegradationPolicy(
    enabled=False,
    mandatory_body_keys=frozenset(
        {"model", "messages", "max_tokens", "stream", "system", "tools", "thinking"}
    ),
)


def _meaningful(data: Mapping[str, Any]) -> bool:
    kind = data.get("type")
    if kind == "content_block_delta":
        delta = data.get("delta")
        if not isinstance(delta, Mapping):
            return False
        return any(bool(delta.get(key)) for key in ("text", "thinking", "signature", "partial_json"))
    if kind == "content_block_start":
        block = data.get("content_block")
        if not isinstance(block, Mapping):
            return False
        return block.get("type") in ("tool_use", "redacted_thinking") or bool(
            block.get("text") or block.get("thinking")
        )
    if kind == "message_start":
        message = data.get("message")
        return isinstance(message, Mapping) and isinstance(message.get("usage"), Mapping)
    if kind == "message_delta":
        return isinstance(data.get("usage"), Mapping)
    return kind == "message"


@attrs.frozen(kw_only=True)
class AnthropicAdapter:
    """Anthropic's Messages API (``/v1/messages``, ``anthropic-version: 2023-06-01``)."""

    @property
    def name(self) -> str:
        """``anthropic``."""
        return PROVIDER

    @property
    def default_base_url(self) -> str:
        """The public API; another origin is a custom endpoint (``rxcord.providers.ssrf``)."""
        return ANTHROPIC_BASE_URL

    @property
    def policy(self) -> DegradationPolicy:
        """Degradation is disabled: Anthropic's 400s name real request bugs, not optional fields."""
        return _POLICY

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        """POST ``{base_url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``."""
        headers = {"Content-Type": "application/json", "anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return HttpRequest(
            url=f"{(base_url or ANTHROPIC_BASE_URL).rstrip('/')}/v1/messages",
            body=build_anthropic_body(request, stream=stream),
            headers=headers,
            stream=stream,
        )

    def sends_prefill(self, request: ChatRequest) -> bool:
        """Whether ``build_request`` sends ``request.prefill`` (never with extended thinking).

        The pipeline shows a prefill as the reply's start only when it was sent: a prefill
        left out is not the model's text (``rxcord.compose.run.stream_to_discord``).
        """
        budget = thinking_budget(request.sampler.reasoning_effort)
        return bool(request.prefill and request.prefill.rstrip()) and budget is None

    @property
    def guards(self) -> Guards:
        """No stage 03 text guards: reasoning arrives in its own parts, never in the text."""
        return Guards()

    def new_normalizer(self) -> ChunkNormalizer:
        """A fresh ``AnthropicNormalizer`` (a stream it recognises nothing in ends in an ``api_error``)."""
        return RecognitionCheck(AnthropicNormalizer(), PROVIDER, "Anthropic Messages")

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        """Text, thinking, a signature, a tool-use start or input delta, or usage commits the stream."""
        if raw.error is not None or not isinstance(raw.data, Mapping):
            return False
        return _meaningful(raw.data)

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        """A transport error, or an ``error`` event (``overloaded_error`` after a 200, say)."""
        if raw.error is not None:
            return raw.error
        data = raw.data
        if isinstance(data, Mapping) and (data.get("type") == "error" or raw.event == "error"):
            return classify_stream_error(data, provider=PROVIDER)
        return None

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        """A ``message_stop`` event ends the stream (Anthropic sends no ``[DONE]``)."""
        return any(_is_stop(raw) for raw in chunks)

    def describe_error(self, error: ProviderError) -> str:
        """The error embed's text (a model_error keeps the provider's details)."""
        return describe_error(error, provider=PROVIDER)


def _is_stop(raw: RawStreamChunk) -> bool:
    data = raw.data
    return isinstance(data, Mapping) and data.get("type") == "message_stop"
