"""``call_decisions``: one decision request, from the persisted reference to a typed result.

Order of work: recheck the reference (``unavailable``), validate the questions,
the evidence and the serialized size (``invalid-input``), then the one-shot
POST. The POST runs in its own task, raced against the caller's ``cancel``
signal and the call timeout (``DecisionConfig.timeout``):

* cancelled before the body was decoded: the task is cancelled, nothing is
  reported, the result is ``cancelled``;
* the body decoded: validated usage goes to ``on_usage`` (and to the
  request-bound recorder of ``rxcord.providers.usage``) once, *before* the
  answers are judged, so a malformed verdict or a cancellation that lands
  now still reports the spend;
* the deadline passed: the result is ``failed`` (``timeout``) at once, while
  the request may still settle for ``late_grace`` seconds; if it does, its
  usage is recorded once and its verdict ignored (``settle_late`` waits).

Custom endpoints (and a native base URL other than OpenRouter's own) go
through the SSRF guard and a pinned resolver on every call; redirects are
never followed; the body is bounded to 1 MiB. Request holds and the usage
context apply through ``fetch_with_provider_request``; an admission denial
(raised by the hook, or translated from the HTTP failure by the registered
denial translator) is ``denied``, not an operational failure.

Logs: one INFO trace per call (protocol, registration and endpoint ids,
correlation, counts, elapsed time, outcome, usage and cost), never evidence,
question text, labels, bodies, credentials or URLs. Authentication,
availability, throttling, network, timeout and upstream failures emit the
``decision_failure`` metric and a warning; malformed requests and responses
are errors. ``failed.error_logged`` is true: callers must not log it again.
"""

from __future__ import annotations

__all__ = (
    "CancelSignal",
    "DecisionConfig",
    "Decisions",
    "MetricHook",
    "UsageCallback",
    "call_decisions",
    "register_decision_metric",
    "register_decisions",
)

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

import aiohttp
import attrs
from loguru import logger
from yarl import URL

from rxcord.core import safe_json
from rxcord.core.errors import (
    DecisionInputError,
    DecisionValidationError,
    MalformedJsonError,
    ProviderRequestDeniedError,
    ResponseTooLargeError,
    SsrfRefusedError,
)
from rxcord.core.types import ErrorType, ProviderError, Usage
from rxcord.providers.decisions.codec import Codec
from rxcord.providers.decisions.fetch import OneShotRequest, aiohttp_send, fetch_with_provider_request
from rxcord.providers.decisions.selection import (
    DecisionDirectory,
    DecisionModelOption,
    ResolvedDecision,
    load_decision_models,
    resolve_reference,
)
from rxcord.providers.decisions.types import (
    Answer,
    DecisionCancelled,
    DecisionCapability,
    DecisionCompleted,
    DecisionDenied,
    DecisionFailed,
    DecisionInvalidInput,
    DecisionLimit,
    DecisionProtocol,
    DecisionReference,
    DecisionRefused,
    DecisionResult,
    DecisionUnavailable,
    FailureCategory,
    PredicateAnswer,
    Question,
)
from rxcord.providers.decisions.validate import (
    TruncationReport,
    check_request_size,
    check_usage_bounds,
    parse_questions,
    strict_json,
    validate_evidence,
)
from rxcord.providers.decisions.wire_openai import OpenAICodec
from rxcord.providers.decisions.wire_openrouter import OPENROUTER_DECISIONS_ORIGIN, OpenRouterCodec
from rxcord.providers.decisions.wire_systemone import SystemOneCodec
from rxcord.providers.errors import classify_exception, classify_http_error, provider_limit
from rxcord.providers.hooks import current_usage_context, find_denial
from rxcord.providers.keys import KeyCooldown, key_failure
from rxcord.providers.ssrf import SsrfGuard, endpoint_url, same_origin
from rxcord.providers.usage import report_usage

_log = logger.bind(stage="decisions")

CODECS: Final[Mapping[DecisionProtocol, Codec]] = {
    DecisionProtocol.OPENROUTER: OpenRouterCodec(),
    DecisionProtocol.SYSTEMONE: SystemOneCodec(),
    DecisionProtocol.OPENAI: OpenAICodec(),
}

