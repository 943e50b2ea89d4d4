"""Usage normalization (one named test per rule), the usage callback, and the request hooks."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from loguru import logger

from rxcord.core.errors import DenialCopy, ProviderRequestDeniedError
from rxcord.core.types import ErrorType, ProviderError, Usage
from rxcord.providers.hooks import (
    ProviderRequest,
    begin_provider_request,
    current_usage_context,
    find_denial,
    register_denial_translator,
    register_request_hook,
    request_hook_registered,
    with_usage_context,
)
from rxcord.providers.usage import (
    clamp_usage,
    from_anthropic,
    from_gemini,
    from_openai,
    report_usage,
    sum_turn_usage,
    usage_callback,
    with_usage_callback,
)
from tests.providers.chat_completions.test_normalizer import sse_events

# -- OpenAI-compatible ---------------------------------------------------------


def test_rule_openai_prompt_tokens_already_include_cached() -> None:
    """``prompt_tokens`` is the input total; ``cached_tokens`` is a subset, not added again."""
    usage = from_openai(sse_events("openai", "text_usage_cached")[-1]["usage"])
    assert usage == Usage(input_tokens=2006, output_tokens=9, cache_read_tokens=1920)


def test_rule_openai_completion_tokens_include_reasoning() -> None:
    """``completion_tokens`` already counts reasoning tokens: output is not increased by them."""
    usage = from_openai(sse_events("openai", "reasoning_model_text")[-1]["usage"])
    assert usage is not None and usage.output_tokens == 210


def test_rule_cache_write_from_prompt_details() -> None:
    """OpenRouter's ``prompt_tokens_details.cache_write_tokens`` is the cache write."""
    usage = from_openai(sse_events("openrouter", "reasoning_signature_anthropic")[-1]["usage"])
    assert usage is not None
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (2200, 1800, 300)


@pytest.mark.parametrize("field", ["cache_write_tokens", "cache_creation_input_tokens"])
def test_rule_cache_write_from_top_level_field(field: str) -> None:
    """A top-level ``cache_write_tokens`` or ``cache_creation_input_tokens`` is the cache write."""
    usage = from_openai({"prompt_tokens": 100, "completion_tokens": 1, field: 40})
    assert usage is not None and usage.cache_write_tokens == 40


def test_rule_deepseek_cache_hit_tokens() -> None:
    """DeepSeek's ``prompt_cache_hit_tokens`` is the cache read when no details are given."""
    usage = from_openai({"prompt_tokens": 100, "completion_tokens": 5, "prompt_cache_hit_tokens": 64})
    assert usage is not None and usage.cache_read_tokens == 64


def test_rule_openrouter_cost_is_kept() -> None:
    """OpenRouter's reported ``cost`` is kept as is."""
    usage = from_openai(sse_events("openrouter", "reasoning_both_fields")[-1]["usage"])
    assert usage is not None and usage.cost == pytest.approx(0.00084517)


def test_rule_absent_fields_are_none() -> None:
    """An absent cache field or cost means unknown: ``None``."""
    usage = from_openai({"prompt_tokens": 11, "completion_tokens": 30, "total_tokens": 41})
    assert usage == Usage(input_tokens=11, output_tokens=30)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.cost) == (None, None, None)


def test_rule_reported_zero_stays_zero() -> None:
    """A reported 0 (cache or cost) stays 0, distinct from unknown."""
    usage = from_openai(
        {
            "prompt_tokens": 5,
            "completion_tokens": 1,
            "cost": 0,
            "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        }
    )
    assert usage is not None
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.cost) == (0, 0, 0.0)


def test_rule_cache_subsets_are_clamped_to_the_total() -> None:
    """Cache reads and writes never exceed the input total, together either."""
    usage = from_openai(
        {"prompt_tokens": 100, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 150}}
    )
    assert usage is not None and usage.cache_read_tokens == 100
    both = clamp_usage(Usage(input_tokens=100, cache_read_tokens=80, cache_write_tokens=50))
    assert (both.cache_read_tokens, both.cache_write_tokens) == (80, 20)


@pytest.mark.parametrize("value", [None, {}, "12", [1], {"total_tokens": "x"}, {"prompt_tokens": True}])
def test_rule_not_a_usage_object_is_none(value: object) -> None:
    """Anything without token counts gives ``None``."""
    assert from_openai(value) is None


