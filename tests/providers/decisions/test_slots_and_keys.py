"""Decision credentials per capability slot, fallback keys on key failures, and the model in the trace."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import attrs
import pytest
from loguru import logger

from rxcord.providers.decisions import (
    DecisionCapability,
    DecisionCompleted,
    DecisionCredentials,
    DecisionDirectory,
    DecisionFailed,
    DecisionModelOption,
    DecisionProtocol,
    Decisions,
    DecisionUnavailable,
    FailureCategory,
    reference_for,
)
from rxcord.providers.keys import KeyCooldown
from tests.providers.decisions.server import DecisionsServer
from tests.providers.decisions.test_call import EVIDENCE, LOCAL, QUESTIONS, make_option

FIRST = "sk-first-key-aaaaaaaaaaaa"
SECOND = "sk-second-key-bbbbbbbbbbb"
CHECKER = "sk-checker-key-ccccccccc"


@pytest.fixture
def info_lines() -> Iterator[list[str]]:
    lines: list[str] = []
    logger.enable("rxcord")
    sink = logger.add(lambda m: lines.append(str(m)), level="DEBUG", format="{level} {message} {extra}")
    try:
        yield lines
    finally:
        logger.remove(sink)
        logger.disable("rxcord")


@attrs.define
class SlotApp:
    """An application whose decision and checker slots have their own payers."""

    option: DecisionModelOption
    slots: dict[DecisionCapability, DecisionCredentials | None]
    asked: list[DecisionCapability] = attrs.field(factory=list)

    def directory(self) -> DecisionDirectory:
        def slot(scope: object, option: DecisionModelOption, capability: DecisionCapability) -> object:
            self.asked.append(capability)
            return self.slots.get(capability)

        def options(scope: object) -> Sequence[DecisionModelOption]:
            return [self.option]

        return DecisionDirectory(
            options=options,
            validate_model=lambda scope, option: True,
            slot_credentials=slot,  # type: ignore[arg-type]
            credentials=lambda scope, option: DecisionCredentials(api_key="sk-saved-catalog-key"),
        )


def _authorizations(server: DecisionsServer) -> list[str | None]:
    return [seen.headers.get("Authorization") for seen in server.seen]


async def _call(
    server: DecisionsServer,
    slots: dict[DecisionCapability, DecisionCredentials | None],
    *,
    capability: DecisionCapability = DecisionCapability.DECISION,
    cooldown: KeyCooldown | None = None,
) -> tuple[object, SlotApp]:
    app = SlotApp(make_option(DecisionProtocol.OPENROUTER, server.base_url), slots)
    service = Decisions(app.directory(), config=LOCAL, cooldown=cooldown)
    result = await service.call_decisions(
        "guild-1", reference_for(app.option), EVIDENCE, QUESTIONS, capability=capability
    )
    return result, app


@pytest.mark.parametrize("status", [401, 402, 403])
async def test_a_key_failure_moves_to_the_fallback_key(status: int) -> None:
    """401, 402, 403: the next key of the same slot is tried, and answers."""
    creds = DecisionCredentials(api_key=FIRST, fallback_keys=(SECOND,))
    async with DecisionsServer() as server:
        server.then(status=status, body=b'{"error": {"message": "key refused"}}')
        result, _ = await _call(server, {DecisionCapability.DECISION: creds})
    assert isinstance(result, DecisionCompleted)
    assert _authorizations(server) == [f"Bearer {FIRST}", f"Bearer {SECOND}"]


async def test_other_failures_do_not_switch_keys() -> None:
    """A 400 or a 500 is not about the key: one request, the failure returned."""
    creds = DecisionCredentials(api_key=FIRST, fallback_keys=(SECOND,))
    for status in (400, 500):
        async with DecisionsServer() as server:
            server.then(status=status)
            result, _ = await _call(server, {DecisionCapability.DECISION: creds})
        assert isinstance(result, DecisionFailed), status
        assert _authorizations(server) == [f"Bearer {FIRST}"]


async def test_every_key_failing_fails_once_with_the_last_failure() -> None:
    """When the last key fails too, the call fails (authentication), after one request per key."""
    creds = DecisionCredentials(api_key=FIRST, fallback_keys=(SECOND,))
    async with DecisionsServer() as server:
        server.then(status=401)
        server.then(status=401)
        result, _ = await _call(server, {DecisionCapability.DECISION: creds})
    assert isinstance(result, DecisionFailed) and result.category is FailureCategory.AUTHENTICATION
    assert len(server.seen) == 2


async def test_a_shared_cooldown_skips_a_failed_key_on_the_next_call() -> None:
    """With the bot's KeyCooldown, a key that failed is not spent again on the next call."""
    now = [0.0]
    cooldown = KeyCooldown(clock=lambda: now[0], seconds=60.0)
    creds = DecisionCredentials(api_key=FIRST, fallback_keys=(SECOND,))
    async with DecisionsServer() as server:
        server.then(status=401)
        await _call(server, {DecisionCapability.DECISION: creds}, cooldown=cooldown)
        await _call(server, {DecisionCapability.DECISION: creds}, cooldown=cooldown)
        now[0] = 61.0
        await _call(server, {DecisionCapability.DECISION: creds}, cooldown=cooldown)
    assert _authorizations(server) == [
        f"Bearer {FIRST}",
        f"Bearer {SECOND}",
        f"Bearer {SECOND}",
        f"Bearer {FIRST}",
    ]


