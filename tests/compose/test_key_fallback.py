"""Key fallback: a key that fails for itself (401, 402, 403, a key out of credit) gives way to the next key,
then the next model, and is skipped while its cooldown runs.

The provider is a local fake that answers by the request's key (and model) and counts the requests
each key made: the assertions count provider attempts, never time.
"""

from __future__ import annotations

import collections
import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import pytest
from aiohttp import web

from rxcord.compose.turn import DEFAULT_KEY_COOLDOWN, KeyCooldown, fallback_order, key_failure, run_turn
from rxcord.core.errors import DenialCopy, ProviderRequestDeniedError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ErrorType, ProviderError, StreamStatus
from rxcord.providers.hooks import register_denial_translator, with_usage_context
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from tests.providers.chat_completions.test_normalizer import load_json

LOCAL = TransportConfig(allow_private_network=True)
REQUEST = ChatRequest(model="m1", messages=(Message.user("hi"),))
Reply = tuple[int, str, bytes]


def _json(status: int, body: object) -> Reply:
    return status, "application/json", json.dumps(body).encode()


def _answer(text: str) -> Reply:
    chunks = [
        {"id": "c", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    return 200, "text/event-stream", body.encode()


UNAUTHORIZED = _json(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}})
NO_CREDIT = _json(402, {"error": {"message": "Insufficient credits", "code": 402}})
FORBIDDEN = _json(403, {"error": {"message": "Key is disabled", "code": 403}})
RATE_LIMITED = _json(429, {"error": {"message": "Rate limit reached", "code": 429}})
BAD_REQUEST = _json(400, {"error": {"message": "'messages' must not be empty"}})


@attrs.define
class KeyedProvider:
    """A Chat Completions server on 127.0.0.1 answering by (key, model); counts requests per key."""

    replies: Callable[[str, str], Reply]
    """``(key, model) -> (status, content type, body)``."""
    requests: list[tuple[str, str]] = attrs.field(factory=list)
    base_url: str = ""
    _runner: web.AppRunner | None = None

    def per_key(self) -> dict[str, int]:
        """How many requests each key made."""
        return dict(collections.Counter(key for key, _ in self.requests))

    async def __aenter__(self) -> KeyedProvider:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.Response:
        key = request.headers.get("Authorization", "").removeprefix("Bearer ")
        model = (await request.json()).get("model", "")
        self.requests.append((key, model))
        status, ctype, body = self.replies(key, model)
        return web.Response(status=status, body=body, headers={"Content-Type": ctype})


def _by_key(table: Mapping[str, Reply]) -> Callable[[str, str], Reply]:
    return lambda key, model: table[key]


KEYS = ("sk-key-one-0000", "sk-key-two-0000")


async def _run(provider: KeyedProvider, models: list[str], **kwargs: Any) -> Any:
    candidates = fallback_order(OpenAIAdapter(), models, list(KEYS), base_url=provider.base_url)
    sink = kwargs.pop("sink", MemorySink())
    return await run_turn(candidates, REQUEST, sink=sink, transport=LOCAL, **kwargs), sink


@pytest.mark.parametrize("failure", [UNAUTHORIZED, NO_CREDIT, FORBIDDEN], ids=["401", "402", "403"])
async def test_a_key_failure_moves_to_the_next_key(failure: Reply) -> None:
    """401, 402 and 403 on the first key: the second key answers; one request each, no notice."""
    async with KeyedProvider(_by_key({KEYS[0]: failure, KEYS[1]: _answer("Hello!")})) as provider:
        turn, sink = await _run(provider, ["m1"])
    assert turn.result.status is StreamStatus.COMPLETED and sink.contents == ["Hello!"]
    assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 1} and not turn.notice_sent


async def test_a_failed_key_is_skipped_for_the_next_model_too() -> None:
    """Key 1 is refused on m1; key 2 is rate limited on m1; on m2 key 1 is skipped, key 2 answers."""

    def replies(key: str, model: str) -> Reply:
        if key == KEYS[0]:
            return UNAUTHORIZED
        return RATE_LIMITED if model == "m1" else _answer("From m2.")

    async with KeyedProvider(replies) as provider:
        turn, sink = await _run(provider, ["m1", "m2"])
    assert provider.requests == [(KEYS[0], "m1"), (KEYS[1], "m1"), (KEYS[1], "m2")]
    assert sink.contents == ["From m2."]
    assert [a.label for a in turn.attempts] == ["openai:m1#key1", "openai:m1#key2", "openai:m2#key2"]


