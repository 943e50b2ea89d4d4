"""The one error classification table: every row is a named test, on captured bodies where possible."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.types import ErrorType, ProviderError
from rxcord.providers.errors import (
    classify_exception,
    classify_http_error,
    classify_stream_error,
    content_blocked,
    describe_error,
    error_facts,
    scrub,
)
from tests.providers.chat_completions.test_normalizer import load_json, sse_events


def http(provider: str, name: str, status: int, headers: dict[str, str] | None = None) -> ProviderError:
    return classify_http_error(status, load_json(provider, name), provider=provider, headers=headers)


def check(error: ProviderError, kind: ErrorType, retryable: bool) -> None:
    assert (error.type, error.retryable) == (kind, retryable), error


# -- row: HTTP 429, quota exhausted -> rate_limit, retryable -----------------


def test_row_http_429_is_retryable_rate_limit() -> None:
    """HTTP 429 is a retryable rate_limit (OpenAI TPM limit, OpenRouter free limit, NVIDIA)."""
    check(http("openai", "http_429_rate_limit", 429), ErrorType.RATE_LIMIT, True)
    check(http("openrouter", "http_429_free_limit", 429), ErrorType.RATE_LIMIT, True)
    check(http("nvidia", "http_429_too_many", 429), ErrorType.RATE_LIMIT, True)


def test_row_quota_exhausted_is_retryable_rate_limit() -> None:
    """An exhausted quota (``insufficient_quota``, ``RESOURCE_EXHAUSTED``) is a rate limit, in streams too."""
    error = http("openai", "http_429_insufficient_quota", 429)
    check(error, ErrorType.RATE_LIMIT, True)
    assert error.code == "insufficient_quota"
    stream = classify_stream_error(
        {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}, provider="google"
    )
    check(stream, ErrorType.RATE_LIMIT, True)


def test_row_rate_limit_keeps_retry_after() -> None:
    """A Retry-After header is kept in the rate-limit message."""
    error = http("openai", "http_429_rate_limit", 429, headers={"Retry-After": "7"})
    assert "retry after 7 s" in error.message


# -- row: HTTP 408, first-byte or idle timeout -> timeout, retryable ---------


def test_row_http_408_is_retryable_timeout() -> None:
    """HTTP 408 is a retryable timeout."""
    check(
        classify_http_error(408, {"error": {"message": "timed out", "code": 408}}, provider="openrouter"),
        ErrorType.TIMEOUT,
        True,
    )


@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError("first byte"),
        aiohttp.ConnectionTimeoutError(),
        aiohttp.SocketTimeoutError(),
        aiohttp.ServerTimeoutError("read"),
    ],
)
def test_row_first_byte_or_idle_timeout_is_retryable_timeout(exc: BaseException) -> None:
    """A first-byte or idle timeout exception is a retryable timeout."""
    check(classify_exception(exc, provider="openai"), ErrorType.TIMEOUT, True)


# -- row: overloaded -> provider_overloaded, retryable ------------------------


def test_row_anthropic_529_is_overloaded() -> None:
    """Anthropic's 529 and its ``overloaded_error`` stream event are provider_overloaded."""
    body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    check(classify_http_error(529, body, provider="anthropic"), ErrorType.PROVIDER_OVERLOADED, True)
    check(classify_stream_error(body, provider="anthropic"), ErrorType.PROVIDER_OVERLOADED, True)


def test_row_gemini_503_unavailable_is_overloaded() -> None:
    """Gemini's 503 ``UNAVAILABLE`` (HTTP or in-stream) is provider_overloaded."""
    body = {
        "error": {
            "code": 503,
            "message": "The model is overloaded. Please try again later.",
            "status": "UNAVAILABLE",
        }
    }
    check(classify_http_error(503, body, provider="google"), ErrorType.PROVIDER_OVERLOADED, True)
    check(classify_stream_error(body, provider="google"), ErrorType.PROVIDER_OVERLOADED, True)


