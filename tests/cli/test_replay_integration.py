"""The whole chain over real HTTP on 127.0.0.1: replay server -> adapter -> seven stages -> emulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rxcord.cli.replay import ReplayOptions, run_replay
from rxcord.core.config import StreamConfig
from rxcord.core.types import DeliveryMode, StopKind, StreamStatus
from rxcord.testing.replay import Chunking
from tests.conftest import DEMO_DATA

LONG = DEMO_DATA / "openrouter_reasoning_code.sse"


def _fences_balanced(text: str) -> bool:
    return sum(1 for line in text.splitlines() if line.lstrip().startswith(("```", "~~~"))) % 2 == 0


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_replay_random_pieces_reaches_emulator(seed: int) -> None:
    """Random piece sizes still give the same visible text, reasoning, usage and Discord messages."""
    outcome = await run_replay(
        ReplayOptions(capture=LONG, provider="openrouter", chunking=Chunking(seed=seed), sink="emulator")
    )
    result = outcome.result
    assert result.status is StreamStatus.COMPLETED
    assert "moving_average" in result.visible_text and "<think>" not in result.visible_text
    assert result.reasoning is not None and result.reasoning.startswith("The user wants")
    assert result.serving_provider == "DeepInfra"
    assert result.usage is not None and result.usage.cost == pytest.approx(0.00231)
    contents = [m.payload["content"] for m in result.messages]
    assert len(contents) >= 2  # the code block is longer than one Discord message
    assert all(0 < len(c) <= 2000 for c in contents)
    assert all(_fences_balanced(c) for c in contents)
    assert all(m.payload["allowed_mentions"].get("parse") == [] for m in result.messages)


async def test_split_invariance_of_delivered_messages() -> None:
    """One piece per line, 7-byte pieces and random pieces deliver identical messages (aggregated)."""
    seen = []
    for chunking in (Chunking(), Chunking(size=7), Chunking(seed=11)):
        outcome = await run_replay(
            ReplayOptions(capture=LONG, provider="openrouter", chunking=chunking, sink="memory")
        )
        seen.append(([m.payload["content"] for m in outcome.result.messages], outcome.result.reasoning))
    assert seen[0] == seen[1] == seen[2]


async def test_live_delivery_concatenates_to_visible_text() -> None:
    """Live mode sends several segments whose text adds up to the answer (modulo split whitespace).

    The markdown table is re-rendered as a monospace block, so the comparison stops before it.
    """
    outcome = await run_replay(
        ReplayOptions(capture=LONG, provider="openrouter", delivery=DeliveryMode.LIVE, sink="memory")
    )
    result = outcome.result
    assert len(result.messages) > 2

    def squash(text: str) -> str:
        return "".join(text.split()).replace("```python", "").replace("```", "")

    joined = squash("".join(m.payload["content"] for m in result.messages))
    visible = squash(result.visible_text)
    cut = visible.index("|input|")
    assert joined[:cut] == visible[:cut]
    assert joined.endswith("Pingme,@mira,ifyouwantaversionfornumpyarrays!")


async def test_user_stop_flushes_and_closes_connection(tmp_path: Path) -> None:
    """A user stop after chunk 80 flushes what was routed and the provider sees the disconnect."""
    outcome = await run_replay(
        ReplayOptions(
            capture=LONG,
            provider="openrouter",
            stop=(StopKind.USER, 80),
            pace_ms=2.0,
            sink="memory",
            config=StreamConfig(delivery=DeliveryMode.AGGREGATED),
        )
    )
    result = outcome.result
    assert result.status is StreamStatus.STOPPED_BY_USER
    # The stop itself is not a processed chunk; the gate's chunk of what stage 03 still held
    # (the start window, delivered at the stop: held_at_stop) is.
    assert result.chunk_count in (80, 81)
    assert result.visible_text.startswith("Here is")
    assert outcome.connection_closed
    delivered = "".join(m.payload["content"] for m in result.messages)
    # The routed text is delivered; an open code fence is closed so Discord renders it.
    assert delivered.strip().removesuffix("```").strip() == result.visible_text.strip()
    assert _fences_balanced(delivered)


async def test_interrupt_discards_buffer() -> None:
    """A follow-up interrupt discards the pending buffer: nothing is delivered in aggregated mode."""
    outcome = await run_replay(
        ReplayOptions(
            capture=LONG, provider="openrouter", stop=(StopKind.INTERRUPT, 60), pace_ms=2.0, sink="memory"
        )
    )
    assert outcome.result.status is StreamStatus.FOLLOW_UP_INTERRUPT
    assert outcome.result.messages == ()
    assert outcome.result.visible_text
    assert outcome.connection_closed


async def test_kill_sends_nothing_more_and_closes_connection() -> None:
    """A kill aborts at once: status killed, no flush, connection closed."""
    outcome = await run_replay(
        ReplayOptions(
            capture=LONG, provider="openrouter", stop=(StopKind.KILL, 60), pace_ms=2.0, sink="memory"
        )
    )
    assert outcome.result.status is StreamStatus.KILLED
    assert outcome.result.messages == ()
    assert outcome.connection_closed


async def test_error_status_is_a_result(tmp_path: Path) -> None:
    """An HTTP 429 body becomes status error with a retryable rate_limit error, not an exception."""
    body = {"error": {"message": "Rate limit exceeded", "type": "rate_limit_error", "code": 429}}
    capture = tmp_path / "e.json"
    capture.write_text(json.dumps(body))
    outcome = await run_replay(ReplayOptions(capture=capture, provider="openai", status=429, sink="memory"))
    result = outcome.result
    assert result.status is StreamStatus.ERROR
    assert result.error is not None and result.error.type.value == "rate_limit" and result.error.retryable
    assert result.finish_reason is not None and result.finish_reason.value == "error"