def test_rule_invalid_cost_is_unknown() -> None:
    """A negative or non-numeric cost is unknown, never an estimate."""
    assert from_openai({"prompt_tokens": 1, "completion_tokens": 1, "cost": -1}).cost is None  # type: ignore[union-attr]
    assert from_openai({"prompt_tokens": 1, "completion_tokens": 1, "cost": "0.5"}).cost == 0.5  # type: ignore[union-attr]


# -- Gemini --------------------------------------------------------------------


def test_rule_gemini_prompt_count_includes_cached_content() -> None:
    """``promptTokenCount`` already includes ``cachedContentTokenCount`` (the cache read)."""
    usage = from_gemini(
        {"promptTokenCount": 1000, "cachedContentTokenCount": 600, "candidatesTokenCount": 10}
    )
    assert usage == Usage(input_tokens=1000, output_tokens=10, cache_read_tokens=600)


def test_rule_gemini_output_is_candidates_plus_thoughts() -> None:
    """Output is ``candidatesTokenCount + thoughtsTokenCount``; there is no cache write."""
    usage = from_gemini({"promptTokenCount": 8, "candidatesTokenCount": 20, "thoughtsTokenCount": 300})
    assert usage is not None and usage.output_tokens == 320
    assert usage.cache_write_tokens is None and usage.cache_read_tokens is None


def test_rule_gemini_without_counts_is_none() -> None:
    """Metadata without counts gives ``None``."""
    assert from_gemini({"trafficType": "ON_DEMAND"}) is None
    assert from_gemini(None) is None


# -- Anthropic -----------------------------------------------------------------


def test_rule_anthropic_total_input_is_the_sum_of_three() -> None:
    """Anthropic's uncached, cache-read and cache-creation input add up to the total."""
    assert from_anthropic(10, 2000, 300, 50) == Usage(
        input_tokens=2310, output_tokens=50, cache_read_tokens=2000, cache_write_tokens=300
    )


def test_rule_anthropic_absent_cache_is_unknown() -> None:
    """Absent cache counts stay ``None`` and add nothing."""
    assert from_anthropic(10, None, None, 5) == Usage(input_tokens=10, output_tokens=5)


# -- sum_turn_usage ------------------------------------------------------------


def test_rule_sum_adds_segments_and_skips_none() -> None:
    """Segments add up; a segment without usage is skipped."""
    total = sum_turn_usage(
        [Usage(input_tokens=10, output_tokens=1), None, Usage(input_tokens=5, output_tokens=2)]
    )
    assert total == Usage(input_tokens=15, output_tokens=3)


def test_rule_sum_keeps_cache_only_when_every_segment_reported_it() -> None:
    """A cache field survives only if every segment with usage reported it."""
    one = Usage(input_tokens=10, cache_read_tokens=4, cache_write_tokens=1)
    two = Usage(input_tokens=10, cache_read_tokens=0)
    total = sum_turn_usage([one, two])
    assert total is not None
    assert (total.cache_read_tokens, total.cache_write_tokens) == (4, None)


def test_rule_sum_keeps_cost_only_when_every_segment_reported_it() -> None:
    """The cost survives only if every segment with usage reported one."""
    assert sum_turn_usage([Usage(cost=0.5), Usage(cost=0.25)]) == Usage(cost=0.75)
    assert sum_turn_usage([Usage(cost=0.5), Usage()]) == Usage()


def test_rule_sum_of_nothing_is_none() -> None:
    """No segment with usage gives ``None``."""
    assert sum_turn_usage([None, None]) is None
    assert sum_turn_usage([]) is None


_usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10_000),
    output_tokens=st.integers(0, 10_000),
    cache_read_tokens=st.none() | st.integers(0, 10_000),
    cache_write_tokens=st.none() | st.integers(0, 10_000),
    cost=st.none() | st.floats(0, 10, allow_nan=False),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.none() | _usages, max_size=6))
def test_rule_sum_invariants(segments: list[Usage | None]) -> None:
    """Totals are exact sums; cache subsets never exceed the total input."""
    total = sum_turn_usage(segments)
    reported = [segment for segment in segments if segment is not None]
    if not reported:
        assert total is None
        return
    assert total is not None
    assert total.input_tokens == sum(segment.input_tokens for segment in reported)
    assert total.output_tokens == sum(segment.output_tokens for segment in reported)
    assert (total.cache_read_tokens or 0) + (total.cache_write_tokens or 0) <= total.input_tokens
    assert (total.cost is None) == any(segment.cost is None for segment in reported)