async def test_each_capability_uses_its_own_slot() -> None:
    """A pinned checker pays with its own slot's key; the decision slot with its own."""
    slots: dict[DecisionCapability, DecisionCredentials | None] = {
        DecisionCapability.DECISION: DecisionCredentials(api_key=FIRST),
        DecisionCapability.NUDGE_CHECKER: DecisionCredentials(api_key=CHECKER),
    }
    async with DecisionsServer() as server:
        _, app = await _call(server, slots, capability=DecisionCapability.NUDGE_CHECKER)
        await _call(server, slots)
    assert _authorizations(server) == [f"Bearer {CHECKER}", f"Bearer {FIRST}"]
    assert app.asked == [DecisionCapability.NUDGE_CHECKER]


async def test_a_slot_without_credentials_never_uses_the_saved_key() -> None:
    """The slot resolver's None is no-credentials: no switch to the catalog's saved key, no request."""
    async with DecisionsServer() as server:
        result, _ = await _call(
            server,
            {DecisionCapability.DECISION: DecisionCredentials(api_key=FIRST)},
            capability=DecisionCapability.NUDGE_CHECKER,
        )
    assert isinstance(result, DecisionUnavailable) and result.reason == "no-credentials"
    assert server.seen == []


def test_fallback_keys_are_keys_and_hidden() -> None:
    """Fallback keys are non-empty strings, tried after the main key, never in a repr."""
    creds = DecisionCredentials(api_key=FIRST, fallback_keys=[SECOND, FIRST])  # type: ignore[arg-type]
    assert creds.keys == (FIRST, SECOND)
    assert SECOND not in repr(creds)
    with pytest.raises(TypeError):
        DecisionCredentials(api_key=FIRST, fallback_keys=SECOND)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        DecisionCredentials(api_key=FIRST, fallback_keys=("",))


async def test_the_info_trace_names_provider_and_model_never_the_key(info_lines: list[str]) -> None:
    """The INFO trace carries the model identity (provider, model id), not the key nor the URL."""
    creds = DecisionCredentials(api_key=FIRST, fallback_keys=(SECOND,))
    async with DecisionsServer() as server:
        server.then(status=401)
        result, _ = await _call(server, {DecisionCapability.DECISION: creds})
        url = server.base_url
    assert isinstance(result, DecisionCompleted)
    traces = [line for line in info_lines if line.startswith("INFO") and "decision completed" in line]
    assert len(traces) == 1
    assert "provider=openrouter" in traces[0] and "model=typesafe/jev-1.13" in traces[0]
    text = "\n".join(info_lines)
    assert "key 1 of 2" in text
    for secret in (FIRST, SECOND, url, EVIDENCE):
        assert secret not in text


async def test_an_unavailable_trace_names_the_reference_model(info_lines: list[str]) -> None:
    """Even an unavailable call's trace says which model it was for."""
    async with DecisionsServer() as server:
        result, _ = await _call(server, {}, capability=DecisionCapability.DECISION)
    assert isinstance(result, DecisionUnavailable)
    (trace,) = [line for line in info_lines if line.startswith("INFO") and "decision unavailable" in line]
    assert "provider=openrouter" in trace and "model=typesafe/jev-1.13" in trace
