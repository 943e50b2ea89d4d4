"""The turn runner: the one call a bot makes per user message (above the chain).

``run_turn`` streams a reply and, when the model calls a tool, runs the
caller's handler, appends the call and its result (with the provider's
replay fields) to the context and streams again, up to ``max_rounds``
(the tool loop). Each stream goes through the fallback loop, over candidates
ordered "every key of the first model, then the next model" (``fallback_order``).
Before anything reached Discord, a failed attempt is judged, denials first:

* a **denial** of the request's owner (``rxcord.compose.notices.owned_denial``) ends the
  turn with its notice, unless it says ``key_exhausted`` (treated as a key failure, below)
  or ``defer_notice`` (the fallback goes on; the notice is posted once it completed, in
  its fallback wording when another candidate answered);
* a **key failure** (HTTP 401, 402 or 403 that is not a content block, an OpenRouter
  ``limit_source``, a denial that says ``key_exhausted``) moves to the next candidate and
  puts the key in the cooldown (``KeyCooldown``): every later candidate with that key is
  skipped (so the next key is tried, then the next model), in this turn and, with a
  cooldown shared across turns, until it ends (``DEFAULT_KEY_COOLDOWN``);
* any other **retryable** error (429, 5xx, timeouts, a truncated stream) moves to the
  next candidate, the key not cooled (a rate limit passes by itself);
* anything else (400, a model error, a content block) ends the turn.

When every candidate's key is cooling at the start of a turn, they are tried anyway (a
key may have been topped up; a bot never goes silent because all its keys failed once).
Once delivery began, never restart (the user would see the answer twice). Error
notices are deferred to the runner (``StreamConfig.defer_notice``), so a user sees one
clear notice for the turn, not one per attempt.

Usage is reported once per completed response through the request-bound
usage callback (``rxcord.providers.usage.with_usage_callback``; the usage reporter
``with_usage_reporter`` also gets the provider, the model and the request id), and
summed for the turn with ``rxcord.providers.usage.sum_turn_usage``. Each turn emits one
``turn_usage`` sample (``rxcord.providers.usage.TurnUsageSample``) to the log and to the
metrics hooks registered with ``register_turn_usage_hook``.
"""

from __future__ import annotations

__all__ = (
    "DEFAULT_KEY_COOLDOWN",
    "Attempt",
    "Candidate",
    "KeyCooldown",
    "ToolHandler",
    "TurnResult",
    "fallback_order",
    "key_failure",
    "run_turn",
)

import enum
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import aiohttp
import attrs
from loguru import logger

from rxcord.compose.notices import denial_embed, notice_embed, owned_denial, post_notice
from rxcord.compose.pipeline import Pipeline
from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.redact import Redactor
from rxcord.core.request import ChatRequest, Message, Role, SamplerSettings, TextPart
from rxcord.core.state import StreamResult
from rxcord.core.stops import StopRegistry
from rxcord.core.types import FunctionCall, ProviderError, StreamStatus, Usage
from rxcord.io.locales import locale_scope
from rxcord.operators.mentions import MentionResolver
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.keys import DEFAULT_KEY_COOLDOWN, KeyCooldown, key_failure
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import (
    ReviewLedger,
    TurnUsageSample,
    record_turn_usage,
    sum_turn_usage,
    turn_usage_sample,
)
from rxcord.sinks.base import DiscordSink

_log = logger.bind(stage="turn")

ToolHandler = Callable[[FunctionCall], Awaitable[Any]]
"""Runs one tool call; returns its result (a string, or anything JSON-serializable)."""


@attrs.frozen(kw_only=True)
class Candidate:
    """One way to answer: an adapter, a model, a key and a base URL."""

    adapter: ProviderAdapter
    model: str
    api_key: str | None = attrs.field(default=None, repr=False)
    """Secret: never logged or shown in a repr."""
    base_url: str | None = None
    label: str = ""
    """A name for logs (never the key)."""
    sampler: SamplerSettings | None = None
    """This model's sampling parameters, in place of the request's (``None``: the request's)."""
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    """This model's body fields, merged over the request's ``extra`` (a fallback model keeps its own)."""
    allow_private_network: bool | None = None
    """The SSRF opt-out for this candidate's ``base_url`` (``None``: the turn's transport decides)."""

    def request_for(self, request: ChatRequest) -> ChatRequest:
        """*request* as this candidate sends it: its model, and its own parameters when it has them."""
        sampler = self.sampler if self.sampler is not None else request.sampler
        extra = {**request.extra, **self.extra} if self.extra else request.extra
        return attrs.evolve(request, model=self.model, sampler=sampler, extra=extra)

    def transport_for(self, transport: TransportConfig | None) -> TransportConfig | None:
        """The turn's transport with this candidate's SSRF opt-out, when it sets one."""
        if self.allow_private_network is None:
            return transport
        return attrs.evolve(transport or TransportConfig(), allow_private_network=self.allow_private_network)


