"""Stage 07's error embed: the Discord embed that reports a provider error to users."""

from __future__ import annotations

from rxcord.core.types import ErrorType, ProviderError
from rxcord.sinks.error_embed import error_embed


def test_error_embed_fields() -> None:
    """The embed has a title by type, the message (kept whole up to 4096), a colour and a footer."""
    error = ProviderError(
        type=ErrorType.MODEL_ERROR,
        message="Model x not found. Supported: a-1, b-2, c-3",
        retryable=False,
        status=404,
        code="model_not_found",
    )
    assert error_embed(error) == {
        "title": "Model unavailable",
        "description": "Model x not found. Supported: a-1, b-2, c-3",
        "color": 0xED4245,
        "footer": {"text": "HTTP 404 · model_not_found"},
    }
    long = error_embed(ProviderError(type=ErrorType.API_ERROR, message="x" * 5000, retryable=False))
    assert len(long["description"]) == 4096 and long["description"].endswith("…")
    assert "footer" not in long
