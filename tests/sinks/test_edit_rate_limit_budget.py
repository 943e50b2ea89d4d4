"""The 429 budget in edit mode: a spent budget posts the same notice as aggregated delivery.

As in ``tests.sinks.ratelimit.test_limiter_budget``: a fake clock that moves only when the limiter sleeps, the
waits counted (the limiter's ``on_wait`` hook), never timed; the bot path through ``RestSink``.
"""

from __future__ import annotations

import json

import pytest

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import DeliveryMode
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.ratelimit import RateLimiter, RateLimitError
from rxcord.sinks.rest import RestSink
from rxcord.testing.replay import ReplayServer
from tests.faults.fake_discord import FakeDiscord, rate_limited
from tests.sinks.ratelimit.test_limiter import FakeTime
from tests.sinks.ratelimit.test_limiter_budget import CHANNEL, _creates, _limiter

_EDIT = StreamConfig(delivery=DeliveryMode.EDIT)


def _answer(*deltas: str) -> bytes:
    events = [
        "data: " + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]})
        for text in deltas
    ]
    events.append('data: {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}')
    events.append("data: [DONE]")
    return ("\n\n".join(events) + "\n\n").encode()


async def _reply(
    fake: FakeDiscord, limiter: RateLimiter, config: StreamConfig, *deltas: str, pace: float = 0.0
) -> None:
    async with ReplayServer(body=_answer(*deltas), pace=pace) as server:
        adapter = OpenRouterAdapter()
        http = adapter.build_request(
            ChatRequest(model="m", messages=(Message.user("hi"),)), base_url=server.base_url, api_key="k"
        )
        async with RestSink(fake.base_url, fake.token, limiter=limiter) as sink:
            job = StreamJob(
                adapter=adapter,
                request=http,
                sink=sink,
                context=StreamContext(channel_id=CHANNEL),
                config=config,
                transport=TransportConfig(allow_private_network=True),  # the replay server is on 127.0.0.1
            )
            await run_stream(job)


def _edits(fake: FakeDiscord) -> int:
    return sum(1 for method, _ in fake.requests if method == "PATCH")


async def test_a_spent_budget_on_the_first_create_posts_the_notice() -> None:
    """Aggregated's row in edit mode: seven tries of the message, the notice after one more 429."""
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(5.0) for _ in range(8)])
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits), _EDIT, "the answer")
        assert caught.value.budget_spent
        assert fake.records(CHANNEL) == ["[embed] Rate limited"]
        notice = fake.messages[0]["embeds"][0]
        assert "rate limiting this reply" in notice["description"]
        assert notice["footer"]["text"] == "HTTP 429"
        assert "message_reference" not in fake.messages[0]
        assert (_creates(fake), _edits(fake)) == (9, 0)
    assert waits == [5.0] * 8


async def test_a_spent_budget_on_an_edit_posts_the_notice_after_the_preview() -> None:
    """The edit route's budget spent: the notice goes through the create route at once, below the preview.

    The last delta ends on a held ``<``, so the final text differs from every preview: an edit.
    The first delta ends a sentence (the first message's boundary) past the 256 characters
    an OpenAI-compatible adapter holds at the start, and the lines come 50 ms apart, so the
    first message is created before the end.
    """
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(5.0) for _ in range(50)], on="edit")
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits), _EDIT, "the answer. " + "word " * 60, " <", pace=0.05)
        assert caught.value.budget_spent
        records = fake.records(CHANNEL)
        assert len(records) == 2 and records[0].startswith("the answer")
        assert records[1] == "[embed] Rate limited"
        assert (_creates(fake), _edits(fake)) == (2, 7)  # the preview and the notice; seven tries
    assert waits == [5.0] * 6


async def test_no_notice_in_edit_mode_when_user_errors_are_suppressed() -> None:
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(5.0) for _ in range(8)])
        config = StreamConfig(delivery=DeliveryMode.EDIT, suppress_user_errors=True)
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits), config, "the answer")
        assert caught.value.budget_spent
        assert fake.records(CHANNEL) == []
        assert _creates(fake) == 7
    assert waits == [5.0] * 6


async def test_a_ban_in_edit_mode_posts_no_notice() -> None:
    """A 429 without any delay closes every route: no notice is attempted, no request follows."""
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(rate_limited(None))
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits), _EDIT, "the answer")
        assert not caught.value.budget_spent
        assert fake.records(CHANNEL) == []
        assert (_creates(fake), _edits(fake)) == (1, 0)
    assert waits == []
