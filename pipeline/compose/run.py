"""Run one stream: wire a provider source, the chain and a Discord sink, and await the result.

This is the one awaitable entry point. It injects the ``AsyncIOScheduler``
once (through ``rxcord.operators.aio.drain``), binds a stream id and the channel to
every log line, and makes sure the stream's stop handle is released.

Denials are checked before generic handling (``rxcord.compose.notices``, the rule
``run_turn`` uses too): a request hook's refusal posts the denial's notice, and with a
denial translator registered the chain holds its error notice until it ended, so a
failure translated into a denial shows the denial's notice, not the provider's words;
a denial that says ``defer_notice`` posts nothing (its retry owner will).
"""

from __future__ import annotations

__all__ = ("StreamJob", "build_stream", "run_stream", "stream_redactor", "stream_to_discord")

import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

import aiohttp
import attrs
from loguru import logger
from reactivex import Observable, abc

from rxcord.compose.accounting import abandon, begin_hold, denied_result, model_of, settle
from rxcord.compose.chain import build_chain
from rxcord.compose.notices import post_notice, stream_notice
from rxcord.compose.pipeline import Pipeline
from rxcord.compose.stopped import estimated_usage, held_messages
from rxcord.core.config import Guards, StreamConfig, StreamContext
from rxcord.core.errors import DiscordError, ProviderRequestDeniedError
from rxcord.core.redact import Redactor, credentials_in
from rxcord.core.request import ChatRequest
from rxcord.core.state import SentMessage, StreamResult
from rxcord.core.stops import StopHandle, StopRegistry
from rxcord.core.types import DeliveryMode, ProviderError
from rxcord.io.locales import locale_scope
from rxcord.operators.aio import drain
from rxcord.operators.light import LightObservable, Relay, relay, unbound
from rxcord.operators.mentions import MentionResolver
from rxcord.operators.timeline import Timeline
from rxcord.operators.verbatim_tools import exposed_tool_names
from rxcord.providers.base import HttpRequest, ProviderAdapter
from rxcord.providers.hooks import denial_translator_registered
from rxcord.providers.ssrf import endpoint_url
from rxcord.providers.transport import TransportConfig, TransportStats, stream_source
from rxcord.sinks.base import DiscordSink
from rxcord.sinks.delivery import DiscordDelivery
from rxcord.sinks.edit_in_place import EditInPlaceDelivery, editing_sink


@attrs.frozen(kw_only=True)
class StreamJob:
    """Everything one stream needs."""

    adapter: ProviderAdapter
    request: HttpRequest
    sink: DiscordSink
    context: StreamContext = StreamContext()
    config: StreamConfig = StreamConfig()
    transport: TransportConfig = TransportConfig()
    session: aiohttp.ClientSession | None = None
    resolver: MentionResolver | None = None
    """Resolves ``@name`` to a user id for mentions."""
    pipeline: Pipeline = Pipeline()
    """The chain's stages (``rxcord.compose.pipeline``): insert, replace or remove them by name."""
    secrets: tuple[str, ...] = attrs.field(default=(), repr=False)
    """More secrets to redact by value (``stream_redactor``): a bot token the sink does not expose."""


def stream_redactor(job: StreamJob) -> Redactor:
    """The one redactor of *job*'s configured secrets (``rxcord.core.redact``).

    The request's credentials (API key header or parameter), the webhook token of the
    context, the sink's credentials (its ``secrets`` attribute, if it has one) and
    ``job.secrets``: each is replaced by value in everything the transport reads, in the
    error embed posted to Discord, in the result's error and in a ``DiscordError`` raised.
    """
    sink_secrets: Sequence[str | None] = getattr(job.sink, "secrets", ()) or ()
    return Redactor.of(
        *credentials_in(job.request.headers, job.request.url),
        job.context.webhook_token,
        *sink_secrets,
        *job.secrets,
    )


