"""Stage 03 as an operator: ``RawStreamChunk`` -> ``ProcessedChunk``.

All provider knowledge lives in the adapter's ``ChunkNormalizer``; this
operator creates one per subscription, feeds it, and releases what it held
back when the source completes. A normalizer that raises never crashes the
chain: the failure becomes a typed ``api_error`` chunk (and the stream ends
at the orchestrator, like any error).
"""

from __future__ import annotations

__all__ = ("normalization_failure", "normalize")

from collections.abc import Callable, Sequence

from loguru import logger

from rxcord.core.types import ChunkNormalizer, ErrorType, ProcessedChunk, ProviderError, RawStreamChunk
from rxcord.operators.fused import Fusable
from rxcord.operators.light import unbound

_log = logger.bind(stage="03-normalize")


def _failure(exc: Exception) -> ProcessedChunk:
    return ProcessedChunk.fail(
        ProviderError(
            type=ErrorType.API_ERROR,
            message=f"could not normalize a provider chunk: {type(exc).__name__}: {exc}",
            retryable=False,
            code="normalization_failed",
            original_error=exc,
        )
    )


def normalization_failure(exc: Exception, raw: RawStreamChunk | None = None) -> tuple[ProcessedChunk]:
    """A normalizer's failure as the one error chunk it becomes, logged.

    *raw*: the chunk it failed on (``None``: at the end of the stream). A normalizer that
    ``catches_failures`` calls it itself.
    """
    if raw is None:
        _log.opt(exception=exc).error("normalizer failed at end of stream")
    else:
        _log.opt(exception=exc).error("normalizer failed on a {provider} chunk", provider=raw.provider)
    return (_failure(exc),)


def normalize(factory: Callable[[], ChunkNormalizer]) -> Fusable:
    """Map raw provider chunks to processed chunks with a per-stream normalizer.

    .. marble::
        -r1----r2--|          r1 holds "<thi", r2 = "nk>x</think>Hi"
        [ normalize(f) ]
        -------B---(C,|)      B: thoughts "x", text "Hi"; C: what finish() releases

    Args:
        factory: Makes a fresh normalizer for each subscription.

    Returns:
        A fusable operator from ``RawStreamChunk`` to ``ProcessedChunk``
        (``rxcord.operators.fused``).
    """
    return Fusable(_NormalizingStage(factory), "normalize")


class _NormalizingStage:
    """The stage's factory: the adapter's normalizer factory (one object, not a closure over it).

    The factory is held as its function and its object (``unbound``): it is usually the
    adapter's ``new_normalizer``, and a bound method would be one more object per stream,
    kept as long as the chain, for each full collection to walk.
    """

    __slots__ = ("_factory_fn", "_factory_of")

    def __init__(self, factory: Callable[[], ChunkNormalizer]) -> None:
        self._factory_fn, self._factory_of = unbound(factory)

    def __call__(self) -> ChunkNormalizer:
        normalizer: ChunkNormalizer = self._factory_fn(self._factory_of)
        if getattr(normalizer, "catches_failures", False):
            # The adapters' RecognitionCheck turns its failures into the error chunk itself: it is
            # the stream's transducer, with no wrapper object and no wrapper call per chunk.
            return normalizer
        return _Normalizing(normalizer)


class _Normalizing:
    """The normalizer of one stream, with its failures turned into error chunks."""

    __slots__ = ("_normalizer",)

    def __init__(self, normalizer: ChunkNormalizer) -> None:
        self._normalizer = normalizer

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        try:
            return self._normalizer.feed(raw)
        except Exception as exc:
            return normalization_failure(exc, raw)

    def finish(self) -> Sequence[ProcessedChunk]:
        try:
            return self._normalizer.finish()
        except Exception as exc:
            return normalization_failure(exc)
