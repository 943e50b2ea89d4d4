"""Anthropic Messages, one module per stage.

* ``request``: stage 01, a ``ChatRequest`` as a Messages API body (thinking replay included).
* ``normalizer``: stage 03, the streamed events as ``ProcessedChunk``s.
* ``adapter``: ``AnthropicAdapter``, the ``ProviderAdapter`` on top of both.
"""

from rxcord.providers.anthropic.adapter import AnthropicAdapter

__all__ = ("AnthropicAdapter",)
