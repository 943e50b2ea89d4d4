"""Pure validation rules of the Decision capability: input, strict JSON, probabilities, usage, answers."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.errors import DecisionInputError, DecisionValidationError, RxcordError
from rxcord.providers.decisions.types import PredicateAnswer, Question, RefusedAnswer
from rxcord.providers.decisions.validate import (
    check_request_size,
    order_named_answers,
    parse_questions,
    strict_json,
    truncation_report,
    validate_evidence,
    validate_ordered_answers,
    validate_probability,
    validate_questions,
)

Q = (Question(id="is_spam", instructions="Spam?"), Question(id="needs_reply", instructions="Reply?"))


def _q(qid: str) -> Question:
    return Question(id=qid, instructions="Is it?")


@pytest.mark.parametrize("qid", ["a", "is_spam", "x9_", "a" * 64, "q_1_2"])
def test_valid_question_ids(qid: str) -> None:
    assert validate_questions([_q(qid)])[0].id == qid


@pytest.mark.parametrize("qid", ["", "A", "9a", "_a", "a-b", "a b", "a" * 65, "é", "isSpam", "a\n"])
def test_invalid_question_ids(qid: str) -> None:
    with pytest.raises(DecisionInputError) as caught:
        validate_questions([_q("ok"), _q(qid)])
    assert caught.value.reason == "invalid-question-id"
    assert caught.value.index == 1


def test_question_counts() -> None:
    with pytest.raises(DecisionInputError, match="no-questions"):
        validate_questions([])
    assert len(validate_questions([_q(f"q{i}") for i in range(64)])) == 64
    with pytest.raises(DecisionInputError, match="too-many-questions"):
        validate_questions([_q(f"q{i}") for i in range(65)])


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(DecisionInputError) as caught:
        validate_questions([_q("a"), _q("b"), _q("a")])
    assert (caught.value.reason, caught.value.index) == ("duplicate-question-id", 2)


@pytest.mark.parametrize("instructions", ["", "   ", "\ud800 lone surrogate"])
def test_instructions_must_be_text(instructions: str) -> None:
    with pytest.raises(DecisionInputError, match="invalid-question"):
        validate_questions([Question(id="a", instructions=instructions)])


def test_parse_questions_from_mappings() -> None:
    parsed = parse_questions([{"type": "predicate", "id": "a", "instructions": "A?"}])
    assert parsed == (Question(id="a", instructions="A?"),)


@pytest.mark.parametrize(
    "item",
    [
        {"type": "noul", "id": "a", "instructions": "A?"},
        {"type": "predicate", "id": "a"},
        {"type": "predicate", "id": "a", "instructions": 3},
        {"type": "predicate", "id": "a", "instructions": "A?", "criteria": {}},
        ["predicate", "a", "A?"],
        "a",
    ],
)
def test_parse_questions_refuses_other_shapes(item: object) -> None:
    with pytest.raises(DecisionInputError) as caught:
        parse_questions([item])  # type: ignore[list-item]
    assert caught.value.reason == "invalid-question"
    assert isinstance(caught.value, RxcordError)


@pytest.mark.parametrize("evidence", ["", "  \n", None, 42, "\udfff"])
def test_evidence_must_be_text(evidence: object) -> None:
    with pytest.raises(DecisionInputError, match="invalid-evidence"):
        validate_evidence(evidence)


def test_request_size_counts_utf8_bytes() -> None:
    body = json.dumps({"state": "é" * 10}, ensure_ascii=False).encode()
    check_request_size(body, len(body))
    with pytest.raises(DecisionInputError, match="request-too-large"):
        check_request_size(body, len(body) - 1)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1, "a": 2}',
        b'{"x": {"b": 1, "b": 1}}',
        b"\xff\xfe{}",
        b"{",
        b"",
    ],
)
def test_strict_json_refuses(raw: bytes) -> None:
    with pytest.raises(DecisionValidationError) as caught:
        strict_json(raw)
    assert caught.value.reason == "invalid-json"


def test_strict_json_accepts_standard_json() -> None:
    assert strict_json(b'{"a": [1, 2.5, "x", null, true]}') == {"a": [1, 2.5, "x", None, True]}


@settings(deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0))
def test_probabilities_in_range_pass(p: float) -> None:
    assert validate_probability(p, "q") == p


@settings(deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: not (0.0 <= x <= 1.0)),
        st.sampled_from([math.nan, math.inf, -math.inf]),
        st.integers().filter(lambda n: n not in (0, 1)),
    )
)
def test_any_probability_outside_unit_interval_or_non_finite_fails(p: float) -> None:
    with pytest.raises(DecisionValidationError) as caught:
        validate_probability(p, "q")
    assert caught.value.reason == "invalid-answers"


@pytest.mark.parametrize("p", [True, False, "0.5", None, [0.5]])
def test_probability_must_be_a_number(p: object) -> None:
    with pytest.raises(DecisionValidationError):
        validate_probability(p, "q")


def test_named_answers_are_put_in_question_order() -> None:
    answers = order_named_answers(Q, {"needs_reply": 0.1, "is_spam": 0.9})
    assert answers == (
        PredicateAnswer(id="is_spam", probability=0.9),
        PredicateAnswer(id="needs_reply", probability=0.1),
    )


def test_named_answers_missing_or_extra_fail() -> None:
    with pytest.raises(DecisionValidationError, match="missing"):
        order_named_answers(Q, {"is_spam": 0.9})
    with pytest.raises(DecisionValidationError, match="unexpected"):
        order_named_answers(Q, {"is_spam": 0.9, "needs_reply": 0.1, "other": 0.3})


def test_ordered_answers_rules() -> None:
    good = [PredicateAnswer(id="is_spam", probability=0.9), RefusedAnswer(id="needs_reply")]
    assert validate_ordered_answers(Q, good) == tuple(good)
    with pytest.raises(DecisionValidationError, match="wrong order"):
        validate_ordered_answers(Q, list(reversed(good)))
    with pytest.raises(DecisionValidationError, match="duplicate"):
        validate_ordered_answers(Q, [good[0], PredicateAnswer(id="is_spam", probability=0.2)])
    with pytest.raises(DecisionValidationError, match="1 answers for 2"):
        validate_ordered_answers(Q, good[:1])
    with pytest.raises(DecisionValidationError, match="unexpected"):
        validate_ordered_answers(Q, [good[0], PredicateAnswer(id="other", probability=0.2)])


def test_truncation_report() -> None:
    assert truncation_report({"input_tokens": 1}) is None
    report = truncation_report({"truncated": True, "state_tokens_dropped": 5, "truncated_questions": ["a"]})
    assert report is not None and report.cut
    clean = truncation_report({"truncated": False, "state_tokens_dropped": 0, "truncated_questions": []})
    assert clean is not None and not clean.cut
    with pytest.raises(DecisionValidationError, match="invalid-usage"):
        truncation_report({"truncated": "yes"})
    with pytest.raises(DecisionValidationError, match="invalid-usage"):
        truncation_report({"state_tokens_dropped": -1})
