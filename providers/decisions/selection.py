"""Decision model options per scope, persisted references, and their recheck on every call.

The application owns the catalog: it supplies, through ``DecisionDirectory``
callbacks, which options a scope can see (availability), whether the scope is
entitled to one (``validate_model``: availability alone never admits a
model), and on every call the ownership, the exact registration, the saved
credentials and the stored protocol. Scope is whatever object the application
uses (a guild, a workspace); rxcord never looks inside it.

A consumer persists a ``DecisionReference``. Resolving it admits exactly the
option with the same provider, model id, registration id and custom endpoint
id: a deleted or re-registered entry gets a new id, so an old reference stops
resolving even when a codename repeats.

Callbacks may be plain functions or coroutines.
"""

from __future__ import annotations

__all__ = (
    "CUSTOM_PREFIX",
    "DecisionDirectory",
    "DecisionModelOption",
    "ResolvedDecision",
    "custom_provider",
    "load_decision_models",
    "reference_for",
    "resolve_reference",
)

import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Final, TypeAlias, TypeVar

import attrs

from rxcord.core.errors import DecisionOptionError
from rxcord.providers.decisions.types import (
    DecisionCapability,
    DecisionCredentials,
    DecisionProtocol,
    DecisionReference,
    DecisionUnavailable,
)

_T = TypeVar("_T")

CUSTOM_PREFIX: Final = "custom:"
"""Custom entries' provider is ``custom:<connection_id>``."""

MaybeAwaitable: TypeAlias = "_T | Awaitable[_T]"


def custom_provider(connection_id: str) -> str:
    """The provider of a custom endpoint's entries: ``custom:<connection_id>``."""
    return f"{CUSTOM_PREFIX}{connection_id}"


@attrs.frozen(kw_only=True)
class DecisionModelOption:
    """One decision model a scope may select (the menu's entry and the call's target)."""

    provider: str
    """``openrouter`` for native entries, ``custom:<connection_id>`` for custom ones."""
    model_id: str
    protocol: DecisionProtocol
    base_url: str = attrs.field(repr=False)
    """Where the protocol's path is appended (never logged)."""
    max_input_tokens: int
    """The model's documented input-token ceiling (the serialized request's byte bound)."""
    registration_id: str | None = None
    """``None`` for global native entries; the exact scoped registration otherwise."""
    custom_endpoint_id: str | None = None
    """The exact endpoint row id of a custom entry."""
    label: str = attrs.field(default="", repr=False)
    """A menu label (never logged)."""

    def __attrs_post_init__(self) -> None:
        custom = self.provider.startswith(CUSTOM_PREFIX)
        if custom != (self.protocol is not DecisionProtocol.OPENROUTER):
            raise DecisionOptionError("custom entries speak systemone or openai; native entries openrouter")
        if custom and (self.custom_endpoint_id is None or self.registration_id is not None):
            raise DecisionOptionError("a custom entry has an endpoint id and no native registration id")
        if not custom and self.custom_endpoint_id is not None:
            raise DecisionOptionError("a native entry has no custom endpoint id")
        if self.max_input_tokens < 1:
            raise DecisionOptionError("max_input_tokens must be positive")

    @property
    def is_custom(self) -> bool:
        """Whether this is a custom endpoint's entry (SSRF-guarded)."""
        return self.provider.startswith(CUSTOM_PREFIX)


def reference_for(option: DecisionModelOption) -> DecisionReference:
    """The reference a consumer persists for *option*."""
    return DecisionReference(
        provider=option.provider,
        model_id=option.model_id,
        registration_id=option.registration_id,
        custom_endpoint_id=option.custom_endpoint_id,
    )


def _always(*_: object) -> bool:
    return True


def _none_saved(*_: object) -> None:
    return None


