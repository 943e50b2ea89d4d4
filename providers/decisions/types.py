"""The Decision capability's own vocabulary: questions, answers, references, results.

attrs types only (the wire formats live in the protocol modules and are
translated at the edge). Every result is one frozen class per kind, all with a
``kind`` field, so a caller can ``match`` on the class or compare ``kind``:

=================  ==================================================================
``completed``      every question answered: ordered ``PredicateAnswer`` s
``refused``        a partial (or total) OpenAI refusal: the answered questions plus
                   the refused ones (``RefusedAnswer``), in question order
``denied``         request admission was denied (``ProviderRequestDeniedError``)
``cancelled``      the caller cancelled
``invalid-input``  the questions or the evidence were refused before any HTTP request
``unavailable``    no usable selection (``not-selected``, a stale reference...)
``failed``         the provider or its answer failed; already logged (``error_logged``)
=================  ==================================================================
"""

from __future__ import annotations

__all__ = (
    "Answer",
    "DecisionCancelled",
    "DecisionCapability",
    "DecisionCompleted",
    "DecisionCredentials",
    "DecisionDenied",
    "DecisionFailed",
    "DecisionInvalidInput",
    "DecisionKind",
    "DecisionLimit",
    "DecisionProtocol",
    "DecisionReference",
    "DecisionRefused",
    "DecisionResult",
    "DecisionUnavailable",
    "FailureCategory",
    "PredicateAnswer",
    "Question",
    "RefusedAnswer",
)

import enum
from typing import Literal, TypeAlias

import attrs

from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.types import Usage


class DecisionProtocol(str, enum.Enum):
    """The three wire protocols."""

    OPENROUTER = "openrouter"
    """OpenRouter native ``POST https://openrouter.ai/api/alpha/decisions``: named ``noul`` questions."""
    SYSTEMONE = "systemone"
    """A custom endpoint, ``POST <base>/systemone``: the same named ``noul`` protocol."""
    OPENAI = "openai"
    """A custom endpoint, ``POST <base>/decisions``: ordered predicates, predicate/refusal answers."""


class DecisionKind(str, enum.Enum):
    """What a decision call came to."""

    COMPLETED = "completed"
    REFUSED = "refused"
    DENIED = "denied"
    CANCELLED = "cancelled"
    INVALID_INPUT = "invalid-input"
    UNAVAILABLE = "unavailable"
    FAILED = "failed"


class FailureCategory(str, enum.Enum):
    """Why a call failed (a metric label; the first six are warnings, the rest errors)."""

    AUTHENTICATION = "authentication"
    AVAILABILITY = "availability"
    THROTTLING = "throttling"
    NETWORK = "network"
    TIMEOUT = "timeout"
    UPSTREAM = "upstream"
    BLOCKED = "blocked"
    MALFORMED_REQUEST = "malformed-request"
    MALFORMED_RESPONSE = "malformed-response"

    @property
    def is_error(self) -> bool:
        """Malformed requests and responses are errors; the other categories warnings."""
        return self in (FailureCategory.MALFORMED_REQUEST, FailureCategory.MALFORMED_RESPONSE)


@attrs.frozen(kw_only=True)
class Question:
    """One yes/no question: ``{"type": "predicate", "id": ..., "instructions": ...}``."""

    id: str
    """Application-owned: starts with a lowercase letter, ``[a-z0-9_]``, at most 64 characters."""
    instructions: str = attrs.field(repr=False)
    """What the question asks (never logged)."""
    type: Literal["predicate"] = "predicate"


@attrs.frozen(kw_only=True)
class PredicateAnswer:
    """The probability of "yes" for one question, finite in [0, 1]."""

    id: str
    probability: float


@attrs.frozen(kw_only=True)
class RefusedAnswer:
    """The provider declined this one question (OpenAI Decisions); no score is disclosed."""

    id: str


Answer: TypeAlias = PredicateAnswer | RefusedAnswer


@attrs.frozen(kw_only=True)
class DecisionReference:
    """What a consumer persists to name its selected decision model.

    Global native entries have ``registration_id=None``; scoped native entries carry
    their exact registration id; custom entries use ``provider="custom:<connection_id>"``,
    the exact endpoint row id and ``registration_id=None``.
    """

    provider: str
    model_id: str
    registration_id: str | None = None
    custom_endpoint_id: str | None = None


class DecisionCapability(str, enum.Enum):
    """The slot that owns (and pays for) a decision request: its credentials are that slot's."""

    DECISION = "decision"
    """The scope's decision slot (the default)."""
    NUDGE_CHECKER = "nudge-checker"
    """A pinned checker's slot: its own payer, never the decision slot's key."""


