"""Stage 03 as an operator: ``RawStreamChunk`` -> ``ProcessedChunk``.

All provider knowledge lives in the adapter's ``ChunkNormalizer``; this
operator creates one per subscription, feeds it, and releases what it held
back when the source completes. A normalizer that raises never crashes the
chain: the failure becomes a typed ``api_error`` chunk (and the stream ends
at the orchestrator, like any error).
"""

from __future__ import annotations

__all__ = ("normalize",)

from collections.abc import Callable, Sequence

from loguru import logger
from reactivex import Observable, abc
from rxcord.core.types import (
    ChunkNormalizer,
    ErrorType,
    Operator,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
)

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


def normalize(factory: Callable[[], ChunkNormalizer]) -> Operator[RawStreamChunk, ProcessedChunk]:
    """Map raw provider chunks to processed chunks with a per-stream normalizer.

    .. marble::
        -r1----r2--|          r1 holds "<thi", r2 = "nk>x</think>Hi"
        [ normalize(f) ]
        -------B---(C,|)      B: thoughts "x", text "Hi"; C: what finish() releases

    Args:
        factory: Makes a fresh normalizer for each subscription.

    Returns:
        An operator from ``RawStreamChunk`` to ``ProcessedChunk``.
    """

    def _op(source: Observable[RawStreamChunk]) -> Observable[ProcessedChunk]:
        def subscribe(
            observer: abc.ObserverBase[ProcessedChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            normalizer = factory()

            def emit(chunks: Sequence[ProcessedChunk]) -> None:
                for chunk in chunks:
                    observer.on_next(chunk)

            def on_next(raw: RawStreamChunk) -> None:
                try:
                    chunks = normalizer.feed(raw)
                except Exception as exc:
                    _log.opt(exception=exc).error(
                        "normalizer failed on a {provider} chunk", provider=raw.provider
                    )
                    chunks = (_failure(exc),)
                emit(chunks)

            def on_completed() -> None:
                try:
                    chunks = normalizer.finish()
                except Exception as exc:
                    _log.opt(exception=exc).error("normalizer failed at end of stream")
                    chunks = (_failure(exc),)
                emit(chunks)
                observer.on_completed()

            return source.subscribe(on_next, observer.on_error, on_completed, scheduler=scheduler)

        return Observable(subscribe)

    return _op
