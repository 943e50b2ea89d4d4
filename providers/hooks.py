"""Extension hooks around provider requests: usage context, request denial, request holds.

rxcord ships no producer for these; a deployment registers its own at startup
(each registration returns a disposer that removes that registration only, in
any order and idempotently: the newest registration still alive is in force).

Usage context. ``usage_context`` names the owner of the current request
(whatever object a deployment uses: a funding record, a scope). Bind it with
``with_usage_context`` around each request, including an explicit ``None``
for an unfunded nested request; the outer owner is restored on exit. Keep the
*same object* through a request: denial matching uses identity, so a nested
request cannot claim another request's refusal.

Request denial. ``ProviderRequestDeniedError`` carries the context it belongs
to and a renderer for its notice. A registered translator may turn a provider
failure into one, using the failed request's context. ``find_denial`` looks
through an error's ``__cause__`` and ``original_error`` chain, checks
ownership before translating, and never translates a denial belonging to
another context:

* ``find_denial(error)`` (context omitted): any denial found; a translation uses
  the current ``usage_context``. Only for credential resolution or an
  already-scoped error reaching its presentation owner.
* ``find_denial(error, None)``: matches only an unscoped denial.
* ``find_denial(error, ctx)``: matches only a denial whose context *is* ``ctx``.

Denials are checked before any other handling of a failure; the rule that decides what a
denial's notice is and who posts it (``defer_notice``), and how a denial saying
``key_exhausted`` moves the turn to the next key, is ``rxcord.compose.notices`` and
``rxcord.compose.turn`` (one rule for ``stream_to_discord`` and ``run_turn``).

Request holds. A registered request hook may return a ``Hold`` for one
provider request: ``report_cost`` settles the cost the provider reported and
``release(retain_estimate)`` ends the hold (counting the initial estimate as
spent when ``retain_estimate`` is set and no cost arrived). Callers call
``begin_provider_request`` before the HTTP call, report each reported cost,
and release on completion or failure: HTTP errors and pre-send aborts report
zero; an in-flight failure releases without retaining an unreported estimate.
With no hook registered ``begin_provider_request`` returns ``None`` and the
request is sent exactly as before. Hooks must never log the API key, path or
body they receive.
"""

from __future__ import annotations

__all__ = (
    "DenialTranslator",
    "Hold",
    "ProviderRequest",
    "RequestHook",
    "begin_provider_request",
    "current_usage_context",
    "denial_translator_registered",
    "find_denial",
    "register_denial_translator",
    "register_request_hook",
    "request_hook_registered",
    "usage_context",
    "with_usage_context",
)

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, Generic, Protocol, TypeAlias, TypeVar

import attrs
from loguru import logger

from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.types import ProviderError

_log = logger.bind(stage="hooks")

_T = TypeVar("_T")

usage_context: ContextVar[object | None] = ContextVar("rxcord_usage_context", default=None)
"""The owner of the current provider request (compared by identity)."""


@contextmanager
def with_usage_context(context: object | None) -> Iterator[None]:
    """Bind *context* as the owner of the requests made inside the block (``None``: unscoped)."""
    token = usage_context.set(context)
    try:
        yield
    finally:
        usage_context.reset(token)


def current_usage_context() -> object | None:
    """The owner bound by the innermost ``with_usage_context`` (``None`` when unbound)."""
    return usage_context.get()


DenialTranslator: TypeAlias = Callable[
    [BaseException | ProviderError, object | None], ProviderRequestDeniedError | None
]
"""``(failure, context) -> denial or None``: turns a provider failure into a denial for *context*."""


@attrs.define
class _Slot(Generic[_T]):
    """Registered handlers, newest in force; registering returns a disposer for that registration.

    The disposers are safe in any order and idempotent: disposing a registration removes
    that one only, so disposing an older one never removes a newer one, and the handler
    in force is always the newest registration still alive.
    """

    _entries: list[tuple[object, _T]] = attrs.field(factory=list)

    @property
    def current(self) -> _T | None:
        """The newest live registration's handler (``None``: nothing registered)."""
        return self._entries[-1][1] if self._entries else None

    def register(self, handler: _T) -> Callable[[], None]:
        token = object()
        self._entries.append((token, handler))

        def dispose() -> None:
            for index, (entry, _) in enumerate(self._entries):
                if entry is token:
                    del self._entries[index]
                    return

        return dispose


_translators: _Slot[DenialTranslator] = _Slot()


def register_denial_translator(translator: DenialTranslator) -> Callable[[], None]:
    """Register *translator*; the returned disposer unregisters it (idempotent, any order)."""
    return _translators.register(translator)


def denial_translator_registered() -> bool:
    """Whether a translator is registered (without one, no provider failure is translated)."""
    return _translators.current is not None


class _Omitted:
    pass


_OMITTED: Final = _Omitted()