async def test_a_rate_limited_key_is_not_cooled() -> None:
    """A 429 moves on without cooling the key: on the next model the same key is asked again."""

    def replies(key: str, model: str) -> Reply:
        return RATE_LIMITED if model == "m1" else _answer("ok")

    async with KeyedProvider(replies) as provider:
        await _run(provider, ["m1", "m2"])
    assert provider.requests == [(KEYS[0], "m1"), (KEYS[1], "m1"), (KEYS[0], "m2")]


async def test_a_failed_key_is_skipped_while_its_cooldown_runs() -> None:
    """Across turns with one shared cooldown: the refused key is not asked again until it ends."""
    now = [1000.0]
    cooldown = KeyCooldown(clock=lambda: now[0])
    assert cooldown.seconds == DEFAULT_KEY_COOLDOWN
    async with KeyedProvider(_by_key({KEYS[0]: UNAUTHORIZED, KEYS[1]: _answer("Hi.")})) as provider:
        await _run(provider, ["m1"], cooldown=cooldown)
        assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 1}
        now[0] += DEFAULT_KEY_COOLDOWN - 1
        await _run(provider, ["m1"], cooldown=cooldown)
        assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 2}  # still cooling: skipped
        now[0] += 1
        await _run(provider, ["m1"], cooldown=cooldown)
        assert provider.per_key() == {KEYS[0]: 2, KEYS[1]: 3}  # the cooldown ended: asked again


async def test_every_key_cooling_tries_them_anyway_once() -> None:
    """When every key is cooling, the turn tries each once more rather than answering nothing."""
    cooldown = KeyCooldown(clock=lambda: 0.0)
    for key in KEYS:
        cooldown.cool(key)
    async with KeyedProvider(_by_key({KEYS[0]: UNAUTHORIZED, KEYS[1]: _answer("Back.")})) as provider:
        turn, sink = await _run(provider, ["m1", "m2"], cooldown=cooldown)
    # m2 with key 1 is skipped: key 1 failed again in this turn.
    assert provider.requests == [(KEYS[0], "m1"), (KEYS[1], "m1")]
    assert sink.contents == ["Back."] and turn.result.status is StreamStatus.COMPLETED


async def test_every_key_refused_ends_with_one_notice() -> None:
    """Both keys refused on both models: two requests in all (the keys cool), one notice."""
    async with KeyedProvider(_by_key({KEYS[0]: UNAUTHORIZED, KEYS[1]: FORBIDDEN})) as provider:
        turn, sink = await _run(provider, ["m1", "m2"])
    assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 1}
    assert turn.result.status is StreamStatus.ERROR and turn.notice_sent and len(sink.payloads) == 1


async def test_a_request_error_ends_the_turn() -> None:
    """A 400 is about the request, not the key: no other key is tried."""
    async with KeyedProvider(_by_key({KEYS[0]: BAD_REQUEST, KEYS[1]: _answer("never")})) as provider:
        await _run(provider, ["m1"])
    assert provider.per_key() == {KEYS[0]: 1}


async def test_a_moderation_403_is_not_a_key_failure() -> None:
    """OpenRouter's moderation 403 is a content block: every key would get it; the turn ends."""
    blocked = _json(403, load_json("openrouter", "http_403_moderation"))
    async with KeyedProvider(_by_key({KEYS[0]: blocked, KEYS[1]: _answer("never")})) as provider:
        turn, _ = await _run(provider, ["m1"])
    assert provider.per_key() == {KEYS[0]: 1}
    assert turn.result.error is not None and turn.result.error.type is ErrorType.CONTENT_BLOCKED


async def test_an_openrouter_limit_in_the_stream_moves_to_the_next_key() -> None:
    """A 200 whose first event is OpenRouter's limit error (code 402, ``limit_source``): next key."""
    event = {
        "error": {
            "code": 402,
            "message": "Key limit exceeded",
            "metadata": {"limit_source": "openrouter_key_limit"},
        }
    }
    limited = (200, "text/event-stream", f"data: {json.dumps(event)}\n\n".encode())
    async with KeyedProvider(_by_key({KEYS[0]: limited, KEYS[1]: _answer("ok")})) as provider:
        turn, _ = await _run(provider, ["m1"])
    assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 1}
    first = turn.attempts[0].error
    assert first is not None and first.code == "openrouter_key_limit" and key_failure(first)


