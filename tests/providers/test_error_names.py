"""Error names: a 404 is a ``model_error`` only when its body says the model is unknown, else a path error.

Bodies are the providers' own shapes (captured where a capture exists, otherwise written as the
provider documents or returns them); each family has a model-unknown 404 and a wrong-path 404.
"""

from __future__ import annotations

from typing import Any

import pytest

from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ErrorType, StreamStatus
from rxcord.providers.errors import (
    ENDPOINT_NOT_FOUND,
    ProviderLimit,
    classify_http_error,
    classify_stream_error,
    describe_error,
    provider_limit,
)
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer
from tests.providers.chat_completions.test_normalizer import load_json

# -- model unknown or unavailable: model_error --------------------------------------------------

MODEL_UNKNOWN: list[tuple[str, Any]] = [
    ("openai", load_json("openai", "http_404_model_not_found")),
    ("anthropic", load_json("anthropic", "http_404_unknown_model")),
    ("google", load_json("google", "http_404_unknown_model")),
    ("openrouter", load_json("openrouter", "http_404_no_image_endpoints")),
    ("openrouter", {"error": {"message": "No endpoints found for openai/gpt-9-turbo.", "code": 404}}),
    ("nvidia", load_json("nvidia", "http_404_function_not_found")),
    ("custom", load_json("custom", "http_404_model_vllm")),
    # Ollama's OpenAI-compatible endpoint for a model that was never pulled.
    ("custom", {"error": {"message": 'model "llama9" not found, try pulling it first', "code": None}}),
]


@pytest.mark.parametrize(("provider", "body"), MODEL_UNKNOWN)
def test_404_saying_the_model_is_unknown_is_a_model_error(provider: str, body: Any) -> None:
    """Each family's model-not-found 404 is a non-retryable model_error with the provider's words."""
    error = classify_http_error(
        404, body, provider=provider, url="https://api.example.com/v1/chat/completions"
    )
    assert (error.type, error.retryable) == (ErrorType.MODEL_ERROR, False), error
    assert error.code != ENDPOINT_NOT_FOUND and "base_url" not in error.message


# -- a 404 that says nothing about the model: the path is wrong ---------------------------------

