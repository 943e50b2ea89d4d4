"""Parameter degradation: eligibility, targeted removals, images, the static list, caps, no repeats."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.types import ErrorType, ProviderError
from rxcord.providers.base import DegradationPolicy
from rxcord.providers.degrade import IMAGE_REMOVED_NOTICE, Degrader, encode_body, has_images, named_parameters
from rxcord.providers.errors import classify_http_error, classify_stream_error
from rxcord.providers.nvidia import NVIDIA_POLICY
from rxcord.providers.openai import OPENAI_POLICY
from rxcord.providers.openrouter import OPENROUTER_POLICY
from tests.providers.chat_completions.test_normalizer import load_json, sse_events

IMAGE = "data:image/png;base64," + "A" * 50_000


def body(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "be nice"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is it?"},
                    {"type": "image_url", "image_url": {"url": IMAGE}},
                ],
            },
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "temperature": 0.7,
        "top_k": 40,
        "seed": 1,
    }
    base.update(extra)
    return base


def error(
    status: int | None, message: str, *, kind: ErrorType = ErrorType.API_ERROR, code: Any = None
) -> ProviderError:
    return ProviderError(type=kind, message=message, retryable=False, status=status, code=code)


# -- eligibility ---------------------------------------------------------------


def test_400_naming_a_parameter_removes_it() -> None:
    """A 400 naming ``temperature`` gives a body without it, and nothing else changes."""
    original = body()
    failure = classify_http_error(
        400, load_json("openai", "http_400_unsupported_parameter"), provider="openai"
    )
    retry = Degrader(original, OPENAI_POLICY).next_body(failure)
    assert retry is not None
    assert "temperature" not in retry
    assert {key: value for key, value in original.items() if key != "temperature"} == retry
    assert "temperature" in original  # the first body is never mutated


def test_named_parameters_are_removed_together() -> None:
    """Every parameter the message names goes in one step."""
    retry = Degrader(body(), OPENAI_POLICY).next_body(error(422, "top_k and seed are not supported"))
    assert retry is not None
    assert "top_k" not in retry and "seed" not in retry and "temperature" in retry


def test_422_validation_naming_a_parameter_qualifies() -> None:
    """A 422 naming a parameter qualifies like a 400."""
    retry = Degrader(body(), OPENAI_POLICY).next_body(error(422, "body.seed: Extra inputs are not permitted"))
    assert retry is not None and "seed" not in retry


def test_400_naming_no_parameter_does_not_qualify() -> None:
    """A 400 that names nothing removable is not a payload incompatibility."""
    assert Degrader(body(), OPENAI_POLICY).next_body(error(400, "Bad request")) is None


def test_sse_error_after_200_naming_a_parameter_qualifies() -> None:
    """An error event after a 200 (OpenRouter's wrapped ``raw``) naming ``top_k`` removes it."""
    failure = classify_stream_error(
        sse_events("openrouter", "error_after_200_param")[0], provider="openrouter"
    )
    assert failure.status is None
    retry = Degrader(body(), OPENROUTER_POLICY).next_body(failure)
    assert retry is not None and "top_k" not in retry


def test_openrouter_provider_param_in_raw_metadata_qualifies() -> None:
    """OpenRouter's "Provider returned error" with the backend's words in ``raw`` names the parameter."""
    failure = classify_http_error(
        400, load_json("openrouter", "http_400_provider_param"), provider="openrouter"
    )
    retry = Degrader(body(frequency_penalty=0.5), OPENROUTER_POLICY).next_body(failure)
    assert retry is not None and "frequency_penalty" not in retry


def test_sse_error_after_200_naming_nothing_does_not_qualify() -> None:
    """A mid-stream server error naming nothing is not degraded (the transport retries it as transient)."""
    failure = classify_stream_error(sse_events("openrouter", "mid_stream_error")[-1], provider="openrouter")
    assert Degrader(body(), OPENROUTER_POLICY).next_body(failure) is None


@pytest.mark.parametrize("status", [401, 402, 403, 429])
def test_never_for_auth_payment_or_rate_limit(status: int) -> None:
    """401, 402, 403 and 429 never degrade, even when a parameter is named."""
    assert Degrader(body(), NVIDIA_POLICY).next_body(error(status, "temperature not allowed")) is None


@pytest.mark.parametrize(
    "kind",
    [ErrorType.RATE_LIMIT, ErrorType.TIMEOUT, ErrorType.CONTENT_BLOCKED, ErrorType.PROVIDER_OVERLOADED],
)
def test_never_for_non_payload_error_types(kind: ErrorType) -> None:
    """Rate limits, timeouts, overload and content blocks are not payload problems."""
    assert Degrader(body(), NVIDIA_POLICY).next_body(error(None, "temperature", kind=kind)) is None


def test_502_only_with_degrade_on_502() -> None:
    """An opaque 502 degrades for OpenRouter (policy) but not for OpenAI."""
    failure = classify_http_error(502, load_json("openrouter", "http_502_provider"), provider="openrouter")
    assert Degrader(body(), OPENAI_POLICY).next_body(failure) is None
    retry = Degrader(body(), OPENROUTER_POLICY).next_body(failure)
    assert retry is not None and "stream_options" not in retry  # the first static removal


def test_502_code_in_a_stream_error_counts_as_502() -> None:
    """An error event after a 200 carrying code 502 is treated as a 502."""
    failure = classify_stream_error(
        {"error": {"code": 502, "message": "Provider returned error"}}, provider="openrouter"
    )
    assert Degrader(body(), OPENROUTER_POLICY).next_body(failure) is not None
    assert Degrader(body(), OPENAI_POLICY).next_body(failure) is None


def test_opaque_5xx_only_with_retry_opaque_5xx() -> None:
    """An opaque 500 degrades for NVIDIA (policy) but not for OpenAI."""
    failure = classify_http_error(500, load_json("nvidia", "http_500_opaque"), provider="nvidia")
    assert Degrader(body(), OPENAI_POLICY).next_body(failure) is None
    assert Degrader(body(), NVIDIA_POLICY).next_body(failure) is not None


def test_5xx_naming_a_parameter_qualifies_anywhere() -> None:
    """A 5xx that names a parameter is informative enough for any policy."""
    retry = Degrader(body(), OPENAI_POLICY).next_body(error(500, "internal: top_k unsupported"))
    assert retry is not None and "top_k" not in retry


def test_disabled_policy_never_degrades() -> None:
    """``enabled=False`` turns degradation off."""
    policy = DegradationPolicy(enabled=False)
    assert Degrader(body(), policy).next_body(error(400, "temperature")) is None


# -- images --------------------------------------------------------------------


def test_image_rejection_replaces_images_with_a_notice() -> None:
    """A rejected image becomes a text notice telling the model not to guess; other messages are shared."""
    original = body()
    failure = classify_http_error(
        404, load_json("openrouter", "http_404_no_image_endpoints"), provider="openrouter"
    )
    retry = Degrader(original, OPENROUTER_POLICY).next_body(failure)
    assert retry is not None
    assert not has_images(retry)
    assert retry["messages"][1]["content"] == [
        {"type": "text", "text": "what is it?"},
        {"type": "text", "text": IMAGE_REMOVED_NOTICE},
    ]
    assert "Do not guess" in IMAGE_REMOVED_NOTICE
    assert retry["messages"][0] is original["messages"][0]  # untouched messages are not copied
    assert retry["tools"] is original["tools"]
    assert has_images(original)


def test_image_rejection_without_images_does_not_qualify() -> None:
    """An image complaint when the body has no image is not ours to fix."""
    text_only = body(messages=[{"role": "user", "content": "hi"}])
    assert Degrader(text_only, OPENAI_POLICY).next_body(error(400, "image input is not supported")) is None


def test_gemini_inline_data_is_replaced_too() -> None:
    """Gemini ``inlineData`` parts in ``contents`` are replaced by a text part."""
    gemini = {
        "contents": [
            {
                "role": "user",
                "parts": [{"text": "x"}, {"inlineData": {"mimeType": "image/png", "data": "AAA"}}],
            }
        ]
    }
    retry = Degrader(gemini, OPENAI_POLICY).next_body(error(400, "Unable to process input image"))
    assert retry is not None
    assert retry["contents"][0]["parts"][1] == {"text": IMAGE_REMOVED_NOTICE}


# -- static list, mandatory keys, caps, no repeats ----------------------------


class _SpyRemovals(tuple[tuple[str, ...], ...]):
    """A removal list that records when it is read."""

    reads = 0

    def __iter__(self) -> Iterator[tuple[str, ...]]:
        type(self).reads += 1
        return super().__iter__()


def test_static_list_is_prepared_only_after_a_qualifying_failure() -> None:
    """A failure that does not qualify never reads the static list; a qualifying one does."""
    _SpyRemovals.reads = 0
    policy = DegradationPolicy(retry_opaque_5xx=True, optional_removals=_SpyRemovals((("seed",),)))
    degrader = Degrader(body(), policy)
    assert degrader.next_body(error(401, "no")) is None
    assert degrader.next_body(error(400, "bad")) is None
    assert _SpyRemovals.reads == 0
    retry = degrader.next_body(error(500, "opaque"))
    assert retry is not None and "seed" not in retry
    assert _SpyRemovals.reads == 1


def test_static_list_is_tried_in_order_cumulatively() -> None:
    """Opaque failures walk the static list in order, each step keeping the previous removals."""
    policy = DegradationPolicy(
        retry_opaque_5xx=True, optional_removals=(("seed",), ("absent",), ("top_k", "temperature"))
    )
    degrader = Degrader(body(), policy)
    first = degrader.next_body(error(500, "x"))
    second = degrader.next_body(error(500, "x"))
    assert first is not None and second is not None
    assert "seed" not in first and "top_k" in first
    assert "seed" not in second and "top_k" not in second and "temperature" not in second
    assert degrader.next_body(error(500, "x")) is None
    assert degrader.steps == [("seed",), ("top_k", "temperature")]


def test_mandatory_keys_are_never_removed() -> None:
    """Keys carrying the reply contract stay, even when named or listed."""
    policy = DegradationPolicy(optional_removals=(("model", "messages", "stream"),), retry_opaque_5xx=True)
    degrader = Degrader(body(), policy)
    assert degrader.next_body(error(400, "model, messages and stream are wrong")) is None
    assert degrader.next_body(error(500, "opaque")) is None
    assert named_parameters("tools are not supported", body(), OPENAI_POLICY.mandatory_body_keys) == ()


def test_a_parameter_named_again_after_removal_is_not_retried_again() -> None:
    """A named parameter, once removed, no longer qualifies; an opaque-5xx policy goes to the static list."""
    degrader = Degrader(body(), DegradationPolicy(optional_removals=(("seed",),)))
    first = degrader.next_body(error(400, "temperature"))
    assert first is not None
    assert degrader.next_body(error(400, "temperature")) is None
    opaque = Degrader(body(), DegradationPolicy(retry_opaque_5xx=True, optional_removals=(("seed",),)))
    assert opaque.next_body(error(500, "temperature")) is not None
    retry = opaque.next_body(error(500, "temperature"))
    assert retry is not None and "seed" not in retry and "temperature" not in retry
    assert opaque.next_body(error(500, "temperature")) is None


def test_targeted_retries_are_capped() -> None:
    """At most ``max_targeted_retries`` steps remove named parameters."""
    policy = DegradationPolicy(max_targeted_retries=1, max_attempts=10)
    degrader = Degrader(body(), policy)
    assert degrader.next_body(error(400, "temperature")) is not None
    assert degrader.next_body(error(400, "top_k")) is None


def test_all_attempts_are_capped() -> None:
    """``max_attempts`` counts every attempt, the first included."""
    policy = DegradationPolicy(
        max_attempts=2, retry_opaque_5xx=True, optional_removals=(("seed",), ("top_k",))
    )
    degrader = Degrader(body(), policy)
    assert degrader.next_body(error(500, "x")) is not None
    assert degrader.attempts == 2
    assert degrader.next_body(error(500, "x")) is None


def test_max_tokens_is_renamed_when_the_error_says_so() -> None:
    """ "Use 'max_completion_tokens' instead" moves the value rather than dropping the limit."""
    failure = classify_http_error(400, load_json("openai", "http_400_max_tokens"), provider="openai")
    retry = Degrader(body(max_tokens=300), OPENAI_POLICY).next_body(failure)
    assert retry is not None
    assert "max_tokens" not in retry and retry["max_completion_tokens"] == 300


def test_case_matters_when_naming_parameters() -> None:
    """ "Provider returned error" does not name the ``provider`` field."""
    assert named_parameters("Provider returned error", {"provider": {}, "model": "m"}) == ()
    assert named_parameters("stream_options.include_usage is invalid", body()) == ("stream_options",)


def test_encode_body_is_compact_utf8() -> None:
    """Encoded bodies are compact JSON in UTF-8 (non-ASCII kept as is)."""
    data = encode_body({"a": "é", "b": [1, 2]})
    assert data == '{"a":"é","b":[1,2]}'.encode()
    assert json.loads(data) == {"a": "é", "b": [1, 2]}


_KEYS = ["temperature", "top_k", "seed", "stream_options", "model", "messages", "stream", "tools"]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, 400, 401, 422, 429, 500, 502, 503]),
            st.lists(st.sampled_from([*_KEYS, "image"]), max_size=3),
        ),
        max_size=10,
    )
)
def test_degrader_invariants(failures: list[tuple[int | None, list[str]]]) -> None:
    """Whatever fails, retries are new bodies, keep the mandatory keys, and stay within the caps."""
    original = body()
    degrader = Degrader(original, NVIDIA_POLICY)
    seen = [original]
    for status, words in failures:
        retry = degrader.next_body(error(status, " ".join(words) or "opaque"))
        if retry is None:
            continue
        assert all(retry != previous for previous in seen)
        assert {"model", "messages", "stream", "tools"} <= retry.keys()
        seen.append(retry)
    assert len(seen) <= NVIDIA_POLICY.max_attempts
