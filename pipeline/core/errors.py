"""The exception tree of rxcord (a leaf module).

::

    RxcordError
    ├── InputError               unusable input (missing capture, unknown provider, bad flag)
    │   ├── ConfigError          the bot's TOML configuration names a bad key
    │   ├── DiscordUnreachableError  the bot cannot reach Discord at start-up (names the setting)
    │   └── PlotUnavailableError the timeline plot needs matplotlib (also a MissingExtraError)
    ├── MissingCredentialError   an API key or token variable is not set
    ├── SsrfRefusedError         a custom endpoint resolved to a forbidden address
    ├── MissingExtraError        an optional dependency is not installed (also an ImportError)
    ├── MalformedJsonError       text that is not JSON or nests too deep (also a ValueError)
    ├── RedactedError            stands in for an exception whose text carried a secret
    ├── SseLineTooLongError      one SSE line above the parser's bound (also a ValueError)
    ├── UndecodableBodyError     a body in an unknown encoding or corrupt compressed data
    ├── ResponseTooLargeError    a body above its cap (``rxcord.core.body``, Overflow.RAISE)
    ├── ProviderRequestDeniedError  a request hook refused a provider request for its owner
    ├── DecisionOptionError      a Decision model option breaks the rules (also a ValueError)
    ├── DecisionInputError       Decision questions refused before any request
    ├── DecisionValidationError  a Decision answer breaks a rule
    ├── DecisionWireError        a Decision wire document has the wrong shape
    ├── EmulatorNotStartedError  the Discord emulator was used before start() (rxcord.testing)
    ├── FakeProviderNotStartedError  the fake provider was used before it started
    ├── ApiError                 the emulator's Discord error answer, raised in a handler
    └── DiscordError             Discord refused a request (status, code, message)
        ├── DiscordStopError     the stream must stop: 403 missing access, 404 unknown channel
        ├── UnknownWebhookError  404 / 10015: the webhook is gone; never use it again
        ├── TokenRejectedError   401: the bot token is revoked or wrong; never sent again
        ├── RateLimitError       a 429 not to wait out (a ban, too long, the 429 budget spent)
        └── InvalidRequestLimitError  too many 401/403/429 in the window: sending stops

Every public exception class of rxcord is defined here (``tests/core/test_errors.py`` checks
it), with when it is raised and what the caller does; the modules that raise them import them.

Provider failures are *data*, not exceptions: they travel as
``ProcessedChunk`` error chunks carrying a ``rxcord.core.types.ProviderError``.
"""

from __future__ import annotations

__all__ = (
    "ApiError",
    "ConfigError",
    "DecisionInputError",
    "DecisionOptionError",
    "DecisionValidationError",
    "DecisionWireError",
    "DenialCopy",
    "DenialRenderer",
    "DiscordError",
    "DiscordStopError",
    "DiscordUnreachableError",
    "EmulatorNotStartedError",
    "FakeProviderNotStartedError",
    "InputError",
    "InvalidRequestLimitError",
    "MalformedJsonError",
    "MissingCredentialError",
    "MissingExtraError",
    "PlotUnavailableError",
    "ProviderRequestDeniedError",
    "RateLimitError",
    "RedactedError",
    "ResponseTooLargeError",
    "RxcordError",
    "SseLineTooLongError",
    "SsrfRefusedError",
    "TokenRejectedError",
    "UndecodableBodyError",
    "UnknownWebhookError",
)

from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

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


class MalformedJsonError(RxcordError, ValueError):
    """Text that is not JSON, or JSON nested deeper than ``rxcord.core.safe_json.MAX_DEPTH``.

    Raised by ``rxcord.core.safe_json.loads``; also a ``ValueError``. Callers treat the text as
    not JSON (the transport reports a malformed response as a typed error chunk).
    """


class RedactedError(RxcordError):
    """Stands in for an exception whose text carried a secret (``original_error`` of a redacted error).

    Never raised: ``rxcord.core.redact`` puts it in place of the original exception, so a
    ``ProviderError`` can be logged and shown without the secret. Read ``kind`` and the text.
    """

    def __init__(self, kind: str, text: str) -> None:
        super().__init__(text)
        self.kind = kind
        """The original exception's type name."""

    def __repr__(self) -> str:
        return f"RedactedError({self.kind!r}, {str(self)!r})"


class ConfigError(InputError):
    """The configuration file cannot be used; the message names the key and its line.

    Raised by the bot's TOML configuration reader (``rxcord.bot.config``); the bot does not
    start, and the operator fixes the named key.
    """


class DiscordUnreachableError(InputError):
    """The bot could not reach Discord at start-up; the message is one line naming the setting.

    Raised by ``rxcord.bot.app.RxcordBot.start`` (``discord.base_url``, ``discord.gateway_url``,
    ``discord.token_env``); ``rxcord bot`` prints it and exits with status 2, the operator fixes
    the named setting (or waits out Discord's outage).
    """


class PlotUnavailableError(MissingExtraError, InputError):
    """matplotlib is not installed (the ``plot`` extra).

    Raised by the timeline plot (``rxcord.cli.timeline_plot``); the caller installs
    ``rxcord[plot]`` or does without the picture.
    """


class SseLineTooLongError(RxcordError, ValueError):
    """A single SSE line exceeded the parser's bound (also a ``ValueError``, as it always was).

    Raised by ``rxcord.providers.sse.SseParser``; the transport turns it into a non-retryable
    error chunk (code ``sse_line_too_long``) instead of holding an unbounded line.
    """