class _RedactedDescribe:
    """*describe* with the secrets replaced in what it reads and in what it writes.

    One slots object for the stream's life where a lambda held two cells and their tuple;
    *describe* (the adapter's ``describe_error``) is held as its function and its object
    (``unbound``), not as a bound method kept per stream.
    """

    __slots__ = ("_describe_fn", "_describe_of", "redactor")

    def __init__(self, describe: Callable[[ProviderError], str], redactor: Redactor) -> None:
        self._describe_fn, self._describe_of = unbound(describe)
        self.redactor = redactor

    def __call__(self, error: ProviderError) -> str:
        redactor = self.redactor
        described: str = self._describe_fn(self._describe_of, redactor.error(error))
        return redactor.text(described)


def _redacted_describe(
    describe: Callable[[ProviderError], str], redactor: Redactor
) -> Callable[[ProviderError], str]:
    return _RedactedDescribe(describe, redactor) if redactor else describe


class _Reconciled(Relay):
    """``chain.pipe(ops.map(reconcile))`` as one light hop: each result lists what Discord holds.

    A kill can dispose a send's report: the delivery's own record (*held*) says what Discord
    holds. The hop is the subscription's state, observer and disposable at once.
    """

    __slots__ = ("held",)

    def __init__(self, observer: abc.ObserverBase[StreamResult], held: Sequence[SentMessage]) -> None:
        super().__init__(observer)
        self.held = held

    def on_next(self, value: StreamResult) -> None:
        if self.stopped:
            return
        try:
            reconciled = held_messages(value, self.held)
        except Exception as exc:  # as in ops.map: the stream's error
            self.on_error(exc)
            return
        self.observer.on_next(reconciled)