async def test_a_denial_saying_the_key_is_out_of_credit_moves_to_the_next_key() -> None:
    """A translator turns the 402 into a denial that says ``key_exhausted``: the next key answers."""
    owner = object()

    def translate(failure: object, context: object | None) -> ProviderRequestDeniedError | None:
        if getattr(failure, "status", None) == 402:
            return ProviderRequestDeniedError(context, reason="member key out of credit", key_exhausted=True)
        return None

    dispose = register_denial_translator(translate)
    try:
        async with KeyedProvider(_by_key({KEYS[0]: NO_CREDIT, KEYS[1]: _answer("Paid.")})) as provider:
            with with_usage_context(owner):
                turn, sink = await _run(provider, ["m1"])
    finally:
        dispose()
    assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 1}
    assert sink.contents == ["Paid."] and not turn.notice_sent
    assert turn.attempts[0].denial is not None and turn.attempts[0].denial.key_exhausted


def _renderer(locale: str, fallback: bool) -> DenialCopy:
    if fallback:
        return DenialCopy(
            title_key="allowance_fallback", description="Your allowance is spent; the server answered."
        )
    return DenialCopy(title_key="allowance_spent", description="Your allowance is spent.")


async def test_a_deferred_denial_lets_the_fallback_answer_then_posts_the_fallback_notice() -> None:
    """``defer_notice``: nothing posted at once; the next candidate answers; then the fallback notice."""
    owner = object()

    def translate(failure: object, context: object | None) -> ProviderRequestDeniedError | None:
        if getattr(failure, "status", None) == 402:
            return ProviderRequestDeniedError(context, renderer=_renderer, defer_notice=True)
        return None

    dispose = register_denial_translator(translate)
    try:
        async with KeyedProvider(_by_key({KEYS[0]: NO_CREDIT, KEYS[1]: _answer("Answered.")})) as provider:
            with with_usage_context(owner):
                turn, sink = await _run(provider, ["m1"])
    finally:
        dispose()
    payloads = sink.payloads
    assert [p.get("content") for p in payloads] == ["Answered.", None]
    assert payloads[1]["embeds"][0]["title"] == "allowance_fallback" and turn.notice_sent


async def test_a_deferred_denial_when_every_fallback_failed_posts_the_denial_notice() -> None:
    """The fallback failed too (a 400): the one notice is the denial's, not the fallback's error."""

    def translate(failure: object, context: object | None) -> ProviderRequestDeniedError | None:
        if getattr(failure, "status", None) == 402:
            return ProviderRequestDeniedError(context, renderer=_renderer, defer_notice=True)
        return None

    dispose = register_denial_translator(translate)
    try:
        async with KeyedProvider(_by_key({KEYS[0]: NO_CREDIT, KEYS[1]: BAD_REQUEST})) as provider:
            turn, sink = await _run(provider, ["m1"])
    finally:
        dispose()
    assert provider.per_key() == {KEYS[0]: 1, KEYS[1]: 1}
    [payload] = sink.payloads
    assert payload["embeds"][0] == {
        "title": "allowance_spent",
        "color": payload["embeds"][0]["color"],
        "description": "Your allowance is spent.",
    }
    assert turn.result.status is StreamStatus.ERROR


def test_key_failure_rule() -> None:
    """The rule on its own: statuses, SSE codes, limit sources; never a content block or an owner's denial."""

    def error(**fields: Any) -> ProviderError:
        return ProviderError(
            type=fields.pop("type", ErrorType.API_ERROR), message="m", retryable=False, **fields
        )

    assert (
        key_failure(error(status=401)) and key_failure(error(status=402)) and key_failure(error(status=403))
    )
    assert key_failure(error(code=402))  # an SSE error event's numeric code
    assert not key_failure(error(status=400)) and not key_failure(error(status=404))
    assert not key_failure(error(status=403, type=ErrorType.CONTENT_BLOCKED))
    assert not key_failure(error(status=429, type=ErrorType.RATE_LIMIT))
    assert not key_failure(error(status=402), ProviderRequestDeniedError(None))
    assert key_failure(error(status=400), ProviderRequestDeniedError(None, key_exhausted=True))
    limited = {"error": {"code": 400, "metadata": {"limit_source": "openrouter_credits"}}}
    assert key_failure(error(status=400, original_error=limited))


def test_cooldown_never_holds_the_key() -> None:
    """The cooldown identifies keys by a digest: the key is in neither its repr nor its table."""
    cooldown = KeyCooldown(clock=lambda: 0.0)
    cooldown.cool(KEYS[0])
    assert cooldown.cooling(KEYS[0]) and not cooldown.cooling(KEYS[1]) and not cooldown.cooling(None)
    assert KEYS[0] not in repr(cooldown) and KEYS[0] not in repr(cooldown._until)
