"""Every provider capture over real HTTP on 127.0.0.1: split invariance and report invariants.

Each capture is served three ways (one write per line, 5-byte writes, random writes) through the
real adapter, the transport and all seven stages; the JSON reports must be identical and sane.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from rxcord.cli.replay import ReplayOptions, run_replay
from rxcord.cli.report import report_from_result, to_json_obj
from rxcord.testing.replay import Chunking
from tests.conftest import CAPTURES

ALL = sorted(p for p in CAPTURES.glob("*/*") if p.suffix in (".sse", ".json"))
STATUSES = {
    "completed",
    "function_call",
    "error",
}
FINISHES = {None, "stop", "length", "tool_calls", "content_filter", "error"}
TAG = re.compile(r"</?(?:\w+:)?think", re.IGNORECASE)


def _status_of(path: Path) -> int:
    match = re.match(r"http_(\d{3})_", path.name)
    return int(match.group(1)) if match else 200


def _tools_of(path: Path) -> tuple[str, ...]:
    return ("generate_image", "web_search") if "verbatim" in path.name else ()


async def _report(path: Path, chunking: Chunking) -> dict[str, Any]:
    outcome = await run_replay(
        ReplayOptions(
            capture=path,
            provider=path.parent.name,
            status=_status_of(path),
            chunking=chunking,
            sink="memory",
            tools=_tools_of(path),
        )
    )
    report = to_json_obj(report_from_result(outcome.result))
    report.pop("provider_connection_closed")
    return report


@pytest.mark.parametrize("path", ALL, ids=[f"{p.parent.name}/{p.name}" for p in ALL])
async def test_capture_replays_split_invariant_and_sane(path: Path) -> None:
    """Three different cuttings of the same bytes give the same report, and the report is well-formed."""
    reports = [await _report(path, c) for c in (Chunking(), Chunking(size=5), Chunking(seed=len(path.name)))]
    assert reports[0] == reports[1] == reports[2]
    report = reports[0]
    assert report["status"] in STATUSES
    assert report["finish_reason"] in FINISHES
    if report["status"] == "error":
        assert report["error"] is not None and report["finish_reason"] in ("error", "content_filter")
    if report["function_calls"]:
        assert report["finish_reason"] == "tool_calls" and report["status"] == "function_call"
    if _status_of(path) >= 400:
        assert report["status"] == "error" and report["text"] == ""
    for message in report["messages"]:
        content = message.get("content", "")
        assert len(content) <= 2000 and (content.strip() or message.get("embeds"))
        assert not TAG.search(content)
        assert message["allowed_mentions"]["parse"] == []
    assert not TAG.search(report["text"])


async def _one(provider: str, name: str) -> dict[str, Any]:
    return await _report(CAPTURES / provider / name, Chunking(seed=3))


async def test_openai_parallel_tool_calls() -> None:
    """Parallel tool calls arrive in index order with parsed arguments."""
    report = await _one("openai", "tool_calls_parallel.sse")
    assert [c["name"] for c in report["function_calls"]] == ["get_weather", "get_time"]
    assert all(isinstance(c["args"], dict) and c["args"] for c in report["function_calls"])


async def test_openrouter_usage_arrives_after_tool_call_finish() -> None:
    """OpenRouter's trailing usage is kept with the tool call (held until usage or stream end)."""
    report = await _one("openrouter", "tool_call_usage_after_finish.sse")
    assert report["function_calls"] and report["usage"] is not None
    assert report["usage"]["cost"] is not None


async def test_openrouter_reasoning_counted_once() -> None:
    """The same reasoning sent as `reasoning` and inside `reasoning_details` counts once."""
    report = await _one("openrouter", "reasoning_both_fields.sse")
    reasoning = report["reasoning"]
    assert reasoning
    half = len(reasoning) // 2
    assert reasoning[:half] != reasoning[half:]


async def test_anthropic_usage_sums_cache_into_input() -> None:
    """Anthropic input tokens include cache reads and writes; cache fields are subsets."""
    report = await _one("anthropic", "usage_cache.sse")
    usage = report["usage"]
    assert usage["cache_read_tokens"] is not None and usage["cache_write_tokens"] is not None
    assert usage["input_tokens"] >= usage["cache_read_tokens"] + usage["cache_write_tokens"]


async def test_google_text_before_call() -> None:
    """A Gemini part set with text and a function call delivers the text, then returns the call."""
    report = await _one("google", "text_and_call.sse")
    assert report["text"] and report["function_calls"]
    assert report["messages"] and report["messages"][0]["content"].strip()


async def test_google_safety_block_is_content_filter() -> None:
    """A SAFETY finish becomes a non-retryable content_blocked error."""
    report = await _one("google", "safety_block.sse")
    assert report["status"] == "error" and report["finish_reason"] == "content_filter"
    assert report["error"]["type"] == "content_blocked" and report["error"]["retryable"] is False


async def test_custom_verbatim_tool_call_recovered() -> None:
    """A tool call written as prose by a custom endpoint is recovered when tools are exposed."""
    report = await _one("custom", "verbatim_tool.sse")
    assert [c["name"] for c in report["function_calls"]] == ["generate_image"]
    assert "generate_image(" not in report["text"]


async def test_model_error_keeps_supported_models() -> None:
    """A 404 for an unknown model is a non-retryable model_error that keeps the provider's details."""
    report = await _one("google", "http_404_unknown_model.json")
    assert report["error"]["type"] == "model_error" and report["error"]["retryable"] is False
