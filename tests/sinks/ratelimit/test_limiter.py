"""The rate limiter, on a fake clock: pre-emptive waits, bucket discovery, 429s, global pauses, order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rxcord.sinks.ratelimit import (
    InvalidRequestLimitError,
    RateLimited,
    RateLimiter,
    RateLimitError,
    Route,
    webhook_major,
)

CREATE = "/channels/{channel_id}/messages"
EDIT = "/channels/{channel_id}/messages/{message_id}"


class FakeTime:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 6))
        self.now += seconds
        await asyncio.sleep(0)


def _limiter(time: FakeTime, **options: Any) -> RateLimiter:
    return RateLimiter(clock=time.clock, sleep=time.sleep, global_limit=None, **options)


def _headers(remaining: int, reset_after: float, bucket: str = "hash-a", limit: int = 5) -> dict[str, str]:
    return {
        "X-RateLimit-Limit": str(limit),
        "X-RateLimit-Remaining": str(remaining),
        "X-RateLimit-Reset-After": f"{reset_after:.3f}",
        "X-RateLimit-Bucket": bucket,
    }


async def _send(
    limiter: RateLimiter, route: Route, status: int = 200, headers: Any = None, body: Any = None
) -> Any:
    async with limiter.acquire(route) as slot:
        await slot.wait()
        return slot.update(status, headers or {}, body)


async def test_unknown_bucket_does_not_wait() -> None:
    """Before any response names a limit, requests go at once."""
    time = FakeTime()
    limiter = _limiter(time)
    for _ in range(3):
        await _send(limiter, Route("POST", CREATE, ("1",)))
    assert time.sleeps == []


@pytest.mark.parametrize(("sliding", "expected"), [(True, 1.0), (False, 5.0)])
async def test_pre_emptive_wait_when_remaining_is_zero(sliding: bool, expected: float) -> None:
    """Remaining 0 makes the next request wait one slot (sliding) or the whole Reset-After (fixed)."""
    time = FakeTime()
    limiter = _limiter(time, sliding=sliding)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_headers(0, 5.0))
    await _send(limiter, route, headers=_headers(0, 5.0))
    assert time.sleeps == [expected]


async def test_remaining_above_zero_does_not_wait() -> None:
    """A response with slots left lets the next request go immediately."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_headers(3, 2.0))
    await _send(limiter, route, headers=_headers(2, 3.0))
    await _send(limiter, route)
    assert time.sleeps == []


async def test_bucket_refills_after_reset() -> None:
    """Once Reset-After has passed, an exhausted bucket is full again."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_headers(0, 5.0))
    time.now += 6.0
    await _send(limiter, route)
    assert time.sleeps == []


async def test_major_parameters_are_separate_counters() -> None:
    """An exhausted bucket for channel 1 does not hold back channel 2 (same hash, other major)."""
    time = FakeTime()
    limiter = _limiter(time)
    await _send(limiter, Route("POST", CREATE, ("1",)), headers=_headers(0, 5.0))
    await _send(limiter, Route("POST", CREATE, ("2",)))
    assert time.sleeps == []


async def test_discovered_hash_rekeys_and_shares_the_bucket() -> None:
    """Two routes reporting the same hash (same major) share one counter after discovery."""
    time = FakeTime()
    limiter = _limiter(time)
    create = Route("POST", CREATE, ("1",))
    edit = Route("PATCH", EDIT, ("1",))
    assert limiter.bucket_hash(create) is None
    await _send(limiter, create, headers=_headers(4, 1.0, bucket="shared"))
    await _send(limiter, edit, headers=_headers(0, 5.0, bucket="shared"))
    assert limiter.bucket_hash(create) == limiter.bucket_hash(edit) == "shared"
    await _send(limiter, create)
    assert time.sleeps == [1.0]


async def test_hash_change_is_followed() -> None:
    """A route whose hash changes points at the newest hash."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_headers(4, 1.0, bucket="h1"))
    await _send(limiter, route, headers=_headers(4, 1.0, bucket="h2"))
    assert limiter.bucket_hash(route) == "h2"


