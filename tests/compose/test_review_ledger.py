"""The response-review ledger supplies a turn's accounting, each entry keeping its measurement source."""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import Usage
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.providers.usage import (
    ReviewLedger,
    TurnUsageSample,
    register_turn_usage_hook,
    turn_usage_sample,
)
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

NATIVE = Usage(input_tokens=100, output_tokens=20, cache_read_tokens=40, cache_write_tokens=0, cost=0.01)
REVIEW = Usage(input_tokens=30, output_tokens=5, cache_read_tokens=0, cache_write_tokens=0, cost=0.002)


def test_a_ledger_supplies_the_accounting_when_present() -> None:
    """The ledger's entries, not the stream segments, make the sample."""
    ledger = ReviewLedger()
    ledger.record(NATIVE)
    ledger.record(REVIEW)
    stream = [(Usage(input_tokens=1, output_tokens=1), "x")]
    sample = turn_usage_sample("openai", "m", stream, ledger=ledger)
    assert sample is not None
    assert (sample.input_tokens, sample.output_tokens, sample.requests) == (130, 25, 2)
    assert sample.cache_read_tokens == 40 and sample.cost is not None and abs(sample.cost - 0.012) < 1e-12
    assert sample.measurement == "measured" and sample.accounting == "ledger"


def test_an_estimated_entry_makes_the_turn_estimated() -> None:
    """One estimated entry labels the turn estimated, although the other reported native usage."""
    ledger = ReviewLedger()
    ledger.record(NATIVE, measurement="measured")
    ledger.record(Usage(input_tokens=0, output_tokens=12), measurement="estimated")
    sample = turn_usage_sample("openai", "m", [(NATIVE, "x")], ledger=ledger)
    assert sample is not None and sample.measurement == "estimated"
    assert [entry.measurement for entry in ledger.entries] == ["measured", "estimated"]
    assert sample.output_tokens == 32


def test_an_empty_or_absent_ledger_leaves_the_stream_segments() -> None:
    """Without entries the stream segments supply the sample, as before."""
    for ledger in (None, ReviewLedger()):
        sample = turn_usage_sample("openai", "m", [(NATIVE, "x")], ledger=ledger)
        assert sample is not None and sample.accounting == "stream" and sample.input_tokens == 100
    assert turn_usage_sample("openai", "m", [], ledger=ReviewLedger()) is None


def test_a_ledger_alone_makes_a_sample() -> None:
    """A turn accounted only by its ledger still emits its sample."""
    ledger = ReviewLedger()
    ledger.record(REVIEW)
    sample = turn_usage_sample("openai", "m", [], ledger=ledger)
    assert sample is not None and sample.requests == 1 and sample.accounting == "ledger"


def test_an_entry_out_of_bounds_or_of_unknown_source_is_refused() -> None:
    """A ledger entry is checked like a reported usage; its source must be measured or estimated."""
    ledger = ReviewLedger()
    with pytest.raises(ValueError, match="input_tokens"):
        ledger.record(Usage(input_tokens=-1, output_tokens=0))
    with pytest.raises(ValueError, match="measurement"):
        ledger.record(NATIVE, measurement="guessed")  # type: ignore[arg-type]
    assert ledger.entries == []


def _answer() -> bytes:
    def chunk(obj: dict[str, Any]) -> str:
        return "data: " + json.dumps(obj) + "\n\n"

    usage = {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    body = chunk({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hi."}}]})
    body += chunk({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    body += chunk({"id": "c", "choices": [], "usage": usage})
    return (body + "data: [DONE]\n\n").encode()


async def test_run_turn_takes_its_ledger() -> None:
    """``run_turn(review_ledger=)``: the turn's one sample is the ledger's, labelled by its entries."""
    samples: list[TurnUsageSample] = []
    dispose = register_turn_usage_hook(samples.append)
    ledger = ReviewLedger()
    ledger.record(REVIEW, measurement="estimated")
    try:
        async with ReplayServer(body=_answer()) as server:
            candidates = fallback_order(OpenAIAdapter(), ["gpt-x"], ["k"], base_url=server.base_url)
            await run_turn(
                candidates,
                ChatRequest(model="m", messages=(Message.user("hi"),)),
                sink=MemorySink(),
                transport=TransportConfig(allow_private_network=True),
                review_ledger=ledger,
            )
    finally:
        dispose()
    (sample,) = samples
    assert sample.accounting == "ledger" and sample.measurement == "estimated"
    assert (sample.input_tokens, sample.output_tokens) == (30, 5)
