"""The Chat Completions wire, shared by the OpenAI-compatible providers, one module per stage.

* ``request``: stage 01, a ``ChatRequest`` as a Chat Completions body.
* ``normalizer``: stage 03, ``chat.completion.chunk`` events as ``ProcessedChunk``s.
* ``adapter``: ``ChatCompletionsAdapter``, the ``ProviderAdapter`` methods on top of both.

The per-provider adapters built on it stay beside this room: ``rxcord.providers.openai``,
``.openrouter``, ``.nvidia`` and ``.custom``.
"""
