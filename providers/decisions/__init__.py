"""The Decision capability: typed yes/no judgments from decision models (not the streaming chain).

Three protocols, translated at the edge (cattrs wire models, attrs types inside):
OpenRouter native (``POST https://openrouter.ai/api/alpha/decisions``), System One
(``POST <base>/systemone``) and OpenAI Decisions (``POST <base>/decisions``) on custom
endpoints. ``call_decisions`` (or ``Decisions.call_decisions``) takes a persisted
``DecisionReference``, rechecks it through the application's ``DecisionDirectory`` and returns
one typed result: completed, refused, denied, cancelled, invalid-input, unavailable or failed.

Modules: ``types`` (vocabulary), ``validate`` (pure rules), ``convert`` (the strict cattrs
converter), ``codec`` and ``wire_*`` (the protocols), ``selection`` (options, references and
their recheck), ``discovery`` (OpenRouter's decision models), ``fetch`` (the bounded one-shot
POST under request holds), ``call`` (the call).
"""

from __future__ import annotations

from typing import Any

from rxcord.providers.decisions.call import (
    CancelSignal,
    DecisionConfig,
    Decisions,
    call_decisions,
    register_decision_metric,
    register_decisions,
)
from rxcord.providers.decisions.discovery import discover_openrouter_models
from rxcord.providers.decisions.selection import (
    DecisionDirectory,
    DecisionModelOption,
    custom_provider,
    load_decision_models,
    reference_for,
    resolve_reference,
)
from rxcord.providers.decisions.types import (
    Answer,
    DecisionCancelled,
    DecisionCapability,
    DecisionCompleted,
    DecisionCredentials,
    DecisionDenied,
    DecisionFailed,
    DecisionInvalidInput,
    DecisionKind,
    DecisionLimit,
    DecisionProtocol,
    DecisionReference,
    DecisionRefused,
    DecisionResult,
    DecisionUnavailable,
    FailureCategory,
    PredicateAnswer,
    Question,
    RefusedAnswer,
)

__all__ = (
    "Answer",
    "CancelSignal",
    "DecisionCancelled",
    "DecisionCapability",
    "DecisionCompleted",
    "DecisionConfig",
    "DecisionCredentials",
    "DecisionDenied",
    "DecisionDirectory",
    "DecisionFailed",
    "DecisionInvalidInput",
    "DecisionKind",
    "DecisionLimit",
    "DecisionModelOption",
    "DecisionProtocol",
    "DecisionReference",
    "DecisionRefused",
    "DecisionResult",
    "DecisionUnavailable",
    "Decisions",
    "FailureCategory",
    "PredicateAnswer",
    "Question",
    "RefusedAnswer",
    "call_decisions",
    "custom_provider",
    "decision_protocols",
    "discover_openrouter_models",
    "load_decision_models",
    "reference_for",
    "register_decision_metric",
    "register_decisions",
    "resolve_reference",
    "supports_decisions",
)


def decision_protocols(adapter: Any) -> tuple[DecisionProtocol, ...]:
    """The decision protocols *adapter* supports (its ``decision_protocols``; none by default)."""
    protocols = getattr(adapter, "decision_protocols", ())
    return tuple(DecisionProtocol(protocol) for protocol in protocols)


def supports_decisions(adapter: Any) -> bool:
    """Whether *adapter* offers the Decision capability (OpenRouter native; custom endpoints)."""
    return bool(decision_protocols(adapter))