class _Reconcile(LightObservable[StreamResult]):
    """``build_stream``'s observable: one object (no subscribe closure, no lock until asked for)."""

    __slots__ = ("chain", "held")

    def __init__(self, chain: Observable[StreamResult], held: Sequence[SentMessage]) -> None:
        super().__init__()
        self.chain, self.held = chain, held

    def _subscribe_core(
        self, observer: abc.ObserverBase[StreamResult], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return relay(self.chain, _Reconciled(observer, self.held), scheduler)


def build_stream(
    job: StreamJob,
    stops: StopHandle,
    *,
    stats: TransportStats | None = None,
    nonce_prefix: str | None = None,
    timeline: Timeline | None = None,
) -> Observable[StreamResult]:
    """The chain for *job*, not yet running (subscribe or ``await`` it to run).

    With a *timeline*, every stage records what it does and when (``rxcord.operators.timeline``).
    """
    redactor = stream_redactor(job)
    source = stream_source(
        job.adapter,
        job.request,
        session=job.session,
        config=job.transport,
        stats=stats,
        redactor=redactor,
        batched=True,  # one item per socket read through stages 02-04 (rxcord.compose.pipeline)
    )
    delivery: DiscordDelivery | EditInPlaceDelivery
    if job.config.delivery is DeliveryMode.EDIT:
        delivery = EditInPlaceDelivery(
            sink=editing_sink(job.sink),
            context=job.context,
            config=job.config,
            stops=stops.subject,
            resolver=job.resolver,
            timeline=timeline,
        )
    else:
        delivery = DiscordDelivery(
            sink=job.sink,
            context=job.context,
            config=job.config,
            stops=stops.subject,
            resolver=job.resolver,
            timeline=timeline,
        )
    if nonce_prefix:
        delivery.nonce_prefix = nonce_prefix
    chain = build_chain(
        source,
        normalizer=job.adapter.new_normalizer,
        config=job.config,
        stops=stops.signals,
        stop_sink=stops.subject,
        send=delivery.send,
        provider=job.adapter.name,
        describe=_redacted_describe(job.adapter.describe_error, redactor),
        merge=delivery.merge if delivery.coalesces else None,
        guards=_request_guards(job),
        pipeline=job.pipeline,
        timeline=timeline,
        batched=True,
        redactor=redactor,  # the text stream too: a key echoed across deltas or \u-escaped
        # Live delivery only appends to its record (edit mode's ``shown`` changes with edits):
        # the result counts its messages there instead of listing them a second time.
        record=None if isinstance(delivery, EditInPlaceDelivery) else delivery.held,
    )
    # A kill can dispose a send's report: the delivery's own record says what Discord holds.
    held = delivery.shown if isinstance(delivery, EditInPlaceDelivery) else delivery.held
    return _Reconcile(chain, held)


def _request_guards(job: StreamJob) -> Guards:
    """The guards of this request, the verbatim parser limited to the tools it exposes.

    An adapter with ``guards_for`` (the Chat Completions ones) is asked for the request's URL:
    where it goes decides the think-tag start window (OpenAI's own API holds none).
    """
    guards_for = getattr(job.adapter, "guards_for", None)
    guards: Guards = job.adapter.guards if guards_for is None else guards_for(job.request.url)
    if not guards.verbatim_tools:
        return guards
    exposed = guards.verbatim_tools & exposed_tool_names(job.request.body)
    return guards if exposed == guards.verbatim_tools else attrs.evolve(guards, verbatim_tools=exposed)


async def run_stream(
    job: StreamJob,
    *,
    registry: StopRegistry | None = None,
    stops: StopHandle | None = None,
    stats: TransportStats | None = None,
    nonce_prefix: str | None = None,
    timeline: Timeline | None = None,
) -> StreamResult:
    """Run *job* to its end and return its ``StreamResult``.

    Args:
        job: The stream to run.
        registry: Registers the stream under its channel, so ``registry.stop(channel, kind)`` reaches it.
        stops: Use this stop handle instead (ignored when *registry* is given).
        stats: Transport counters to fill.
        nonce_prefix: Fixed nonce prefix (reproducible payloads in tests and replays).
        timeline: Records the stream's timeline (see ``rxcord.operators.timeline``).

    Raises:
        rxcord.core.errors.DiscordError: Discord refused a message in a way that is not an internal stop.
    """
    handle = (
        registry.open(job.context.channel_id)
        if registry is not None
        else stops or StopHandle(job.context.channel_id)
    )
    # Entered by hand, left in the finally (harmless after an enter that raised): a ``with``
    # would hold each block's bound __exit__ for the stream's life. No locale given binds
    # none (the text already bound stays).
    scope = logger.contextualize(stream_id=secrets.token_hex(4), channel_id=job.context.channel_id)
    locale: AbstractContextManager[None] | None = None
    try:
        scope.__enter__()
        if job.context.locale is not None:
            locale = locale_scope(job.context.locale)  # the notices' language (rxcord.io.locales)
            locale.__enter__()
        logger.bind(stage="04-run").info("stream start: {provider}", provider=job.adapter.name)
        try:
            hold = begin_hold(job.adapter.name, job.request)
        except ProviderRequestDeniedError as denial:
            return await _with_notice(job, denied_result(denial))
        counters = stats if stats is not None else TransportStats()
        # Denials first: with a translator registered any failure may be one, so the chain
        # posts no notice and the one rule (rxcord.compose.notices) decides once it ended.
        held = denial_translator_registered() and not job.config.defer_notice
        run_job = attrs.evolve(job, config=attrs.evolve(job.config, defer_notice=True)) if held else job
        chain = build_stream(run_job, handle, stats=counters, nonce_prefix=nonce_prefix, timeline=timeline)
        try:
            results = await drain(chain)
        except DiscordError as exc:
            abandon(hold, sent=bool(counters.bodies_sent))
            raise attrs.evolve(exc, message=stream_redactor(job).text(exc.message)) from None
        except BaseException:
            # An exception, a cancellation or a kill of the awaiting task: the hold never leaks.
            abandon(hold, sent=bool(counters.bodies_sent))
            raise
        result = estimated_usage(results[-1], job.request.body, sent=bool(counters.bodies_sent))
        if result.error is not None:
            result = attrs.evolve(result, error=stream_redactor(job).error(result.error))
        settle(
            hold,
            result,
            sent=bool(counters.bodies_sent),
            provider=job.adapter.name,
            model=model_of(job.request),
        )
        if held:
            result = await _with_notice(job, result)
        logger.bind(stage="04-run").info(
            "stream end: {status} after {chunks} chunks, {messages} messages",
            status=result.status.value,
            chunks=result.chunk_count,
            messages=len(result.messages),
        )
        return result
    finally:
        if locale is not None:
            locale.__exit__(None, None, None)
        scope.__exit__(None, None, None)
        if registry is not None:
            registry.close(handle)


async def _with_notice(job: StreamJob, result: StreamResult) -> StreamResult:
    """*result*, with the notice the one rule gives its error posted (``rxcord.compose.notices``)."""
    if result.error is None:
        return result
    redactor = stream_redactor(job)
    describe = _redacted_describe(job.adapter.describe_error, redactor)
    embed = stream_notice(result.error, job.config, describe)
    if embed is None:
        return result
    try:
        sent = await post_notice(
            embed,
            sink=job.sink,
            context=job.context,
            config=job.config,
            resolver=job.resolver,
            redact=redactor.text,
            sent_before=len(result.messages),
        )
    except DiscordError as exc:
        raise attrs.evolve(exc, message=redactor.text(exc.message)) from None
    return attrs.evolve(result, messages=(*result.messages, *sent))


def _sends_prefill(adapter: ProviderAdapter, request: ChatRequest) -> bool:
    """Whether *adapter* sends the request's prefill (a prefill that was not sent is not shown).

    An adapter may leave it out (Anthropic with extended thinking) and says so with
    ``sends_prefill(request)``; adapters without that method always send it.
    """
    sends = getattr(adapter, "sends_prefill", None)
    return True if sends is None else bool(sends(request))


async def stream_to_discord(
    adapter: ProviderAdapter,
    request: ChatRequest,
    *,
    sink: DiscordSink,
    base_url: str | None,
    api_key: str | None,
    context: StreamContext | None = None,
    config: StreamConfig | None = None,
    transport: TransportConfig | None = None,
    session: aiohttp.ClientSession | None = None,
    registry: StopRegistry | None = None,
    resolver: MentionResolver | None = None,
    pipeline: Pipeline | None = None,
    secrets: Sequence[str] = (),
) -> StreamResult:
    """Stream *request* through *adapter* into Discord: the call a bot makes per reply.

    *secrets*: more values to redact besides the API key, the webhook token and the sink's
    credentials (``stream_redactor``), e.g. the bot token of a sink that does not expose it.

    Stage 01 (``adapter.build_request``) runs here; the rest is the chain, built from
    *pipeline* (``Pipeline.default()`` when ``None``: see ``rxcord.compose.pipeline``).

    Raises:
        rxcord.core.errors.InputError: *base_url* is not a usable URL (the message names
            ``base_url``); checked before anything is built or sent.
    """
    if base_url:  # empty or None: the adapter's default
        endpoint_url(base_url)
    http = adapter.build_request(request, base_url=base_url, api_key=api_key, stream=True)
    cfg = config or StreamConfig()
    if request.prefill and not cfg.prefill and _sends_prefill(adapter, request):
        cfg = attrs.evolve(cfg, prefill=request.prefill)
    job = StreamJob(
        adapter=adapter,
        request=http,
        sink=sink,
        context=context or StreamContext(),
        config=cfg,
        transport=transport or TransportConfig(),
        session=session,
        resolver=resolver,
        pipeline=pipeline or Pipeline(),
        secrets=tuple(secrets),
    )
    return await run_stream(job, registry=registry)
