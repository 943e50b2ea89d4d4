"""call_decisions over real HTTP on 127.0.0.1: every result kind, HTTP failures, bounds, cancel, holds."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import pytest
from loguru import logger

from rxcord.core.errors import ProviderRequestDeniedError
from rxcord.core.types import Usage
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.decisions import (
    DecisionCancelled,
    DecisionCompleted,
    DecisionConfig,
    DecisionCredentials,
    DecisionDenied,
    DecisionDirectory,
    DecisionFailed,
    DecisionInvalidInput,
    DecisionLimit,
    DecisionModelOption,
    DecisionProtocol,
    DecisionReference,
    DecisionRefused,
    DecisionResult,
    Decisions,
    DecisionUnavailable,
    FailureCategory,
    PredicateAnswer,
    Question,
    RefusedAnswer,
    call_decisions,
    custom_provider,
    reference_for,
    register_decision_metric,
    register_decisions,
    supports_decisions,
)
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.hooks import (
    ProviderRequest,
    register_denial_translator,
    register_request_hook,
    with_usage_context,
)
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.ssrf import SsrfGuard
from rxcord.providers.usage import with_usage_callback
from tests.providers.decisions.server import DecisionsServer

EVIDENCE = "Subject: WIN A FREE CRUISE!!! secret-evidence-text"
KEY = "sk-or-test-secret-123456"
QUESTIONS = (
    Question(id="is_spam", instructions="The message is unsolicited bulk advertising. secret-question-text"),
    Question(id="needs_reply", instructions="The sender expects an answer."),
)
LOCAL = DecisionConfig(allow_private_network=True, timeout=30.0)
PROTOCOLS = list(DecisionProtocol)


def make_option(protocol: DecisionProtocol, base_url: str, **changes: Any) -> DecisionModelOption:
    if protocol is DecisionProtocol.OPENROUTER:
        option = DecisionModelOption(
            provider="openrouter",
            model_id="typesafe/jev-1.13",
            protocol=protocol,
            base_url=base_url,
            max_input_tokens=32_000,
        )
    else:
        option = DecisionModelOption(
            provider=custom_provider("conn-7"),
            model_id="jev-latest",
            protocol=protocol,
            base_url=base_url,
            max_input_tokens=32_000,
            custom_endpoint_id="17",
        )
    return attrs.evolve(option, **changes)


@attrs.define
class App:
    """A test application: one catalog and switchable answers to every recheck."""

    catalog: list[DecisionModelOption]
    entitled: bool = True
    owner: bool = True
    current: bool = True
    protocol: DecisionProtocol | None = None
    credentials: DecisionCredentials | None = DecisionCredentials(api_key=KEY)
    calls: list[str] = attrs.field(factory=list)

    def directory(self) -> DecisionDirectory:
        async def options(scope: object) -> Sequence[DecisionModelOption]:
            self.calls.append("options")
            return self.catalog

        return DecisionDirectory(
            options=options,
            validate_model=lambda scope, option: self.entitled,
            credentials=lambda scope, option: self.credentials,
            owns=lambda scope, ref: self.owner,
            registration_current=lambda scope, ref: self.current,
            stored_protocol=lambda scope, ref: self.protocol,
        )


async def run(
    server: DecisionsServer,
    protocol: DecisionProtocol,
    *,
    questions: Sequence[Any] = QUESTIONS,
    evidence: str = EVIDENCE,
    config: DecisionConfig = LOCAL,
    cancel: asyncio.Event | None = None,
    app: App | None = None,
    on_usage: Any = None,
) -> tuple[DecisionResult, list[Usage]]:
    option = make_option(protocol, server.base_url)
    app = app or App([option])
    reports: list[Usage] = []

    def record(usage: Usage) -> None:
        reports.append(usage)
        if on_usage is not None:
            on_usage(usage)

    service = Decisions(app.directory(), config=config)
    result = await service.call_decisions(
        "guild-1", reference_for(app.catalog[0]), evidence, questions, cancel, record
    )
    return result, reports


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    lines: list[str] = []
    logger.enable("rxcord")
    sink = logger.add(
        lambda message: lines.append(str(message)), level="DEBUG", format="{level} {message} {extra}"
    )
    try:
        yield lines
    finally:
        logger.remove(sink)
        logger.disable("rxcord")


def test_adapters_report_the_capability() -> None:
    assert supports_decisions(OpenRouterAdapter())
    assert supports_decisions(CustomAdapter())
    assert not supports_decisions(OpenAIAdapter())
    assert not supports_decisions(GoogleAdapter())


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.value)
async def test_completed_in_question_order(protocol: DecisionProtocol) -> None:
    async with DecisionsServer(probabilities={"is_spam": 0.97, "needs_reply": 0.25}) as server:
        result, reports = await run(server, protocol)
    assert isinstance(result, DecisionCompleted)
    assert result.answers == (
        PredicateAnswer(id="is_spam", probability=0.97),
        PredicateAnswer(id="needs_reply", probability=0.25),
    )
    assert result.model == "typesafe/jev-1.13-20260917"
    assert result.correlation and len(result.correlation) == 12
    assert reports == [result.usage]
    assert result.usage is not None and result.usage.input_tokens == 40
    expected_cost = 0.00002 if protocol is DecisionProtocol.OPENROUTER else None
    assert result.usage.cost == expected_cost
    seen = server.seen[0]
    assert (
        seen.path
        == {"openrouter": "/api/alpha/decisions", "systemone": "/systemone", "openai": "/decisions"}[
            protocol.value
        ]
    )
    assert seen.headers["Authorization"] == f"Bearer {KEY}"
    if protocol is DecisionProtocol.OPENAI:
        assert [q["name"] for q in seen.body["questions"]] == ["is_spam", "needs_reply"]
        assert seen.body["input"] == EVIDENCE
    else:
        assert seen.body["questions"]["is_spam"] == {
            "type": "noul",
            "instructions": QUESTIONS[0].instructions,
        }
        assert seen.body["state"] == EVIDENCE


async def test_request_identity_per_protocol() -> None:
    async with DecisionsServer() as server:
        server.then(body="systemone_200.json", headers={"x-typesafe-request-id": "ts-req-42"})
        server.then(body="openai_200.json", headers={"x-request-id": "req_9"})
        server.then(body="openrouter_200.json")
        s1, _ = await run(server, DecisionProtocol.SYSTEMONE)
        oa, _ = await run(server, DecisionProtocol.OPENAI)
        orr, _ = await run(server, DecisionProtocol.OPENROUTER)
    assert (
        isinstance(s1, DecisionCompleted)
        and s1.provider_request_id == "ts-req-42"
        and s1.model == "jev-1.13.0"
    )
    assert isinstance(oa, DecisionCompleted) and oa.provider_request_id == "req_9"
    assert oa.usage == Usage(input_tokens=112, output_tokens=0, cache_read_tokens=0, cache_write_tokens=0)
    assert isinstance(orr, DecisionCompleted)
    assert orr.provider_request_id == "gen-dec-1789738314-X5e5eKGQdvR9rblyX250"
    assert orr.answers[0] == PredicateAnswer(id="is_spam", probability=0.97)


async def test_missing_key_sends_no_authorization() -> None:
    async with DecisionsServer() as server:
        option = make_option(DecisionProtocol.SYSTEMONE, server.base_url)
        app = App([option], credentials=DecisionCredentials(api_key=None))
        result, _ = await run(server, DecisionProtocol.SYSTEMONE, app=app)
    assert isinstance(result, DecisionCompleted)
    assert "Authorization" not in server.seen[0].headers


async def test_partial_openai_refusal_is_refused_with_ordered_answers() -> None:
    async with DecisionsServer(probabilities={"is_spam": 0.8}, refuse=frozenset({"needs_reply"})) as server:
        result, reports = await run(server, DecisionProtocol.OPENAI)
        server.refuse = frozenset({"is_spam", "needs_reply"})
        everything, _ = await run(server, DecisionProtocol.OPENAI)
    assert isinstance(result, DecisionRefused)
    assert result.answers == (PredicateAnswer(id="is_spam", probability=0.8), RefusedAnswer(id="needs_reply"))
    assert result.refused_ids == ("needs_reply",)
    assert len(reports) == 1 and result.usage == reports[0]
    assert isinstance(everything, DecisionRefused) and everything.refused_ids == ("is_spam", "needs_reply")


HTTP_CASES = [
    (DecisionProtocol.OPENROUTER, 400, None, FailureCategory.MALFORMED_REQUEST),
    (DecisionProtocol.OPENAI, 400, "openai_400.json", FailureCategory.MALFORMED_REQUEST),
    (DecisionProtocol.SYSTEMONE, 400, "systemone_400_max_tokens.json", FailureCategory.MALFORMED_REQUEST),
    (DecisionProtocol.OPENROUTER, 401, "openrouter_401.json", FailureCategory.AUTHENTICATION),
    (DecisionProtocol.SYSTEMONE, 403, None, FailureCategory.AUTHENTICATION),
    (DecisionProtocol.OPENROUTER, 402, "openrouter_402.json", FailureCategory.THROTTLING),
    (DecisionProtocol.OPENROUTER, 404, None, FailureCategory.AVAILABILITY),
    (DecisionProtocol.OPENROUTER, 429, "openrouter_429.json", FailureCategory.THROTTLING),
    (DecisionProtocol.OPENAI, 429, None, FailureCategory.THROTTLING),
    (DecisionProtocol.OPENROUTER, 500, None, FailureCategory.UPSTREAM),
    (DecisionProtocol.OPENROUTER, 502, "openrouter_502.json", FailureCategory.UPSTREAM),
    (DecisionProtocol.SYSTEMONE, 503, None, FailureCategory.UPSTREAM),
    (DecisionProtocol.OPENROUTER, 524, None, FailureCategory.TIMEOUT),
    (DecisionProtocol.OPENROUTER, 529, None, FailureCategory.UPSTREAM),
]


@pytest.mark.parametrize(
    ("protocol", "status", "body", "category"), HTTP_CASES, ids=lambda v: str(getattr(v, "value", v))
)
async def test_http_failures(
    protocol: DecisionProtocol, status: int, body: str | None, category: FailureCategory, log_lines: list[str]
) -> None:
    metrics: list[tuple[str, dict[str, str]]] = []
    dispose = register_decision_metric(lambda name, labels: metrics.append((name, dict(labels))))
    try:
        async with DecisionsServer() as server:
            server.then(
                status=status, body=body if body else b'{"error": {"message": "nope secret-body-text"}}'
            )
            result, reports = await run(server, protocol)
    finally:
        dispose()
    assert isinstance(result, DecisionFailed)
    assert (result.category, result.reason, result.error_logged) == (category, "http-error", True)
    assert reports == []
    text = repr(attrs.evolve(result, correlation=""))  # a random hex id could contain the digits
    assert "secret-body-text" not in text and "provider prose" not in text and str(status) not in text
    if status == 402:
        assert result.limit == DecisionLimit(limit_source="openrouter_in_flight_budget", minimum_balance=0.5)
    else:
        assert result.limit is None
    assert result.retryable is (status == 429 or status >= 500)
    if category.is_error:
        assert metrics == [] and any(line.startswith("ERROR") for line in log_lines)
    else:
        assert metrics == [("decision_failure", {"protocol": protocol.value, "category": category.value})]
        assert any(line.startswith("WARNING") and f"HTTP {status}" in line for line in log_lines)


async def test_oversized_bodies_are_refused() -> None:
    big = b'{"model": "m", "pad": "' + b"x" * (1024 * 1024) + b'"}'
    async with DecisionsServer() as server:
        server.then(body=big)
        server.then(status=500, body=big)
        ok, reports = await run(server, DecisionProtocol.OPENROUTER)
        error, _ = await run(server, DecisionProtocol.OPENROUTER)
    assert isinstance(ok, DecisionFailed)
    assert (ok.category, ok.reason) == (FailureCategory.MALFORMED_RESPONSE, "oversized-response")
    assert reports == []
    assert isinstance(error, DecisionFailed) and error.category is FailureCategory.UPSTREAM


async def test_body_just_under_the_bound_is_read() -> None:
    document = (
        b'{"model": "m-1", "answers": {"is_spam": {"type": "noul", "noul": 0.1}, '
        b'"needs_reply": {"type": "noul", "noul": 0.2}}, "pad": "'
    )
    pad = 1024 * 1024 - len(document) - 2
    async with DecisionsServer() as server:
        server.then(body=document + b"x" * pad + b'"}')
        result, _ = await run(server, DecisionProtocol.SYSTEMONE)
    assert isinstance(result, DecisionCompleted)


@pytest.mark.parametrize(
    ("body", "reason", "reported"),
    [
        (b'{"model": "m", "answers": {"is_spam": {"type": "noul", "noul": NaN}}}', "invalid-json", 0),
        (b'{"model": "m", "model": "m", "answers": {}}', "invalid-json", 0),
        (b"<html>oops</html>", "invalid-json", 0),
        (b"[1, 2]", "invalid-json", 0),
        (
            (
                b'{"model": "m", '
                b'"answers": {"is_spam": {"type": "noul", "noul": 0.4}}, '
                b'"usage": {"input_tokens": 3, "output_tokens": 1}}'
            ),
            "invalid-answers",
            1,
        ),
        (
            b'{"model": "m", "answers": {"is_spam": {"type": "noul", "noul": 0.4}, '
            b'"needs_reply": {"type": "noul", "noul": 0.4}},'
            b' "usage": {"input_tokens": -3, "output_tokens": 1}}',
            "invalid-usage",
            0,
        ),
        ("systemone_200_truncated.json", "evidence-truncated", 1),
    ],
)
async def test_malformed_responses_fail_and_keep_reported_spend(
    body: bytes | str, reason: str, reported: int
) -> None:
    async with DecisionsServer() as server:
        server.then(body=body)
        result, reports = await run(server, DecisionProtocol.SYSTEMONE)
    assert isinstance(result, DecisionFailed)
    assert (result.category, result.reason) == (FailureCategory.MALFORMED_RESPONSE, reason)
    assert len(reports) == reported


async def test_missing_usage_stays_unknown() -> None:
    async with DecisionsServer() as server:
        server.then(
            body=(
                b'{"model": "m", '
                b'"answers": {"needs_reply": {"type": "noul", "noul": 0}, '
                b'"is_spam": {"type": "noul", "noul": 1}}}'
            )
        )
        result, reports = await run(server, DecisionProtocol.OPENROUTER)
    assert isinstance(result, DecisionCompleted) and result.usage is None and reports == []
    assert [a.probability for a in result.answers if isinstance(a, PredicateAnswer)] == [1.0, 0.0]


async def test_redirects_are_not_followed() -> None:
    async with DecisionsServer() as server:
        server.then(status=302, body=b"", headers={"Location": "http://169.254.169.254/"})
        result, _ = await run(server, DecisionProtocol.OPENAI)
    assert isinstance(result, DecisionFailed) and result.reason == "redirect-refused"
    assert len(server.seen) == 1


@pytest.mark.parametrize(
    ("questions", "evidence", "reason"),
    [
        ((), EVIDENCE, "no-questions"),
        (tuple(Question(id=f"q{i}", instructions="?") for i in range(65)), EVIDENCE, "too-many-questions"),
        ((Question(id="Bad", instructions="?"),), EVIDENCE, "invalid-question-id"),
        ((QUESTIONS[0], QUESTIONS[0]), EVIDENCE, "duplicate-question-id"),
        ([{"type": "choice", "id": "a", "instructions": "?"}], EVIDENCE, "invalid-question"),
        (QUESTIONS, "", "invalid-evidence"),
        (QUESTIONS, "é" * 20_000, "request-too-large"),
    ],
)
async def test_invalid_input_is_refused_before_any_request(
    questions: Sequence[Any], evidence: str, reason: str
) -> None:
    async with DecisionsServer() as server:
        result, _ = await run(server, DecisionProtocol.OPENROUTER, questions=questions, evidence=evidence)
    assert isinstance(result, DecisionInvalidInput) and result.reason == reason
    assert server.seen == []


async def test_the_size_bound_counts_the_whole_serialized_request() -> None:
    async with DecisionsServer() as server:
        fits = "a" * (32_000 - 400)
        result, _ = await run(server, DecisionProtocol.OPENROUTER, evidence=fits)
        over, _ = await run(server, DecisionProtocol.OPENROUTER, evidence="a" * 32_000)
    assert isinstance(result, DecisionCompleted)
    assert len(server.seen) == 1 and server.seen[0].body["state"] == fits  # never truncated
    assert isinstance(over, DecisionInvalidInput)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"entitled": False}, "not-admitted"),
        ({"owner": False}, "not-owned"),
        ({"current": False}, "stale-registration"),
        ({"protocol": DecisionProtocol.OPENAI}, "protocol-mismatch"),
        ({"credentials": None}, "no-credentials"),
    ],
)
async def test_every_call_rechecks_the_reference(change: dict[str, Any], reason: str) -> None:
    async with DecisionsServer() as server:
        app = App([make_option(DecisionProtocol.SYSTEMONE, server.base_url)], **change)
        result, _ = await run(server, DecisionProtocol.SYSTEMONE, app=app)
    assert isinstance(result, DecisionUnavailable) and result.reason == reason
    assert server.seen == []


async def test_null_selection_and_stale_references() -> None:
    option = make_option(DecisionProtocol.OPENROUTER, "https://openrouter.ai", registration_id="reg-1")
    app = App([option])
    service = Decisions(app.directory())
    none = await service.call_decisions("g", None, EVIDENCE, QUESTIONS)
    assert isinstance(none, DecisionUnavailable) and none.reason == "not-selected"
    # Re-registered under the same codename: a new registration id, so the old reference is stale.
    app.catalog = [attrs.evolve(option, registration_id="reg-2")]
    stale = await service.call_decisions("g", reference_for(option), EVIDENCE, QUESTIONS)
    assert isinstance(stale, DecisionUnavailable) and stale.reason == "not-admitted"
    other = DecisionReference(provider="google", model_id="gemini")
    unsupported = await service.call_decisions("g", other, EVIDENCE, QUESTIONS)
    assert isinstance(unsupported, DecisionUnavailable) and unsupported.reason == "unsupported"


async def test_load_models_needs_availability_and_entitlement() -> None:
    a = make_option(DecisionProtocol.OPENROUTER, "https://openrouter.ai")
    b = attrs.evolve(a, model_id="openai/gpt-6-luna-decisions")
    directory = DecisionDirectory(
        options=lambda scope: (a, b),
        validate_model=lambda scope, option: option.model_id == b.model_id,
        credentials=lambda scope, option: DecisionCredentials(),
    )
    assert await Decisions(directory).load_models("g") == (b,)


def test_options_keep_the_reference_rules() -> None:
    with pytest.raises(ValueError):
        DecisionModelOption(
            provider="openrouter",
            model_id="m",
            protocol=DecisionProtocol.OPENAI,
            base_url="x",
            max_input_tokens=1,
        )
    with pytest.raises(ValueError):
        DecisionModelOption(
            provider=custom_provider("c"),
            model_id="m",
            protocol=DecisionProtocol.OPENAI,
            base_url="x",
            max_input_tokens=1,
        )
    option = make_option(DecisionProtocol.OPENAI, "http://x")
    assert reference_for(option) == DecisionReference(
        provider="custom:conn-7", model_id="jev-latest", registration_id=None, custom_endpoint_id="17"
    )


async def test_cancelled_before_sending() -> None:
    cancel = asyncio.Event()
    cancel.set()
    async with DecisionsServer() as server:
        result, reports = await run(server, DecisionProtocol.OPENROUTER, cancel=cancel)
    assert isinstance(result, DecisionCancelled) and reports == [] and server.seen == []


async def test_cancelled_while_waiting_for_the_response() -> None:
    cancel = asyncio.Event()
    gate = asyncio.Event()
    async with DecisionsServer() as server:
        server.then(gate=gate)
        task = asyncio.ensure_future(run(server, DecisionProtocol.OPENAI, cancel=cancel))
        while not server.seen:
            await asyncio.sleep(0)
        cancel.set()
        result, reports = await task
        gate.set()
    assert isinstance(result, DecisionCancelled) and reports == []


async def test_cancelled_after_decoding_keeps_the_spend(log_lines: list[str]) -> None:
    cancel = asyncio.Event()
    async with DecisionsServer() as server:
        result, reports = await run(
            server, DecisionProtocol.OPENROUTER, cancel=cancel, on_usage=lambda _: cancel.set()
        )
        cancel.clear()
        server.then(body=b'{"model": "m", "answers": {}, "usage": {"input_tokens": 7, "output_tokens": 1}}')
        malformed, more = await run(
            server, DecisionProtocol.SYSTEMONE, cancel=cancel, on_usage=lambda _: cancel.set()
        )
    assert isinstance(result, DecisionCancelled)
    assert len(reports) == 1 and reports[0].cost == 0.00002
    assert isinstance(malformed, DecisionCancelled)  # a malformed verdict is not judged once cancelled
    assert [usage.input_tokens for usage in more] == [7]
    assert not any(line.startswith(("WARNING", "ERROR")) for line in log_lines)


async def test_a_late_response_records_usage_once_and_its_verdict_is_ignored() -> None:
    gate = asyncio.Event()
    reports: list[Usage] = []
    async with DecisionsServer() as server:
        server.then(gate=gate)
        option = make_option(DecisionProtocol.OPENROUTER, server.base_url)
        service = Decisions(App([option]).directory(), config=attrs.evolve(LOCAL, timeout=0.05))
        result = await service.call_decisions(
            "g", reference_for(option), EVIDENCE, QUESTIONS, None, reports.append
        )
        assert isinstance(result, DecisionFailed)
        assert (result.category, result.reason, result.retryable) == (
            FailureCategory.TIMEOUT,
            "timeout",
            True,
        )
        assert reports == []  # the request has not settled: the server is still holding it
        gate.set()
        await service.settle_late()
    assert len(reports) == 1 and reports[0].input_tokens == 40
    assert server.answered == 1


async def test_loopback_is_refused_without_the_opt_out() -> None:
    async with DecisionsServer() as server:
        for protocol in PROTOCOLS:
            result, _ = await run(server, protocol, config=DecisionConfig())
            assert isinstance(result, DecisionFailed), protocol
            assert (result.category, result.reason) == (FailureCategory.NETWORK, "endpoint-refused")
    assert server.seen == []


async def test_a_name_resolving_to_a_private_address_is_refused() -> None:
    lookups: list[str] = []

    async def resolver(host: str) -> Sequence[str]:
        lookups.append(host)
        return ["10.1.2.3"]

    option = make_option(DecisionProtocol.SYSTEMONE, "https://decisions.example.test/v1")
    config = DecisionConfig(ssrf_guard=SsrfGuard(resolver=resolver))
    result = await call_decisions(
        "g", reference_for(option), EVIDENCE, QUESTIONS, directory=App([option]).directory(), config=config
    )
    assert isinstance(result, DecisionFailed) and result.reason == "endpoint-refused"
    assert lookups == ["decisions.example.test"]


async def test_connection_refused_is_a_network_failure() -> None:
    async with DecisionsServer() as server:
        base = server.base_url
    option = make_option(DecisionProtocol.OPENAI, base)
    result = await call_decisions(
        "g", reference_for(option), EVIDENCE, QUESTIONS, directory=App([option]).directory(), config=LOCAL
    )
    assert isinstance(result, DecisionFailed)
    assert (result.category, result.reason, result.retryable) == (FailureCategory.NETWORK, "network", True)


@attrs.define
class RecordingHold:
    costs: list[float] = attrs.field(factory=list)
    released: list[bool] = attrs.field(factory=list)

    def report_cost(self, cost: float) -> None:
        self.costs.append(cost)

    def release(self, retain_estimate: bool) -> None:
        self.released.append(retain_estimate)


async def test_request_hold_sees_key_path_and_body_and_settles() -> None:
    seen: list[ProviderRequest] = []
    holds: list[RecordingHold] = []

    def hook(request: ProviderRequest) -> RecordingHold:
        seen.append(request)
        holds.append(RecordingHold())
        return holds[-1]

    owner = object()
    dispose = register_request_hook(hook)
    try:
        async with DecisionsServer(probabilities={"is_spam": 0.9}) as server:
            server.then(status=200)
            server.then(status=402, body="openrouter_402.json")
            with with_usage_context(owner):
                ok, _ = await run(server, DecisionProtocol.OPENROUTER)
                failed, _ = await run(server, DecisionProtocol.OPENROUTER)
    finally:
        dispose()
    assert isinstance(ok, DecisionCompleted) and ok.answers[0].probability == 0.9
    assert seen[0].path == "/api/alpha/decisions" and seen[0].api_key == KEY and seen[0].context is owner
    assert seen[0].body["questions"]["is_spam"]["type"] == "noul"
    assert (holds[0].costs, holds[0].released) == ([0.00002], [True])
    assert isinstance(failed, DecisionFailed) and failed.category is FailureCategory.THROTTLING
    assert (holds[1].costs, holds[1].released) == ([0.0], [False])


async def test_a_hook_denial_is_denied_before_sending(log_lines: list[str]) -> None:
    owner = object()

    def hook(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(context=request.context, reason="allowance used up")

    dispose = register_request_hook(hook)
    try:
        async with DecisionsServer() as server:
            with with_usage_context(owner):
                result, _ = await run(server, DecisionProtocol.SYSTEMONE)
    finally:
        dispose()
    assert isinstance(result, DecisionDenied) and result.denial.context is owner
    assert server.seen == []
    assert not any(line.startswith(("WARNING", "ERROR")) for line in log_lines)


async def test_the_denial_translator_turns_an_http_failure_into_denied() -> None:
    owner = object()
    statuses: list[int | None] = []

    def translate(error: Any, context: object | None) -> ProviderRequestDeniedError | None:
        statuses.append(getattr(error, "status", None))
        if getattr(error, "status", None) == 402:
            return ProviderRequestDeniedError(context=context, reason="spend guard")
        return None

    dispose = register_denial_translator(translate)
    try:
        async with DecisionsServer() as server:
            server.then(status=402, body="openrouter_402.json")
            server.then(status=429, body="openrouter_429.json")
            with with_usage_context(owner):
                denied, _ = await run(server, DecisionProtocol.OPENROUTER)
                throttled, _ = await run(server, DecisionProtocol.OPENROUTER)
    finally:
        dispose()
    assert isinstance(denied, DecisionDenied) and denied.denial.context is owner
    assert isinstance(throttled, DecisionFailed)
    assert statuses == [402, 429]


async def test_usage_reaches_the_request_bound_recorder_once() -> None:
    bound: list[Usage] = []
    async with DecisionsServer() as server:
        with with_usage_callback(bound.append):
            result, reports = await run(server, DecisionProtocol.OPENROUTER)
    assert isinstance(result, DecisionCompleted)
    assert bound == reports == [result.usage]


async def test_a_failing_usage_callback_does_not_fail_the_call() -> None:
    def broken(_: Usage) -> None:
        raise RuntimeError("recorder down")

    async with DecisionsServer() as server:
        result, _ = await run(server, DecisionProtocol.SYSTEMONE, on_usage=broken)
    assert isinstance(result, DecisionCompleted)


async def test_logs_never_carry_evidence_questions_keys_bodies_or_urls(log_lines: list[str]) -> None:
    async with DecisionsServer() as server:
        await run(server, DecisionProtocol.OPENROUTER)
        server.then(status=401, body=b'{"error": {"message": "bad key sk-or-test-secret-123456"}}')
        await run(server, DecisionProtocol.OPENROUTER)
        server.then(body=b'{"model": "m", "answers": {"secret_answer_key": 1}}')
        await run(server, DecisionProtocol.SYSTEMONE)
        url = server.base_url
    refused, _ = await run(server, DecisionProtocol.OPENAI)  # the server is gone: connection refused
    assert isinstance(refused, DecisionFailed) and refused.reason == "network"
    text = "\n".join(log_lines)
    assert "decision completed protocol=openrouter" in text and "decision failed" in text
    for secret in (EVIDENCE, "secret-evidence-text", "secret-question-text", KEY, url, "127.0.0.1"):
        assert secret not in text, secret
    info = [line for line in log_lines if line.startswith("INFO")]
    assert any("input_tokens=40" in line and "cost=2e-05" in line for line in info)


async def test_the_module_call_uses_the_registered_service() -> None:
    none = await call_decisions("g", None, EVIDENCE, QUESTIONS)
    assert isinstance(none, DecisionUnavailable) and none.reason == "not-selected"
    async with DecisionsServer(probabilities={"is_spam": 0.3}) as server:
        option = make_option(DecisionProtocol.SYSTEMONE, server.base_url)
        unconfigured = await call_decisions("g", reference_for(option), EVIDENCE, QUESTIONS)
        assert isinstance(unconfigured, DecisionUnavailable) and unconfigured.reason == "not-configured"
        dispose = register_decisions(Decisions(App([option]).directory(), config=LOCAL))
        try:
            result = await call_decisions("g", reference_for(option), EVIDENCE, QUESTIONS)
        finally:
            dispose()
        after = await call_decisions("g", reference_for(option), EVIDENCE, QUESTIONS)
    assert isinstance(result, DecisionCompleted) and result.answers[0].probability == 0.3
    assert isinstance(after, DecisionUnavailable) and after.reason == "not-configured"
    assert len(server.seen) == 1