def test_row_overloaded_wording_in_5xx_is_overloaded() -> None:
    """A 5xx that says "overloaded" is provider_overloaded."""
    check(http("openai", "http_503_overloaded", 503), ErrorType.PROVIDER_OVERLOADED, True)


# -- row: unknown/unsupported model -> model_error, not retryable -------------


def test_row_404_is_model_error() -> None:
    """A 404 is a non-retryable model_error (OpenAI, NVIDIA, vLLM shapes)."""
    error = http("openai", "http_404_model_not_found", 404)
    check(error, ErrorType.MODEL_ERROR, False)
    assert "gpt-5-ultra" in error.message
    check(http("nvidia", "http_404_function_not_found", 404), ErrorType.MODEL_ERROR, False)
    check(http("custom", "http_404_model_vllm", 404), ErrorType.MODEL_ERROR, False)


def test_row_400_naming_the_model_is_model_error_with_supported_ids() -> None:
    """A 400 naming the model is a model_error whose message keeps the supported model ids."""
    error = http("custom", "http_400_model_supported_list", 400)
    check(error, ErrorType.MODEL_ERROR, False)
    for model_id in ("qwen3-32b", "llama-3.3-70b-instruct", "mistral-small-3.2-24b"):
        assert model_id in error.message
        assert model_id in describe_error(error, provider="custom")
    check(http("openrouter", "http_400_invalid_model", 400), ErrorType.MODEL_ERROR, False)


def test_row_410_retired_model_is_model_error() -> None:
    """NVIDIA's 410 for a model past its end of life is a model_error."""
    check(http("nvidia", "http_410_model_gone", 410), ErrorType.MODEL_ERROR, False)


def test_row_400_naming_a_parameter_is_not_a_model_error() -> None:
    """ "'temperature' is not supported with this model" is about a parameter: api_error."""
    error = http("openai", "http_400_unsupported_parameter", 400)
    check(error, ErrorType.API_ERROR, False)
    assert "temperature" in error.message


def test_row_stream_not_found_error_is_model_error() -> None:
    """Anthropic's ``not_found_error`` event is a model_error."""
    body = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-9"}}
    check(classify_stream_error(body, provider="anthropic"), ErrorType.MODEL_ERROR, False)


# -- row: safety block -> content_blocked, not retryable ----------------------


def test_row_flagged_prompt_is_content_blocked() -> None:
    """A prompt flagged for the usage policy is a non-retryable content_blocked."""
    check(http("openai", "http_400_invalid_prompt", 400), ErrorType.CONTENT_BLOCKED, False)


def test_row_openrouter_moderation_403_is_content_blocked() -> None:
    """OpenRouter's moderation 403 (``reasons``, ``flagged_input``) is content_blocked, reasons kept."""
    error = http("openrouter", "http_403_moderation", 403)
    check(error, ErrorType.CONTENT_BLOCKED, False)
    assert "violence" in error.message


def test_row_content_filter_code_is_content_blocked() -> None:
    """An Azure-style ``content_filter`` code is content_blocked."""
    body = {"error": {"message": "The response was filtered", "code": "content_filter", "status": 400}}
    check(classify_http_error(400, body, provider="custom"), ErrorType.CONTENT_BLOCKED, False)


def test_content_blocked_helper() -> None:
    """``content_blocked`` builds a non-retryable content_blocked error, scrubbed."""
    error = content_blocked("blocked for sk-abcdefghijkl", code="SAFETY", original={"x": 1})
    check(error, ErrorType.CONTENT_BLOCKED, False)
    assert error.code == "SAFETY"
    assert "abcdefghijkl" not in error.message


# -- row: other upstream 5xx, mid-stream server_error, reset -> api_error, retryable


