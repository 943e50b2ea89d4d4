"""The Gemini adapter: identity, policy, request URL and key header, commitment and rejection."""

from __future__ import annotations

from rxcord.core.types import ErrorType, RawStreamChunk
from tests.providers.google.test_normalizer import ADAPTER, _event, _sse
from tests.providers.google.test_request import _history

# --------------------------------------------------------------------------- adapter


def test_adapter_identity_and_policy() -> None:
    """The adapter is named google and never degrades payloads."""
    assert ADAPTER.name == "google"
    assert ADAPTER.policy.enabled is False


def test_is_meaningful_and_rejection() -> None:
    """Text, calls and usage commit; an empty chunk does not; an error object is a rejection."""
    assert ADAPTER.is_meaningful(_event([{"text": "x"}]))
    assert ADAPTER.is_meaningful(_event([{"functionCall": {"name": "f"}}]))
    assert ADAPTER.is_meaningful(_event([], usageMetadata={"promptTokenCount": 3}))
    assert not ADAPTER.is_meaningful(_event([{"text": ""}]))
    assert not ADAPTER.is_meaningful(RawStreamChunk(provider="google", data={"modelVersion": "m"}))
    error_raw = _sse("mid_stream_error.sse")[-1]
    assert not ADAPTER.is_meaningful(error_raw)
    rejected = ADAPTER.rejection(error_raw)
    assert rejected is not None and rejected.type is ErrorType.API_ERROR
    assert ADAPTER.rejection(_event([{"text": "x"}])) is None


def test_request_url_and_key_header() -> None:
    """The key goes in x-goog-api-key, never in the URL; alt=sse asks for SSE."""
    request = ADAPTER.build_request(
        _history(), base_url="https://generativelanguage.googleapis.com/", api_key="AIzaSECRET"
    )
    assert request.url == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert request.headers["x-goog-api-key"] == "AIzaSECRET"
    assert "AIzaSECRET" not in request.url and "key=" not in request.url
    assert "AIzaSECRET" not in repr(request)
    assert request.stream is True
    unstreamed = ADAPTER.build_request(_history(), base_url="http://127.0.0.1:1", api_key=None, stream=False)
    assert unstreamed.url == "http://127.0.0.1:1/v1beta/models/gemini-2.5-flash:generateContent"
    assert "x-goog-api-key" not in unstreamed.headers
    assert unstreamed.stream is False
