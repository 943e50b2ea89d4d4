"""The 429 budget: seconds of waits per request, not a count of tries; a spent budget posts a notice.

All on a fake clock that moves only when the limiter sleeps: the waits are counted (the
limiter's ``on_wait`` hook and the fake sleep), never timed.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.ratelimit import DEFAULT_RETRY_BUDGET, MIN_RETRY_CHARGE, RateLimiter, RateLimitError, Route
from rxcord.sinks.rest import RestSink
from rxcord.testing.replay import ReplayServer
from tests.faults.fake_discord import FakeDiscord, rate_limited
from tests.sinks.ratelimit.test_limiter import CREATE, FakeTime

CHANNEL = "100000000000000001"
ROUTE = Route("POST", CREATE, (CHANNEL,))


def _limiter(time: FakeTime, waits: list[float], **options: Any) -> RateLimiter:
    return RateLimiter(
        clock=time.clock,
        sleep=time.sleep,
        global_limit=None,
        on_wait=lambda route, delay: waits.append(round(delay, 6)),
        **options,
    )


async def _storm(limiter: RateLimiter, delays: list[float]) -> int:
    """One request meeting a 429 per delay, then a 200; the 429s it met before it went through or failed."""
    met = 0
    async with limiter.acquire(ROUTE) as slot:
        for delay in [*delays, None]:
            await slot.wait()
            if delay is None:
                assert slot.update(200, {}, {"id": "1"}) is None
                return met
            met += 1
            assert slot.update(429, {"X-RateLimit-Scope": "user"}, {"retry_after": delay, "global": False})
    return met


async def test_25_short_429s_in_a_row_are_waited_out() -> None:
    """The old limit (10 tries) failed this request; half a second of waits is well inside the budget."""
    time, waits = FakeTime(), list[float]()
    limiter = _limiter(time, waits)
    assert await _storm(limiter, [0.02] * 25) == 25
    assert waits == [0.02] * 25 and time.sleeps == waits


async def test_a_long_storm_spends_the_budget() -> None:
    """5 s delays on a 30 s budget: six are waited (30 s), the seventh raises at once (not slept)."""
    time, waits = FakeTime(), list[float]()
    limiter = _limiter(time, waits)
    with pytest.raises(RateLimitError) as caught:
        await _storm(limiter, [5.0] * 50)
    assert waits == [5.0] * 6 and sum(waits) == DEFAULT_RETRY_BUDGET
    error = caught.value
    assert (error.budget_spent, error.retry_after, error.is_global) == (True, 5.0, False)
    assert "budget" in error.message and "7 tries" in error.message


async def test_zero_delay_429s_cannot_retry_forever() -> None:
    """Each 429 is charged at least MIN_RETRY_CHARGE: a storm of zero delays ends after budget / charge."""
    time, waits = FakeTime(), list[float]()
    limiter = _limiter(time, waits)
    with pytest.raises(RateLimitError) as caught:
        await _storm(limiter, [0.0] * 10_000)
    tries = round(DEFAULT_RETRY_BUDGET / MIN_RETRY_CHARGE) + 1
    assert caught.value.budget_spent and str(tries) in caught.value.message
    assert waits == []  # nothing to sleep: the bucket was never closed for longer than 0 s


async def test_the_first_429s_are_always_waited_out() -> None:
    """A budget smaller than one allowed delay still gives the request its min_retries tries."""
    time, waits = FakeTime(), list[float]()
    limiter = _limiter(time, waits, retry_budget=1.0, min_retries=3)
    with pytest.raises(RateLimitError):
        await _storm(limiter, [10.0] * 5)
    assert waits == [10.0] * 3


async def test_each_request_has_its_own_budget() -> None:
    """The budget belongs to one request (one acquire): the next one starts from zero."""
    time, waits = FakeTime(), list[float]()
    limiter = _limiter(time, waits, retry_budget=10.0)
    assert await _storm(limiter, [4.0, 4.0]) == 2
    assert await _storm(limiter, [4.0, 4.0]) == 2
    assert waits == [4.0] * 4


def _answer(text: str) -> bytes:
    events = [
        "data: " + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]}),
        'data: {"id": "x", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}',
        "data: [DONE]",
    ]
    return ("\n\n".join(events) + "\n\n").encode()


def _creates(fake: FakeDiscord) -> int:
    """Message creates the fake Discord was asked for (typing and other routes left out)."""
    return sum(1 for method, path in fake.requests if method == "POST" and path.endswith("/messages"))


async def _reply(fake: FakeDiscord, limiter: RateLimiter, config: StreamConfig | None = None) -> None:
    async with ReplayServer(body=_answer("the answer")) as server:
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
                config=config or StreamConfig(),
                transport=TransportConfig(allow_private_network=True),  # the replay server is on 127.0.0.1
            )
            await run_stream(job)


async def test_rest_sink_delivers_after_25_short_429s() -> None:
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(0.02) for _ in range(25)])
        await _reply(fake, _limiter(time, waits))
        assert fake.records(CHANNEL) == ["the answer"]
        assert _creates(fake) == 26
    assert waits == [0.02] * 25


async def test_a_spent_budget_ends_the_stream_with_a_notice() -> None:
    """Seven 5 s 429s spend the message's budget: RateLimitError; the notice goes through after one more."""
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(5.0) for _ in range(8)])
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits))
        assert caught.value.budget_spent
        assert fake.records(CHANNEL) == ["[embed] Rate limited"]
        notice = fake.messages[0]["embeds"][0]
        assert "rate limiting this reply" in notice["description"]
        assert notice["footer"]["text"] == "HTTP 429"
        assert _creates(fake) == 9  # seven tries of the message, two of the notice
    # Six for the message; the notice waits out the bucket's last 5 s, then its own 429.
    assert waits == [5.0] * 8


async def test_no_notice_when_user_errors_are_suppressed() -> None:
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(5.0) for _ in range(8)])
        with pytest.raises(RateLimitError):
            await _reply(fake, _limiter(time, waits), StreamConfig(suppress_user_errors=True))
        assert fake.records(CHANNEL) == []
        assert _creates(fake) == 7


async def test_a_ban_posts_no_notice() -> None:
    """A 429 without any delay closes every route: no notice is attempted, no request follows."""
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(rate_limited(None))
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits))
        assert not caught.value.budget_spent
        assert fake.records(CHANNEL) == []
        assert _creates(fake) == 1


async def test_a_notice_that_cannot_be_sent_leaves_the_stream_error() -> None:
    """A storm that outlasts the notice's own budget: the stream's RateLimitError, nothing else."""
    time, waits = FakeTime(), list[float]()
    async with FakeDiscord() as fake:
        fake.script(*[rate_limited(5.0) for _ in range(100)])
        with pytest.raises(RateLimitError) as caught:
            await _reply(fake, _limiter(time, waits))
        assert caught.value.budget_spent and "budget" in caught.value.message
        assert fake.records(CHANNEL) == []
        assert _creates(fake) == 7 + 7
    # Six for the message; the notice waits out the bucket's last 5 s, then six of its own.
    assert waits == [5.0] * 13
