"""Pure validation of decision input and answers (no I/O, no logging).

Input is refused before any HTTP request (``DecisionInputError``); an answer
that breaks a rule fails (``DecisionValidationError``). Both carry a short
reason code and never the evidence, the question text or the response body.

Rules:

* questions: 1-64, each ``{type: "predicate", id, instructions}``; ids unique,
  a lowercase letter then ``[a-z0-9_]``, at most 64 characters; instructions a
  non-empty string; evidence a non-empty string. Strings must be encodable as
  UTF-8 (no lone surrogates).
* the serialized request's UTF-8 byte count must fit the model's documented
  input-token ceiling (a conservative bound: one token is at least one byte);
  evidence is never truncated;
* a response body is strict JSON: UTF-8, no ``NaN``/``Infinity`` tokens, no
  duplicate keys in any object, arrays and objects nested at most
  ``rxcord.core.safe_json.MAX_DEPTH`` levels (the chat path's bound: deeper is
  ``invalid-json``, never a ``RecursionError``);
* probabilities are numbers (not bools), finite, in [0, 1];
* named protocols: exactly one answer per question id (missing, extra or
  duplicate keys fail), each of the question's type; the ordered protocol: one
  answer per question, in question order, each named after its question;
* usage: integer token counts in ``[0, MAX_TOKENS]`` (10**9), a finite cost in
  ``[0, MAX_COST]`` (1e6 USD; ``rxcord.providers.usage``'s bounds): past them the usage is
  ``invalid-usage``, as a negative count is; an explicit evidence-truncation report fails.
"""

from __future__ import annotations

__all__ = (
    "MAX_QUESTIONS",
    "MAX_QUESTION_ID",
    "TruncationReport",
    "check_request_size",
    "check_usage_bounds",
    "order_named_answers",
    "parse_questions",
    "strict_json",
    "truncation_report",
    "validate_evidence",
    "validate_ordered_answers",
    "validate_probability",
    "validate_questions",
    "validate_token_count",
)

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from rxcord.core import safe_json
from rxcord.core.errors import DecisionInputError, DecisionValidationError, DecisionWireError
from rxcord.core.types import Usage
from rxcord.providers.decisions.convert import structure
from rxcord.providers.decisions.types import Answer, PredicateAnswer, Question
from rxcord.providers.usage import MAX_TOKENS, usage_problem

MAX_QUESTIONS: Final = 64
"""Questions per request (at least one)."""
MAX_QUESTION_ID: Final = 64
"""Characters in a question id."""
_ID_RE: Final = re.compile(r"[a-z][a-z0-9_]{0,63}")


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@attrs.frozen(kw_only=True)
class _QuestionIn:
    """A caller's question as data (the CLI's questions file)."""

    type: str
    id: str
    instructions: str


def parse_questions(items: Iterable[Question | Mapping[str, Any]]) -> tuple[Question, ...]:
    """Caller questions (``Question`` s or ``{type, id, instructions}`` mappings), validated.

    Raises:
        DecisionInputError: A rule is broken (the first one found).
    """
    if isinstance(items, (str, bytes, Mapping)):
        raise DecisionInputError("invalid-question")
    questions: list[Question] = []
    for index, item in enumerate(items):
        if isinstance(item, Question):
            questions.append(item)
            continue
        if not isinstance(item, Mapping) or set(item) - {"type", "id", "instructions"}:
            raise DecisionInputError("invalid-question", index)
        try:
            parsed = structure(dict(item), _QuestionIn)
        except DecisionWireError:
            raise DecisionInputError("invalid-question", index) from None
        if parsed.type != "predicate":
            raise DecisionInputError("invalid-question", index)
        questions.append(Question(id=parsed.id, instructions=parsed.instructions))
    return validate_questions(questions)


def validate_questions(questions: Sequence[Question]) -> tuple[Question, ...]:
    """*questions* if they follow the rules.

    Raises:
        DecisionInputError: ``no-questions``, ``too-many-questions``, ``invalid-question``,
            ``invalid-question-id`` or ``duplicate-question-id``.
    """
    if not questions:
        raise DecisionInputError("no-questions")
    if len(questions) > MAX_QUESTIONS:
        raise DecisionInputError("too-many-questions")
    seen: set[str] = set()
    for index, question in enumerate(questions):
        if not isinstance(question, Question) or question.type != "predicate":
            raise DecisionInputError("invalid-question", index)
        if not isinstance(question.id, str) or _ID_RE.fullmatch(question.id) is None:
            raise DecisionInputError("invalid-question-id", index)
        if question.id in seen:
            raise DecisionInputError("duplicate-question-id", index)
        seen.add(question.id)
        text = question.instructions
        if not isinstance(text, str) or not text.strip() or not _encodable(text):
            raise DecisionInputError("invalid-question", index)
    return tuple(questions)


def validate_evidence(evidence: object) -> str:
    """*evidence* if it is non-empty text encodable as UTF-8 (it is never truncated)."""
    if not isinstance(evidence, str) or not evidence.strip() or not _encodable(evidence):
        raise DecisionInputError("invalid-evidence")
    return evidence


