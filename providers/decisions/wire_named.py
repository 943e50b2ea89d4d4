"""The named ``noul`` protocol shared by OpenRouter native and System One.

Questions and answers are objects keyed by the caller's question ids; the
caller-facing ``predicate`` is ``noul`` on the wire and its probability is the
answer's ``noul`` field. JSON object order carries no meaning: answers are put
back in the caller's question order.
"""

from __future__ import annotations

__all__ = ("NamedCodec", "NamedRequest", "NamedResponse", "NamedUsage", "NoulAnswer", "NoulQuestion")

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from rxcord.core.errors import DecisionValidationError, DecisionWireError
from rxcord.core.types import Usage
from rxcord.providers.decisions.codec import Verdict, bounded_model, usage_object
from rxcord.providers.decisions.convert import structure, unstructure
from rxcord.providers.decisions.types import Question
from rxcord.providers.decisions.validate import TruncationReport, order_named_answers, truncation_report


@attrs.frozen(kw_only=True)
class NoulQuestion:
    """A yes/no question on the wire."""

    instructions: str
    type: str = "noul"


@attrs.frozen(kw_only=True)
class NamedRequest:
    """``{model, state, questions: {id: {type: "noul", instructions}}}``."""

    model: str
    state: str
    questions: dict[str, NoulQuestion]


@attrs.frozen(kw_only=True)
class NoulAnswer:
    """``{"type": "noul", "noul": p}``: the probability of yes."""

    type: str
    noul: float


@attrs.frozen(kw_only=True)
class NamedUsage:
    """Tokens (required) and the optional reported cost in USD."""

    input_tokens: int
    output_tokens: int
    cost: float | None = None


@attrs.frozen(kw_only=True)
class NamedResponse:
    """The 200 body: ``model`` and ``answers`` required; OpenRouter also sends ``id``."""

    model: Any
    answers: dict[str, Any]
    id: Any = None


class NamedCodec:
    """Translation of the named protocol (subclassed per protocol for the URL and request id)."""

    def build_body(self, model: str, evidence: str, questions: Sequence[Question]) -> dict[str, Any]:
        """``{model, state, questions}`` with every predicate renamed ``noul``."""
        request = NamedRequest(
            model=model,
            state=evidence,
            questions={
                question.id: NoulQuestion(instructions=question.instructions) for question in questions
            },
        )
        body: dict[str, Any] = unstructure(request)
        return body

    def read_usage(self, document: Mapping[str, Any]) -> tuple[Usage | None, TruncationReport | None]:
        """``usage`` as ``Usage`` (no cache fields on this protocol); ``cost`` only when reported."""
        raw = usage_object(document)
        if raw is None:
            return None, None
        try:
            usage = structure(dict(raw), NamedUsage)
        except DecisionWireError as exc:
            raise DecisionValidationError("invalid-usage", str(exc)) from None
        if usage.input_tokens < 0 or usage.output_tokens < 0 or (usage.cost is not None and usage.cost < 0):
            raise DecisionValidationError("invalid-usage", "negative usage")
        report = truncation_report(raw)
        return Usage(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost=usage.cost
        ), report

    def request_id(self, response: NamedResponse, headers: Mapping[str, str]) -> str | None:
        """The provider's request identity (protocol-specific)."""
        return None

    def read_verdict(
        self, questions: Sequence[Question], document: Mapping[str, Any], headers: Mapping[str, str]
    ) -> Verdict:
        """One ``noul`` answer per question id, in question order."""
        try:
            response = structure(dict(document), NamedResponse)
        except DecisionWireError as exc:
            raise DecisionValidationError("invalid-answers", str(exc)) from None
        model = bounded_model(response.model)
        probabilities: dict[str, Any] = {}
        for key, answer in response.answers.items():
            if not isinstance(answer, Mapping) or answer.get("type") != "noul":
                raise DecisionValidationError("invalid-answers", f"{key}: not a noul answer")
            try:
                noul = structure(dict(answer), NoulAnswer)
            except DecisionWireError:
                raise DecisionValidationError(
                    "invalid-answers", f"{key}: probability is not a finite number"
                ) from None
            probabilities[key] = noul.noul
        answers = order_named_answers(questions, probabilities)
        return Verdict(answers=answers, model=model, provider_request_id=self.request_id(response, headers))