@attrs.frozen(kw_only=True)
class DecisionDirectory:
    """The application's callbacks (``scope`` is the application's own object).

    Args:
        options: ``(scope) -> options``: what the scope can see (availability).
        validate_model: ``(scope, option) -> bool``: the entitlement check.
        credentials: ``(scope, option) -> DecisionCredentials | None``: the saved credentials
            (``None``: none saved, the option is unusable); used when ``slot_credentials`` is not.
        slot_credentials: ``(scope, option, capability) -> DecisionCredentials | None``: the
            credentials of the slot that owns the call (``DecisionCapability``: ``decision``,
            ``nudge-checker``), so a pinned checker uses its own payer. When given, it is the
            only resolver: its ``None`` is ``no-credentials``, never a switch to ``credentials``.
        owns: ``(scope, reference) -> bool``: the scope still owns the registration or endpoint.
        registration_current: ``(scope, reference) -> bool``: the exact registration (or
            endpoint row) still exists, not deleted or re-registered.
        stored_protocol: ``(scope, reference) -> protocol | None``: the protocol stored for a
            custom endpoint now (``None``: the option's own).
    """

    options: Callable[[object], MaybeAwaitable[Sequence[DecisionModelOption]]]
    validate_model: Callable[[object, DecisionModelOption], MaybeAwaitable[bool]]
    credentials: Callable[[object, DecisionModelOption], MaybeAwaitable[DecisionCredentials | None]] = (
        _none_saved
    )
    slot_credentials: (
        Callable[
            [object, DecisionModelOption, DecisionCapability], MaybeAwaitable[DecisionCredentials | None]
        ]
        | None
    ) = None
    owns: Callable[[object, DecisionReference], MaybeAwaitable[bool]] = _always
    registration_current: Callable[[object, DecisionReference], MaybeAwaitable[bool]] = _always
    stored_protocol: Callable[[object, DecisionReference], MaybeAwaitable[DecisionProtocol | None]] = (
        lambda scope, reference: None
    )


async def _value(result: MaybeAwaitable[_T]) -> _T:
    if inspect.isawaitable(result):
        return await result
    return result


async def load_decision_models(
    directory: DecisionDirectory, scope: object
) -> tuple[DecisionModelOption, ...]:
    """The options *scope* may select: available **and** admitted by ``validate_model``."""
    available = await _value(directory.options(scope))
    admitted = []
    for option in available:
        if await _value(directory.validate_model(scope, option)) is True:
            admitted.append(option)
    return tuple(admitted)


@attrs.frozen(kw_only=True)
class ResolvedDecision:
    """A reference that passed every recheck: the option and its credentials."""

    option: DecisionModelOption
    credentials: DecisionCredentials = attrs.field(repr=False)


async def resolve_reference(
    directory: DecisionDirectory,
    scope: object,
    reference: DecisionReference | None,
    capability: DecisionCapability = DecisionCapability.DECISION,
) -> ResolvedDecision | DecisionUnavailable:
    """Recheck *reference* for *scope*, with the credentials of *capability*'s slot.

    An ``unavailable`` result says which check failed:

    ``not-selected`` (no reference), ``unsupported`` (a provider without the capability),
    ``not-admitted`` (no available option matches it exactly, or ``validate_model`` refuses),
    ``not-owned``, ``stale-registration``, ``protocol-mismatch``, ``no-credentials``.
    """
    if reference is None:
        return DecisionUnavailable(reason="not-selected")
    if reference.provider != "openrouter" and not reference.provider.startswith(CUSTOM_PREFIX):
        return DecisionUnavailable(reason="unsupported")
    available = await _value(directory.options(scope))
    matches = [option for option in available if reference_for(option) == reference]
    if len(matches) != 1:
        return DecisionUnavailable(reason="not-admitted")
    option = matches[0]
    if await _value(directory.validate_model(scope, option)) is not True:
        return DecisionUnavailable(reason="not-admitted")
    needs_owner = option.registration_id is not None or option.is_custom
    if needs_owner and await _value(directory.owns(scope, reference)) is not True:
        return DecisionUnavailable(reason="not-owned")
    if needs_owner and await _value(directory.registration_current(scope, reference)) is not True:
        return DecisionUnavailable(reason="stale-registration")
    if option.is_custom:
        stored = await _value(directory.stored_protocol(scope, reference))
        if stored is not None and stored is not option.protocol:
            return DecisionUnavailable(reason="protocol-mismatch")
    if directory.slot_credentials is not None:
        credentials = await _value(directory.slot_credentials(scope, option, capability))
    else:
        credentials = await _value(directory.credentials(scope, option))
    if not isinstance(credentials, DecisionCredentials):
        return DecisionUnavailable(reason="no-credentials")
    return ResolvedDecision(option=option, credentials=credentials)
