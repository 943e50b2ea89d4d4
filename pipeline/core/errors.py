"""The exception tree of rxcord (a leaf module).

::

    RxcordError
    ├── InputError               unusable input (missing capture, unknown provider, bad flag)
    ├── MissingCredentialError   an API key or token variable is not set
    ├── SsrfRefusedError         a custom endpoint resolved to a forbidden address
    ├── MissingExtraError        an optional dependency is not installed (also an ImportError)
    └── DiscordError             Discord refused a request (status, code, message)
        ├── DiscordStopError     the stream must stop: 403 missing access, 404 unknown channel
        ├── UnknownWebhookError  404 / 10015: the webhook is gone; never use it again
        ├── RateLimitError       a 429 not to wait out (a ban, too long, the 429 budget spent)
        └── InvalidRequestLimitError  too many 401/403/429 in the window: sending stops

Provider failures are *data*, not exceptions: they travel as
``ProcessedChunk`` error chunks carrying a ``rxcord.core.types.ProviderError``.
"""

from __future__ import annotations

__all__ = (
    "DiscordError",
    "DiscordStopError",
    "InputError",
    "InvalidRequestLimitError",
    "MissingCredentialError",
    "MissingExtraError",
    "RateLimitError",
    "RxcordError",
    "SsrfRefusedError",
    "UnknownWebhookError",
)

import attrs

from rxcord.core.types import StopKind


class RxcordError(Exception):
    """Base class of every error rxcord raises."""


class InputError(RxcordError):
    """The input cannot be used (a missing file, an unknown provider)."""


@attrs.define(auto_exc=True, slots=False)
class MissingCredentialError(RxcordError):
    """A required secret is not configured."""

    variable: str
    """The environment variable that should hold it."""

    def __str__(self) -> str:
        return f"{self.variable} is not set"


class MissingExtraError(RxcordError, ImportError):
    """An optional dependency is not installed: the message names the extra that installs it.

    Also an ``ImportError``, so code that guards an optional import keeps working.
    """

    def __init__(self, module: str, extra: str, needed_by: str, *, package: str = "") -> None:
        package = package or module  # the distribution's name when it differs (discord.py)
        super().__init__(f"{needed_by} needs {package}: pip install 'rxcord[{extra}]'", name=module)
        self.module = module
        """The missing import (``discord``, ``redis``, ``matplotlib``)."""
        self.extra = extra
        """The extra that installs it (``discord``, ``redis``, ``plot``)."""


@attrs.define(auto_exc=True, slots=False)
class SsrfRefusedError(RxcordError):
    """A custom endpoint's host resolved to an address the guard forbids."""

    host: str
    address: str
    why: str
    hint: str = ""
    """What would let it through (the opt-out setting), or that nothing would."""

    def __str__(self) -> str:
        where = f"resolves to {self.address} ({self.why})" if self.address != "-" else self.why
        hint = f"; {self.hint}" if self.hint else ""
        return f"SSRF guard: refusing custom endpoint {self.host}: {where}{hint}"


@attrs.define(auto_exc=True, slots=False)
class DiscordError(RxcordError):
    """Discord answered a request with an error."""

    status: int
    code: int | None = None
    message: str = ""

    def __str__(self) -> str:
        return f"Discord HTTP {self.status} (code {self.code}): {self.message}"


@attrs.define(auto_exc=True, slots=False)
class DiscordStopError(DiscordError):
    """A Discord failure that must stop the stream with an internal status."""

    stop_kind: StopKind = StopKind.MISSING_ACCESS


@attrs.define(auto_exc=True, slots=False)
class UnknownWebhookError(DiscordError):
    """The webhook no longer exists (404 / 10015); it must not be used again."""


@attrs.define(auto_exc=True, slots=False)
class RateLimitError(DiscordError):
    """A 429 that must not be waited out: a ban, a delay above the maximum, or the 429 budget spent.

    Raised by the rate limiter (``rxcord.sinks.ratelimit``) instead of sleeping; the delivery
    fails that message (with ``budget_spent`` the route is still usable for its error notice).
    """

    retry_after: float | None = None
    """The delay Discord asked for (``None`` when the response gave none, as in a ban)."""
    is_global: bool = False
    """Whether every route is closed (a global 429 or a ban), not only this bucket."""
    budget_spent: bool = False
    """The request's 429 budget ran out; the route is closed only for ``retry_after`` (still usable)."""


@attrs.define(auto_exc=True, slots=False)
class InvalidRequestLimitError(DiscordError):
    """Too many 401/403/429 responses in the rolling window; sending stops to protect the IP.

    Raised by the rate limiter before a send; the caller stops sending (a bot producing that
    many errors is broken) until the window rolls on.
    """

    count: int = 0
    """Invalid responses counted in the window."""