def fallback_order(
    adapter: ProviderAdapter,
    models: Sequence[str],
    keys: Sequence[str | None],
    *,
    base_url: str | None = None,
) -> list[Candidate]:
    """Candidates in fallback order: every key of the first model, then every key of the next model."""
    return [
        Candidate(
            adapter=adapter,
            model=model,
            api_key=key,
            base_url=base_url,
            label=f"{adapter.name}:{model}#key{index + 1}",
        )
        for model in models
        for index, key in enumerate(keys)
    ]


@attrs.frozen(kw_only=True)
class Attempt:
    """One stream attempt of the turn."""

    label: str
    status: StreamStatus
    error: ProviderError | None = None
    denial: ProviderRequestDeniedError | None = attrs.field(default=None, repr=False)
    """The owner's denial behind *error*, checked first (``rxcord.compose.notices``)."""


@attrs.frozen(kw_only=True)
class TurnResult:
    """The outcome of a turn."""

    result: StreamResult
    """The last stream's result."""
    results: tuple[StreamResult, ...]
    """Every completed stream (one per tool-loop round)."""
    attempts: tuple[Attempt, ...]
    """Every attempt, failed fallbacks included."""
    usage: Usage | None
    """Usage summed over the turn's responses."""
    notice_sent: bool = False
    """Whether the runner posted the turn's error notice."""


async def run_turn(
    candidates: Sequence[Candidate],
    request: ChatRequest,
    *,
    sink: DiscordSink,
    context: StreamContext | None = None,
    config: StreamConfig | None = None,
    tool_handler: ToolHandler | None = None,
    max_rounds: int = 5,
    registry: StopRegistry | None = None,
    session: aiohttp.ClientSession | None = None,
    transport: TransportConfig | None = None,
    resolver: MentionResolver | None = None,
    pipeline: Pipeline | None = None,
    secrets: Sequence[str] = (),
    cooldown: KeyCooldown | None = None,
    review_ledger: ReviewLedger | None = None,
) -> TurnResult:
    """Answer one user message: fallback across candidates, tool loop, one notice on failure.

    Args:
        candidates: Tried in order on retryable errors before delivery began.
        request: The context; the tool loop appends calls and results to a copy.
        sink: Where the answer goes.
        context: The Discord target.
        config: Stream behaviour; ``defer_notice`` is forced on for the attempts.
        tool_handler: Runs tool calls; without it a function call ends the turn.
        max_rounds: Tool-loop bound (streams after the first).
        registry: Stop registry for the channel.
        session: Shared aiohttp session.
        transport: Transport limits.
        resolver: Mention resolver.
        pipeline: The chain's stages for every stream of the turn (``Pipeline.default()``: ``None``).
        secrets: More values to redact (a bot token), besides every candidate's key and the
            webhook token (``rxcord.compose.run.stream_redactor``).
        cooldown: Where keys that failed for themselves wait (share one across turns);
            ``None``: they are skipped for the rest of this turn only.
        review_ledger: The turn's response-review ledger: its entries, when it has any, supply
            the ``turn_usage`` sample instead of the streams (``rxcord.providers.usage``).
    """
    if not candidates:
        raise ValueError("run_turn needs at least one candidate")
    ctx = context or StreamContext()
    cfg = config or StreamConfig()
    env = _Env(
        sink=sink,
        context=ctx,
        config=attrs.evolve(cfg, defer_notice=True),
        registry=registry,
        session=session,
        transport=transport,
        resolver=resolver,
        pipeline=pipeline,
        secrets=(*secrets, *(c.api_key for c in candidates if c.api_key)),
        cooldown=cooldown or KeyCooldown.for_turn(),
    )
    attempts: list[Attempt] = []
    results: list[StreamResult] = []
    messages = list(request.messages)
    result: StreamResult | None = None
    for round_index in range(max_rounds + 1):
        current = attrs.evolve(request, messages=tuple(messages))
        result = await _with_fallback(candidates, current, env, attempts)
        results.append(result)
        if (
            result.status is not StreamStatus.FUNCTION_CALL
            or tool_handler is None
            or round_index == max_rounds
        ):
            break
        messages.extend(await _tool_messages(result, tool_handler))
    assert result is not None
    last = next((c for c in candidates if c.label == attempts[-1].label), candidates[-1])
    record_turn_usage(_turn_sample(last, results, review_ledger))
    notice = False
    with locale_scope(ctx.locale):  # the notice in the reader's language (rxcord.io.locales)
        embed = (
            None if cfg.suppress_user_errors else _turn_notice(result, attempts, last.adapter.describe_error)
        )
    if embed is not None:
        redact = Redactor.of(*env.secrets, ctx.webhook_token).text
        notice = bool(
            await post_notice(
                embed,
                sink=sink,
                context=ctx,
                config=env.config,
                resolver=resolver,
                redact=redact,
                sent_before=sum(len(r.messages) for r in results),
            )
        )
    return TurnResult(
        result=result,
        results=tuple(results),
        attempts=tuple(attempts),
        usage=sum_turn_usage(r.usage for r in results),
        notice_sent=notice,
    )


