"""``rxcord.bot.failures``: the provider named only on its own service; notices name no host."""

from __future__ import annotations

import attrs
import pytest
from loguru import logger

from rxcord import Candidate, StreamStatus, TurnResult
from rxcord.bot.failures import host_of, log_failures, user_notice, who
from rxcord.bot.models import ADAPTERS
from rxcord.compose.turn import Attempt
from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.state import SentMessage, StreamResult
from rxcord.providers import ErrorType, ProviderError


def _candidate(provider: str, base_url: str | None) -> Candidate:
    return Candidate(
        adapter=ADAPTERS[provider](), model="m", api_key="sk-live-1234567890", base_url=base_url, label="c#1"
    )


def _failed(error: ProviderError, denial: ProviderRequestDeniedError | None = None) -> TurnResult:
    result = StreamResult(status=StreamStatus.ERROR, error=error)
    attempt = Attempt(label="c#1", status=StreamStatus.ERROR, error=error, denial=denial)
    return TurnResult(result=result, results=(result,), attempts=(attempt,), usage=None)


@pytest.mark.parametrize(
    ("provider", "base_url", "name", "host"),
    [
        ("openrouter", None, "OpenRouter", "openrouter.ai"),
        ("openrouter", "https://openrouter.ai/api/v1", "OpenRouter", "openrouter.ai"),
        ("openrouter", "http://10.1.2.3:8080/v1", "The model's server", "10.1.2.3:8080"),
        ("openai", "https://proxy.example/v1", "The model's server", "proxy.example"),
        ("custom", "http://127.0.0.1:9/v1", "The model's server", "127.0.0.1:9"),
    ],
)
def test_the_provider_is_named_only_on_its_own_service(
    provider: str, base_url: str | None, name: str, host: str
) -> None:
    candidate = _candidate(provider, base_url)
    assert who(candidate) == name
    assert host_of(candidate) == host


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (
            ProviderError(type=ErrorType.TIMEOUT, message="x did not answer (TimeoutError)", retryable=True),
            "did not answer in time.",
        ),
        (
            ProviderError(
                type=ErrorType.API_ERROR, message="connection to 10.1.2.3:8080 failed", retryable=True
            ),
            "could not be reached.",
        ),
        (
            ProviderError(type=ErrorType.API_ERROR, message="ssrf", retryable=False, code="ssrf_refused"),
            "could not be reached.",
        ),
        (
            ProviderError(type=ErrorType.MODEL_ERROR, message="no such model", retryable=False, status=404),
            "cannot serve the configured model.",
        ),
        (
            ProviderError(type=ErrorType.API_ERROR, message="no credit", retryable=False, status=402),
            "refused the bot's API key or its credit is used up.",
        ),
    ],
)
def test_a_notice_is_plain_and_names_no_host(error: ProviderError, sentence: str) -> None:
    notice = user_notice(_failed(error), [_candidate("openrouter", "http://10.1.2.3:8080/v1")])
    assert notice == f"⚠ The model's server {sentence} The bot's operator can see why in its log."


def test_a_failure_after_delivery_began_says_the_answer_is_incomplete() -> None:
    error = ProviderError(type=ErrorType.API_ERROR, message="cut", retryable=True)
    turn = _failed(error)
    turn = attrs.evolve(
        turn,
        result=attrs.evolve(
            turn.result, messages=(SentMessage(payload={"content": "half"}, message_id="1"),)
        ),
    )
    assert user_notice(turn, [_candidate("openai", None)]) == (
        "⚠ OpenAI stopped answering partway: the answer above is incomplete. "
        "The bot's operator can see why in its log."
    )


def test_a_denial_keeps_its_own_words() -> None:
    denial = ProviderRequestDeniedError(context=None, reason="You are over today's allowance.")
    error = ProviderError(type=ErrorType.API_ERROR, message="denied", retryable=False)
    assert (
        user_notice(_failed(error, denial), [_candidate("openai", None)]) == "You are over today's allowance."
    )


def test_an_answered_turn_has_no_notice() -> None:
    result = StreamResult(status=StreamStatus.COMPLETED)
    turn = TurnResult(result=result, results=(result,), attempts=(), usage=None)
    assert user_notice(turn, [_candidate("openai", None)]) is None


def test_the_log_line_has_host_status_and_body_never_the_key() -> None:
    body = {"error": {"message": "key sk-live-1234567890 has no credit", "code": 402}}
    error = ProviderError(
        type=ErrorType.API_ERROR, message="m", retryable=False, status=402, original_error=body
    )
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lambda m: lines.append(str(m)), level="WARNING", filter="rxcord", format="{message}")
    try:
        log_failures(
            _failed(error), [_candidate("openrouter", "http://10.1.2.3:8080/v1")], secrets=("bot-token",)
        )
    finally:
        logger.remove(handler)
        logger.disable("rxcord")
    [line] = lines
    assert line.startswith("provider failure: c#1 at 10.1.2.3:8080: api_error, HTTP 402, code -: ")
    assert "has no credit" in line and "sk-live-1234567890" not in line
