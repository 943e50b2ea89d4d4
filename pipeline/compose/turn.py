"""The turn runner: the one call a bot makes per user message (above the chain).

``run_turn`` streams a reply and, when the model calls a tool, runs the
caller's handler, appends the call and its result (with the provider's
replay fields) to the context and streams again, up to ``max_rounds``
(the tool loop). Each stream goes through the fallback loop:

* on a **retryable** ``ProviderError`` before anything reached Discord, try
  the next candidate: the caller orders candidates "next API key, then next
  fallback model" (``fallback_order`` builds that order);
* once delivery began, never restart (the user would see the answer twice);
* error notices are deferred to the runner (``StreamConfig.defer_notice``),
  so a user sees one clear notice for the turn, not one per attempt.

Usage is reported once per completed response through the request-bound
usage callback (``rxcord.providers.usage.with_usage_callback``; the usage reporter
``with_usage_reporter`` also gets the provider, the model and the request id), and
summed for the turn with ``rxcord.providers.usage.sum_turn_usage``. Each turn emits one
``turn_usage`` sample (``rxcord.providers.usage.TurnUsageSample``) to the log and to the
metrics hooks registered with ``register_turn_usage_hook``.
"""

from __future__ import annotations

__all__ = ("Candidate", "ToolHandler", "TurnResult", "fallback_order", "run_turn")

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp
import attrs
from loguru import logger
from rxcord.compose.pipeline import Pipeline
from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message, Role, TextPart
from rxcord.core.state import Segment, StreamResult
from rxcord.core.stops import StopRegistry
from rxcord.core.types import FunctionCall, ProviderError, SegmentKind, StreamStatus, Usage
from rxcord.operators.flush import error_embed
from rxcord.operators.mentions import MentionResolver
from rxcord.providers.base import ProviderAdapter
from rxcord.providers.hooks import current_usage_context, find_denial
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import TurnUsageSample, record_turn_usage, sum_turn_usage, turn_usage_sample
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.delivery import DiscordDelivery

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


def fallback_order(
    adapter: ProviderAdapter,
    models: Sequence[str],
    keys: Sequence[str | None],
    *,
    base_url: str | None = None,
) -> list[Candidate]:
    """Candidates in the seeds' order: every key of the first model, then every key of the next model."""
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
    record_turn_usage(_turn_sample(last, results))
    notice = False
    if result.status is StreamStatus.ERROR and result.error is not None and not cfg.suppress_user_errors:
        notice = await _post_notice(result.error, env, last.adapter.describe_error)
    return TurnResult(
        result=result,
        results=tuple(results),
        attempts=tuple(attempts),
        usage=sum_turn_usage(r.usage for r in results),
        notice_sent=notice,
    )


def _turn_sample(candidate: Candidate, results: Sequence[StreamResult]) -> TurnUsageSample | None:
    """The turn's ``turn_usage`` sample: the responses that produced usage or output."""
    responses = [
        (r.usage, _output_text(r))
        for r in results
        if r.usage is not None or r.visible_text or r.reasoning or r.function_calls
    ]
    return turn_usage_sample(candidate.adapter.name, candidate.model, responses)


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


async def _with_fallback(
    candidates: Sequence[Candidate], request: ChatRequest, env: _Env, attempts: list[Attempt]
) -> StreamResult:
    result: StreamResult | None = None
    for index, candidate in enumerate(candidates):
        result = await stream_to_discord(
            candidate.adapter,
            attrs.evolve(request, model=candidate.model),
            sink=env.sink,
            base_url=candidate.base_url,
            api_key=candidate.api_key,
            context=env.context,
            config=env.config,
            transport=env.transport,
            session=env.session,
            registry=env.registry,
            resolver=env.resolver,
            pipeline=env.pipeline,
            secrets=env.secrets,
        )
        attempts.append(Attempt(label=candidate.label, status=result.status, error=result.error))
        error = result.error
        # Denials are checked first: a refused owner must not be retried on another key.
        denied = error is not None and find_denial(error, current_usage_context()) is not None
        retry = (
            result.status is StreamStatus.ERROR
            and error is not None
            and not denied
            and error.retryable
            and not result.messages
            and index + 1 < len(candidates)
        )
        if not retry:
            return result
        assert error is not None
        _log.warning(
            "attempt {label} failed before delivery ({kind}); trying {next}",
            label=candidate.label,
            kind=error.type.value,
            next=candidates[index + 1].label,
        )
    assert result is not None
    return result


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


async def _post_notice(error: ProviderError, env: _Env, describe: Callable[[ProviderError], str]) -> bool:
    delivery = DiscordDelivery(sink=env.sink, context=env.context, config=env.config, resolver=env.resolver)
    denial = find_denial(error, current_usage_context())
    embed = error_embed(error, describe)
    if denial is not None:
        copy = denial.render()
        embed = {"title": copy.title_key, "description": copy.description[:4096], "color": embed.get("color")}
    payloads = delivery.payloads(Segment(kind=SegmentKind.ERROR_EMBED, embed=embed))
    for payload in payloads:
        await env.sink.create_message(env.context, payload)
    return bool(payloads)
