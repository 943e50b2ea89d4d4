"""The three protocols' translation: request bodies, fixtures from the reference, answer and usage rules."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.errors import DecisionValidationError
from rxcord.core.types import Usage
from rxcord.providers.decisions.call import CODECS
from rxcord.providers.decisions.types import DecisionProtocol, PredicateAnswer, Question, RefusedAnswer
from rxcord.providers.decisions.validate import strict_json
from tests.providers.decisions.server import fixture

OR = CODECS[DecisionProtocol.OPENROUTER]
S1 = CODECS[DecisionProtocol.SYSTEMONE]
OA = CODECS[DecisionProtocol.OPENAI]
Q = (
    Question(id="is_spam", instructions="The message is unsolicited bulk advertising."),
    Question(id="needs_reply", instructions="The sender expects an answer."),
)


def _doc(name: str) -> dict[str, Any]:
    document = strict_json(fixture(name))
    assert isinstance(document, dict)
    return document


def test_urls() -> None:
    for base in (
        "https://openrouter.ai",
        "https://openrouter.ai/",
        "https://openrouter.ai/api/v1",
        "https://openrouter.ai/api",
    ):
        assert OR.url(base) == "https://openrouter.ai/api/alpha/decisions"
    assert S1.url("https://api.typesafe.ai/v1/") == "https://api.typesafe.ai/v1/systemone"
    assert OA.url("https://api.openai.com/v1") == "https://api.openai.com/v1/decisions"


@pytest.mark.parametrize("codec", [OR, S1], ids=["openrouter", "systemone"])
def test_named_request_body(codec: Any) -> None:
    body = codec.build_body("typesafe/jev-1.13", "Subject: WIN", Q)
    assert body == {
        "model": "typesafe/jev-1.13",
        "state": "Subject: WIN",
        "questions": {
            "is_spam": {"type": "noul", "instructions": Q[0].instructions},
            "needs_reply": {"type": "noul", "instructions": Q[1].instructions},
        },
    }


def test_openai_request_body_is_ordered_and_named() -> None:
    body = OA.build_body("gpt-6-luna", "Subject: WIN", Q)
    assert body == {
        "model": "gpt-6-luna",
        "input": "Subject: WIN",
        "questions": [
            {"type": "predicate", "name": "is_spam", "instructions": Q[0].instructions},
            {"type": "predicate", "name": "needs_reply", "instructions": Q[1].instructions},
        ],
    }


def test_openrouter_fixture_keys_out_of_order() -> None:
    document = _doc("openrouter_200.json")
    assert list(document["answers"]) == ["needs_reply", "is_spam"]
    usage, report = OR.read_usage(document)
    assert usage == Usage(input_tokens=476, output_tokens=70, cost=0.000019992)
    assert report is None
    verdict = OR.read_verdict(Q, document, {})
    assert verdict.answers == (
        PredicateAnswer(id="is_spam", probability=0.97),
        PredicateAnswer(id="needs_reply", probability=0.12),
    )
    assert verdict.model == "typesafe/jev-1.13-20260917"
    assert verdict.provider_request_id == "gen-dec-1789738314-X5e5eKGQdvR9rblyX250"


def test_systemone_fixture_request_id_from_header_and_no_cost() -> None:
    document = _doc("systemone_200.json")
    usage, _ = S1.read_usage(document)
    assert usage == Usage(input_tokens=25, output_tokens=8) and usage.cost is None
    verdict = S1.read_verdict(Q, document, {"X-TypeSafe-Request-Id": "req_01ABC"})
    assert [a.id for a in verdict.answers] == ["is_spam", "needs_reply"]
    assert verdict.provider_request_id == "req_01ABC"
    assert verdict.model == "jev-1.13.0"


def test_systemone_truncation_report_is_read() -> None:
    usage, report = S1.read_usage(_doc("systemone_200_truncated.json"))
    assert usage is not None and usage.input_tokens == 32000
    assert report is not None and report.cut


def test_openai_fixtures() -> None:
    document = _doc("openai_200_refusal.json")
    usage, _ = OA.read_usage(document)
    assert usage == Usage(input_tokens=112, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0)
    verdict = OA.read_verdict(Q, document, {"x-request-id": "req_abc123"})
    assert verdict.answers == (
        PredicateAnswer(id="is_spam", probability=0.96),
        RefusedAnswer(id="needs_reply"),
    )
    assert verdict.provider_request_id == "req_abc123"


def test_unbounded_request_ids_are_dropped() -> None:
    document = _doc("openrouter_200.json")
    for bad in ("x" * 200, "has space", "", 42, "bad\nline"):
        document["id"] = bad
        assert OR.read_verdict(Q, document, {}).provider_request_id is None


def _named(answers: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"model": "m-1", "answers": answers, "usage": {"input_tokens": 1, "output_tokens": 1}, **extra}


NOUL = {"type": "noul", "noul": 0.5}


@pytest.mark.parametrize(
    "answers",
    [
        {"is_spam": NOUL},
        {"is_spam": NOUL, "needs_reply": NOUL, "extra_one": NOUL},
        {"is_spam": NOUL, "needs_reply": {"type": "choice", "choice": "yes"}},
        {"is_spam": NOUL, "needs_reply": {"type": "noul", "noul": "0.5"}},
        {"is_spam": NOUL, "needs_reply": {"type": "noul", "noul": True}},
        {"is_spam": NOUL, "needs_reply": {"type": "noul", "noul": 1.01}},
        {"is_spam": NOUL, "needs_reply": {"type": "noul", "noul": -0.01}},
        {"is_spam": NOUL, "needs_reply": {"type": "noul"}},
        {"is_spam": NOUL, "needs_reply": 0.5},
        [NOUL, NOUL],
    ],
)
def test_named_answer_rules(answers: Any) -> None:
    with pytest.raises(DecisionValidationError) as caught:
        OR.read_verdict(Q, _named(answers), {})
    assert caught.value.reason == "invalid-answers"


def test_named_huge_exponent_is_not_finite() -> None:
    raw = (
        b'{"model": "m", '
        b'"answers": {"is_spam": {"type": "noul", "noul": 1e999}, '
        b'"needs_reply": {"type": "noul", "noul": 0.1}}}'
    )
    with pytest.raises(DecisionValidationError, match="invalid-answers"):
        S1.read_verdict(Q, strict_json(raw), {})


def test_duplicate_answer_keys_fail_at_decoding() -> None:
    raw = (
        b'{"model": "m", '
        b'"answers": {"is_spam": {"type": "noul", "noul": 0.1}, "is_spam": {"type": "noul", "noul": 0.9}}}'
    )
    with pytest.raises(DecisionValidationError, match="invalid-json"):
        strict_json(raw)


@pytest.mark.parametrize("model", [None, "", 42, "x" * 300, "has space"])
def test_returned_model_must_be_bounded(model: Any) -> None:
    document = _named({"is_spam": NOUL, "needs_reply": NOUL}, model=model)
    if model is None:
        del document["model"]
    with pytest.raises(DecisionValidationError):
        OR.read_verdict(Q, document, {})


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 1},
        {"input_tokens": -1, "output_tokens": 1},
        {"input_tokens": 1.5, "output_tokens": 1},
        {"input_tokens": True, "output_tokens": 1},
        {"input_tokens": "1", "output_tokens": 1},
        {"input_tokens": 1, "output_tokens": 1, "cost": -0.1},
        {"input_tokens": 1, "output_tokens": 1, "cost": "0.1"},
        {"input_tokens": 1, "output_tokens": 1, "truncated": "no"},
        "lots",
    ],
)
def test_named_invalid_usage(usage: Any) -> None:
    with pytest.raises(DecisionValidationError) as caught:
        OR.read_usage({"usage": usage})
    assert caught.value.reason == "invalid-usage"


def test_missing_usage_is_unknown() -> None:
    assert OR.read_usage({"model": "m"}) == (None, None)
    assert OA.read_usage({"usage": None}) == (None, None)


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 10, "output_tokens": 2, "total_tokens": 11},
        {"input_tokens": 10, "output_tokens": 2, "input_tokens_details": {"cached_tokens": 11}},
        {"input_tokens": 10, "output_tokens": -2},
        {"input_tokens": 10, "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": -1}},
        {"output_tokens": 2},
    ],
)
def test_openai_invalid_usage(usage: Any) -> None:
    with pytest.raises(DecisionValidationError, match="invalid-usage"):
        OA.read_usage({"usage": usage})


def _ordered(*answers: Any) -> dict[str, Any]:
    return {"model": "gpt-6-luna", "answers": list(answers)}


P1 = {"type": "predicate", "name": "is_spam", "probability": 0.9}
P2 = {"type": "predicate", "name": "needs_reply", "probability": 0.1}


@pytest.mark.parametrize(
    "document",
    [
        _ordered(P2, P1),
        _ordered(P1),
        _ordered(P1, P2, {"type": "predicate", "name": "third", "probability": 0.1}),
        _ordered(P1, P1),
        _ordered(P1, {"type": "refusal", "name": "needs_reply", "probability": 0.2}),
        _ordered(P1, {"type": "predicate", "name": None, "probability": 0.2}),
        _ordered(P1, {"type": "predicate", "name": "needs_reply", "probability": 2}),
        _ordered(P1, {"type": "predicate", "name": "needs_reply", "probability": "0.2"}),
        _ordered(P1, {"type": "score", "name": "needs_reply", "score": 1}),
        {"model": "gpt-6-luna", "answers": {"is_spam": P1, "needs_reply": P2}},
    ],
)
def test_openai_answer_rules(document: dict[str, Any]) -> None:
    with pytest.raises(DecisionValidationError) as caught:
        OA.read_verdict(Q, document, {})
    assert caught.value.reason == "invalid-answers"


IDS = st.lists(st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True), min_size=1, max_size=12, unique=True)


@settings(max_examples=60, deadline=None)
@given(data=st.data(), ids=IDS)
def test_any_permutation_of_named_answer_keys_gives_the_same_ordered_result(
    data: st.DataObject, ids: list[str]
) -> None:
    questions = tuple(Question(id=qid, instructions=f"q {qid}") for qid in ids)
    probabilities = {qid: data.draw(st.floats(0.0, 1.0)) for qid in ids}
    order = data.draw(st.permutations(ids))
    codec = data.draw(st.sampled_from([OR, S1]))
    pairs = ", ".join(
        f'"{qid}": {{"type": "noul", "noul": {json.dumps(probabilities[qid])}}}' for qid in order
    )
    raw = ('{"model": "m-1", "answers": {' + pairs + "}}").encode()
    verdict = codec.read_verdict(questions, strict_json(raw), {})
    assert verdict.answers == tuple(PredicateAnswer(id=qid, probability=probabilities[qid]) for qid in ids)


@settings(max_examples=60, deadline=None)
@given(
    bad=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not 0.0 <= x <= 1.0),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1e999", "-1e999"]),
    ),
    codec_name=st.sampled_from(["openrouter", "systemone", "openai"]),
)
def test_any_probability_outside_unit_interval_or_non_finite_fails_on_the_wire(
    bad: object, codec_name: str
) -> None:
    token = bad if isinstance(bad, str) else json.dumps(bad)
    if codec_name == "openai":
        raw = (
            '{"model": "m", "answers": [{"type": "predicate", "name": "is_spam", "probability": 0.5},'
            f' {{"type": "predicate", "name": "needs_reply", "probability": {token}}}]}}'
        )
        codec = OA
    else:
        raw = (
            '{"model": "m", "answers": {"is_spam": {"type": "noul", "noul": 0.5},'
            f' "needs_reply": {{"type": "noul", "noul": {token}}}}}}}'
        )
        codec = OR if codec_name == "openrouter" else S1
    with pytest.raises(DecisionValidationError):
        codec.read_verdict(Q, strict_json(raw.encode()), {})
