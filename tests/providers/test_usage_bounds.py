"""Usage bounds: token counts in [0, 10**9] per field, costs finite in [0, 1e6] USD.

Past them a value is not a count (or not a cost): the normalizers treat it as unreported,
``report_usage`` refuses a ``Usage`` that breaks them, and the Decisions client fails the
answer as ``invalid-usage``. Hypothesis drives huge, negative, NaN and infinite values into
every field.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.types import Usage
from rxcord.providers.decisions import DecisionProtocol, FailureCategory
from rxcord.providers.decisions.types import DecisionFailed
from rxcord.providers.usage import (
    MAX_COST,
    MAX_TOKENS,
    from_anthropic,
    from_gemini,
    from_openai,
    report_usage,
    usage_problem,
    with_usage_callback,
)
from tests.providers.decisions.server import DecisionsServer
from tests.providers.decisions.test_call import run

HUGE_INTS = st.sampled_from([MAX_TOKENS + 1, 10**12, 10**100, 10**5000, -1, -(10**100)])
HUGE_FLOATS = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 1e10, -0.5, MAX_COST * 2])
WILD = st.one_of(
    HUGE_INTS,
    HUGE_FLOATS,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["9" * 5000, "1e400", "nan", "inf", "-5", "²", "12", True, None]),
)
"""Anything a provider could put in a usage field, the nonsense most of all."""
COUNTS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _sane(usage: Usage) -> bool:
    """The oracle, written apart from ``usage_problem``: every count and the cost within the bounds."""
    for name in COUNTS:
        value = getattr(usage, name)
        if value is None and name.startswith("cache_"):
            continue
        if type(value) is not int or not 0 <= value <= MAX_TOKENS:
            return False
    cost = usage.cost
    if type(cost) is int:
        return 0 <= cost <= int(MAX_COST)
    return cost is None or (type(cost) is float and math.isfinite(cost) and 0.0 <= cost <= MAX_COST)


@settings(max_examples=300)
@given(st.dictionaries(st.sampled_from(["prompt_tokens", "completion_tokens", "total_tokens", "cost"]), WILD))
def test_openai_usage_is_always_within_the_bounds(fields: dict[str, Any]) -> None:
    usage = from_openai({**fields, "prompt_tokens_details": {"cached_tokens": fields.get("cost")}})
    assert usage is None or (_sane(usage) and usage_problem(usage) is None)


@settings(max_examples=200)
@given(
    st.dictionaries(st.sampled_from(["promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"]), WILD)
)
def test_gemini_usage_is_always_within_the_bounds(fields: dict[str, Any]) -> None:
    usage = from_gemini(fields)
    assert usage is None or (_sane(usage) and usage_problem(usage) is None)


@settings(max_examples=200)
@given(st.lists(st.one_of(HUGE_INTS, st.integers(), st.none()), min_size=4, max_size=4))
def test_anthropic_usage_is_always_within_the_bounds(counts: list[int | None]) -> None:
    usage = from_anthropic(*counts)
    assert usage is None or (_sane(usage) and usage_problem(usage) is None)
    parts = [count for count in counts[:3] if count is not None and 0 <= count <= MAX_TOKENS]
    assert (usage is None) == (sum(parts) > MAX_TOKENS)  # only a total past the cap is refused


def test_a_value_past_a_bound_is_unreported_at_the_bound_it_counts() -> None:
    at = from_openai({"prompt_tokens": MAX_TOKENS, "completion_tokens": 1, "cost": MAX_COST})
    assert at is not None and (at.input_tokens, at.cost) == (MAX_TOKENS, MAX_COST)
    past = from_openai({"prompt_tokens": 10**100, "completion_tokens": 1, "cost": 1e308})
    assert past is not None and (past.input_tokens, past.output_tokens, past.cost) == (0, 1, None)
    assert from_openai({"prompt_tokens": "9" * 5000}) is None  # not an int() of 5000 digits
    # Parts within the cap whose total passes it: the usage is invalid as a whole.
    assert from_gemini({"candidatesTokenCount": MAX_TOKENS, "thoughtsTokenCount": 1}) is None
    assert from_anthropic(MAX_TOKENS, MAX_TOKENS, None, 1) is None
    assert from_anthropic(MAX_TOKENS, None, None, 1) == Usage(input_tokens=MAX_TOKENS, output_tokens=1)


@settings(max_examples=300)
@given(st.sampled_from((*COUNTS, "cost")), WILD)
def test_report_usage_sends_only_sane_usage(field: str, value: Any) -> None:
    """Whatever a ``Usage`` was built with, the recorder gets it only when it is within the bounds."""
    usage = Usage(input_tokens=3, output_tokens=2, cost=0.5)
    usage = Usage(**{**{name: getattr(usage, name) for name in (*COUNTS, "cost")}, field: value})
    received: list[Usage] = []
    with with_usage_callback(received.append):
        report_usage(usage)
    assert received == ([usage] if _sane(usage) else [])
    assert (usage_problem(usage) is None) == _sane(usage)


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 10**100, "output_tokens": 1},
        {"input_tokens": 3, "output_tokens": MAX_TOKENS + 1},
        {"input_tokens": 3, "output_tokens": 1, "cost": 1e308},
        {"input_tokens": 3, "output_tokens": 1, "cost": MAX_COST + 1},
    ],
)
async def test_decisions_fail_usage_past_the_bounds_as_invalid_usage(usage: dict[str, Any]) -> None:
    """A named-protocol answer with absurd usage: ``failed`` / ``invalid-usage``, nothing reported."""
    body = {
        "model": "typesafe/jev-1.13-20260917",
        "answers": {"is_spam": {"type": "noul", "noul": 0.4}, "needs_reply": {"type": "noul", "noul": 0.2}},
        "usage": usage,
    }
    async with DecisionsServer() as server:
        server.then(body=json.dumps(body).encode())
        result, reports = await run(server, DecisionProtocol.OPENROUTER)
    assert isinstance(result, DecisionFailed)
    assert (result.category, result.reason) == (FailureCategory.MALFORMED_RESPONSE, "invalid-usage")
    assert reports == []


async def test_decisions_accept_usage_at_the_bounds() -> None:
    body = {
        "model": "typesafe/jev-1.13-20260917",
        "answers": {"is_spam": {"type": "noul", "noul": 0.4}, "needs_reply": {"type": "noul", "noul": 0.2}},
        "usage": {"input_tokens": MAX_TOKENS, "output_tokens": 0, "cost": MAX_COST},
    }
    async with DecisionsServer() as server:
        server.then(body=json.dumps(body).encode())
        result, reports = await run(server, DecisionProtocol.OPENROUTER)
    assert not isinstance(result, DecisionFailed)
    assert reports == [Usage(input_tokens=MAX_TOKENS, output_tokens=0, cost=MAX_COST)]