async def test_route_429_blocks_only_its_bucket() -> None:
    """A user-scope 429 holds that bucket back for retry_after; other buckets go on."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    headers = {**_headers(0, 0.5), "Retry-After": "1", "X-RateLimit-Scope": "user"}
    verdict = await _send(limiter, route, 429, headers, {"message": "", "retry_after": 0.5, "global": False})
    assert verdict == RateLimited(retry_after=0.5, is_global=False, scope="user")
    await _send(limiter, Route("POST", CREATE, ("2",)))
    assert time.sleeps == []
    await _send(limiter, route)
    assert time.sleeps == [0.5]


async def test_global_429_pauses_every_route() -> None:
    """A global 429 makes every route wait retry_after."""
    time = FakeTime()
    limiter = _limiter(time)
    headers = {"Retry-After": "2", "X-RateLimit-Global": "true", "X-RateLimit-Scope": "global"}
    body = {"message": "You are being rate limited.", "retry_after": 1.5, "global": True}
    verdict = await _send(limiter, Route("POST", CREATE, ("1",)), 429, headers, body)
    assert verdict is not None and verdict.is_global
    assert limiter.global_paused_until == pytest.approx(101.5)
    await _send(limiter, Route("POST", "/channels/{channel_id}/typing", ("9",)))
    assert time.sleeps == [1.5]


@pytest.mark.parametrize(
    ("body_value", "header", "expected"),
    [(0.3, "1", 0.3), (64.57, "65", 64.57), (0.3, "5", 5.0), (2.5, None, 2.5), (3.0, "1", 3.0)],
)
async def test_retry_after_is_never_less_than_either_value(
    body_value: float, header: str | None, expected: float
) -> None:
    """The body's precise value is used unless the whole-second header clearly exceeds it."""
    time = FakeTime()
    limiter = _limiter(time, max_retry_after=100.0)
    headers = {"Retry-After": header} if header else {}
    verdict = await _send(
        limiter, Route("POST", CREATE, ("1",)), 429, headers, {"retry_after": body_value, "global": False}
    )
    assert verdict.retry_after == pytest.approx(expected)


async def test_429_without_retry_after_is_a_ban() -> None:
    """A 429 without a JSON retry_after (Cloudflare) raises instead of retrying."""
    time = FakeTime()
    limiter = _limiter(time)
    with pytest.raises(RateLimitError) as caught:
        await _send(limiter, Route("POST", CREATE, ("1",)), 429, {}, {"code": 0, "message": "blocked"})
    assert caught.value.retry_after is None


async def test_429_longer_than_the_maximum_raises() -> None:
    """A retry_after above max_retry_after raises RateLimitError carrying the delay."""
    time = FakeTime()
    limiter = _limiter(time, max_retry_after=10.0)
    with pytest.raises(RateLimitError) as caught:
        await _send(limiter, Route("POST", CREATE, ("1",)), 429, {}, {"retry_after": 30.0, "global": False})
    assert caught.value.retry_after == 30.0


async def test_invalid_request_budget() -> None:
    """401/403/429 count toward a rolling budget (shared 429s do not); over it, sending is refused."""
    time = FakeTime()
    limiter = _limiter(time, max_invalid=3, invalid_window=600.0)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, 403)
    await _send(limiter, route, 401)
    shared = {"X-RateLimit-Scope": "shared"}
    await _send(limiter, route, 429, shared, {"retry_after": 0.1, "global": False})
    assert limiter.invalid_requests == 2
    await _send(limiter, route, 403)
    with pytest.raises(InvalidRequestLimitError):
        await _send(limiter, route)
    time.now += 601.0
    await _send(limiter, route)
    assert limiter.invalid_requests == 0


async def test_one_bucket_keeps_fifo_order() -> None:
    """Concurrent senders on one bucket go one at a time, in the order they asked, across waits."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    order: list[int] = []

    async def sender(number: int) -> None:
        async with limiter.acquire(route) as slot:
            await slot.wait()
            order.append(number)
            await asyncio.sleep(0)  # another task runs while this one is "in flight"
            slot.update(200, _headers(0 if number % 2 else 1, 1.0), None)

    await asyncio.gather(*(sender(n) for n in range(8)))
    assert order == list(range(8))
    assert time.sleeps == [0.2, 0.2, 0.2]  # after each odd sender's "remaining 0"


async def test_global_meter_paces_bursts() -> None:
    """The proactive global meter allows a burst of ``global_burst`` and then one per interval."""
    time = FakeTime()
    limiter = RateLimiter(
        clock=time.clock, sleep=time.sleep, global_limit=2, global_period=1.0, global_burst=2
    )
    for channel in ("1", "2", "3", "4"):
        await _send(limiter, Route("POST", CREATE, (channel,)))
    assert time.sleeps == [0.5, 0.5]


async def test_global_meter_default_burst_is_three_quarters() -> None:
    """By default the meter's burst keeps a quarter of the limit as headroom for bunched arrivals."""
    time = FakeTime()
    limiter = RateLimiter(clock=time.clock, sleep=time.sleep, global_limit=8, global_period=1.0)
    for channel in range(8):
        await _send(limiter, Route("POST", CREATE, (str(channel),)))
    assert time.sleeps == [0.125, 0.125]  # 6 at once, then one per 1/8 s


def test_webhook_major_hides_the_token() -> None:
    """Webhook major parameters distinguish tokens without containing them."""
    major = webhook_major("123", "secret-token")
    assert major[0] == "123" and "secret-token" not in repr(major)
    assert major != webhook_major("123", "other-token")
    assert "secret-token" not in repr(Route("POST", "/webhooks/{webhook_id}/{webhook_token}", major))