def _chain(error: object) -> Iterator[object]:
    """*error*, then its causes and original errors, breadth first, each once."""
    seen: set[int] = set()
    queue: list[object] = [error]
    while queue:
        item = queue.pop(0)
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        if isinstance(item, BaseException):
            queue.append(item.__cause__)
        queue.append(getattr(item, "original_error", None))


def find_denial(
    error: BaseException | ProviderError,
    context: object | _Omitted | None = _OMITTED,
) -> ProviderRequestDeniedError | None:
    """The denial behind *error* that belongs to *context*, translating the failure if needed.

    Args:
        error: A provider failure (an exception or a ``ProviderError``).
        context: The failed request's usage context. Omit it only for credential
            resolution or an already-scoped error; an explicit ``None`` matches
            only an unscoped denial.

    Returns:
        The owned denial, or ``None`` (also when the only denial found belongs
        to another context: it is never translated into this one).
    """
    omitted = isinstance(context, _Omitted)
    found = [item for item in _chain(error) if isinstance(item, ProviderRequestDeniedError)]
    if found:
        for denial in found:
            if omitted or denial.context is context:
                return denial
        return None
    translator = _translators.current
    if translator is None:
        return None
    owner = usage_context.get() if isinstance(context, _Omitted) else context
    try:
        translated = translator(error, owner)
    except Exception as exc:
        _log.opt(exception=exc).warning("denial translator failed; treating the failure as not denied")
        return None
    if translated is not None and translated.context is not owner:
        _log.warning("denial translator returned a denial for another context; ignored")
        return None
    return translated


class Hold(Protocol):
    """A hold on one provider request's spend."""

    def report_cost(self, cost: float) -> None:
        """Settle the cost the provider reported for this request."""
        ...

    def release(self, retain_estimate: bool) -> None:
        """End the hold; count the estimate as spent if *retain_estimate* and no cost was reported."""
        ...


@attrs.frozen(kw_only=True)
class ProviderRequest:
    """What a request hook sees of one provider request (never log its key, path or body)."""

    provider: str
    path: str = attrs.field(repr=False)
    """The URL path (``/api/v1/chat/completions``)."""
    body: Mapping[str, Any] = attrs.field(repr=False)
    """The parsed JSON body."""
    api_key: str | None = attrs.field(default=None, repr=False)
    """The bearer key the request uses."""
    context: object | None = None
    """The request's usage context."""


RequestHook: TypeAlias = Callable[[ProviderRequest], Hold | None]
"""Begins a hold for a request, or returns ``None``; may raise ``ProviderRequestDeniedError`` to refuse it."""

_hooks: _Slot[RequestHook] = _Slot()


def register_request_hook(hook: RequestHook) -> Callable[[], None]:
    """Register *hook*; the returned disposer unregisters it (idempotent, any order)."""
    return _hooks.register(hook)


def request_hook_registered() -> bool:
    """Whether a request hook is registered (a caller may skip building a ``ProviderRequest``)."""
    return _hooks.current is not None


@attrs.define
class _GuardedHold:
    """Makes a hook's hold safe to use from the transport: one release, no raising."""

    inner: Hold
    released: bool = False

    def report_cost(self, cost: float) -> None:
        if self.released:
            _log.debug("cost reported after release; ignored")
            return
        if isinstance(cost, bool) or not math.isfinite(cost) or cost < 0:
            _log.debug("invalid cost {cost!r} not reported", cost=cost)
            return
        try:
            self.inner.report_cost(cost)
        except Exception as exc:
            _log.opt(exception=exc).warning("request hold failed to take a cost report")

    def release(self, retain_estimate: bool) -> None:
        if self.released:
            return
        self.released = True
        try:
            self.inner.release(retain_estimate)
        except Exception as exc:
            _log.opt(exception=exc).warning("request hold failed to release")


def begin_provider_request(
    *,
    provider: str,
    path: str,
    body: Mapping[str, Any],
    api_key: str | None = None,
    context: object | _Omitted | None = _OMITTED,
) -> Hold | None:
    """Begin a hold for one provider request, if a hook is registered.

    Args:
        provider: Provider identity.
        path: The request's URL path.
        body: The parsed JSON body.
        api_key: The bearer key.
        context: The usage context; defaults to the current ``usage_context``.

    Returns:
        A hold whose ``release`` runs once and whose failures are logged, not
        raised; ``None`` without a hook or when the hook returns none.

    Raises:
        ProviderRequestDeniedError: The hook refused the request (other hook
            exceptions propagate too: admission fails closed).
    """
    hook = _hooks.current
    if hook is None:
        return None
    owner = usage_context.get() if isinstance(context, _Omitted) else context
    hold = hook(ProviderRequest(provider=provider, path=path, body=body, api_key=api_key, context=owner))
    return None if hold is None else _GuardedHold(hold)
