"""rxcord.decisions: typed yes/no judgments from decision models, beside the streaming chain.

``Decisions`` (or ``call_decisions``) takes a persisted ``DecisionReference``, rechecks it
through the application's ``DecisionDirectory`` and returns one typed result: completed,
refused, denied, cancelled, invalid-input, unavailable or failed. The implementation lives in
``rxcord.providers.decisions``; this façade is the import path (a test pins ``__all__``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "Answer": "rxcord.providers.decisions",
    "call_decisions": "rxcord.providers.decisions",
    "CancelSignal": "rxcord.providers.decisions",
    "custom_provider": "rxcord.providers.decisions",
    "decision_protocols": "rxcord.providers.decisions",
    "DecisionCancelled": "rxcord.providers.decisions",
    "DecisionCapability": "rxcord.providers.decisions",
    "DecisionCompleted": "rxcord.providers.decisions",
    "DecisionConfig": "rxcord.providers.decisions",
    "DecisionCredentials": "rxcord.providers.decisions",
    "DecisionDenied": "rxcord.providers.decisions",
    "DecisionDirectory": "rxcord.providers.decisions",
    "DecisionFailed": "rxcord.providers.decisions",
    "DecisionInputError": "rxcord.core.errors",
    "DecisionInvalidInput": "rxcord.providers.decisions",
    "DecisionKind": "rxcord.providers.decisions",
    "DecisionLimit": "rxcord.providers.decisions",
    "DecisionModelOption": "rxcord.providers.decisions",
    "DecisionOptionError": "rxcord.core.errors",
    "DecisionProtocol": "rxcord.providers.decisions",
    "DecisionReference": "rxcord.providers.decisions",
    "DecisionRefused": "rxcord.providers.decisions",
    "DecisionResult": "rxcord.providers.decisions",
    "Decisions": "rxcord.providers.decisions",
    "DecisionUnavailable": "rxcord.providers.decisions",
    "DecisionValidationError": "rxcord.core.errors",
    "DecisionWireError": "rxcord.core.errors",
    "discover_openrouter_models": "rxcord.providers.decisions",
    "FailureCategory": "rxcord.providers.decisions",
    "load_decision_models": "rxcord.providers.decisions",
    "PredicateAnswer": "rxcord.providers.decisions",
    "Question": "rxcord.providers.decisions",
    "reference_for": "rxcord.providers.decisions",
    "RefusedAnswer": "rxcord.providers.decisions",
    "register_decision_metric": "rxcord.providers.decisions",
    "register_decisions": "rxcord.providers.decisions",
    "resolve_reference": "rxcord.providers.decisions",
    "supports_decisions": "rxcord.providers.decisions",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.core.errors import DecisionInputError as DecisionInputError
    from rxcord.core.errors import DecisionOptionError as DecisionOptionError
    from rxcord.core.errors import DecisionValidationError as DecisionValidationError
    from rxcord.core.errors import DecisionWireError as DecisionWireError
    from rxcord.providers.decisions import Answer as Answer
    from rxcord.providers.decisions import CancelSignal as CancelSignal
    from rxcord.providers.decisions import DecisionCancelled as DecisionCancelled
    from rxcord.providers.decisions import DecisionCapability as DecisionCapability
    from rxcord.providers.decisions import DecisionCompleted as DecisionCompleted
    from rxcord.providers.decisions import DecisionConfig as DecisionConfig
    from rxcord.providers.decisions import DecisionCredentials as DecisionCredentials
    from rxcord.providers.decisions import DecisionDenied as DecisionDenied
    from rxcord.providers.decisions import DecisionDirectory as DecisionDirectory
    from rxcord.providers.decisions import DecisionFailed as DecisionFailed
    from rxcord.providers.decisions import DecisionInvalidInput as DecisionInvalidInput
    from rxcord.providers.decisions import DecisionKind as DecisionKind
    from rxcord.providers.decisions import DecisionLimit as DecisionLimit
    from rxcord.providers.decisions import DecisionModelOption as DecisionModelOption
    from rxcord.providers.decisions import DecisionProtocol as DecisionProtocol
    from rxcord.providers.decisions import DecisionReference as DecisionReference
    from rxcord.providers.decisions import DecisionRefused as DecisionRefused
    from rxcord.providers.decisions import DecisionResult as DecisionResult
    from rxcord.providers.decisions import Decisions as Decisions
    from rxcord.providers.decisions import DecisionUnavailable as DecisionUnavailable
    from rxcord.providers.decisions import FailureCategory as FailureCategory
    from rxcord.providers.decisions import PredicateAnswer as PredicateAnswer
    from rxcord.providers.decisions import Question as Question
    from rxcord.providers.decisions import RefusedAnswer as RefusedAnswer
    from rxcord.providers.decisions import call_decisions as call_decisions
    from rxcord.providers.decisions import custom_provider as custom_provider
    from rxcord.providers.decisions import decision_protocols as decision_protocols
    from rxcord.providers.decisions import discover_openrouter_models as discover_openrouter_models
    from rxcord.providers.decisions import load_decision_models as load_decision_models
    from rxcord.providers.decisions import reference_for as reference_for
    from rxcord.providers.decisions import register_decision_metric as register_decision_metric
    from rxcord.providers.decisions import register_decisions as register_decisions
    from rxcord.providers.decisions import resolve_reference as resolve_reference
    from rxcord.providers.decisions import supports_decisions as supports_decisions
