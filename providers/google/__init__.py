"""Google Gemini (``streamGenerateContent?alt=sse``), one module per stage.

* ``request``: stage 01, a ``ChatRequest`` as a ``GenerateContentRequest``.
* ``normalizer``: stage 03, each ``GenerateContentResponse`` as ``ProcessedChunk``s.
* ``adapter``: ``GoogleAdapter``, the ``ProviderAdapter`` on top of both.
"""

from rxcord.providers.google.adapter import GoogleAdapter

__all__ = ("GoogleAdapter",)