UsageCallback = Callable[[Usage], None]
MetricHook = Callable[[str, Mapping[str, str]], None]
"""``(name, labels)``: one metric sample (``decision_failure`` with ``protocol`` and ``category``)."""


class CancelSignal(Protocol):
    """The caller's cancellation: ``asyncio.Event`` is one."""

    def is_set(self) -> bool:
        """Whether cancellation was asked for."""
        ...

    async def wait(self) -> Any:
        """Return once cancellation is asked for."""
        ...


@attrs.frozen(kw_only=True)
class DecisionConfig:
    """Limits of a decision call."""

    timeout: float = 60.0
    """Seconds for the whole call (the stream call-timeout policy), composed with ``cancel``."""
    connect_timeout: float = 10.0
    max_response_bytes: int = 1024 * 1024
    """Bound on a response body (1 MiB)."""
    late_grace: float = 60.0
    """Seconds a request may still settle after its deadline (its usage is recorded, its verdict not)."""
    allow_private_network: bool = False
    """The SSRF guard's opt-out (the CLI's ``--allow-loopback``): let a guarded endpoint reach
    loopback, private and shared addresses (tests, local servers)."""
    ssrf_guard: SsrfGuard = SsrfGuard()
    """The guard of custom endpoints (inject one with a fake resolver in tests)."""


_metric_hooks: list[MetricHook] = []


def register_decision_metric(hook: MetricHook) -> Callable[[], None]:
    """Register a metric hook; the returned disposer removes it (once)."""
    _metric_hooks.append(hook)

    def dispose() -> None:
        with contextlib.suppress(ValueError):
            _metric_hooks.remove(hook)

    return dispose


def _metric(name: str, labels: Mapping[str, str]) -> None:
    for hook in list(_metric_hooks):
        try:
            hook(name, labels)
        except Exception as exc:
            _log.opt(exception=exc).warning("decision metric hook failed")


# ---- what the exchange task comes back with -------------------------------------------------


@attrs.frozen(kw_only=True)
class _Decoded:
    document: Mapping[str, Any] = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False)
    usage: Usage | None
    usage_error: DecisionValidationError | None = None
    truncation: TruncationReport | None = None


@attrs.frozen(kw_only=True)
class _HttpFailure:
    status: int
    body: object = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False)
    judged: tuple[ProviderError, ProviderRequestDeniedError | None] | None = None
    """The classified error and the owner's denial, once looked up (the translator runs once)."""


@attrs.frozen(kw_only=True)
class _Broken:
    """The exchange failed before a verdict: the result to return and what to log."""

    category: FailureCategory
    reason: str
    detail: str = ""
    retryable: bool = False


_Outcome = _Decoded | _HttpFailure | _Broken | ProviderRequestDeniedError


@attrs.define
class _Call:
    """One call's fixed facts (for the task and the log lines)."""

    option: DecisionModelOption
    codec: Codec
    request: OneShotRequest
    questions: tuple[Question, ...]
    correlation: str
    on_usage: UsageCallback | None
    started: float
    reported: bool = False

    def labels(self) -> dict[str, object]:
        return {
            "protocol": self.codec.protocol.value,
            "provider": self.option.provider,
            "model": self.option.model_id,
            "correlation": self.correlation,
            "registration": self.option.registration_id,
            "endpoint": self.option.custom_endpoint_id,
            "questions": len(self.questions),
        }

    def report(self, usage: Usage) -> None:
        """Send validated usage to the recorders, once per call."""
        if self.reported:
            return
        self.reported = True
        report_usage(usage)
        if self.on_usage is not None:
            try:
                self.on_usage(usage)
            except Exception as exc:
                _log.opt(exception=exc).warning("decision usage callback failed; the call continues")


def _guarded(option: DecisionModelOption, url: URL) -> bool:
    """Custom entries always; a native entry whose origin is not OpenRouter's (the transport's rule)."""
    return option.is_custom or not same_origin(url, URL(OPENROUTER_DECISIONS_ORIGIN))