def check_request_size(body: bytes, max_input_tokens: int) -> None:
    """Refuse a serialized request whose UTF-8 byte count exceeds the model's input-token ceiling."""
    if len(body) > max_input_tokens:
        raise DecisionInputError("request-too-large")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DecisionValidationError("invalid-json", "duplicate key")
        result[key] = value
    return result


def _no_constants(token: str) -> Any:
    raise DecisionValidationError("invalid-json", f"{token} is not JSON")


def strict_json(body: bytes) -> Any:
    """Decode *body*: UTF-8, standard JSON only (no ``NaN``/``Infinity``), no duplicate keys."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise DecisionValidationError("invalid-json", "not UTF-8") from None
    if safe_json.too_deep(text):
        raise DecisionValidationError("invalid-json", f"nested deeper than {safe_json.MAX_DEPTH} levels")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constants)
    except DecisionValidationError:
        raise
    except (ValueError, RecursionError):  # RecursionError: a stack already deep when called
        raise DecisionValidationError("invalid-json", "not JSON") from None


def validate_probability(value: object, question_id: str) -> float:
    """*value* as a probability: a number (not a bool), finite, in [0, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DecisionValidationError("invalid-answers", f"{question_id}: probability is not a number")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise DecisionValidationError("invalid-answers", f"{question_id}: probability outside [0, 1]")
    return number


def validate_token_count(value: object, name: str) -> int:
    """*value* as a token count: an integer (not a bool) in ``[0, MAX_TOKENS]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise DecisionValidationError("invalid-usage", f"{name} is not a token count")
    return value


def check_usage_bounds(usage: Usage) -> None:
    """Refuse decoded usage past the bounds (huge counts, an enormous or non-finite cost)."""
    problem = usage_problem(usage)
    if problem is not None:
        raise DecisionValidationError("invalid-usage", problem)


@attrs.frozen(kw_only=True)
class TruncationReport:
    """A provider's explicit report that it cut the evidence (self-hosted System One servers)."""

    truncated: bool = False
    state_tokens_dropped: int | None = None
    truncated_questions: tuple[str, ...] = ()

    @property
    def cut(self) -> bool:
        """Whether anything was cut."""
        return self.truncated or bool(self.state_tokens_dropped) or bool(self.truncated_questions)


def truncation_report(usage: Mapping[str, Any]) -> TruncationReport | None:
    """The truncation report in a ``usage`` object, or ``None`` when it has none.

    A report that is present but malformed is invalid usage.
    """
    keys = ("truncated", "state_tokens_dropped", "truncated_questions")
    if not any(key in usage for key in keys):
        return None
    truncated = usage.get("truncated", False)
    dropped = usage.get("state_tokens_dropped")
    cut_questions = usage.get("truncated_questions", [])
    if not isinstance(truncated, bool):
        raise DecisionValidationError("invalid-usage", "truncated is not a boolean")
    if dropped is not None:
        dropped = validate_token_count(dropped, "state_tokens_dropped")
    if not isinstance(cut_questions, list) or not all(isinstance(item, str) for item in cut_questions):
        raise DecisionValidationError("invalid-usage", "truncated_questions is not a list of ids")
    return TruncationReport(
        truncated=truncated, state_tokens_dropped=dropped, truncated_questions=tuple(cut_questions)
    )


def order_named_answers(
    questions: Sequence[Question], answers: Mapping[str, float]
) -> tuple[PredicateAnswer, ...]:
    """Named answers (id -> probability) in question order; missing or extra ids fail.

    Duplicate keys were refused when the JSON was decoded (``strict_json``).
    """
    expected = [question.id for question in questions]
    missing = [qid for qid in expected if qid not in answers]
    if missing:
        raise DecisionValidationError("invalid-answers", f"missing answers: {', '.join(missing[:5])}")
    extra = [key for key in answers if key not in set(expected)]
    if extra:
        raise DecisionValidationError("invalid-answers", f"{len(extra)} unexpected answer(s)")
    return tuple(
        PredicateAnswer(id=qid, probability=validate_probability(answers[qid], qid)) for qid in expected
    )


def validate_ordered_answers(questions: Sequence[Question], answers: Sequence[Answer]) -> tuple[Answer, ...]:
    """Positional answers, each named after the question at its position.

    Counts must match; a duplicate name fails as such, a swapped pair as the wrong order
    (answers of the ordered protocol are never re-sorted).
    """
    names = [answer.id for answer in answers]
    if len(set(names)) != len(names):
        raise DecisionValidationError("invalid-answers", "duplicate answers")
    if len(answers) != len(questions):
        raise DecisionValidationError(
            "invalid-answers", f"{len(answers)} answers for {len(questions)} questions"
        )
    for question, answer in zip(questions, answers, strict=True):
        if answer.id != question.id:
            known = {q.id for q in questions}
            what = "wrong order" if answer.id in known else "unexpected answer"
            raise DecisionValidationError("invalid-answers", f"{what} at {question.id}")
        if isinstance(answer, PredicateAnswer):
            validate_probability(answer.probability, question.id)
    return tuple(answers)
