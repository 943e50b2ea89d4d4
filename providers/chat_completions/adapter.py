"""The ``ProviderAdapter`` methods shared by the OpenAI-compatible providers (stages 01-03).

``ChatCompletionsAdapter`` puts the wire's two stages behind the adapter protocol: stage 01's
body (``rxcord.providers.chat_completions.request``) in an ``HttpRequest`` to
``{base_url}/chat/completions``, stage 03's normalizer
(``rxcord.providers.chat_completions.normalizer``) per stream, the guards the wire needs, and
the commitment, rejection and end-of-stream checks. ``rxcord.providers.openai``,
``.openrouter``, ``.nvidia`` and ``.custom`` only set their ``WireOptions`` and policy.
"""

from __future__ import annotations

__all__ = (
    "OPENAI_COMPATIBLE_MANDATORY",
    "OPENAI_COMPATIBLE_REMOVALS",
    "ChatCompletionsAdapter",
    "WireOptions",
)

from collections.abc import Mapping, Sequence
from typing import ClassVar, Final

import attrs
from yarl import URL

from rxcord.core.config import Guards
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest
from rxcord.core.types import ChunkNormalizer, ProviderError, RawStreamChunk
from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW
from rxcord.providers.base import DegradationPolicy, HttpRequest
from rxcord.providers.chat_completions.normalizer import (
    ChatCompletionsNormalizer,
    chunk_error,
    has_meaningful_output,
)
from rxcord.providers.chat_completions.request import ReasoningStyle, build_chat_body
from rxcord.providers.errors import describe_error
from rxcord.providers.ssrf import same_origin
from rxcord.providers.unrecognized import RecognitionCheck


@attrs.frozen(kw_only=True)
class WireOptions:
    """What differs between OpenAI-compatible providers on the wire."""

    provider: str
    """Provider identity."""
    default_base_url: str | None
    """Used when ``build_request`` gets no base URL (``None``: a base URL is required)."""
    max_tokens_key: str = "max_tokens"
    send_top_k: bool = True
    reasoning_style: ReasoningStyle = "reasoning_effort"
    hold_for_usage: bool = False
    """Hold a tool-call finish until the trailing usage arrives (OpenRouter)."""
    max_stop: int | None = None
    """The most stop strings the provider accepts (OpenAI: 4; ``None``: no limit enforced)."""
    think_start_window: int = DEFAULT_START_WINDOW
    """Characters held at the stream's start for a stray ``</think>`` (a chat template that opened
    ``<think>`` in the prompt): the same window on every server that may run open-weight models, so
    the stray-closer rule gives one result for the same text (``rxcord.operators.reasoning.tags``)."""
    tagless_origins: frozenset[str] = frozenset()
    """Origins of the provider's own API (``https://host``) whose every model keeps reasoning out
    of the content: a request there holds no start window (``ChatCompletionsAdapter.guards_for``;
    openers are still caught anywhere). Any other base URL keeps ``think_start_window``: a local
    server or a proxy may serve a model whose template opened the block."""


OPENAI_COMPATIBLE_MANDATORY: Final = frozenset({"model", "messages", "stream", "tools", "tool_choice"})
"""Keys never degraded: removing tools would silently change the tool loop's contract."""

OPENAI_COMPATIBLE_REMOVALS: Final = (
    ("stream_options",),
    ("top_k",),
    ("seed",),
    ("frequency_penalty", "presence_penalty"),
    ("parallel_tool_calls",),
    ("reasoning_effort",),
    ("stop",),
    ("top_p",),
    ("temperature",),
)
"""The static removal list: least consequential first; length limits are never probed away."""


