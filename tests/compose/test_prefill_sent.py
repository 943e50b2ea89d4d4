"""A prefill is shown only when it was sent (issue 14): Anthropic with extended thinking leaves it out."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamContext
from rxcord.core.request import ChatRequest, Message, SamplerSettings
from rxcord.core.types import StreamStatus
from rxcord.providers.anthropic import AnthropicAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

CAPTURE = Path(__file__).parent.parent / "fixtures" / "captures" / "anthropic" / "text.sse"
PREFILL = "Answer: "


@pytest.mark.parametrize("effort", [None, "high"], ids=["no thinking", "extended thinking"])
async def test_prefill_shown_exactly_when_sent(effort: str | None) -> None:
    """Without thinking the prefill is sent and starts the reply; with thinking it is neither."""
    request = ChatRequest(
        model="claude",
        messages=(Message.user("capital of France?"),),
        prefill=PREFILL,
        sampler=SamplerSettings(reasoning_effort=effort),
    )
    sink = MemorySink()
    async with ReplayServer(body=CAPTURE.read_bytes()) as server:
        result = await stream_to_discord(
            AnthropicAdapter(),
            request,
            sink=sink,
            base_url=server.base_url,
            api_key="k",
            context=StreamContext(),
            transport=TransportConfig(allow_private_network=True),  # the replay server is on 127.0.0.1
        )
        (served,) = server.requests
    sent = served.body["messages"][-1]
    assert result.status is StreamStatus.COMPLETED
    prefill_sent = sent["role"] == "assistant"
    assert prefill_sent is (effort is None)
    assert result.accumulated_text.startswith(PREFILL.strip()) is prefill_sent
    assert sink.contents[0].startswith(PREFILL.strip()) is prefill_sent