@pytest.mark.parametrize(
    ("provider", "name", "status"),
    [
        ("openai", "http_500_server_error", 500),
        ("openrouter", "http_502_provider", 502),
        ("openrouter", "http_503_no_provider", 503),
        ("nvidia", "http_500_opaque", 500),
    ],
)
def test_row_other_5xx_is_retryable_api_error(provider: str, name: str, status: int) -> None:
    """Other upstream 5xx are retryable api_errors."""
    error = http(provider, name, status)
    check(error, ErrorType.API_ERROR, True)
    assert error.status == status


def test_row_mid_stream_server_error_is_retryable_api_error() -> None:
    """OpenRouter's mid-stream ``server_error`` (finish_reason error) is a retryable api_error."""
    error = classify_stream_error(sse_events("openrouter", "mid_stream_error")[-1], provider="openrouter")
    check(error, ErrorType.API_ERROR, True)
    assert error.status is None
    assert "Provider disconnected unexpectedly" in error.message
    check(
        classify_stream_error(sse_events("openai", "mid_stream_error")[-1], provider="openai"),
        ErrorType.API_ERROR,
        True,
    )


def test_row_bare_error_finish_is_retryable_api_error() -> None:
    """A chunk that only says ``finish_reason: "error"`` is a retryable api_error."""
    error = classify_stream_error(
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "error"}]}, provider="openrouter"
    )
    check(error, ErrorType.API_ERROR, True)
    assert "finish_reason 'error'" in error.message


@pytest.mark.parametrize(
    "exc",
    [
        aiohttp.ServerDisconnectedError(),
        aiohttp.ClientPayloadError("Response payload is not completed"),
        ConnectionResetError(104, "Connection reset by peer"),
    ],
)
def test_row_connection_reset_is_retryable_api_error(exc: BaseException) -> None:
    """A dropped connection is a retryable api_error."""
    check(classify_exception(exc, provider="openai"), ErrorType.API_ERROR, True)


def test_unknown_exception_is_not_retryable() -> None:
    """A bug-shaped exception (not a transport failure) is a non-retryable api_error."""
    check(classify_exception(ValueError("bad"), provider="openai"), ErrorType.API_ERROR, False)


# -- row: 400 (other), 401, 403, other 4xx -> api_error, not retryable --------


@pytest.mark.parametrize(
    ("provider", "name", "status"),
    [
        ("openai", "http_401_invalid_api_key", 401),
        ("openrouter", "http_401_no_auth", 401),
        ("nvidia", "http_401_unauthorized", 401),
        ("openrouter", "http_402_credits", 402),
        ("openrouter", "http_400_provider_param", 400),
        ("nvidia", "http_400_extra_inputs", 400),
        ("custom", "http_422_validation", 422),
    ],
)
def test_row_other_4xx_is_not_retryable_api_error(provider: str, name: str, status: int) -> None:
    """401, 402, other 400s and other 4xx are non-retryable api_errors."""
    check(http(provider, name, status), ErrorType.API_ERROR, False)


def test_row_403_without_moderation_is_not_retryable_api_error() -> None:
    """A plain 403 (permissions) is a non-retryable api_error, not a content block."""
    body = {"error": {"message": "Your key is not allowed to use this model family", "code": 403}}
    check(classify_http_error(403, body, provider="openrouter"), ErrorType.API_ERROR, False)


def test_row_stream_permission_error_is_not_retryable() -> None:
    """Anthropic's ``permission_error`` event maps to a 403: not retryable."""
    body = {"type": "error", "error": {"type": "permission_error", "message": "no"}}
    check(classify_stream_error(body, provider="anthropic"), ErrorType.API_ERROR, False)


# -- body shapes and messages ------------------------------------------------


def test_2xx_error_body_is_classified_like_a_stream_error() -> None:
    """A 200 JSON body holding an error is classified from its code; its status stays 200."""
    error = classify_http_error(
        200, {"error": {"code": 502, "message": "Provider returned error"}}, provider="openrouter"
    )
    check(error, ErrorType.API_ERROR, True)
    assert error.status == 200


