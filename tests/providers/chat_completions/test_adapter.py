"""The shared Chat Completions adapter: request URLs and headers per provider, commitment and rejection."""

from __future__ import annotations

from typing import Any

import pytest

from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest
from rxcord.core.types import ErrorType, ProviderError, RawStreamChunk
from rxcord.providers.chat_completions.normalizer import chunk_error, has_meaningful_output
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.nvidia import NVIDIA_BASE_URL, NvidiaAdapter
from rxcord.providers.openai import OPENAI_BASE_URL, OpenAIAdapter
from tests.providers.chat_completions.test_normalizer import sse_events
from tests.providers.chat_completions.test_request import _tool_loop_request


def test_openai_adapter_request() -> None:
    """OpenAI: default base URL, bearer key, ``max_completion_tokens``, no ``top_k``."""
    http = OpenAIAdapter().build_request(_tool_loop_request(), api_key="sk-test")
    assert http.url == f"{OPENAI_BASE_URL}/chat/completions"
    assert http.headers["Authorization"] == "Bearer sk-test"
    assert http.body["max_completion_tokens"] == 256
    assert "max_tokens" not in http.body
    assert "top_k" not in http.body
    assert "sk-test" not in repr(http)


def test_nvidia_adapter_request_and_url_joining() -> None:
    """NVIDIA: default base URL; a given base URL with a trailing slash or the full path is joined once."""
    assert NvidiaAdapter().build_request(ChatRequest(model="m"), api_key="k").url == (
        f"{NVIDIA_BASE_URL}/chat/completions"
    )
    for base in ("http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000/v1/chat/completions"):
        url = NvidiaAdapter().build_request(ChatRequest(model="m"), base_url=base, api_key=None).url
        assert url == "http://127.0.0.1:8000/v1/chat/completions"


def test_custom_adapter_needs_a_base_url_and_no_key() -> None:
    """A custom endpoint has no default URL; without a key no Authorization header is sent."""
    with pytest.raises(InputError):
        CustomAdapter().build_request(ChatRequest(model="m"), api_key=None)
    http = CustomAdapter().build_request(
        ChatRequest(model="m"), base_url="http://127.0.0.1:1/v1", api_key=None
    )
    assert "Authorization" not in http.headers


# ---------------------------------------------------------------------------
# Commitment and rejection
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "meaningful"),
    [
        ({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}, False),
        ({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}, False),
        ({"choices": []}, False),
        ({"choices": [{"index": 0, "delta": {"content": "a"}}]}, True),
        ({"choices": [{"index": 0, "delta": {"reasoning": "r"}}]}, True),
        (
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"reasoning_details": [{"type": "reasoning.encrypted", "data": "x"}]},
                    }
                ]
            },
            True,
        ),
        ({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c"}]}}]}, True),
        ({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 0}}, True),
        ({"error": {"message": "x"}}, False),
    ],
)
def test_is_meaningful(data: Any, meaningful: bool) -> None:
    """Text, reasoning, tool-call deltas and usage commit a stream; keepalives and errors do not."""
    assert has_meaningful_output(RawStreamChunk(provider="openai", data=data)) is meaningful
    assert OpenAIAdapter().is_meaningful(RawStreamChunk(provider="openai", data=data)) is meaningful


def test_rejection_sees_error_events_and_transport_errors() -> None:
    """``rejection`` returns the error of an error event, a ``finish_reason: error`` or a transport error."""
    adapter = OpenAIAdapter()
    assert (
        adapter.rejection(RawStreamChunk(provider="openai", data={"choices": [{"delta": {"content": "a"}}]}))
        is None
    )
    failure = ProviderError(type=ErrorType.API_ERROR, message="reset", retryable=True)
    assert adapter.rejection(RawStreamChunk(provider="openai", error=failure)) is failure
    stream_error = adapter.rejection(
        RawStreamChunk(provider="openai", data=sse_events("openai", "mid_stream_error")[-1])
    )
    assert stream_error is not None and stream_error.type is ErrorType.API_ERROR
    bare = adapter.rejection(
        RawStreamChunk(provider="openai", data={"choices": [{"delta": {}, "finish_reason": "error"}]})
    )
    assert bare is not None and bare.retryable
    assert chunk_error(RawStreamChunk(provider="x", data="text"), provider="x") is None
