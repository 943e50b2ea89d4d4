"""OpenAI Decisions on a custom endpoint: ``POST <base>/decisions`` (``<base>`` includes ``/v1``).

Ordered: questions are an array (the caller's id goes in ``name``) and answers
come back in question order, each ``{"type": "predicate", "name", "probability"}``
or ``{"type": "refusal", "name"}`` (the host declined that one question and
discloses no score). A swapped but named response fails: it is never re-sorted.
Usage has tokens with details and no cost; cached input is part of
``input_tokens``. The request identity is the ``x-request-id`` header.
"""

from __future__ import annotations

__all__ = ("REQUEST_ID_HEADER", "OpenAICodec", "OpenAIRequest", "OpenAIUsage")

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rxcord.core.errors import DecisionValidationError, DecisionWireError
from rxcord.core.types import Usage
from rxcord.providers.decisions.codec import Verdict, bounded_model, bounded_request_id, header, usage_object
from rxcord.providers.decisions.convert import structure, unstructure
from rxcord.providers.decisions.types import (
    Answer,
    DecisionProtocol,
    PredicateAnswer,
    Question,
    RefusedAnswer,
)
from rxcord.providers.decisions.validate import (
    TruncationReport,
    truncation_report,
    validate_ordered_answers,
    validate_probability,
)

REQUEST_ID_HEADER: Final = "x-request-id"


@attrs.frozen(kw_only=True)
class PredicateQuestion:
    """``{type: "predicate", name, instructions}``."""

    name: str
    instructions: str
    type: str = "predicate"


@attrs.frozen(kw_only=True)
class OpenAIRequest:
    """``{model, input, questions: [...]}`` (the order defines the answers' order)."""

    model: str
    input: str
    questions: list[PredicateQuestion]


@attrs.frozen(kw_only=True)
class _PredicateAnswer:
    type: str
    name: str
    probability: float


@attrs.frozen(kw_only=True)
class _RefusalAnswer:
    type: str
    name: str


@attrs.frozen(kw_only=True)
class _InputDetails:
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


@attrs.frozen(kw_only=True)
class _OutputDetails:
    reasoning_tokens: int | None = None


@attrs.frozen(kw_only=True)
class OpenAIUsage:
    """Tokens with details; ``total_tokens`` must be input plus output when present."""

    input_tokens: int
    output_tokens: int
    total_tokens: int | None = None
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None


@attrs.frozen(kw_only=True)
class _Response:
    model: Any
    answers: list[Any]


class OpenAICodec:
    """The OpenAI Decisions protocol."""

    protocol: Final = DecisionProtocol.OPENAI

    def url(self, base_url: str) -> str:
        """``<base>/decisions``."""
        return base_url.rstrip("/") + "/decisions"

    def build_body(self, model: str, evidence: str, questions: Sequence[Question]) -> dict[str, Any]:
        """``{model, input, questions}`` with every question named after its id."""
        request = OpenAIRequest(
            model=model,
            input=evidence,
            questions=[PredicateQuestion(name=q.id, instructions=q.instructions) for q in questions],
        )
        body: dict[str, Any] = unstructure(request)
        return body

    def read_usage(self, document: Mapping[str, Any]) -> tuple[Usage | None, TruncationReport | None]:
        """``usage`` as ``Usage``: cached tokens are the cache-read subset of the input total."""
        raw = usage_object(document)
        if raw is None:
            return None, None
        try:
            usage = structure(dict(raw), OpenAIUsage)
        except DecisionWireError as exc:
            raise DecisionValidationError("invalid-usage", str(exc)) from None
        details = usage.input_tokens_details or _InputDetails()
        counts = [usage.input_tokens, usage.output_tokens, usage.total_tokens, details.cached_tokens]
        counts.append(details.cache_write_tokens)
        if usage.output_tokens_details is not None:
            counts.append(usage.output_tokens_details.reasoning_tokens)
        if any(count is not None and count < 0 for count in counts):
            raise DecisionValidationError("invalid-usage", "negative token count")
        if usage.total_tokens is not None and usage.total_tokens != usage.input_tokens + usage.output_tokens:
            raise DecisionValidationError("invalid-usage", "total_tokens is not input plus output")
        read = details.cached_tokens
        write = details.cache_write_tokens
        if (read or 0) + (write or 0) > usage.input_tokens:
            raise DecisionValidationError("invalid-usage", "cached tokens exceed the input total")
        report = truncation_report(raw)
        normalized = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=read,
            cache_write_tokens=write,
        )
        return normalized, report

    def read_verdict(
        self, questions: Sequence[Question], document: Mapping[str, Any], headers: Mapping[str, str]
    ) -> Verdict:
        """One answer per question, in question order, predicate or refusal."""
        try:
            response = structure(dict(document), _Response)
        except DecisionWireError as exc:
            raise DecisionValidationError("invalid-answers", str(exc)) from None
        model = bounded_model(response.model)
        answers: list[Answer] = []
        for position, item in enumerate(response.answers):
            answers.append(_answer(item, position))
        ordered = validate_ordered_answers(questions, answers)
        return Verdict(
            answers=ordered,
            model=model,
            provider_request_id=bounded_request_id(header(headers, REQUEST_ID_HEADER)),
        )


def _answer(item: object, position: int) -> Answer:
    where = f"answer {position}"
    if not isinstance(item, Mapping):
        raise DecisionValidationError("invalid-answers", f"{where}: not an object")
    kind = item.get("type")
    try:
        if kind == "predicate":
            if not isinstance(item.get("probability"), (int, float)) or isinstance(
                item.get("probability"), bool
            ):
                raise DecisionValidationError("invalid-answers", f"{where}: probability is not a number")
            predicate = structure(dict(item), _PredicateAnswer)
            return PredicateAnswer(
                id=predicate.name, probability=validate_probability(predicate.probability, predicate.name)
            )
        if kind == "refusal":
            if "probability" in item:
                raise DecisionValidationError("invalid-answers", f"{where}: a refusal with a probability")
            refusal = structure(dict(item), _RefusalAnswer)
            return RefusedAnswer(id=refusal.name)
    except DecisionWireError:
        raise DecisionValidationError("invalid-answers", f"{where}: malformed") from None
    raise DecisionValidationError("invalid-answers", f"{where}: not a predicate or refusal answer")
