"""One client object: what every stream of a bot shares, held once.

``stream_to_discord`` and ``run_turn`` take a dozen keyword arguments each, and a bot
passes the same ones on every reply: the sink, the transport limits, the session, the
stop registry, the pipeline, the secrets to redact. A ``Streamer`` holds them, so a
reply names only what changes (the adapter, the request, the context)::

    async with Streamer(sink=sink, transport=TransportConfig()) as streamer:
        result = await streamer.stream("openai", request, base_url=url, api_key=key)

There is one path: ``Streamer.stream`` runs ``stream_to_discord`` and ``Streamer.turn``
runs ``run_turn`` with the held values, a per-call argument replacing the held one
(``secrets`` add to the held ones). The free functions stay the shortcut for one call.

Ownership: the session a ``Streamer`` creates on ``__aenter__`` is closed on
``__aexit__``; a session passed in is the caller's and never closed. Hooks: the usage
reporter is bound around each call (``contextvars``, so concurrent calls of other
owners are untouched); the request hook and the denial translator are process-wide
slots (``rxcord.providers.hooks``), registered while the ``Streamer`` is open and
disposed on exit, and a ``Streamer`` holding them refuses to run unopened (they would
silently not apply).
"""

from __future__ import annotations

__all__ = ("Streamer",)

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import aiohttp
import attrs

from rxcord.compose.pipeline import Pipeline
from rxcord.compose.run import stream_to_discord
from rxcord.compose.turn import Candidate, KeyCooldown, ToolHandler, TurnResult, run_turn
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest
from rxcord.core.state import StreamResult
from rxcord.core.stops import StopRegistry
from rxcord.operators.mentions import MentionResolver
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.hooks import (
    DenialTranslator,
    RequestHook,
    register_denial_translator,
    register_request_hook,
)
from rxcord.providers.registry import ProviderRegistry, default_registry
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import UsageReport, with_usage_reporter
from rxcord.sinks.base import DiscordSink