def test_openrouter_raw_provider_message_is_kept() -> None:
    """OpenRouter's ``metadata.raw`` and ``provider_name`` are appended to "Provider returned error"."""
    error = http("openrouter", "http_400_provider_param", 400)
    assert "frequency_penalty" in error.message
    assert "via Azure" in error.message


def test_problem_details_and_validation_details() -> None:
    """NVIDIA problem details use ``detail``; FastAPI validation lists become ``loc: msg``."""
    assert "Not found for account" in http("nvidia", "http_404_function_not_found", 404).message
    assert http("custom", "http_422_validation", 422).message == "messages: Field required"


def test_html_body_uses_its_title() -> None:
    """An HTML error page from a proxy gives its title, not the markup."""
    error = classify_http_error(
        502, "<html><head><title>502 Bad Gateway</title></head><body>...</body></html>", provider="custom"
    )
    assert error.message == "502 Bad Gateway"


def test_empty_body_uses_the_reason_phrase() -> None:
    """No body at all gives the status and its phrase."""
    assert classify_http_error(503, "", provider="custom").message == "HTTP 503 Service Unavailable"


@pytest.mark.parametrize(
    "body",
    [
        [{"error": {"code": 404, "message": "m", "status": "NOT_FOUND"}}],
        {"error": "Model not found"},
        b"plain",
    ],
)
def test_error_facts_accepts_other_shapes(body: Any) -> None:
    """A list-wrapped body, a string ``error`` and bytes all give a message."""
    assert error_facts(body).message


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Incorrect API key provided: sk-proj-abcdefghijklmnop1234", "abcdefghijklmnop1234"),
        ("header was Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload", "eyJhbGciOiJIUzI1NiJ9"),
        ("GET https://x.test/v1/models?key=AIzaSyD-secret-value-123&alt=sse", "secret-value-123"),
        ("NVIDIA key nvapi-Qw3rTy7uI9oP0aSdFgHjKl", "Qw3rTy7uI9oP0aSdFgHjKl"),
        ("sent x-api-key: sk-ant-api03-zzzzzzzzzzzz", "zzzzzzzzzzzz"),
    ],
)
def test_messages_never_contain_keys(text: str, secret: str) -> None:
    """API keys, bearer tokens and ``key=`` parameters are scrubbed from every message."""
    assert secret not in scrub(text)
    for error in (
        classify_http_error(401, {"error": {"message": text}}, provider="openai"),
        classify_stream_error({"error": {"message": text}}, provider="openai"),
        classify_exception(aiohttp.ClientConnectionError(text), provider="google"),
    ):
        assert secret not in error.message
        assert secret not in describe_error(error, provider="openai")


def test_openai_401_masked_key_is_scrubbed() -> None:
    """Even OpenAI's partly masked key in a 401 message is removed."""
    error = http("openai", "http_401_invalid_api_key", 401)
    assert "Xb9Q" not in error.message and "sk-proj" not in error.message


@settings(max_examples=50, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_-", min_size=12, max_size=40))
def test_any_sk_key_is_scrubbed(key: str) -> None:
    """Whatever follows ``sk-``, it never survives classification."""
    error = classify_http_error(401, {"error": {"message": f"bad key sk-{key} used"}}, provider="openai")
    assert key not in error.message


# -- describe_error ------------------------------------------------------------


def test_describe_error_names_the_provider_and_keeps_details() -> None:
    """The embed text has a headline per type and provider, then the provider's details."""
    text = describe_error(http("openrouter", "http_429_free_limit", 429), provider="openrouter")
    assert text.startswith("OpenRouter is rate limiting")
    assert "free-models-per-day" in text
    api = describe_error(http("nvidia", "http_401_unauthorized", 401), provider="nvidia")
    assert api.startswith("NVIDIA NIM returned an error (HTTP 401).")


def test_describe_error_fits_an_embed() -> None:
    """The text never exceeds Discord's 4096-character embed description."""
    error = ProviderError(type=ErrorType.MODEL_ERROR, message="m" * 10000, retryable=False)
    assert len(describe_error(error, provider="custom")) <= 4096
