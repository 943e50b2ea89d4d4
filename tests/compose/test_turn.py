"""The turn runner: key/model fallback before delivery, one notice per turn, the tool loop, usage."""

from __future__ import annotations

import functools
import json
from typing import Any

from rxcord.compose.turn import Candidate, fallback_order, run_turn
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import DeliveryMode, FunctionCall, StreamStatus, Usage
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import with_usage_callback
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

SSE = "text/event-stream"
JSON = "application/json"
REQUEST = ChatRequest(model="primary", messages=(Message.user("hi"),))
LOCAL = TransportConfig(allow_private_network=True)
"""The test servers listen on 127.0.0.1, which a base-URL override is otherwise refused."""
_turn = functools.partial(run_turn, transport=LOCAL)


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> str:
    obj: dict[str, Any] = {"id": "c", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    if usage is not None:
        obj = {"id": "c", "choices": [], "usage": usage}
    return "data: " + json.dumps(obj) + "\n\n"


def _answer(text: str, prompt_tokens: int = 10) -> bytes:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 3, "total_tokens": prompt_tokens + 3}
    body = _chunk({"content": text}) + _chunk({}, "stop") + _chunk({}, usage=usage) + "data: [DONE]\n\n"
    return body.encode()


def _tool_call() -> bytes:
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
    }
    usage = {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    return (
        _chunk({"tool_calls": [call]})
        + _chunk({}, "tool_calls")
        + _chunk({}, usage=usage)
        + "data: [DONE]\n\n"
    ).encode()


RATE_LIMITED = (429, JSON, json.dumps({"error": {"message": "Rate limit reached"}}).encode())
BAD_REQUEST = (
    400,
    JSON,
    json.dumps(
        {"error": {"message": "'messages' must not be empty", "type": "invalid_request_error"}}
    ).encode(),
)


def _candidates(server: ReplayServer, n: int) -> list[Candidate]:
    return fallback_order(
        OpenAIAdapter(), ["primary"], [f"key-{i}" for i in range(n)], base_url=server.base_url
    )


async def test_retryable_error_before_delivery_tries_next_key() -> None:
    """A 429 on the first key falls back to the second; the user sees one answer, no notice."""
    sink = MemorySink()
    async with ReplayServer(body=b"", responses=[RATE_LIMITED, (200, SSE, _answer("Hello!"))]) as server:
        turn = await _turn(_candidates(server, 2), REQUEST, sink=sink)
    assert turn.result.status is StreamStatus.COMPLETED
    assert [a.status for a in turn.attempts] == [StreamStatus.ERROR, StreamStatus.COMPLETED]
    assert sink.contents == ["Hello!"] and not turn.notice_sent
    assert server.requests[1].headers["Authorization"] == "Bearer key-1"


def test_fallback_order_is_keys_then_models() -> None:
    """Every key of the first model comes before the next fallback model."""
    order = fallback_order(OpenAIAdapter(), ["m1", "m2"], ["k1", "k2"])
    assert [(c.model, c.api_key) for c in order] == [("m1", "k1"), ("m1", "k2"), ("m2", "k1"), ("m2", "k2")]
    assert "k1" not in repr(order[0])


async def test_exhausted_fallbacks_post_one_notice() -> None:
    """When every candidate fails, the user sees exactly one error notice for the turn."""
    sink = MemorySink()
    async with ReplayServer(body=b"", responses=[RATE_LIMITED]) as server:
        turn = await _turn(_candidates(server, 3), REQUEST, sink=sink)
    assert len(turn.attempts) == 3 and turn.result.status is StreamStatus.ERROR
    payloads = sink.payloads
    assert len(payloads) == 1 and payloads[0]["embeds"] and turn.notice_sent


async def test_non_retryable_error_does_not_fall_back() -> None:
    """A 400 about the request is not retryable and not about the key: no fallback, one notice."""
    sink = MemorySink()
    async with ReplayServer(body=b"", responses=[BAD_REQUEST, (200, SSE, _answer("never"))]) as server:
        turn = await _turn(_candidates(server, 2), REQUEST, sink=sink)
    assert len(turn.attempts) == 1 and len(server.requests) == 1
    assert len(sink.payloads) == 1 and "never" not in json.dumps(sink.payloads)


async def test_no_restart_once_delivery_began() -> None:
    """A retryable error after text reached Discord is final: never restart, never duplicate."""
    partial = (
        _chunk({"content": "First paragraph.\n\n"})
        + 'data: {"error": {"message": "server_error", "code": 500}}\n\n'
    )
    sink = MemorySink()
    config = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.01)
    async with ReplayServer(
        body=b"", responses=[(200, SSE, partial.encode()), (200, SSE, _answer("again"))], pace=0.05
    ) as server:
        turn = await _turn(_candidates(server, 2), REQUEST, sink=sink, config=config)
    assert len(turn.attempts) == 1
    assert "again" not in json.dumps(sink.payloads)
    assert sink.contents[0].startswith("First paragraph.")