def _strings(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(values)


@attrs.define(kw_only=True)
class Streamer:
    """What every stream shares; ``stream`` and ``turn`` run one reply with it.

    Use it as an async context manager (``async with Streamer(...) as streamer``): it then
    owns one aiohttp session for all its streams (unless *session* is given) and keeps
    its hooks registered until it closes.
    """

    sink: DiscordSink
    """Where answers go (``stream(sink=...)`` replaces it for one call)."""
    context: StreamContext = StreamContext()
    """The default Discord target; most bots pass ``context=`` per call."""
    config: StreamConfig = StreamConfig()
    transport: TransportConfig = TransportConfig()
    session: aiohttp.ClientSession | None = None
    """A session of the caller's (never closed here); ``None``: the ``Streamer`` creates its own."""
    session_factory: Callable[[], aiohttp.ClientSession] = aiohttp.ClientSession
    """Builds the owned session on ``__aenter__`` (tests count requests through it)."""
    registry: StopRegistry | None = None
    """The stop registry: every stream registers under its channel."""
    resolver: MentionResolver | None = None
    pipeline: Pipeline | None = None
    secrets: tuple[str, ...] = attrs.field(default=(), converter=_strings, repr=False)
    """More values to redact in every stream (a bot token the sink does not expose)."""
    providers: ProviderRegistry = attrs.field(factory=default_registry)
    """Resolves a provider name passed as the adapter (``stream("openai", ...)``)."""
    cooldown: KeyCooldown | None = None
    """Shared by every turn (keys that failed for themselves wait across turns); ``None``: per turn."""
    usage_reporter: Callable[[UsageReport], None] | None = None
    """Gets a ``UsageReport`` per completed response of every call (bound per call)."""
    request_hook: RequestHook | None = None
    """Registered while open (``rxcord.hooks.register_request_hook``)."""
    denial_translator: DenialTranslator | None = None
    """Registered while open (``rxcord.hooks.register_denial_translator``)."""
    _owned: aiohttp.ClientSession | None = attrs.field(default=None, init=False, repr=False)
    _disposers: list[Callable[[], None]] = attrs.field(factory=list, init=False, repr=False)
    _open: bool = attrs.field(default=False, init=False, repr=False)

    async def __aenter__(self) -> Streamer:
        if self._open:
            raise InputError("this Streamer is already open (one `async with` at a time)")
        if self.session is None:
            self._owned = self.session_factory()
        if self.request_hook is not None:
            self._disposers.append(register_request_hook(self.request_hook))
        if self.denial_translator is not None:
            self._disposers.append(register_denial_translator(self.denial_translator))
        self._open = True
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Dispose the hooks and close the owned session (idempotent; a passed-in session stays open)."""
        self._open = False
        while self._disposers:
            self._disposers.pop()()
        owned, self._owned = self._owned, None
        if owned is not None:
            await owned.close()

    @property
    def active_session(self) -> aiohttp.ClientSession | None:
        """The session streams use now: the caller's, the owned one, or ``None`` (one per request)."""
        return self.session if self.session is not None else self._owned

    def adapter(self, provider: ProviderAdapter | str, **options: Any) -> ProviderAdapter:
        """*provider* itself, or a new adapter for that provider name from ``providers``."""
        return self.providers.create(provider, **options) if isinstance(provider, str) else provider

    async def stream(
        self,
        adapter: ProviderAdapter | str,
        request: ChatRequest,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        context: StreamContext | None = None,
        secrets: Sequence[str] = (),
        **overrides: Any,
    ) -> StreamResult:
        """Stream *request* into Discord, as ``stream_to_discord`` does with the held values.

        *overrides* replace held values for this call: ``sink``, ``config``, ``transport``,
        ``session``, ``registry``, ``resolver``, ``pipeline``; *secrets* add to the held ones.

        Raises:
            rxcord.core.errors.InputError: an unknown override or provider name, or hooks held
                by a ``Streamer`` that is not open.
        """
        shared = self._shared(overrides, secrets)
        with self._reporting():
            return await stream_to_discord(
                self.adapter(adapter),
                request,
                base_url=base_url,
                api_key=api_key,
                context=context or self.context,
                **shared,
            )

    async def turn(
        self,
        candidates: Sequence[Candidate],
        request: ChatRequest,
        *,
        context: StreamContext | None = None,
        tool_handler: ToolHandler | None = None,
        max_rounds: int = 5,
        secrets: Sequence[str] = (),
        **overrides: Any,
    ) -> TurnResult:
        """Answer one user message across *candidates*, as ``run_turn`` does with the held values.

        *overrides* as for ``stream``, plus ``cooldown`` and ``review_ledger``.
        """
        extra = {"cooldown": overrides.pop("cooldown", self.cooldown)}
        if "review_ledger" in overrides:
            extra["review_ledger"] = overrides.pop("review_ledger")
        shared = self._shared(overrides, secrets)
        with self._reporting():
            return await run_turn(
                candidates,
                request,
                context=context or self.context,
                tool_handler=tool_handler,
                max_rounds=max_rounds,
                **shared,
                **extra,
            )

    def _shared(self, overrides: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
        """The keyword arguments both free functions take: held values, *overrides* first."""
        unknown = sorted(set(overrides) - _OVERRIDABLE)
        if unknown:
            raise InputError(f"Streamer: unknown override(s) {', '.join(unknown)}")
        if not self._open and (self.request_hook or self.denial_translator):
            raise InputError(
                "a Streamer holding hooks runs inside `async with` (they apply while it is open)"
            )
        held = {
            "sink": self.sink,
            "config": self.config,
            "transport": self.transport,
            "session": self.active_session,
            "registry": self.registry,
            "resolver": self.resolver,
            "pipeline": self.pipeline,
        }
        return {**held, **overrides, "secrets": (*self.secrets, *secrets)}

    @contextlib.contextmanager
    def _reporting(self) -> Iterator[None]:
        if self.usage_reporter is None:
            yield  # an outer binding of the caller's stays in force
            return
        with with_usage_reporter(self.usage_reporter):
            yield


_OVERRIDABLE = frozenset({"sink", "config", "transport", "session", "registry", "resolver", "pipeline"})