# -- Retry-After bound, body-less 429s, bans, fixed windows (issue 15) -------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), -3.0, True, "soon", None])
async def test_unusable_retry_after_falls_back_to_the_header(value: Any) -> None:
    """NaN, infinite, negative or non-numeric retry_after: the header's delay is used, no ValueError."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    verdict = await _send(limiter, route, 429, {"Retry-After": "2"}, {"retry_after": value, "global": False})
    assert verdict == RateLimited(retry_after=2.0, is_global=False, scope=None)
    await _send(limiter, route)
    assert time.sleeps == [2.0]


@pytest.mark.parametrize("header", ["nan", "inf", "-1", "", "Wed, 21 Oct 2015 07:28:00 GMT"])
async def test_unusable_header_and_body_is_a_typed_ban(header: str) -> None:
    """No usable delay anywhere: a RateLimitError (never a ValueError) and every route closed."""
    time = FakeTime()
    limiter = _limiter(time, ban_pause=120.0)
    with pytest.raises(RateLimitError) as caught:
        await _send(limiter, Route("POST", CREATE, ("1",)), 429, {"Retry-After": header}, None)
    assert caught.value.is_global and caught.value.retry_after is None
    assert limiter.global_paused_until == pytest.approx(220.0)


async def test_absurd_retry_after_is_refused_and_keeps_the_bucket_closed() -> None:
    """A 1e300 s delay fails at once, and the next send on that bucket fails too instead of sending."""
    time = FakeTime()
    limiter = _limiter(time, max_retry_after=10.0)
    route = Route("POST", CREATE, ("1",))
    body = {"retry_after": 1e300, "global": False}
    with pytest.raises(RateLimitError):
        await _send(limiter, route, 429, {"X-RateLimit-Scope": "user"}, body)
    sent: list[int] = []
    with pytest.raises(RateLimitError) as caught:
        async with limiter.acquire(route) as slot:
            await slot.wait()
            sent.append(1)
    assert sent == [] and time.sleeps == []
    assert caught.value.retry_after is not None and caught.value.retry_after <= 3600.0
    await _send(limiter, Route("POST", CREATE, ("2",)))  # other buckets are open
    assert time.sleeps == []


async def test_bodyless_429_backs_off_globally() -> None:
    """A 429 without JSON (Cloudflare) pauses every route for its Retry-After: the next send waits."""
    time = FakeTime()
    limiter = _limiter(time)
    verdict = await _send(limiter, Route("POST", CREATE, ("1",)), 429, {"Retry-After": "3"}, None)
    assert verdict == RateLimited(retry_after=3.0, is_global=True, scope=None)
    await _send(limiter, Route("POST", "/channels/{channel_id}/typing", ("7",)))
    assert time.sleeps == [3.0]


async def test_ban_refuses_the_next_send_without_sending() -> None:
    """After a ban (429, no delay at all) later sends fail fast with RateLimitError; none leaves."""
    time = FakeTime()
    limiter = _limiter(time, ban_pause=300.0)
    with pytest.raises(RateLimitError):
        await _send(limiter, Route("POST", CREATE, ("1",)), 429, {}, {"code": 0, "message": "blocked"})
    left: list[int] = []
    for channel in ("1", "2"):
        with pytest.raises(RateLimitError):
            async with limiter.acquire(Route("POST", CREATE, (channel,))) as slot:
                await slot.wait()
                left.append(1)
    assert left == [] and time.sleeps == []
    time.now += 301.0
    await _send(limiter, Route("POST", CREATE, ("1",)))
    assert time.sleeps == []


def _window(remaining: int, reset_after: float, reset_epoch: float, limit: int = 5) -> dict[str, str]:
    return {**_headers(remaining, reset_after, limit=limit), "X-RateLimit-Reset": f"{reset_epoch:.3f}"}


async def test_fixed_window_is_detected_from_a_constant_reset() -> None:
    """Two answers of one window with the same X-RateLimit-Reset: a fixed window; remaining 0 waits it all."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_window(1, 5.0, 1_700_000_005.0))
    await _send(limiter, route, headers=_window(0, 5.0, 1_700_000_005.0))
    await _send(limiter, route)
    assert time.sleeps == [5.0]


async def test_sliding_window_is_kept_when_the_reset_moves_on() -> None:
    """Each request moves the reset on by window/limit: a sliding window, one slot's wait."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_window(1, 4.0, 1_700_000_004.0))
    await _send(limiter, route, headers=_window(0, 5.0, 1_700_000_005.0))
    await _send(limiter, route)
    assert time.sleeps == [1.0]


async def test_a_429_where_a_slot_was_expected_means_a_fixed_window() -> None:
    """The sliding guess earned a 429: the bucket is fixed from then on, so no second 429 per window."""
    time = FakeTime()
    limiter = _limiter(time)
    route = Route("POST", CREATE, ("1",))
    await _send(limiter, route, headers=_headers(0, 5.0))
    await _send(limiter, route, headers=_headers(0, 4.0))  # slept 1.0 (sliding guess)
    user = {**_headers(0, 3.0), "X-RateLimit-Scope": "user", "Retry-After": "3"}
    await _send(limiter, route, 429, user, {"retry_after": 3.0, "global": False})
    await _send(limiter, route, headers=_headers(0, 5.0))  # waits out the 429's block
    await _send(limiter, route)
    assert time.sleeps == [1.0, 0.8, 3.0, 5.0]
