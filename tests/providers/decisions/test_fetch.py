"""fetch_with_provider_request: no hook, no buffering; a hook gets a hold that is settled exactly once."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping

import attrs
import pytest

from rxcord.core.errors import ProviderRequestDeniedError, ResponseTooLargeError
from rxcord.providers.decisions.fetch import (
    BufferedResponse,
    OneShotRequest,
    OneShotResponse,
    fetch_with_provider_request,
)
from rxcord.providers.hooks import ProviderRequest, register_request_hook

REQUEST = OneShotRequest(
    url="https://openrouter.ai/api/alpha/decisions?x=1",
    body=b'{"model":"m"}',
    parsed={"model": "m"},
    headers={"Authorization": "Bearer sk-or-abc-1234"},
    api_key="sk-or-abc-1234",
)


@attrs.define
class FakeResponse:
    status: int = 200
    body: bytes = b'{"usage": {"input_tokens": 1, "output_tokens": 1, "cost": 0.25}}'
    headers: Mapping[str, str] = attrs.field(factory=dict)
    reads: int = 0
    fail_read: bool = False

    async def read(self, limit: int) -> bytes:
        self.reads += 1
        if self.fail_read:
            raise ConnectionResetError("reset")
        if len(self.body) > limit:
            raise ResponseTooLargeError("too large")
        return self.body


@attrs.define
class FakeSend:
    response: FakeResponse
    sent: list[OneShotRequest] = attrs.field(factory=list)

    @contextlib.asynccontextmanager
    async def __call__(self, request: OneShotRequest) -> AsyncIterator[OneShotResponse]:
        self.sent.append(request)
        yield self.response


@attrs.define
class Hold:
    costs: list[float] = attrs.field(factory=list)
    released: list[bool] = attrs.field(factory=list)

    def report_cost(self, cost: float) -> None:
        self.costs.append(cost)

    def release(self, retain_estimate: bool) -> None:
        self.released.append(retain_estimate)


@contextlib.contextmanager
def hook(hold: Hold | None, seen: list[ProviderRequest]) -> Iterator[None]:
    def begin(request: ProviderRequest) -> Hold | None:
        seen.append(request)
        return hold

    dispose = register_request_hook(begin)
    try:
        yield
    finally:
        dispose()


async def test_without_a_hook_the_live_response_is_handed_back_unread() -> None:
    send = FakeSend(FakeResponse())
    async with fetch_with_provider_request("openrouter", REQUEST, send, max_bytes=1024) as response:
        assert response is send.response and send.response.reads == 0
    assert send.sent == [REQUEST]


async def test_with_a_hook_the_body_is_read_once_the_cost_reported_and_an_equivalent_response_returned() -> (
    None
):
    hold, seen = Hold(), []
    send = FakeSend(FakeResponse(headers={"x-request-id": "r1"}))
    with hook(hold, seen):
        async with fetch_with_provider_request("openrouter", REQUEST, send, max_bytes=1024) as response:
            assert isinstance(response, BufferedResponse)
            assert (response.status, response.headers["x-request-id"]) == (200, "r1")
            assert await response.read(1024) == send.response.body
    assert send.response.reads == 1
    assert (seen[0].path, seen[0].body, seen[0].api_key) == (
        "/api/alpha/decisions",
        {"model": "m"},
        REQUEST.api_key,
    )
    assert (hold.costs, hold.released) == ([0.25], [True])


@pytest.mark.parametrize(
    ("response", "costs", "released"),
    [
        (FakeResponse(status=402, body=b'{"error": {"code": 402}}'), [0.0], [False]),
        (FakeResponse(body=b'{"usage": {"cost": NaN}}'), [], [True]),
        (FakeResponse(body=b'{"usage": {"cost": -1}}'), [], [True]),
        (FakeResponse(body=b"x" * 2048), [], [True]),
    ],
)
async def test_hold_settlement(response: FakeResponse, costs: list[float], released: list[bool]) -> None:
    hold = Hold()
    with hook(hold, []):
        async with fetch_with_provider_request(
            "openrouter", REQUEST, FakeSend(response), max_bytes=1024
        ) as got:
            if len(response.body) > 1024:
                with pytest.raises(ResponseTooLargeError):
                    await got.read(1024)
    assert (hold.costs, hold.released) == (costs, released)


async def test_a_failure_in_flight_releases_without_the_estimate() -> None:
    hold = Hold()
    with hook(hold, []), pytest.raises(ConnectionResetError):
        async with fetch_with_provider_request(
            "openrouter", REQUEST, FakeSend(FakeResponse(fail_read=True)), max_bytes=1024
        ):
            pass
    assert (hold.costs, hold.released) == ([], [False])


async def test_a_denial_sends_nothing() -> None:
    def deny(request: ProviderRequest) -> None:
        raise ProviderRequestDeniedError(context=None, reason="no allowance")

    send = FakeSend(FakeResponse())
    dispose = register_request_hook(deny)
    try:
        with pytest.raises(ProviderRequestDeniedError):
            async with fetch_with_provider_request("openrouter", REQUEST, send, max_bytes=1024):
                pass
    finally:
        dispose()
    assert send.sent == []


async def test_a_hook_without_a_hold_leaves_the_response_live() -> None:
    send = FakeSend(FakeResponse())
    with hook(None, []):
        async with fetch_with_provider_request("openrouter", REQUEST, send, max_bytes=1024) as response:
            assert response is send.response
