"""Request builders never send what the provider rejects (issue 14): OpenAI's four stop strings,
Gemini's ``includeThoughts`` only to models that think (Gemini requests have no degradation path)."""

from __future__ import annotations

import pytest

from rxcord.core.request import ChatRequest, Message
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.google.request import supports_thoughts
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter

STOPS = ("\nUser:", "\nAlice:", "\nBob:", "\nCarol:", "\nDave:", "\nEve:")


def _request(model: str = "m", stop: tuple[str, ...] = STOPS) -> ChatRequest:
    return ChatRequest(model=model, messages=(Message.user("hi"),), stop=stop)


def test_openai_sends_at_most_four_stop_strings() -> None:
    """Six stop strings: OpenAI gets the first four (it rejects more with a 400)."""
    body = OpenAIAdapter().build_request(_request(), base_url=None, api_key="k").body
    assert body["stop"] == list(STOPS[:4])


def test_openai_drops_empty_and_repeated_stop_strings_before_counting() -> None:
    """Empty and repeated strings do not use up the four."""
    stop = ("", "\nUser:", "\nUser:", "\nA:", "", "\nB:", "\nC:", "\nD:")
    body = OpenAIAdapter().build_request(_request(stop=stop), base_url=None, api_key="k").body
    assert body["stop"] == ["\nUser:", "\nA:", "\nB:", "\nC:"]


def test_other_compatible_providers_keep_every_stop_string() -> None:
    """The limit is OpenAI's: OpenRouter passes them all on."""
    body = OpenRouterAdapter().build_request(_request(), base_url=None, api_key="k").body
    assert body["stop"] == list(STOPS)


@pytest.mark.parametrize(
    "model,thinks",
    [
        ("gemini-2.5-flash", True),
        ("models/gemini-2.5-pro", True),
        ("gemini-2.5-flash-lite", True),
        ("gemini-3-pro-preview", True),
        ("gemini-flash-latest", True),
        ("gemini-2.0-flash-thinking-exp-01-21", True),
        ("gemini-2.0-flash", False),
        ("gemini-2.0-flash-lite", False),
        ("gemini-1.5-pro", False),
        ("gemma-3-27b-it", False),
    ],
)
def test_include_thoughts_only_for_models_that_think(model: str, thinks: bool) -> None:
    """``thinkingConfig.includeThoughts`` is sent exactly to the thinking models."""
    assert supports_thoughts(model) is thinks
    body = GoogleAdapter().build_request(_request(model, ()), base_url=None, api_key="k").body
    thinking = body.get("generationConfig", {}).get("thinkingConfig", {})
    assert thinking.get("includeThoughts", False) is thinks