class Decisions:
    """The Decision capability over an application's ``DecisionDirectory``.

    Args:
        directory: The application's callbacks (options, entitlement, ownership, credentials...).
        config: Limits; ``DecisionConfig()`` by default.
        session: An aiohttp session for unguarded (native OpenRouter) calls; guarded calls
            always use their own session with a pinned resolver; one is made per call when omitted.
        cooldown: Where a key that failed for itself waits (share the bot's ``KeyCooldown``
            with its turns); ``None``: skipped for the rest of one call only.
    """

    def __init__(
        self,
        directory: DecisionDirectory,
        *,
        config: DecisionConfig | None = None,
        session: aiohttp.ClientSession | None = None,
        cooldown: KeyCooldown | None = None,
    ) -> None:
        self.directory = directory
        self.config = config or DecisionConfig()
        self.session = session
        self.cooldown = cooldown
        self._late: set[asyncio.Task[_Outcome]] = set()

    async def load_models(self, scope: object) -> tuple[DecisionModelOption, ...]:
        """The decision models *scope* may select (available and admitted by ``validate_model``)."""
        return await load_decision_models(self.directory, scope)

    async def settle_late(self) -> None:
        """Wait for requests still settling after their deadline (at most ``late_grace`` each)."""
        while self._late:
            await asyncio.gather(*list(self._late), return_exceptions=True)

    async def call_decisions(  # noqa: PLR0917 (the documented positional signature)
        self,
        scope: object,
        reference: DecisionReference | None,
        evidence: str,
        questions: Iterable[Question | Mapping[str, Any]],
        cancel: CancelSignal | None = None,
        on_usage: UsageCallback | None = None,
        *,
        capability: DecisionCapability = DecisionCapability.DECISION,
    ) -> DecisionResult:
        """Ask the selected decision model *questions* about *evidence*.

        Args:
            scope: The application's scope object (passed to the directory's callbacks).
            reference: The persisted selection; ``None`` gives ``unavailable`` (``not-selected``).
            evidence: The text to judge (never truncated, never logged).
            questions: ``Question`` s or ``{"type": "predicate", "id", "instructions"}`` mappings.
            cancel: The caller's cancellation (an ``asyncio.Event``, say).
            on_usage: Receives validated usage once, before the answers are judged.
            capability: The slot that owns the call: its credentials (and their fallback keys,
                tried in order when a key fails for itself: 401, 402, 403, a ``limit_source``).

        Returns:
            One result per kind (see ``rxcord.providers.decisions.types``); never raises for a
            provider failure.

        Raises:
            rxcord.core.errors.InputError: The option's ``base_url`` is not a usable URL (no
                host, userinfo, not http(s), a bad port...): configuration, not a provider failure.
        """
        loop = asyncio.get_running_loop()
        started = loop.time()
        correlation = secrets.token_hex(6)
        resolved = await resolve_reference(self.directory, scope, reference, capability)
        if isinstance(resolved, DecisionUnavailable):
            result: DecisionResult = attrs.evolve(resolved, correlation=correlation)
            self._trace(result, protocol=None, started=started, count=None, target=reference)
            return result
        option = resolved.option
        codec = CODECS[option.protocol]
        try:
            checked = parse_questions(questions)
            text = validate_evidence(evidence)
            parsed = codec.build_body(option.model_id, text, checked)
            body = json.dumps(parsed, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            check_request_size(body, option.max_input_tokens)
        except DecisionInputError as exc:
            result = DecisionInvalidInput(
                reason=exc.reason, question_index=exc.index, correlation=correlation
            )
            self._trace(result, protocol=option.protocol, started=started, count=None, target=option)
            return result
        keys = self._keys(resolved)
        call = _Call(
            option=option,
            codec=codec,
            request=_request(codec, option, keys[0], body, parsed),
            questions=checked,
            correlation=correlation,
            on_usage=on_usage,
            started=started,
        )
        if cancel is not None and cancel.is_set():
            return self._finish(call, DecisionCancelled(correlation=correlation))
        outcome = await self._race_keys(
            call, cancel, keys, lambda key: _request(codec, option, key, body, parsed)
        )
        if outcome is None:
            return self._finish(call, DecisionCancelled(correlation=correlation))
        if isinstance(outcome, _Broken) and outcome.reason == "deadline":
            return self._fail(
                call, _Broken(category=FailureCategory.TIMEOUT, reason="timeout", retryable=True)
            )
        if cancel is not None and cancel.is_set() and not isinstance(outcome, ProviderRequestDeniedError):
            # Cancelled once the response was in: its spend was reported, its verdict is not judged.
            return self._finish(call, DecisionCancelled(correlation=correlation))
        return self._judge(call, outcome)

    # ---- keys -------------------------------------------------------------------------------

    def _keys(self, resolved: ResolvedDecision) -> tuple[str | None, ...]:
        """The slot's keys in order, those cooling skipped (all of them tried if all are)."""
        keys = resolved.credentials.keys
        cooldown = self.cooldown
        if cooldown is None:
            return keys
        ready = tuple(key for key in keys if not cooldown.cooling(key))
        return ready or keys

    async def _race_keys(
        self,
        call: _Call,
        cancel: CancelSignal | None,
        keys: tuple[str | None, ...],
        request_for: Callable[[str | None], OneShotRequest],
    ) -> _Outcome | None:
        """The exchange with each key in turn while a key fails for itself (the next key may pass)."""
        cooldown = self.cooldown or KeyCooldown.for_turn()
        outcome: _Outcome | None = None
        for index, key in enumerate(keys):
            call.request = request_for(key)
            outcome = await self._race(call, cancel)
            if isinstance(outcome, _HttpFailure):
                outcome = _judged(call, outcome)
            if not _key_failed(outcome):
                return outcome
            cooldown.cool(key)
            if index + 1 == len(keys) or (cancel is not None and cancel.is_set()):
                return outcome
            # The key is named by its place in the slot's list, never by its value.
            _log.warning(
                "decision key {index} of {count} failed for itself; trying the next key {labels}",
                index=index + 1,
                count=len(keys),
                labels=call.labels(),
            )
        return outcome

    # ---- the race ---------------------------------------------------------------------------

    async def _race(self, call: _Call, cancel: CancelSignal | None) -> _Outcome | None:
        """The exchange's outcome; ``None`` when cancelled first; a ``deadline`` break on timeout."""
        task: asyncio.Task[_Outcome] = asyncio.ensure_future(self._exchange(call))
        waiter: asyncio.Future[Any] | None = (
            asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        )
        pending: set[asyncio.Future[Any]] = {task} if waiter is None else {task, waiter}
        try:
            done, _ = await asyncio.wait(
                pending, timeout=self.config.timeout, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if waiter is not None:
                waiter.cancel()
        if task in done:
            return task.result()
        if waiter is not None and waiter in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return None
        self._keep_late(call, task)
        return _Broken(category=FailureCategory.TIMEOUT, reason="deadline")

    def _keep_late(self, call: _Call, task: asyncio.Task[_Outcome]) -> None:
        loop = asyncio.get_running_loop()
        handle = loop.call_later(self.config.late_grace, task.cancel)
        self._late.add(task)

        def settled(done: asyncio.Task[_Outcome]) -> None:
            handle.cancel()
            self._late.discard(done)
            usage_known = call.reported
            if done.cancelled():
                _log.info("decision late response abandoned {labels}", labels=call.labels())
                return
            _log.info(
                "decision late response settled after its deadline; verdict ignored "
                "(usage recorded: {usage_known}) {labels}",
                usage_known=usage_known,
                labels=call.labels(),
            )

        task.add_done_callback(settled)

    async def _exchange(self, call: _Call) -> _Outcome:
        """The POST and the decoding of its body (usage reported here, once)."""
        option = call.option
        cfg = self.config
        try:
            async with contextlib.AsyncExitStack() as stack:
                session = await self._session(stack, option)
                send = aiohttp_send(session, connect_timeout=cfg.connect_timeout)
                response = await stack.enter_async_context(
                    fetch_with_provider_request(
                        option.provider.partition(":")[0],
                        call.request,
                        send,
                        max_bytes=cfg.max_response_bytes,
                    )
                )
                status = response.status
                headers = dict(response.headers)
                if 300 <= status < 400:
                    return _Broken(
                        category=FailureCategory.UPSTREAM, reason="redirect-refused", detail=f"HTTP {status}"
                    )
                try:
                    raw = await response.read(cfg.max_response_bytes)
                except ResponseTooLargeError:
                    if status >= 400:
                        return _HttpFailure(status=status, body=None, headers=headers)
                    return _Broken(category=FailureCategory.MALFORMED_RESPONSE, reason="oversized-response")
        except ProviderRequestDeniedError as denial:
            return denial
        except SsrfRefusedError as exc:
            return _Broken(
                category=FailureCategory.NETWORK, reason="endpoint-refused", detail=exc.why.split(" (")[0]
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            error = classify_exception(exc, provider=call.codec.protocol.value)
            # The exception's text can name the host: only its type reaches the log.
            kind = type(exc).__name__
            if error.type is ErrorType.TIMEOUT:
                return _Broken(
                    category=FailureCategory.TIMEOUT, reason="timeout", detail=kind, retryable=True
                )
            return _Broken(category=FailureCategory.NETWORK, reason="network", detail=kind, retryable=True)
        if status >= 400:
            return _HttpFailure(status=status, body=_lenient_json(raw), headers=headers)
        try:
            document = strict_json(raw)
        except DecisionValidationError as exc:
            return _Broken(category=FailureCategory.MALFORMED_RESPONSE, reason=exc.reason, detail=exc.detail)
        if not isinstance(document, Mapping):
            return _Broken(
                category=FailureCategory.MALFORMED_RESPONSE, reason="invalid-json", detail="not an object"
            )
        try:
            usage, truncation = call.codec.read_usage(document)
            if usage is not None:
                check_usage_bounds(usage)  # one place for every protocol's counts and cost
        except DecisionValidationError as exc:
            return _Decoded(document=document, headers=headers, usage=None, usage_error=exc)
        if usage is not None:
            call.report(usage)
        return _Decoded(document=document, headers=headers, usage=usage, truncation=truncation)

    async def _session(
        self, stack: contextlib.AsyncExitStack, option: DecisionModelOption
    ) -> aiohttp.ClientSession:
        url = endpoint_url(option.base_url)  # an InputError naming base_url if unusable
        if not _guarded(option, url):
            if self.session is not None:
                return self.session
            return await stack.enter_async_context(aiohttp.ClientSession())
        connector = await self.config.ssrf_guard.connector(
            url, allow_private_network=self.config.allow_private_network
        )  # raises before any connection exists
        return await stack.enter_async_context(aiohttp.ClientSession(connector=connector))

    # ---- results ----------------------------------------------------------------------------

    def _judge(self, call: _Call, outcome: _Outcome) -> DecisionResult:
        if isinstance(outcome, ProviderRequestDeniedError):
            return self._finish(call, DecisionDenied(denial=outcome, correlation=call.correlation))
        if isinstance(outcome, _Broken):
            return self._fail(call, outcome)
        if isinstance(outcome, _HttpFailure):
            return self._http_failure(call, outcome)
        if outcome.usage_error is not None:
            error = outcome.usage_error
            return self._fail(
                call,
                _Broken(
                    category=FailureCategory.MALFORMED_RESPONSE, reason=error.reason, detail=error.detail
                ),
            )
        if outcome.truncation is not None and outcome.truncation.cut:
            return self._fail(
                call,
                _Broken(
                    category=FailureCategory.MALFORMED_RESPONSE,
                    reason="evidence-truncated",
                    detail="the provider reported cutting the evidence",
                ),
            )
        try:
            verdict = call.codec.read_verdict(call.questions, outcome.document, outcome.headers)
        except DecisionValidationError as exc:
            return self._fail(
                call,
                _Broken(category=FailureCategory.MALFORMED_RESPONSE, reason=exc.reason, detail=exc.detail),
            )
        return self._finish(
            call, _answered(verdict.answers, verdict.model, outcome.usage, verdict.provider_request_id, call)
        )

    def _http_failure(self, call: _Call, failure: _HttpFailure) -> DecisionResult:
        judged = _judged(call, failure).judged
        assert judged is not None
        error, denial = judged
        if denial is not None:
            return self._finish(call, DecisionDenied(denial=denial, correlation=call.correlation))
        category = _category(failure.status, error)
        broken = _Broken(
            category=category,
            reason="http-error",
            detail=f"HTTP {failure.status}: {error.message[:300]}",
            retryable=error.retryable,
        )
        return self._fail(call, broken, limit=_limit(failure.body))

    def _fail(self, call: _Call, broken: _Broken, *, limit: DecisionLimit | None = None) -> DecisionResult:
        result = DecisionFailed(
            category=broken.category,
            reason=broken.reason,
            limit=limit,
            retryable=broken.retryable,
            correlation=call.correlation,
        )
        labels = call.labels()
        if broken.category.is_error:
            _log.error(
                "decision failed: {category} ({reason}) {detail} {labels}",
                category=broken.category.value,
                reason=broken.reason,
                detail=broken.detail,
                labels=labels,
            )
        else:
            _metric(
                "decision_failure", {"protocol": call.codec.protocol.value, "category": broken.category.value}
            )
            _log.warning(
                "decision failed: {category} ({reason}) {detail} {labels}",
                category=broken.category.value,
                reason=broken.reason,
                detail=broken.detail,
                labels=labels,
            )
        return self._finish(call, result)

    def _finish(self, call: _Call, result: DecisionResult) -> DecisionResult:
        self._trace(
            result, protocol=call.codec.protocol, started=call.started, count=len(call.questions), call=call
        )
        return result

    def _trace(
        self,
        result: DecisionResult,
        *,
        protocol: DecisionProtocol | None,
        started: float,
        count: int | None,
        call: _Call | None = None,
        target: DecisionModelOption | DecisionReference | None = None,
    ) -> None:
        # The model identity (provider and model id, never the key or the URL).
        target = call.option if call is not None else target
        usage = getattr(result, "usage", None)
        elapsed = (asyncio.get_running_loop().time() - started) * 1000.0
        answered = getattr(result, "answers", ())
        _log.info(
            "decision {outcome} protocol={protocol} provider={provider} model={model} "
            "correlation={correlation} registration={registration} "
            "endpoint={endpoint} questions={count} answers={answered} elapsed_ms={elapsed:.1f} "
            "input_tokens={input} output_tokens={output} cost={cost}",
            outcome=result.kind.value,
            protocol=protocol.value if protocol is not None else None,
            provider=target.provider if target is not None else None,
            model=target.model_id if target is not None else None,
            correlation=result.correlation,
            registration=call.option.registration_id if call is not None else None,
            endpoint=call.option.custom_endpoint_id if call is not None else None,
            count=count,
            answered=len(answered),
            elapsed=elapsed,
            input=usage.input_tokens if usage is not None else None,
            output=usage.output_tokens if usage is not None else None,
            cost=usage.cost if usage is not None else None,
        )


def _judged(call: _Call, failure: _HttpFailure) -> _HttpFailure:
    """*failure* with its classified error and the owner's denial (looked up once per response)."""
    if failure.judged is not None:
        return failure
    error = classify_http_error(
        failure.status, failure.body, provider=call.codec.protocol.value, headers=failure.headers
    )
    return attrs.evolve(failure, judged=(error, find_denial(error, current_usage_context())))


def _key_failed(outcome: _Outcome | None) -> bool:
    """Whether *outcome* is an HTTP failure of the key itself (the turn runner's rule)."""
    if not isinstance(outcome, _HttpFailure) or outcome.judged is None:
        return False
    return key_failure(*outcome.judged)


def _request(
    codec: Codec,
    option: DecisionModelOption,
    key: str | None,
    body: bytes,
    parsed: Mapping[str, Any],
) -> OneShotRequest:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return OneShotRequest(
        url=codec.url(option.base_url), body=body, parsed=parsed, headers=headers, api_key=key or None
    )


def _answered(
    answers: tuple[Answer, ...], model: str, usage: Usage | None, request_id: str | None, call: _Call
) -> DecisionCompleted | DecisionRefused:
    predicates = tuple(answer for answer in answers if isinstance(answer, PredicateAnswer))
    if len(predicates) == len(answers):
        return DecisionCompleted(
            answers=predicates,
            model=model,
            usage=usage,
            provider_request_id=request_id,
            correlation=call.correlation,
        )
    return DecisionRefused(
        answers=answers,
        model=model,
        usage=usage,
        provider_request_id=request_id,
        correlation=call.correlation,
    )


def _lenient_json(raw: bytes) -> object:
    """An error body's JSON value; its text when not JSON or nested too deeply (as on the chat path)."""
    text = raw.decode("utf-8", errors="replace")
    try:
        return safe_json.loads(text)
    except MalformedJsonError:
        return text


def _category(status: int, error: ProviderError) -> FailureCategory:
    if error.type is ErrorType.RATE_LIMIT or status == 402:
        return FailureCategory.THROTTLING
    if error.type is ErrorType.CONTENT_BLOCKED:
        return FailureCategory.BLOCKED
    if status in (401, 403):
        return FailureCategory.AUTHENTICATION
    if error.type is ErrorType.TIMEOUT or status in (408, 504, 524):
        return FailureCategory.TIMEOUT
    if error.type is ErrorType.MODEL_ERROR or status == 404:
        # A 404 that names no model is an api_error now (a wrong path); here it stays availability.
        return FailureCategory.AVAILABILITY
    if status >= 500 or error.type is ErrorType.PROVIDER_OVERLOADED:
        return FailureCategory.UPSTREAM
    return FailureCategory.MALFORMED_REQUEST


def _limit(body: object) -> DecisionLimit | None:
    """The validated limit metadata of an error body (OpenRouter ``error.metadata``), if any."""
    limit = provider_limit(body)
    if limit is None:
        return None
    return DecisionLimit(limit_source=limit.limit_source, minimum_balance=limit.minimum_balance)


_registered: list[Decisions] = []
"""The service registered at startup (the last one wins; disposers restore the previous)."""


def register_decisions(service: Decisions) -> Callable[[], None]:
    """Register the application's ``Decisions`` for ``call_decisions``; the disposer restores the previous."""
    _registered.append(service)
    disposed = False

    def dispose() -> None:
        nonlocal disposed
        if not disposed:
            disposed = True
            with contextlib.suppress(ValueError):
                _registered.remove(service)

    return dispose


async def call_decisions(  # noqa: PLR0917 (the documented positional signature)
    scope: object,
    reference: DecisionReference | None,
    evidence: str,
    questions: Iterable[Question | Mapping[str, Any]],
    cancel: CancelSignal | None = None,
    on_usage: UsageCallback | None = None,
    *,
    capability: DecisionCapability = DecisionCapability.DECISION,
    directory: DecisionDirectory | None = None,
    config: DecisionConfig | None = None,
    session: aiohttp.ClientSession | None = None,
) -> DecisionResult:
    """One decision call through the registered ``Decisions`` (``register_decisions``).

    With *directory*, a ``Decisions(directory, config=config, session=session)`` made for
    this call is used instead. With neither, the result is ``unavailable``
    (``not-selected`` without a reference, ``not-configured`` otherwise). A request that
    outlives its deadline keeps settling in the background (its usage is still recorded
    once); ``Decisions.settle_late`` waits for it.
    """
    if directory is not None:
        service = Decisions(directory, config=config, session=session)
    elif _registered:
        service = _registered[-1]
    else:
        reason = "not-selected" if reference is None else "not-configured"
        return DecisionUnavailable(reason=reason, correlation=secrets.token_hex(6))
    result = await service.call_decisions(
        scope, reference, evidence, questions, cancel, on_usage, capability=capability
    )
    if directory is not None:
        _ORPHANS.update(service._late)
        for task in service._late:
            task.add_done_callback(_ORPHANS.discard)
    return result


_ORPHANS: set[asyncio.Task[Any]] = set()
"""Late requests of one-shot ``call_decisions`` calls (kept referenced until they settle)."""