def _keys(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise TypeError("fallback_keys is a sequence of keys")
    if not all(isinstance(key, str) and key for key in value):
        raise TypeError("every fallback key is a non-empty string")
    return tuple(value)


@attrs.frozen(kw_only=True)
class DecisionCredentials:
    """The credentials of one slot of an option (``api_key=None``: the endpoint needs none).

    ``fallback_keys`` are more keys of the same payer, tried in order when a key fails for
    itself (HTTP 401, 402, 403, an OpenRouter ``limit_source``: ``rxcord.providers.keys``);
    never another slot's or another payer's key.
    """

    api_key: str | None = attrs.field(default=None, repr=False)
    fallback_keys: tuple[str, ...] = attrs.field(default=(), converter=_keys, repr=False)

    @property
    def keys(self) -> tuple[str | None, ...]:
        """The keys in the order they are tried (``api_key`` first, repeats once)."""
        ordered: list[str | None] = [self.api_key]
        ordered.extend(key for key in self.fallback_keys if key != self.api_key)
        return tuple(dict.fromkeys(ordered))


@attrs.frozen(kw_only=True)
class DecisionLimit:
    """Validated limit metadata of a failed HTTP response (OpenRouter ``error.metadata``)."""

    limit_source: str | None = None
    """Which limit refused the request (``openrouter_in_flight_budget``), an identifier."""
    minimum_balance: float | None = None
    """The numeric minimum balance a media output needs, when the provider named one."""


@attrs.frozen(kw_only=True)
class DecisionCompleted:
    """Every question answered."""

    answers: tuple[PredicateAnswer, ...]
    """In the caller's question order."""
    model: str
    """The model id the provider returned (often a dated build of the requested one)."""
    usage: Usage | None = None
    """Validated usage (``cost`` only when reported); ``None`` when unknown."""
    provider_request_id: str | None = None
    """The provider's request identity (bounded), when it sent one."""
    correlation: str = ""
    """The local correlation id of this call (also in its log lines)."""
    kind: Literal[DecisionKind.COMPLETED] = DecisionKind.COMPLETED


@attrs.frozen(kw_only=True)
class DecisionRefused:
    """At least one question was refused; the others carry their answers."""

    answers: tuple[Answer, ...]
    model: str
    usage: Usage | None = None
    provider_request_id: str | None = None
    correlation: str = ""
    kind: Literal[DecisionKind.REFUSED] = DecisionKind.REFUSED

    @property
    def refused_ids(self) -> tuple[str, ...]:
        """The ids of the refused questions, in question order."""
        return tuple(answer.id for answer in self.answers if isinstance(answer, RefusedAnswer))


@attrs.frozen(kw_only=True)
class DecisionDenied:
    """Request admission was denied for its owner (not an operational failure)."""

    denial: ProviderRequestDeniedError
    correlation: str = ""
    kind: Literal[DecisionKind.DENIED] = DecisionKind.DENIED


@attrs.frozen(kw_only=True)
class DecisionCancelled:
    """The caller cancelled (usage already decoded was still reported)."""

    correlation: str = ""
    kind: Literal[DecisionKind.CANCELLED] = DecisionKind.CANCELLED


@attrs.frozen(kw_only=True)
class DecisionInvalidInput:
    """The input was refused before any HTTP request."""

    reason: str
    """``no-questions``, ``too-many-questions``, ``invalid-question``, ``invalid-question-id``,
    ``duplicate-question-id``, ``invalid-evidence`` or ``request-too-large``."""
    question_index: int | None = None
    """The offending question's position, when one question is at fault."""
    correlation: str = ""
    kind: Literal[DecisionKind.INVALID_INPUT] = DecisionKind.INVALID_INPUT


@attrs.frozen(kw_only=True)
class DecisionUnavailable:
    """No usable selection."""

    reason: str
    """``not-selected``, ``unsupported``, ``not-admitted``, ``not-owned``,
    ``stale-registration``, ``no-credentials``, ``protocol-mismatch`` or ``not-configured``."""
    correlation: str = ""
    kind: Literal[DecisionKind.UNAVAILABLE] = DecisionKind.UNAVAILABLE


@attrs.frozen(kw_only=True)
class DecisionFailed:
    """The call failed. It was logged already: callers must not log it again.

    HTTP status and body text stay in the logs; only validated limit metadata is kept.
    """

    category: FailureCategory
    reason: str
    """A short code: ``http-error``, ``timeout``, ``network``, ``endpoint-refused``,
    ``redirect-refused``, ``oversized-response``, ``invalid-json``, ``invalid-usage``,
    ``invalid-answers``, ``evidence-truncated``..."""
    limit: DecisionLimit | None = None
    retryable: bool = False
    correlation: str = ""
    error_logged: bool = True
    kind: Literal[DecisionKind.FAILED] = DecisionKind.FAILED


DecisionResult: TypeAlias = (
    DecisionCompleted
    | DecisionRefused
    | DecisionDenied
    | DecisionCancelled
    | DecisionInvalidInput
    | DecisionUnavailable
    | DecisionFailed
)
