"""rxcord.providers: provider adapters and the HTTP transport (stages 01-03).

The package is the room; this module is its façade: the request and transport details below
the adapters (the adapters themselves are exported by the root ``rxcord``; ``ProviderAdapter``, the
protocol a new adapter implements, is here), the SSRF guard,
error classification values, the secret redactor and the SSE source.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS: dict[str, str] = {
    "endpoint_url": "rxcord.providers.ssrf",
    "ErrorType": "rxcord.core.types",
    "HttpRequest": "rxcord.providers.base",
    "MalformedJsonError": "rxcord.core.errors",
    "precheck": "rxcord.providers.ssrf",
    "ProviderAdapter": "rxcord.providers.base",
    "ProviderError": "rxcord.core.types",
    "RedactedError": "rxcord.core.errors",
    "Redactor": "rxcord.core.redact",
    "ResponseTooLargeError": "rxcord.core.errors",
    "SsrfGuard": "rxcord.providers.ssrf",
    "SsrfRefusedError": "rxcord.core.errors",
    "stream_source": "rxcord.providers.transport",
    "TransportStats": "rxcord.providers.transport",
    "UndecodableBodyError": "rxcord.core.errors",
}
"""Public name -> the module that defines it."""

__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, eagerly, for type checkers and IDEs
    from rxcord.core.errors import MalformedJsonError as MalformedJsonError
    from rxcord.core.errors import RedactedError as RedactedError
    from rxcord.core.errors import ResponseTooLargeError as ResponseTooLargeError
    from rxcord.core.errors import SsrfRefusedError as SsrfRefusedError
    from rxcord.core.errors import UndecodableBodyError as UndecodableBodyError
    from rxcord.core.redact import Redactor as Redactor
    from rxcord.core.types import ErrorType as ErrorType
    from rxcord.core.types import ProviderError as ProviderError
    from rxcord.providers.base import HttpRequest as HttpRequest
    from rxcord.providers.base import ProviderAdapter as ProviderAdapter
    from rxcord.providers.ssrf import SsrfGuard as SsrfGuard
    from rxcord.providers.ssrf import endpoint_url as endpoint_url
    from rxcord.providers.ssrf import precheck as precheck
    from rxcord.providers.transport import TransportStats as TransportStats
    from rxcord.providers.transport import stream_source as stream_source
