"""The Anthropic adapter: identity, policy, request URL and headers, commitment and rejection."""

from __future__ import annotations

from rxcord.core.types import ErrorType
from rxcord.providers.anthropic.adapter import ANTHROPIC_VERSION
from tests.providers.anthropic.test_normalizer import ADAPTER, _ev, _json_delta, _text_delta, _tool_start
from tests.providers.anthropic.test_request import _history

# --------------------------------------------------------------------------- adapter


def test_adapter_identity_and_policy() -> None:
    """The adapter is named anthropic and never degrades payloads."""
    assert ADAPTER.name == "anthropic"
    assert ADAPTER.policy.enabled is False


def test_is_meaningful_and_rejection() -> None:
    """Text, thinking, tool deltas and usage commit; ping and empty starts do not; error events reject."""
    assert ADAPTER.is_meaningful(_text_delta("x"))
    assert ADAPTER.is_meaningful(_json_delta('{"a"'))
    assert ADAPTER.is_meaningful(_tool_start())
    assert ADAPTER.is_meaningful(_ev("message_start", message={"usage": {"input_tokens": 3}}))
    assert not ADAPTER.is_meaningful(_ev("ping"))
    assert not ADAPTER.is_meaningful(
        _ev("content_block_start", index=0, content_block={"type": "text", "text": ""})
    )
    assert not ADAPTER.is_meaningful(_ev("content_block_stop", index=0))
    assert ADAPTER.rejection(_text_delta("x")) is None
    rejected = ADAPTER.rejection(
        _ev("error", error={"type": "api_error", "message": "Internal server error"})
    )
    assert rejected is not None and rejected.type is ErrorType.API_ERROR and rejected.retryable


def test_request_url_and_headers() -> None:
    """POST {base}/v1/messages with x-api-key and anthropic-version; the key stays out of reprs."""
    request = ADAPTER.build_request(
        _history(), base_url="https://api.anthropic.com/", api_key="sk-ant-SECRET"
    )
    assert request.url == "https://api.anthropic.com/v1/messages"
    assert request.headers["x-api-key"] == "sk-ant-SECRET"
    assert request.headers["anthropic-version"] == ANTHROPIC_VERSION == "2023-06-01"
    assert "SECRET" not in repr(request)
    assert request.body["stream"] is True and request.stream is True
