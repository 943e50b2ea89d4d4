"""Usage reports carry the provider request identity; a turn emits one ``turn_usage`` sample (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loguru import logger

from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import FunctionCall, Usage
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import (
    TurnUsageSample,
    UsageReport,
    register_turn_usage_hook,
    turn_usage_sample,
    with_usage_reporter,
)
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

SSE = "text/event-stream"
CAPTURES = Path(__file__).parent.parent / "fixtures" / "captures"
LOCAL = TransportConfig(allow_private_network=True)  # the replay server is on 127.0.0.1
REQUEST = ChatRequest(model="m", messages=(Message.user("hi"),))


def _chunk(obj: dict[str, Any]) -> str:
    return "data: " + json.dumps(obj) + "\n\n"


def _answer(text: str, *, usage: bool = True, cost: float | None = None, rid: str = "chatcmpl-1") -> bytes:
    body = _chunk({"id": rid, "choices": [{"index": 0, "delta": {"content": text}}]})
    body += _chunk({"id": rid, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage:
        report: dict[str, Any] = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
        if cost is not None:
            report["cost"] = cost
        body += _chunk({"id": rid, "choices": [], "usage": report})
    return (body + "data: [DONE]\n\n").encode()


def _tool_call(rid: str) -> bytes:
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7, "cost": 0.001}
    return (
        _chunk({"id": rid, "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
        + _chunk({"id": rid, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        + _chunk({"id": rid, "choices": [], "usage": usage})
        + "data: [DONE]\n\n"
    ).encode()


async def _lookup(call: FunctionCall) -> str:
    return "sunny"


async def test_each_report_carries_provider_model_and_request_id() -> None:
    """Two responses of a tool-loop turn: each report names its own response id."""
    reports: list[UsageReport] = []
    responses = [
        (200, SSE, _tool_call("chatcmpl-A")),
        (200, SSE, _answer("Sunny.", cost=0.002, rid="chatcmpl-B")),
    ]
    async with ReplayServer(body=b"", responses=responses) as server:
        candidates = fallback_order(OpenAIAdapter(), ["gpt-x"], ["k"], base_url=server.base_url)
        with with_usage_reporter(reports.append):
            await run_turn(candidates, REQUEST, sink=MemorySink(), transport=LOCAL, tool_handler=_lookup)
    assert [(r.provider, r.model, r.request_id) for r in reports] == [
        ("openai", "gpt-x", "chatcmpl-A"),
        ("openai", "gpt-x", "chatcmpl-B"),
    ]
    assert [r.usage.cost for r in reports] == [0.001, 0.002]


async def test_request_id_of_anthropic_and_gemini_streams() -> None:
    """Anthropic's ``msg_...`` (message_start) and Gemini's ``responseId`` reach the report."""
    for adapter, capture, model in (
        (AnthropicAdapter(), CAPTURES / "anthropic" / "text.sse", "claude-x"),
        (GoogleAdapter(), CAPTURES / "google" / "usage_cache.sse", "gemini-2.5-flash"),
    ):
        reports: list[UsageReport] = []
        async with ReplayServer(body=capture.read_bytes()) as server:
            candidates = fallback_order(adapter, [model], ["k"], base_url=server.base_url)
            with with_usage_reporter(reports.append):
                await run_turn(candidates, REQUEST, sink=MemorySink(), transport=LOCAL)
        (report,) = reports
        assert report.provider == adapter.name and report.model == model
        assert report.request_id is not None and report.request_id in capture.read_text()


async def test_a_turn_emits_one_sample_to_the_log_and_the_hooks() -> None:
    """One sample per turn (tool loop included), summed, measured, without identifiers; disposers work."""
    samples: list[TurnUsageSample] = []
    other: list[TurnUsageSample] = []
    lines: list[dict[str, Any]] = []
    sink_id = logger.add(lambda m: lines.append(m.record["extra"]), filter="rxcord", level="INFO")
    logger.enable("rxcord")
    dispose = register_turn_usage_hook(samples.append)
    dispose_other = register_turn_usage_hook(other.append)
    try:
        responses = [(200, SSE, _tool_call("chatcmpl-A")), (200, SSE, _answer("Sunny.", cost=0.002))]
        async with ReplayServer(body=b"", responses=responses) as server:
            candidates = fallback_order(OpenAIAdapter(), ["gpt-x"], ["secret-key"], base_url=server.base_url)
            dispose_other()
            dispose_other()
            await run_turn(candidates, REQUEST, sink=MemorySink(), transport=LOCAL, tool_handler=_lookup)
    finally:
        dispose()
        logger.remove(sink_id)
        logger.disable("rxcord")
    (sample,) = samples
    assert other == []
    assert sample.provider == "openai" and sample.model == "gpt-x" and sample.measurement == "measured"
    assert (sample.input_tokens, sample.output_tokens, sample.requests) == (14, 6, 2)
    assert sample.cost is not None and abs(sample.cost - 0.003) < 1e-12
    assert sample.cache_read_tokens is None and sample.cache_write_tokens is None  # unknown: not reported
    logged = [extra for extra in lines if extra.get("metric") == "turn_usage"]
    assert len(logged) == 1 and logged[0]["input_tokens"] == 14
    assert "secret-key" not in json.dumps(logged[0], default=str)
    assert not {"channel_id", "guild_id", "user_id", "stream_id"} & set(logged[0])


def test_a_response_without_usage_makes_the_sample_estimated() -> None:
    """A response with no native usage is estimated from its text; the turn is then ``estimated``."""
    native = Usage(input_tokens=10, output_tokens=5, cache_read_tokens=2, cache_write_tokens=0, cost=0.5)
    sample = turn_usage_sample("openai", "m", [(native, "x"), (None, "y" * 40)])
    assert sample is not None and sample.measurement == "estimated"
    assert sample.output_tokens == 5 + 10 and sample.input_tokens == 10
    assert sample.cost is None and sample.cache_read_tokens is None  # not known for every request
    measured = turn_usage_sample("openai", "m", [(native, "x")])
    assert measured is not None and measured.measurement == "measured" and measured.cost == 0.5
    assert measured.cache_read_tokens == 2
    assert turn_usage_sample("openai", "m", []) is None