# -- usage callback ------------------------------------------------------------


def test_report_usage_calls_the_bound_callback() -> None:
    """Inside ``with_usage_callback`` each report reaches the callback; outside, nothing happens."""
    seen: list[Usage] = []
    usage = Usage(input_tokens=3)
    report_usage(usage)
    with with_usage_callback(seen.append):
        report_usage(usage)
        report_usage(None)
    report_usage(usage)
    assert seen == [usage]
    assert usage_callback.get() is None


def test_explicit_none_callback_is_restored_on_exit() -> None:
    """Binding ``None`` silences a nested request; the outer callback comes back after it."""
    seen: list[Usage] = []
    with with_usage_callback(seen.append):
        with with_usage_callback(None):
            report_usage(Usage(input_tokens=1))
        report_usage(Usage(input_tokens=2))
    assert [usage.input_tokens for usage in seen] == [2]


def test_failing_callback_never_fails_inference() -> None:
    """A callback that raises is logged at warning level and swallowed."""

    def broken(_usage: Usage) -> None:
        raise RuntimeError("storage down")

    lines: list[str] = []
    logger.enable("rxcord")
    sink = logger.add(lines.append, level="WARNING", format="{message}")
    try:
        with with_usage_callback(broken):
            report_usage(Usage(input_tokens=1))
    finally:
        logger.remove(sink)
        logger.disable("rxcord")
    assert any("usage recorder failed" in line for line in lines)


async def test_callbacks_are_bound_per_task() -> None:
    """Concurrent requests each report to their own callback (contextvars)."""
    first: list[Usage] = []
    second: list[Usage] = []

    async def request(sink: list[Usage], tokens: int) -> None:
        with with_usage_callback(sink.append):
            await asyncio.sleep(0)
            report_usage(Usage(input_tokens=tokens))

    await asyncio.gather(request(first, 1), request(second, 2))
    assert [usage.input_tokens for usage in first] == [1]
    assert [usage.input_tokens for usage in second] == [2]


# -- request denial ------------------------------------------------------------


@pytest.fixture
def owner() -> Iterator[object]:
    context = object()
    with with_usage_context(context):
        yield context


def _failure(original: object = None) -> ProviderError:
    return ProviderError(type=ErrorType.API_ERROR, message="402", retryable=False, original_error=original)


def test_denial_found_through_original_error_and_cause(owner: object) -> None:
    """A denial is found in ``original_error`` and in ``__cause__``, for its own context."""
    denial = ProviderRequestDeniedError(owner)
    assert find_denial(_failure(denial), owner) is denial
    wrapper = RuntimeError("wrapped")
    wrapper.__cause__ = denial
    assert find_denial(wrapper, owner) is denial


def test_denial_of_another_context_is_never_matched_or_translated(owner: object) -> None:
    """Matching uses identity: another context's denial is ignored and not translated."""
    foreign = ProviderRequestDeniedError(object())
    calls: list[object] = []

    def translator(
        error: BaseException | ProviderError, context: object | None
    ) -> ProviderRequestDeniedError:
        calls.append(context)
        return ProviderRequestDeniedError(context)

    dispose = register_denial_translator(translator)
    try:
        assert find_denial(_failure(foreign), owner) is None
        assert calls == []
    finally:
        dispose()


def test_explicit_none_context_matches_only_unscoped_denials(owner: object) -> None:
    """``find_denial(error, None)`` matches an unscoped denial only; omitting the context matches any."""
    scoped = ProviderRequestDeniedError(owner)
    unscoped = ProviderRequestDeniedError(None)
    assert find_denial(_failure(scoped), None) is None
    assert find_denial(_failure(unscoped), None) is unscoped
    assert find_denial(_failure(scoped)) is scoped


def test_translator_turns_a_failure_into_a_denial_and_disposer_restores(owner: object) -> None:
    """A translator translates for the request's context; its disposer restores the previous one."""

    def first(error: BaseException | ProviderError, context: object | None) -> ProviderRequestDeniedError:
        return ProviderRequestDeniedError(context, reason="first")

    def second(error: BaseException | ProviderError, context: object | None) -> ProviderRequestDeniedError:
        return ProviderRequestDeniedError(context, reason="second")

    dispose_first = register_denial_translator(first)
    dispose_second = register_denial_translator(second)
    try:
        found = find_denial(_failure(), owner)
        assert found is not None and found.reason == "second" and found.context is owner
        dispose_second()
        dispose_second()  # a second call changes nothing
        found = find_denial(_failure())  # omitted: the current usage context
        assert found is not None and found.reason == "first" and found.context is owner
    finally:
        dispose_first()
    assert find_denial(_failure(), owner) is None


