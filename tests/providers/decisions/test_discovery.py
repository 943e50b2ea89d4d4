"""Discovery of OpenRouter decision models: explicit modality, finite prices, documented input limits."""

from __future__ import annotations

from typing import Any

import pytest

from rxcord.providers.decisions.discovery import discover_openrouter_models
from rxcord.providers.decisions.types import DecisionProtocol


def _entry(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": "typesafe/jev-1.13",
        "canonical_slug": "typesafe/jev-1.13-20260917",
        "name": "TypeSafe: Jev 1.13",
        "context_length": 32000,
        "architecture": {"input_modalities": ["text"], "output_modalities": ["decisions"]},
        "pricing": {"prompt": "0.000000042", "completion": "0"},
    }
    entry.update(changes)
    return entry


def test_a_decision_model_becomes_a_global_option() -> None:
    (option,) = discover_openrouter_models({"data": [_entry()]})
    assert option.provider == "openrouter" and option.model_id == "typesafe/jev-1.13"
    assert option.protocol is DecisionProtocol.OPENROUTER
    assert option.registration_id is None and option.custom_endpoint_id is None
    assert option.max_input_tokens == 32000 and option.base_url == "https://openrouter.ai"


@pytest.mark.parametrize(
    "changes",
    [
        {"architecture": {"output_modalities": ["text"]}},
        {"architecture": {}},
        {"pricing": {"prompt": "NaN", "completion": "0"}},
        {"pricing": {"prompt": "inf", "completion": "0"}},
        {"pricing": {"prompt": "-1", "completion": "0"}},
        {"pricing": {"prompt": "0.1"}},
        {"pricing": {"prompt": True, "completion": "0"}},
        {"context_length": None},
        {"context_length": 0},
        {"context_length": 3.5},
        {"id": "no slash"},
    ],
)
def test_entries_without_explicit_modality_finite_prices_or_limits_are_skipped(
    changes: dict[str, Any],
) -> None:
    assert discover_openrouter_models({"data": [_entry(**changes), _entry(id="~typesafe/jev-latest")]}) == (
        discover_openrouter_models({"data": [_entry(id="~typesafe/jev-latest")]})
    )
    assert len(discover_openrouter_models({"data": [_entry(**changes)]})) == 0


def test_malformed_catalogs_give_nothing() -> None:
    for catalog in (None, [], {"data": {}}, {"data": [1, "x"]}):
        assert discover_openrouter_models(catalog) == ()
    assert len(discover_openrouter_models({"data": [_entry(), _entry()]})) == 1
