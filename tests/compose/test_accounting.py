"""Request holds around one stream (issue 14, seed 003 "Request holds"): released on every exit path.

HTTP errors and aborts before sending report zero; an in-flight failure releases without
retaining an unreported estimate; a reported cost is reported before the release.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import SentMessage
from rxcord.core.stops import StopHandle
from rxcord.core.types import StopKind, StreamStatus
from rxcord.providers.hooks import ProviderRequest, register_request_hook
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import Chunking, ReplayServer

REQUEST = ChatRequest(model="m", messages=(Message.user("hi"),))


def _chunk(obj: dict[str, Any]) -> str:
    return "data: " + json.dumps(obj) + "\n\n"


def _answer(text: str, cost: float | None = None) -> bytes:
    usage: dict[str, Any] = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    if cost is not None:
        usage["cost"] = cost
    body = (
        _chunk({"choices": [{"index": 0, "delta": {"content": text}}]})
        + _chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        + _chunk({"choices": [], "usage": usage})
        + "data: [DONE]\n\n"
    )
    return body.encode()


class _Hold:
    def __init__(self, events: list[tuple[str, object]]) -> None:
        self.events = events

    def report_cost(self, cost: float) -> None:
        self.events.append(("cost", cost))

    def release(self, retain_estimate: bool) -> None:
        self.events.append(("release", retain_estimate))


@pytest.fixture
def events() -> Iterator[list[tuple[str, object]]]:
    seen: list[tuple[str, object]] = []

    def hook(request: ProviderRequest) -> _Hold:
        return _Hold(seen)

    dispose = register_request_hook(hook)
    try:
        yield seen
    finally:
        dispose()


def _job(server: ReplayServer, sink: Any = None) -> StreamJob:
    adapter = OpenAIAdapter()
    http = adapter.build_request(REQUEST, base_url=server.base_url, api_key="k", stream=True)
    return StreamJob(
        adapter=adapter,
        request=http,
        sink=sink or MemorySink(),
        context=StreamContext(channel_id="1"),
        transport=TransportConfig(allow_private_network=True),  # the replay server is on 127.0.0.1
    )


async def test_completed_stream_reports_its_cost_then_releases(events: list[tuple[str, object]]) -> None:
    """A reported cost is settled before the release, which keeps no estimate beyond it."""
    async with ReplayServer(body=_answer("Hi.", cost=0.002)) as server:
        result = await run_stream(_job(server))
    assert result.status is StreamStatus.COMPLETED
    assert events == [("cost", 0.002), ("release", True)]


async def test_http_error_reports_zero(events: list[tuple[str, object]]) -> None:
    """The provider refused the request: zero cost, released without the estimate."""
    refusal = json.dumps({"error": {"message": "bad request"}}).encode()
    async with ReplayServer(body=refusal, status=400, content_type="application/json") as server:
        result = await run_stream(_job(server))
    assert result.status is StreamStatus.ERROR
    assert events == [("cost", 0.0), ("release", False)]


async def test_kill_before_sending_reports_zero(events: list[tuple[str, object]]) -> None:
    """A kill that lands before the request was sent: zero cost, nothing sent to the provider."""
    handle = StopHandle("1")
    handle.stop(StopKind.KILL)
    async with ReplayServer(body=_answer("never")) as server:
        result = await run_stream(_job(server), stops=handle)
    assert result.status is StreamStatus.KILLED
    assert server.requests == []
    assert events == [("cost", 0.0), ("release", False)]


async def test_cancelled_in_flight_releases_without_estimate(events: list[tuple[str, object]]) -> None:
    """The awaiting task is cancelled mid-stream: released once, no estimate, no invented cost."""
    body = _answer("slow " * 40)
    async with ReplayServer(body=body, chunking=Chunking(size=8), pace=0.05) as server:
        task = asyncio.create_task(run_stream(_job(server)))
        while not server.requests:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert events == [("release", False)]


class _BrokenSink(MemorySink):
    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        raise DiscordError(status=400, code=50035, message="Invalid Form Body")


async def test_exception_out_of_the_stream_releases_the_hold(events: list[tuple[str, object]]) -> None:
    """Discord refusing a message raises out of run_stream; the hold is still released, once."""
    async with ReplayServer(body=_answer("Hello.")) as server:
        with pytest.raises(DiscordError):
            await run_stream(_job(server, _BrokenSink()))
    assert events == [("release", False)]
