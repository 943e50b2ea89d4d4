"""Google Gemini behind the ``ProviderAdapter`` protocol (stages 01-03).

``GoogleAdapter`` posts stage 01's body (``rxcord.providers.google.request``) to
``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``, builds stage 03's
normalizer (``rxcord.providers.google.normalizer``) per stream, and reads commitment,
rejection and the end of a stream from the responses.
"""

from __future__ import annotations

__all__ = ("GOOGLE_BASE_URL", "GoogleAdapter")

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import attrs

from rxcord.core.config import Guards
from rxcord.core.request import ChatRequest
from rxcord.core.types import ChunkNormalizer, ProviderError, RawStreamChunk
from rxcord.providers.base import DegradationPolicy, HttpRequest
from rxcord.providers.errors import classify_stream_error, describe_error
from rxcord.providers.google.normalizer import PROVIDER, GeminiNormalizer
from rxcord.providers.google.request import build_gemini_body, supports_thoughts
from rxcord.providers.unrecognized import RecognitionCheck

GOOGLE_BASE_URL: Final = "https://generativelanguage.googleapis.com"
"""The public API base URL (used when no base URL is given)."""

_POLICY: Final = DegradationPolicy(
    enabled=False,
    mandatory_body_keys=frozenset({"contents", "systemInstruction", "tools", "generationConfig"}),
)

_EMPTY: Final[Mapping[str, Any]] = {}


def _event_meaningful(data: object) -> bool:
    if not isinstance(data, Mapping):
        return False
    if isinstance(data.get("usageMetadata"), Mapping):
        return True
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
        return False
    content = candidates[0].get("content", _EMPTY)
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        return False
    return any(
        isinstance(part, Mapping)
        and (
            bool(part.get("text"))
            or bool(part.get("thoughtSummary"))
            or "functionCall" in part
            or bool(part.get("thoughtSignature"))
        )
        for part in parts
    )


def _event_error(data: object) -> ProviderError | None:
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        return classify_stream_error(data, provider=PROVIDER)
    return None


@attrs.frozen(kw_only=True)
class GoogleAdapter:
    """Google Gemini through the Generative Language API (``v1beta``).

    The key goes in the ``x-goog-api-key`` header, never in the URL, where it
    would end up in access logs and tracebacks.
    """

    include_thoughts: bool = True
    """Ask for thought summaries (``thinkingConfig.includeThoughts``)."""

    @property
    def name(self) -> str:
        """``google``."""
        return PROVIDER

    @property
    def default_base_url(self) -> str:
        """The public API; another origin is a custom endpoint (``rxcord.providers.ssrf``)."""
        return GOOGLE_BASE_URL

    @property
    def policy(self) -> DegradationPolicy:
        """Degradation is disabled: Gemini's 400s name real request bugs, not optional fields."""
        return _POLICY

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        """POST ``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``.

        With ``stream=False``: ``:generateContent``, one JSON response.

        Raises:
            InputError: A tool result names no tool and matches no earlier call.
        """
        model = request.model.removeprefix("models/")
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        url = (
            f"{(base_url or GOOGLE_BASE_URL).rstrip('/')}/v1beta/models/{quote(model, safe='-._~')}:{method}"
        )
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["x-goog-api-key"] = api_key
        thoughts = self.include_thoughts and supports_thoughts(model)
        body = build_gemini_body(request, include_thoughts=thoughts)
        return HttpRequest(url=url, body=body, headers=headers, stream=stream)

    @property
    def guards(self) -> Guards:
        """No stage 03 text guards: reasoning arrives in its own parts, never in the text."""
        return Guards()

    def new_normalizer(self) -> ChunkNormalizer:
        """A fresh ``GeminiNormalizer`` (a stream it recognises nothing in ends in an ``api_error``)."""
        return RecognitionCheck(GeminiNormalizer(), PROVIDER, "Gemini generateContent")

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        """Text, a thought, a function call, a thought signature or usage commits the stream."""
        if raw.error is not None:
            return False
        if isinstance(raw.data, list):
            return any(_event_meaningful(item) for item in raw.data)
        return _event_meaningful(raw.data)

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        """A transport error, or an ``{"error": ...}`` object in the body or stream."""
        if raw.error is not None:
            return raw.error
        if isinstance(raw.data, list):
            for item in raw.data:
                error = _event_error(item)
                if error is not None:
                    return error
            return None
        return _event_error(raw.data)

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        """A candidate's ``finishReason`` ends the stream (Gemini sends no ``[DONE]``)."""
        return any(_finished(raw.data) for raw in chunks)

    def describe_error(self, error: ProviderError) -> str:
        """The error embed's text (a model_error keeps the provider's details)."""
        return describe_error(error, provider=PROVIDER)


def _finished(data: object) -> bool:
    if not isinstance(data, Mapping):
        return False
    candidates = data.get("candidates")
    if not isinstance(candidates, list):
        return False
    return any(isinstance(candidate, Mapping) and candidate.get("finishReason") for candidate in candidates)
