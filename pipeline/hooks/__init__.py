"""rxcord.hooks: what an application plugs into every provider request and every turn.

Request hooks (admission: hold, deny), denial translators (the user-facing copy of a denial),
the usage context, callbacks and reporters, and the per-turn usage samples and review ledger.
Names load lazily from ``rxcord.providers.hooks`` and ``rxcord.providers.usage``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "DenialCopy": "rxcord.core.errors",
    "DenialTranslator": "rxcord.providers.hooks",
    "Hold": "rxcord.providers.hooks",
    "LedgerEntry": "rxcord.providers.usage",
    "ProviderRequest": "rxcord.providers.hooks",
    "ProviderRequestDeniedError": "rxcord.core.errors",
    "register_denial_translator": "rxcord.providers.hooks",
    "register_request_hook": "rxcord.providers.hooks",
    "register_turn_usage_hook": "rxcord.providers.usage",
    "RequestHook": "rxcord.providers.hooks",
    "ReviewLedger": "rxcord.providers.usage",
    "TurnUsageSample": "rxcord.providers.usage",
    "UsageReport": "rxcord.providers.usage",
    "with_usage_callback": "rxcord.providers.usage",
    "with_usage_context": "rxcord.providers.hooks",
    "with_usage_reporter": "rxcord.providers.usage",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.core.errors import DenialCopy as DenialCopy
    from rxcord.core.errors import ProviderRequestDeniedError as ProviderRequestDeniedError
    from rxcord.providers.hooks import DenialTranslator as DenialTranslator
    from rxcord.providers.hooks import Hold as Hold
    from rxcord.providers.hooks import ProviderRequest as ProviderRequest
    from rxcord.providers.hooks import RequestHook as RequestHook
    from rxcord.providers.hooks import register_denial_translator as register_denial_translator
    from rxcord.providers.hooks import register_request_hook as register_request_hook
    from rxcord.providers.hooks import with_usage_context as with_usage_context
    from rxcord.providers.usage import LedgerEntry as LedgerEntry
    from rxcord.providers.usage import ReviewLedger as ReviewLedger
    from rxcord.providers.usage import TurnUsageSample as TurnUsageSample
    from rxcord.providers.usage import UsageReport as UsageReport
    from rxcord.providers.usage import register_turn_usage_hook as register_turn_usage_hook
    from rxcord.providers.usage import with_usage_callback as with_usage_callback
    from rxcord.providers.usage import with_usage_reporter as with_usage_reporter