def _turn_sample(
    candidate: Candidate, results: Sequence[StreamResult], ledger: ReviewLedger | None = None
) -> TurnUsageSample | None:
    """The turn's ``turn_usage`` sample: the ledger's entries, else the responses with usage or output."""
    responses = [
        (r.usage, _output_text(r))
        for r in results
        if r.usage is not None or r.visible_text or r.reasoning or r.function_calls
    ]
    return turn_usage_sample(candidate.adapter.name, candidate.model, responses, ledger=ledger)


def _output_text(result: StreamResult) -> str:
    """What the model generated (the estimate's basis when the response reported no usage)."""
    calls = "".join(call.name + json.dumps(dict(call.args)) for call in result.function_calls)
    return result.visible_text + (result.reasoning or "") + calls


@attrs.frozen(kw_only=True)
class _Env:
    """What every stream of the turn shares."""

    sink: DiscordSink
    context: StreamContext
    config: StreamConfig
    registry: StopRegistry | None
    session: aiohttp.ClientSession | None
    transport: TransportConfig | None
    resolver: MentionResolver | None
    pipeline: Pipeline | None = None
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)
    cooldown: KeyCooldown = attrs.field(factory=KeyCooldown.for_turn)


async def _with_fallback(
    candidates: Sequence[Candidate], request: ChatRequest, env: _Env, attempts: list[Attempt]
) -> StreamResult:
    cooldown = env.cooldown
    # Every key cooling: try them anyway, skipping only the keys that fail again in this turn.
    anyway = all(cooldown.cooling(c.api_key) for c in candidates)
    failed: set[str] = set()
    result: StreamResult | None = None
    for candidate in candidates:
        key = candidate.api_key
        if cooldown.cooling(key) and (not anyway or (key is not None and key in failed)):
            _log.info("skipping {label}: its key is cooling down", label=candidate.label)
            continue
        result = await stream_to_discord(
            candidate.adapter,
            candidate.request_for(request),
            sink=env.sink,
            base_url=candidate.base_url,
            api_key=key,
            context=env.context,
            config=env.config,
            transport=candidate.transport_for(env.transport),
            session=env.session,
            registry=env.registry,
            resolver=env.resolver,
            pipeline=env.pipeline,
            secrets=env.secrets,
        )
        error = result.error
        denial = owned_denial(error) if result.status is StreamStatus.ERROR else None
        attempts.append(Attempt(label=candidate.label, status=result.status, error=error, denial=denial))
        step = _next_step(result, denial)
        if step is _Step.END:
            return result
        assert error is not None
        if step is _Step.NEXT_KEY:
            cooldown.cool(key)
            if key is not None:
                failed.add(key)
        _log.warning(
            "attempt {label} failed before delivery ({kind}); trying the next candidate",
            label=candidate.label,
            kind=error.type.value,
        )
    if result is None:  # unreachable: with every key cooling, all are tried
        raise RuntimeError("no candidate was tried")
    return result


class _Step(enum.Enum):
    END = "end"
    NEXT = "next"
    NEXT_KEY = "next_key"
    """The key failed for itself: the next candidate, and the key cooled."""


def _next_step(result: StreamResult, denial: ProviderRequestDeniedError | None) -> _Step:
    """What the fallback loop does after *result* (denials first; see the module docstring)."""
    error = result.error
    if result.status is not StreamStatus.ERROR or error is None or result.messages:
        return _Step.END  # an answer, a stop, or delivery began: never restart
    if key_failure(error, denial):
        return _Step.NEXT_KEY
    if denial is not None:
        return _Step.NEXT if denial.defer_notice else _Step.END
    return _Step.NEXT if error.retryable else _Step.END


async def _tool_messages(result: StreamResult, handler: ToolHandler) -> list[Message]:
    assistant = Message(
        role=Role.ASSISTANT,
        content=(TextPart(result.visible_text),) if result.visible_text else (),
        tool_calls=result.function_calls,
        thoughts=result.thoughts,
    )
    out = [assistant]
    for call in result.function_calls:
        try:
            value = await handler(call)
        except Exception as exc:
            # The model gets the failure as the tool's result and can recover; the turn goes on.
            _log.warning("tool {name} failed: {exc}", name=call.name, exc=type(exc).__name__)
            value = {"error": f"{type(exc).__name__}: {exc}"}
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
        out.append(Message(role=Role.TOOL, tool_call_id=call.id, name=call.name, content=(TextPart(text),)))
    return out


def _turn_notice(
    result: StreamResult, attempts: Sequence[Attempt], describe: Callable[[ProviderError], str]
) -> dict[str, Any] | None:
    """The turn's one notice: the final failure's (its denial's first), or a deferred denial's.

    A turn that failed after a denial let the fallback go on shows that denial's notice (the
    refusal is why the turn failed, not the fallback's own error). A turn that was answered
    after a ``defer_notice`` denial shows the denial's fallback notice.
    """
    passed = [a.denial for a in attempts if a.denial is not None]
    if result.status is StreamStatus.ERROR and result.error is not None:
        last = attempts[-1].denial if attempts else None
        denial = last or (passed[0] if passed else None)
        return notice_embed(result.error, describe, denial=denial)
    deferred = [denial for denial in passed if denial.defer_notice]
    return denial_embed(deferred[0], fallback_notice=True) if deferred else None