WRONG_PATH: list[tuple[str, Any, str]] = [
    # OpenAI, a path with a typo.
    (
        "openai",
        {
            "error": {
                "message": "Invalid URL (POST /v1/chat/completion)",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
        "https://api.openai.com/v1/chat/completion",
    ),
    # Anthropic, a base URL with /v1 twice.
    (
        "anthropic",
        {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}},
        "https://api.anthropic.com/v1/v1/messages",
    ),
    # Google's front end answers an unknown path with an HTML page.
    (
        "google",
        "<!DOCTYPE html><html lang=en><title>Error 404 (Not Found)!!1</title><p>The requested URL "
        "<code>/v1beta/model/gemini-2.5-flash:streamGenerateContent</code> was not found on this server.",
        "https://generativelanguage.googleapis.com/v1beta/model/gemini-2.5-flash:streamGenerateContent",
    ),
    # OpenRouter without /api/v1: the web app's 404 page.
    (
        "openrouter",
        "<!DOCTYPE html><html><head><title>404: This page could not be found.</title></head></html>",
        "https://openrouter.ai/chat/completions",
    ),
    (
        "nvidia",
        {"status": 404, "title": "Not Found", "detail": "Not Found"},
        "https://integrate.api.nvidia.com/chat/completions",
    ),
    # vLLM (FastAPI) and Ollama for a route they do not have.
    ("custom", {"detail": "Not Found"}, "http://127.0.0.1:8000/v2/chat/completions"),
    ("custom", "404 page not found", "http://127.0.0.1:11434/chat/completions"),
]


@pytest.mark.parametrize(("provider", "body", "url"), WRONG_PATH)
def test_404_not_about_the_model_names_the_path_and_base_url(provider: str, body: Any, url: str) -> None:
    """A wrong-path 404 is an api_error: its message names the path, the embed says to check base_url."""
    error = classify_http_error(404, body, provider=provider, url=url)
    assert (error.type, error.retryable, error.code) == (ErrorType.API_ERROR, False, ENDPOINT_NOT_FOUND)
    path = url.split("://", 1)[1].split("/", 1)[1]
    assert f"/{path}" in error.message and "base_url" in error.message
    shown = describe_error(error, provider=provider)
    assert "cannot serve the selected model" not in shown
    assert "base_url" in shown and f"/{path}" in shown


def test_wrong_path_message_never_carries_the_query() -> None:
    """Only the path is named: a query string may hold the API key (Gemini's ``key=``)."""
    url = "https://generativelanguage.googleapis.com/v1/x:streamGenerateContent?alt=sse&key=AIzaSyExampleKey123456"
    error = classify_http_error(404, "<title>Error 404 (Not Found)!!1</title>", provider="google", url=url)
    assert "/v1/x:streamGenerateContent" in error.message and "AIza" not in error.message
    assert "alt=sse" not in error.message


def test_wrong_path_without_a_url_still_points_at_base_url() -> None:
    """A caller that has no URL (none given) still gets the base_url hint, not a model error."""
    error = classify_http_error(404, {"detail": "Not Found"}, provider="custom")
    assert error.type is ErrorType.API_ERROR and "base_url" in error.message


def test_stream_not_found_without_a_model_is_not_a_model_error() -> None:
    """An in-stream ``not_found_error`` that names no model is a plain, non-retryable api_error."""
    body = {"type": "error", "error": {"type": "not_found_error", "message": "File not found: file_011"}}
    error = classify_stream_error(body, provider="anthropic")
    assert (error.type, error.retryable) == (ErrorType.API_ERROR, False)


async def test_wrong_base_url_through_the_transport_names_the_served_path() -> None:
    """End to end: a server answering 404 on the path built from base_url; the embed says which path."""
    body = (
        b'{"error": {"message": "Invalid URL (POST /v2/chat/completions)", "type": "invalid_request_error"}}'
    )
    sink = MemorySink()
    from rxcord.compose.run import stream_to_discord

    async with ReplayServer(body=body, status=404, content_type="application/json") as server:
        result = await stream_to_discord(
            OpenAIAdapter(),
            ChatRequest(model="gpt-4o", messages=(Message.user("hi"),)),
            sink=sink,
            base_url=f"{server.base_url}/v2",
            api_key="sk-test-key-000000",
            transport=TransportConfig(allow_private_network=True),
        )
    assert server.requests[0].path == "/v2/chat/completions"
    assert result.status is StreamStatus.ERROR and result.error is not None
    assert result.error.type is ErrorType.API_ERROR and result.error.code == ENDPOINT_NOT_FOUND
    [payload] = sink.payloads
    description = payload["embeds"][0]["description"]
    assert "/v2/chat/completions" in description and "base_url" in description


# -- OpenRouter's limit_source ------------------------------------------------------------------


def _limit_body(source: object, minimum: object = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"limit_source": source, "raw": "provider prose"}
    if minimum is not None:
        metadata["minimum_balance"] = minimum
    return {"error": {"code": 402, "message": "Insufficient credits", "metadata": metadata}}


def test_limit_source_is_the_code_and_reads_back_with_its_minimum() -> None:
    """A member key's refusal with a minimum balance: the code is the limit source, the limit reads back."""
    error = classify_http_error(402, _limit_body("openrouter_in_flight_budget", 0.5), provider="openrouter")
    assert (error.type, error.retryable, error.code) == (
        ErrorType.API_ERROR,
        False,
        "openrouter_in_flight_budget",
    )
    assert provider_limit(error) == ProviderLimit(
        limit_source="openrouter_in_flight_budget", minimum_balance=0.5
    )


def test_key_limit_is_kept_as_the_code_and_read_back_validated() -> None:
    """A key's own cap: a non-retryable api_error coded ``openrouter_key_limit``; the limit reads back."""
    error = classify_http_error(402, _limit_body("openrouter_key_limit"), provider="openrouter")
    assert (error.type, error.retryable, error.code) == (ErrorType.API_ERROR, False, "openrouter_key_limit")
    assert provider_limit(error) == ProviderLimit(limit_source="openrouter_key_limit")
    stream = classify_stream_error(_limit_body("openrouter_credits"), provider="openrouter")
    assert stream.code == "openrouter_credits" and provider_limit(stream) is not None


@pytest.mark.parametrize(
    ("source", "minimum"),
    [("Robert'); DROP", None), ("x" * 65, None), (7, None), (None, float("nan")), (None, -1), (None, True)],
)
def test_invalid_limit_metadata_is_dropped(source: object, minimum: object) -> None:
    """A limit source that is not an identifier, or a minimum not finite and >= 0, is not kept."""
    error = classify_http_error(402, _limit_body(source, minimum), provider="openrouter")
    assert provider_limit(error) is None and error.code == 402