async def test_tool_loop_runs_handler_and_streams_again() -> None:
    """A function call runs the handler; the call and its result go back; the final answer is delivered."""
    calls: list[FunctionCall] = []

    async def handler(call: FunctionCall) -> dict[str, str]:
        calls.append(call)
        return {"answer": "42"}

    sink = MemorySink()
    async with ReplayServer(
        body=b"", responses=[(200, SSE, _tool_call()), (200, SSE, _answer("It is 42."))]
    ) as server:
        turn = await _turn(_candidates(server, 1), REQUEST, sink=sink, tool_handler=handler)
    assert [c.name for c in calls] == ["lookup"] and calls[0].args == {"q": "x"}
    assert turn.result.status is StreamStatus.COMPLETED and sink.contents == ["It is 42."]
    second = server.requests[1].body["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    tool = next(m for m in second if m["role"] == "tool")
    assert assistant["tool_calls"][0]["id"] == "call_1"
    assert tool["tool_call_id"] == "call_1" and json.loads(tool["content"]) == {"answer": "42"}


async def test_tool_loop_is_bounded() -> None:
    """A model that keeps calling tools stops after max_rounds extra streams."""

    async def handler(call: FunctionCall) -> str:
        return "again"

    async with ReplayServer(body=b"", responses=[(200, SSE, _tool_call())]) as server:
        turn = await _turn(
            _candidates(server, 1), REQUEST, sink=MemorySink(), tool_handler=handler, max_rounds=2
        )
    assert len(turn.results) == 3 and turn.result.status is StreamStatus.FUNCTION_CALL


async def test_usage_reported_once_per_response_and_summed() -> None:
    """The request-bound callback gets each response's usage once; the turn sums them."""
    seen: list[Usage] = []

    async def handler(call: FunctionCall) -> str:
        return "ok"

    async with ReplayServer(
        body=b"", responses=[(200, SSE, _tool_call()), (200, SSE, _answer("done", 20))]
    ) as server:
        with with_usage_callback(seen.append):
            turn = await _turn(
                _candidates(server, 1),
                REQUEST,
                sink=MemorySink(),
                tool_handler=handler,
                context=StreamContext(),
            )
    assert [u.input_tokens for u in seen] == [7, 20]
    assert turn.usage is not None and turn.usage.input_tokens == 27 and turn.usage.output_tokens == 5


async def test_denial_translated_is_not_retried_and_renders_its_notice() -> None:
    """A registered translator turns a 402 into a denial: no fallback, and the notice is the denial's copy."""
    from rxcord.core.errors import DenialCopy, ProviderRequestDeniedError
    from rxcord.providers.hooks import register_denial_translator, with_usage_context

    owner = object()

    def translate(failure: object, context: object | None) -> ProviderRequestDeniedError | None:
        status = getattr(failure, "status", None)
        if status == 402:
            return ProviderRequestDeniedError(
                context,
                renderer=lambda locale, fallback: DenialCopy(
                    title_key="allowance_spent", description="Your allowance is spent."
                ),
            )
        return None

    spent = (402, JSON, json.dumps({"error": {"message": "Insufficient credits"}}).encode())
    sink = MemorySink()
    dispose = register_denial_translator(translate)
    try:
        async with ReplayServer(body=b"", responses=[spent, (200, SSE, _answer("no"))]) as server:
            with with_usage_context(owner):
                turn = await _turn(_candidates(server, 2), REQUEST, sink=sink)
    finally:
        dispose()
    assert len(turn.attempts) == 1
    [payload] = sink.payloads
    assert payload["embeds"][0]["description"] == "Your allowance is spent."


async def test_request_hook_hold_settled_and_denial_before_send() -> None:
    """A request hook holds before the HTTP call and settles after; a refusal sends nothing."""
    from rxcord.core.errors import ProviderRequestDeniedError
    from rxcord.providers.hooks import ProviderRequest, register_request_hook

    events: list[tuple[str, object]] = []

    class _Hold:
        def report_cost(self, cost: float) -> None:
            events.append(("cost", cost))

        def release(self, retain_estimate: bool) -> None:
            events.append(("release", retain_estimate))

    def hook(request: ProviderRequest) -> _Hold:
        events.append(("begin", request.path))
        assert request.api_key == "key-0"
        return _Hold()

    dispose = register_request_hook(hook)
    try:
        async with ReplayServer(body=_answer("fine")) as server:
            await _turn(_candidates(server, 1), REQUEST, sink=MemorySink())
    finally:
        dispose()
    assert events == [("begin", "/chat/completions"), ("release", True)]

    def refuse(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(None, reason="spend guard")

    dispose = register_request_hook(refuse)
    try:
        async with ReplayServer(body=_answer("never")) as server:
            turn = await _turn(_candidates(server, 2), REQUEST, sink=MemorySink())
    finally:
        dispose()
    assert server.requests == [] and turn.result.error is not None
    assert turn.result.error.code == "request_denied" and len(turn.attempts) == 1