def test_translator_answer_for_another_context_is_rejected(owner: object) -> None:
    """A translator that returns a denial for a different context is ignored."""

    def wrong(error: BaseException | ProviderError, context: object | None) -> ProviderRequestDeniedError:
        return ProviderRequestDeniedError(object())

    dispose = register_denial_translator(wrong)
    try:
        assert find_denial(_failure(), owner) is None
    finally:
        dispose()


def test_denial_renders_its_notice() -> None:
    """The renderer gets the locale and the fallback flag; the default is plain."""

    def render(locale: str, fallback: bool) -> DenialCopy:
        return DenialCopy(title_key="denied.title", description=f"{locale}:{fallback}")

    assert (
        ProviderRequestDeniedError(None, render).render("fr", fallback_notice=True).description == "fr:True"
    )
    assert ProviderRequestDeniedError(None).render().title_key == "provider_request_denied"


def test_usage_context_nests_and_restores() -> None:
    """``with_usage_context`` binds an owner and restores the outer one on exit."""
    outer, inner = object(), object()
    with with_usage_context(outer):
        with with_usage_context(inner):
            assert current_usage_context() is inner
        with with_usage_context(None):
            assert current_usage_context() is None
        assert current_usage_context() is outer
    assert current_usage_context() is None


# -- request holds -------------------------------------------------------------


class _Hold:
    def __init__(self) -> None:
        self.costs: list[float] = []
        self.releases: list[bool] = []

    def report_cost(self, cost: float) -> None:
        self.costs.append(cost)

    def release(self, retain_estimate: bool) -> None:
        self.releases.append(retain_estimate)


def test_no_hook_no_hold() -> None:
    """Without a registered hook there is no hold."""
    assert not request_hook_registered()
    assert begin_provider_request(provider="openai", path="/v1/chat/completions", body={}) is None


def test_hook_hold_reports_cost_and_releases_once(owner: object) -> None:
    """A hold gets reported costs and one release; the hook sees key, path, body and context."""
    hold = _Hold()
    seen: list[ProviderRequest] = []

    def hook(request: ProviderRequest) -> _Hold:
        seen.append(request)
        return hold

    dispose = register_request_hook(hook)
    try:
        guarded = begin_provider_request(
            provider="openrouter",
            path="/api/v1/chat/completions",
            body={"model": "m"},
            api_key="sk-or-secret",
        )
        assert guarded is not None
        guarded.report_cost(0.25)
        guarded.report_cost(float("nan"))
        guarded.release(True)
        guarded.release(False)
        guarded.report_cost(1.0)
    finally:
        dispose()
    assert hold.costs == [0.25]
    assert hold.releases == [True]
    (request,) = seen
    assert request.context is owner and request.api_key == "sk-or-secret"
    assert "sk-or-secret" not in repr(request) and "chat/completions" not in repr(request)
    assert not request_hook_registered()


def test_hook_may_refuse_a_request(owner: object) -> None:
    """A hook raising ``ProviderRequestDeniedError`` refuses the request before it is sent."""

    def refuse(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(request.context)

    dispose = register_request_hook(refuse)
    try:
        with pytest.raises(ProviderRequestDeniedError) as caught:
            begin_provider_request(provider="openai", path="/v1/chat/completions", body={})
    finally:
        dispose()
    assert find_denial(caught.value, owner) is caught.value


def test_failing_hold_never_raises() -> None:
    """A hold whose methods raise is logged, never fails the request."""

    class Broken:
        def report_cost(self, cost: float) -> None:
            raise RuntimeError("x")

        def release(self, retain_estimate: bool) -> None:
            raise RuntimeError("y")

    def hook(request: ProviderRequest) -> Broken:
        return Broken()

    dispose = register_request_hook(hook)
    try:
        hold = begin_provider_request(provider="openai", path="/p", body={})
        assert hold is not None
        hold.report_cost(1.0)
        hold.release(False)
    finally:
        dispose()
