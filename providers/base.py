"""What every provider adapter offers the transport and the chain (stages 01-03).

An adapter is a stateless description of one provider's wire format:
``build_request`` (stage 01) turns a ``ChatRequest`` into an ``HttpRequest``;
``new_normalizer`` (stage 03) makes the per-stream ``ChunkNormalizer``;
``is_meaningful`` and ``rejection`` let the shared transport (stage 02)
decide commitment and parameter degradation without knowing the format.

An adapter may also name its public API as ``default_base_url``: the transport guards
every URL of another origin as a custom endpoint (``rxcord.providers.ssrf.is_custom_endpoint``);
an adapter without one is always guarded.
"""

from __future__ import annotations

__all__ = ("DegradationPolicy", "HttpRequest", "ProviderAdapter")

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from rxcord.core.config import Guards
from rxcord.core.request import ChatRequest
from rxcord.core.types import ChunkNormalizer, ProviderError, RawStreamChunk


@attrs.frozen(kw_only=True)
class HttpRequest:
    """One HTTP request to a provider, ready to send."""

    url: str
    body: Mapping[str, Any]
    """The JSON body."""
    headers: Mapping[str, str] = attrs.field(factory=dict, repr=False)
    """Headers, API key included: never logged, never in a repr."""
    method: str = "POST"
    stream: bool = True
    """Whether a streamed (SSE) response was asked for."""


@attrs.frozen(kw_only=True)
class DegradationPolicy:
    """When and how an adapter may retry a rejected payload (stage 02)."""

    enabled: bool = True
    degrade_on_502: bool = False
    """OpenRouter: a 502 can mean an incompatible backend was picked."""
    retry_opaque_5xx: bool = False
    """NVIDIA: opaque 5xx can mean unsupported input."""
    mandatory_body_keys: frozenset[str] = frozenset({"model", "messages", "contents", "stream"})
    """Never removed: they carry the reply contract."""
    optional_removals: tuple[tuple[str, ...], ...] = ()
    """Static removal list, tried in order once a failure qualifies."""
    max_targeted_retries: int = 3
    """Cap on retries that remove parameters named by the error message."""
    max_attempts: int = 6
    """Cap on all attempts of one stream."""


class ProviderAdapter(Protocol):
    """One provider's wire format."""

    @property
    def name(self) -> str:
        """Provider identity: ``openai``, ``openrouter``, ``google``, ``anthropic``, ``nvidia``..."""
        ...

    @property
    def policy(self) -> DegradationPolicy:
        """Parameter degradation policy."""
        ...

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        """Stage 01: the native request for *request* (``base_url=None``: the provider's public API)."""
        ...

    def new_normalizer(self) -> ChunkNormalizer:
        """Stage 03: a fresh per-stream normalizer."""
        ...

    @property
    def guards(self) -> Guards:
        """Stage 03: the text guards this provider's streams need (pipeline stages after the normalizer)."""
        ...

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        """Whether *raw* commits the stream (text, reasoning, a tool-call delta or usage)."""
        ...

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        """The error *raw* carries (an SSE error event after a 200, or a transport error), if any."""
        ...

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        """Whether *chunks* (one read's events) hold the wire format's end marker.

        Only a stream whose end marker was read ended cleanly; one that stops before it is
        ``truncated_stream`` (stage 02). ``data: [DONE]`` is read by the transport itself.
        """
        ...

    def describe_error(self, error: ProviderError) -> str:
        """The error embed's text for *error* (keeps a model_error's supported model ids)."""
        ...