class UndecodableBodyError(RxcordError):
    """The body's encoding is unknown, or its compressed data is corrupt.

    Raised by the bounded inflater (``rxcord.core.inflate``); the transport reports a
    malformed response (a typed error chunk), never garbled text.
    """


class ResponseTooLargeError(RxcordError):
    """A response body exceeded its bound.

    Raised by ``rxcord.core.body.read_capped`` with ``Overflow.RAISE`` (and by a declared
    ``Content-Length`` above the cap); the caller treats the answer as unusable, never as
    silently shortened.
    """


@attrs.frozen(kw_only=True)
class DenialCopy:
    """The notice a denial renders: a title locale key and a localized description."""

    title_key: str
    description: str


DenialRenderer: TypeAlias = Callable[[str, bool], DenialCopy]
"""``(locale, fallback_notice) -> DenialCopy``; ``fallback_notice`` asks for the fallback wording."""


@attrs.define(auto_exc=True, slots=False)
class ProviderRequestDeniedError(RxcordError):
    """A provider request was refused for its owner (a spend guard, an allowance) before or while sending.

    Raised by a request hook (``rxcord.hooks``); the stream or turn posts the notice it renders
    (or leaves it to the turn's fallback, ``defer_notice``) and sends nothing more for it.
    """

    context: object | None
    """The usage context this denial belongs to (matched by identity)."""
    renderer: DenialRenderer | None = None
    """Renders the user notice; ``None`` uses a plain default."""
    reason: str = "the provider request was denied"
    """Log text (never provider prose for the user)."""
    defer_notice: bool = False
    """Leave the notice to the retry owner instead of posting it before fallback completes.

    The stream that met the denial posts nothing; the turn runner (the retry owner) goes on
    with its fallback and posts the notice once the fallback completed: the fallback wording
    (``render(fallback_notice=True)``) when another candidate answered, the plain one when
    none did. Without it the denial's notice is posted at once and the turn ends there.
    """
    key_exhausted: bool = False
    """The refusal is about the key the request used (it is out of credit), not about its owner:
    the turn runner tries the next key, then the next model, as for a 402."""

    def __str__(self) -> str:
        return self.reason

    def render(self, locale: str = "en", *, fallback_notice: bool = False) -> DenialCopy:
        """The notice for *locale*."""
        if self.renderer is None:
            return DenialCopy(title_key="provider_request_denied", description=self.reason)
        return self.renderer(locale, fallback_notice)


class DecisionOptionError(RxcordError, ValueError):
    """A ``DecisionModelOption`` breaks the reference rules.

    Raised when the Decision options are built or selected (also a ``ValueError``); the caller
    fixes its option list: nothing was sent.
    """


@attrs.define(auto_exc=True, slots=False)
class DecisionInputError(RxcordError):
    """The decision input breaks a rule (refused before any HTTP request).

    Raised by the Decision input validation; the caller fixes the questions it passed.
    """

    reason: str
    index: int | None = None
    """The offending question's position, when one question is at fault."""

    def __str__(self) -> str:
        where = f" (question {self.index})" if self.index is not None else ""
        return f"invalid decision input: {self.reason}{where}"


@attrs.define(auto_exc=True, slots=False)
class DecisionValidationError(RxcordError):
    """A decision response breaks a rule.

    Raised while a Decision answer is decoded and checked; the Decision call reports the answer
    as invalid (``reason``) and may try the next option.
    """

    reason: str
    """``invalid-json``, ``invalid-usage``, ``invalid-answers``, ``invalid-model``..."""
    detail: str = ""
    """What was wrong, naming question ids at most (never values from the body)."""

    def __str__(self) -> str:
        return f"invalid decision response: {self.reason}" + (f" ({self.detail})" if self.detail else "")


class DecisionWireError(RxcordError):
    """A wire document does not have the expected shape or types.

    Raised when a Decision wire document is structured (cattrs at the edge); the caller reports
    an invalid response instead of reading a half-typed value.
    """


@attrs.define(auto_exc=True, slots=False)
class TokenRejectedError(DiscordError):
    """Discord answered 401 for the bot token: revoked or wrong. The sink never sends with it again.

    Raised by ``rxcord.sinks.rest.RestSink``; the bot must get a new token (retrying only
    counts towards the invalid-request ban).
    """


class EmulatorNotStartedError(RxcordError, RuntimeError):
    """The emulator's URLs were read before ``start()``.

    Raised by ``rxcord.testing.DiscordEmulator`` (also a ``RuntimeError``); the caller starts it
    first (``async with DiscordEmulator() as emulator``).
    """


class FakeProviderNotStartedError(RxcordError, RuntimeError):
    """The fake provider's URL or requests were read before it started (use ``async with``).

    Raised by ``rxcord.testing``'s fake provider (also a ``RuntimeError``); the caller enters it
    first.
    """


class ApiError(RxcordError):
    """A Discord error answer (``status``, ``body`` with ``code`` and ``message``) raised inside a handler.

    Raised inside the emulator's route handlers (``rxcord.testing``); the emulator answers the
    request with that status and body, as Discord would.
    """

    def __init__(self, status: int, code: int, message: str, errors: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"message": message, "code": code}
        if errors is not None:
            self.body["errors"] = dict(errors)