class ChatCompletionsAdapter:
    """The ``ProviderAdapter`` methods for a Chat Completions provider.

    Subclasses set ``wire`` (a class constant) and a ``policy`` attribute, and may
    override ``extra_headers`` and ``new_normalizer``.
    """

    wire: ClassVar[WireOptions]
    policy: DegradationPolicy

    @property
    def name(self) -> str:
        """Provider identity."""
        return self.wire.provider

    @property
    def default_base_url(self) -> str | None:
        """The provider's public API; another origin is a custom endpoint (``rxcord.providers.ssrf``)."""
        return self.wire.default_base_url

    def extra_headers(self) -> dict[str, str]:
        """Provider-specific headers besides authorization."""
        return {}

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        """Stage 01: ``POST {base_url}/chat/completions`` with a bearer key.

        Raises:
            InputError: No base URL was given and the provider has no default.
        """
        root = base_url or self.wire.default_base_url
        if not root:
            raise InputError(f"{self.name}: a base URL is required")
        root = root.rstrip("/")
        url = root if root.endswith("/chat/completions") else f"{root}/chat/completions"
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream" if stream else "application/json",
            **self.extra_headers(),
        }
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        body = build_chat_body(
            request,
            stream=stream,
            max_tokens_key=self.wire.max_tokens_key,
            send_top_k=self.wire.send_top_k,
            reasoning_style=self.wire.reasoning_style,
            max_stop=self.wire.max_stop,
        )
        return HttpRequest(url=url, body=body, headers=headers, stream=stream)

    def new_normalizer(self) -> ChunkNormalizer:
        """Stage 03: a fresh per-stream normalizer."""
        normalizer = ChatCompletionsNormalizer(provider=self.name, hold_for_usage=self.wire.hold_for_usage)
        return RecognitionCheck(normalizer, self.name, "Chat Completions")

    @property
    def guards(self) -> Guards:
        """Stage 03 guards wherever a request goes (a request's own: ``guards_for``).

        OpenAI-compatible backends may leak think tags and reasoning tails, so the start window is held.
        """
        return Guards(think_tags=True, think_start_window=self.wire.think_start_window, spill=True)

    def guards_for(self, url: str | URL | None) -> Guards:
        """The guards of a request to *url* (``None``: the default base URL).

        ``guards``, with no start window where ``serves_tagless`` holds: the first text is shown at once.
        """
        guards = self.guards
        if guards.think_start_window and self.serves_tagless(url):
            return attrs.evolve(guards, think_start_window=0)
        return guards

    def serves_tagless(self, url: str | URL | None) -> bool:
        """Whether *url* (``None``: the default base URL) is one of ``WireOptions.tagless_origins``.

        Scheme, host and port must all match, so a base-URL override (``http://127.0.0.1``, a
        proxy, ``https://api.openai.com@127.0.0.1``, another port) keeps the start window.
        """
        target = url or self.wire.default_base_url
        if not target or not self.wire.tagless_origins:
            return False
        try:
            parsed = URL(target)
        except ValueError:  # not a URL: the transport refuses it; no window dropped meanwhile
            return False
        return any(same_origin(parsed, URL(origin)) for origin in self.wire.tagless_origins)

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        """Whether *raw* commits the stream (text, reasoning, a tool-call delta or usage)."""
        return has_meaningful_output(raw)

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        """The error *raw* carries (transport error, error event, ``finish_reason: "error"``), if any."""
        return chunk_error(raw, provider=self.name)

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        """A choice's ``finish_reason`` ends the stream (``data: [DONE]`` is read by the transport).

        Some OpenAI-compatible servers close after the finish reason without ``[DONE]``: the
        answer is whole (only a trailing usage chunk can be missing), so that is a clean end.
        """
        for raw in chunks:  # noqa: SIM110 (a loop, not any() over a generator: one call less per chunk)
            if _finish_reason_seen(raw.data):
                return True
        return False

    def describe_error(self, error: ProviderError) -> str:
        """The error embed's text (a model_error keeps the supported model ids)."""
        return describe_error(error, provider=self.name)


def _finish_reason_seen(data: object) -> bool:
    # Asked of every chunk until the end: decoded JSON is a dict, checked by type first, since
    # an isinstance against the Mapping ABC is a Python-level call per chunk and choice.
    if type(data) is not dict and not isinstance(data, Mapping):
        return False
    choices = data.get("choices")
    if not isinstance(choices, list):
        return False
    for choice in choices:
        if (type(choice) is dict or isinstance(choice, Mapping)) and choice.get("finish_reason"):
            return True
    return False
