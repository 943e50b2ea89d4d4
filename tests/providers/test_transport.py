"""Stage 02 transport over real HTTP on 127.0.0.1: commitment, degradation, timeouts, caps, SSRF."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import attrs
import pytest
from aiohttp import web
from loguru import logger

from rxcord.core.request import ChatRequest, ImagePart, Message, SamplerSettings
from rxcord.core.types import ErrorType, RawStreamChunk
from rxcord.operators.aio import drain
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig, TransportStats, stream_source
from rxcord.testing.replay import Chunking, ReplayServer

SSE = "text/event-stream"
JSON = "application/json"


def _delta(text: str) -> str:
    return "data: " + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]}) + "\n\n"


def _stream(*texts: str) -> bytes:
    return ("".join(_delta(t) for t in texts) + "data: [DONE]\n\n").encode()


def _error_event(message: str) -> bytes:
    return ("data: " + json.dumps({"error": {"message": message, "code": 400}}) + "\n\n").encode()


CHAT = ChatRequest(
    model="m",
    messages=(Message.user("hi"),),
    sampler=SamplerSettings(temperature=0.5, frequency_penalty=0.2, seed=3),
)


async def _run(
    server: ReplayServer,
    *,
    adapter: Any = None,
    chat: ChatRequest = CHAT,
    config: TransportConfig | None = None,
) -> tuple[list[RawStreamChunk], TransportStats]:
    adapter = adapter or OpenAIAdapter()
    stats = TransportStats()
    http = adapter.build_request(chat, base_url=server.base_url, api_key="sk-test-secret-123")
    chunks = await drain(
        stream_source(
            adapter,
            http,
            config=config or TransportConfig(allow_private_network=True, backoff=0.01),
            stats=stats,
        )
    )
    return chunks, stats


def _texts(chunks: Sequence[RawStreamChunk]) -> list[str]:
    out = []
    for c in chunks:
        if isinstance(c.data, dict):
            for choice in c.data.get("choices", []):
                out.append(choice.get("delta", {}).get("content", ""))
    return out


def _errors(chunks: Sequence[RawStreamChunk]) -> list[Any]:
    return [c.error for c in chunks if c.error is not None]


async def test_http_400_naming_a_parameter_is_retried_without_it() -> None:
    """A 400 naming frequency_penalty retries once without it; the answer then streams normally."""
    rejection = json.dumps({"error": {"message": "Unsupported parameter: 'frequency_penalty'"}}).encode()
    server = ReplayServer(body=b"", responses=[(400, JSON, rejection), (200, SSE, _stream("Hel", "lo"))])
    async with server:
        chunks, stats = await _run(server)
    assert _texts(chunks) == ["Hel", "lo"] and _errors(chunks) == []
    assert stats.attempts == 2
    first, second = (json.loads(b) for b in stats.bodies_sent)
    assert "frequency_penalty" in first and "frequency_penalty" not in second
    assert second["model"] == "m" and second["messages"] == first["messages"]


async def test_sse_error_after_200_is_degraded_before_commitment() -> None:
    """An error event after a 200, before any output, is a rejection: the retry is transparent."""
    server = ReplayServer(
        body=b"",
        responses=[(200, SSE, _error_event("Unsupported parameter: 'seed'")), (200, SSE, _stream("ok"))],
    )
    async with server:
        chunks, stats = await _run(server)
    assert _texts(chunks) == ["ok"] and _errors(chunks) == []
    assert "seed" not in json.loads(stats.bodies_sent[1])


async def test_error_after_commitment_passes_through_without_retry() -> None:
    """Once text was emitted, a later error is delivered as an error chunk; nothing is resent."""
    body = _stream("Hello").replace(b"data: [DONE]\n\n", b"") + _error_event("Unsupported parameter: 'seed'")
    server = ReplayServer(body=b"", responses=[(200, SSE, body), (200, SSE, _stream("DUPLICATE"))])
    async with server:
        chunks, stats = await _run(server)
    assert _texts(chunks)[0] == "Hello" and "DUPLICATE" not in _texts(chunks)
    assert stats.attempts == 1 and len(server.requests) == 1


async def test_image_rejection_replaces_image_with_notice() -> None:
    """A rejected image is removed and a text notice tells the model not to guess its contents."""
    chat = ChatRequest(
        model="m", messages=(Message.user("what is this", ImagePart(url="http://127.0.0.1/x.png")),)
    )
    rejection = json.dumps({"error": {"message": "This model does not support image input"}}).encode()
    server = ReplayServer(body=b"", responses=[(400, JSON, rejection), (200, SSE, _stream("ok"))])
    async with server:
        chunks, stats = await _run(server, chat=chat)
    assert _texts(chunks) == ["ok"]
    retry = json.dumps(json.loads(stats.bodies_sent[1]))
    assert "image_url" not in retry and "guess" in retry.lower()


async def test_mandatory_keys_are_never_removed_and_cap_is_reached() -> None:
    """A rejection naming a mandatory key (model) is not degraded; the error passes through."""
    rejection = json.dumps({"error": {"message": "Invalid value for 'model' and 'messages'"}}).encode()
    server = ReplayServer(body=b"", responses=[(400, JSON, rejection)])
    async with server:
        chunks, stats = await _run(server)
    assert all("model" in json.loads(b) and "messages" in json.loads(b) for b in stats.bodies_sent)
    [error] = _errors(chunks)
    assert error.retryable is False
    assert len(stats.bodies_sent) == len(set(stats.bodies_sent))  # a body is never sent twice
    assert stats.attempts <= OpenAIAdapter().policy.max_attempts


async def test_openrouter_502_degrades_but_openai_does_not() -> None:
    """OpenRouter may degrade on an opaque 502; a direct OpenAI-compatible endpoint does not (502 alone)."""
    bad = json.dumps({"error": {"message": "Bad gateway"}}).encode()
    for adapter, expected_attempts in ((OpenRouterAdapter(), 2), (OpenAIAdapter(), 1)):
        server = ReplayServer(body=b"", responses=[(502, JSON, bad), (200, SSE, _stream("ok"))])
        async with server:
            _, stats = await _run(
                server,
                adapter=adapter,
                config=TransportConfig(allow_private_network=True, transient_retries=0),
            )
        assert stats.attempts == expected_attempts, adapter.name


async def test_transient_5xx_before_commitment_is_retried() -> None:
    """A 500 before any output is retried with the same body (bounded)."""
    oops = json.dumps({"error": {"message": "internal"}}).encode()
    server = ReplayServer(body=b"", responses=[(500, JSON, oops), (200, SSE, _stream("ok"))])
    async with server:
        chunks, stats = await _run(server)
    assert _texts(chunks) == ["ok"] and stats.attempts == 2
    assert stats.bodies_sent[0] == stats.bodies_sent[1]


async def test_rate_limit_is_not_retried_by_the_transport() -> None:
    """429 is left to the turn runner (next key / model): one attempt, a retryable rate_limit error."""
    body = json.dumps({"error": {"message": "Rate limit reached"}}).encode()
    server = ReplayServer(body=b"", responses=[(429, JSON, body), (200, SSE, _stream("no"))])
    async with server:
        chunks, stats = await _run(server)
    [error] = _errors(chunks)
    assert error.type is ErrorType.RATE_LIMIT and error.retryable and stats.attempts == 1


async def test_idle_timeout_becomes_retryable_timeout_error_not_a_hang() -> None:
    """A stream that stalls between pieces ends with a timeout error within the idle bound."""
    server = ReplayServer(body=_stream("a", "b", "c"), pace=1.0)
    async with server:
        chunks, _ = await asyncio.wait_for(
            _run(
                server,
                config=TransportConfig(allow_private_network=True, idle_timeout=0.2, transient_retries=0),
            ),
            5,
        )
    errors = _errors(chunks)
    assert errors and errors[-1].type is ErrorType.TIMEOUT and errors[-1].retryable


async def test_first_byte_timeout() -> None:
    """No response headers within the first-byte bound is a retryable timeout."""

    async def slow(_: web.Request) -> web.Response:
        await asyncio.sleep(2)
        return web.Response(text="late")

    app = web.Application()
    app.router.add_post("/chat/completions", slow)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        adapter = OpenAIAdapter()
        http = adapter.build_request(CHAT, base_url=f"http://127.0.0.1:{port}", api_key="k")
        config = TransportConfig(allow_private_network=True, first_byte_timeout=0.2, transient_retries=0)
        chunks = await asyncio.wait_for(drain(stream_source(adapter, http, config=config)), 5)
    finally:
        await runner.cleanup()
    assert _errors(chunks)[0].type is ErrorType.TIMEOUT


async def test_dropped_connection_after_output_is_an_error_chunk() -> None:
    """A connection dropped mid-body after output becomes a retryable api_error, text kept, no hang."""

    async def drop(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": SSE})
        await response.prepare(request)
        await response.write(_delta("partial").encode())
        assert request.transport is not None
        request.transport.abort()
        return response

    app = web.Application()
    app.router.add_post("/chat/completions", drop)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        adapter = OpenAIAdapter()
        http = adapter.build_request(CHAT, base_url=f"http://127.0.0.1:{port}", api_key="k")
        chunks = await asyncio.wait_for(
            drain(stream_source(adapter, http, config=TransportConfig(allow_private_network=True))), 5
        )
    finally:
        await runner.cleanup()
    assert _texts(chunks) == ["partial"]
    assert _errors(chunks) and _errors(chunks)[0].type is ErrorType.API_ERROR


async def test_malformed_json_event_is_a_typed_error() -> None:
    """Broken JSON in a data line is a non-retryable malformed_response error, never garbled text."""
    body = _delta("ok").encode() + b"data: {not json\n\n"
    server = ReplayServer(body=body)
    async with server:
        chunks, _ = await _run(server)
    assert _texts(chunks) == ["ok"]
    assert _errors(chunks)[0].code == "malformed_response"


async def test_non_stream_body_cap() -> None:
    """A non-streamed body over the cap is an error, not unbounded memory."""
    server = ReplayServer(body=b'{"x": "' + b"a" * 5000 + b'"}', content_type=JSON)
    async with server:
        chunks, _ = await _run(
            server,
            config=TransportConfig(allow_private_network=True, max_body_bytes=1000, transient_retries=0),
        )
    assert _errors(chunks)


async def test_split_utf8_over_http() -> None:
    """One-byte writes split every multi-byte character; the decoded text is intact."""
    server = ReplayServer(body=_stream("héllo ", "👋🏽", " 世界"), chunking=Chunking(size=1))
    async with server:
        chunks, _ = await _run(server)
    assert "".join(_texts(chunks)) == "héllo 👋🏽 世界"


async def test_api_key_never_reaches_logs_or_errors() -> None:
    """The API key appears in no log line, error message or repr."""
    lines: list[str] = []
    logger.enable("rxcord")
    sink_id = logger.add(lines.append, level="DEBUG", format="{message} {extra}")
    try:
        rejection = json.dumps(
            {"error": {"message": "Incorrect API key provided: sk-test-secret-123"}}
        ).encode()
        server = ReplayServer(body=b"", responses=[(401, JSON, rejection)])
        async with server:
            chunks, _ = await _run(server)
    finally:
        logger.remove(sink_id)
        logger.disable("rxcord")
    [error] = _errors(chunks)
    assert "sk-test-secret-123" not in error.message
    assert "sk-test-secret-123" not in repr(error)
    assert not any("sk-test-secret-123" in line for line in lines)
    http = OpenAIAdapter().build_request(CHAT, base_url="http://127.0.0.1:1", api_key="sk-test-secret-123")
    assert "sk-test-secret-123" not in repr(http)


async def test_redirects_are_not_followed() -> None:
    """A 307 to another host is refused, not followed."""
    server = ReplayServer(body=b"", status=307, content_type="text/html")
    async with server:
        chunks, _ = await _run(
            server, config=TransportConfig(allow_private_network=True, transient_retries=0)
        )
    assert _errors(chunks)[0].code == "redirect_refused" and len(server.requests) == 1


async def test_dispose_closes_the_connection() -> None:
    """Disposing the subscription mid-stream cancels the request; the server sees the close."""
    server = ReplayServer(body=_stream(*["x"] * 200), pace=0.01)
    async with server:
        adapter = OpenAIAdapter()
        http = adapter.build_request(CHAT, base_url=server.base_url, api_key="k")
        seen: list[RawStreamChunk] = []
        subscription = stream_source(
            adapter, http, config=TransportConfig(allow_private_network=True)
        ).subscribe(seen.append, lambda e: None)
        while len(seen) < 5:
            await asyncio.sleep(0.01)
        subscription.dispose()
        await server.wait_finished(3)
    assert server.requests[0].closed_early and not server.requests[0].completed


async def test_empty_stream_is_a_retryable_error() -> None:
    """A 200 with no events (empty, only [DONE], or not SSE at all) is a failed answer, not an empty one."""
    for body in (b"", b"data: [DONE]\n\n", b"this is not sse\n"):
        async with ReplayServer(body=body) as server:
            chunks, stats = await _run(
                server, config=TransportConfig(allow_private_network=True, transient_retries=1, backoff=0.01)
            )
        [error] = _errors(chunks)
        assert error.code == "empty_response" and error.retryable
        assert stats.attempts == 2  # retried once before giving up: nothing was committed


async def test_truncated_event_at_end_of_body() -> None:
    """A body cut off mid-event keeps the text before it and reports the truncation."""
    body = (
        _delta("Partial ").encode() + b'data: {"id": "x", "choices": [{"index": 0, "delta": {"content": "cut'
    )
    async with ReplayServer(body=body) as server:
        chunks, _ = await _run(server)
    assert _texts(chunks) == ["Partial "]
    [error] = _errors(chunks)
    assert error.code == "truncated_stream" and error.retryable


@pytest.mark.parametrize(
    ("name", "adapter", "base_url", "responses", "config"),
    [
        ("ssrf refusal", CustomAdapter(), "http://127.0.0.1:9/v1", None, TransportConfig()),
        (
            "line too long",
            OpenAIAdapter(),
            None,
            [(200, SSE, b"data: " + b"x" * 500)],
            TransportConfig(allow_private_network=True, max_line_bytes=64),
        ),
        (
            "redirect",
            OpenAIAdapter(),
            None,
            [(307, "text/html", b"")],
            TransportConfig(allow_private_network=True),
        ),
        (
            "401",
            OpenAIAdapter(),
            None,
            [(401, JSON, b'{"error": {"message": "no"}}')],
            TransportConfig(allow_private_network=True),
        ),
        (
            "500 text",
            OpenAIAdapter(),
            None,
            [(500, "text/plain", b"oops")],
            TransportConfig(allow_private_network=True),
        ),
        (
            "malformed event",
            OpenAIAdapter(),
            None,
            [(200, SSE, b"data: {nope\n\n")],
            TransportConfig(allow_private_network=True),
        ),
        (
            "malformed body",
            OpenAIAdapter(),
            None,
            [(200, JSON, b"{nope")],
            TransportConfig(allow_private_network=True),
        ),
        (
            "truncated",
            OpenAIAdapter(),
            None,
            [(200, SSE, b'data: {"id": "x", "cho')],
            TransportConfig(allow_private_network=True),
        ),
        ("empty", OpenAIAdapter(), None, [(200, SSE, b"")], TransportConfig(allow_private_network=True)),
        (
            "refused connection",
            OpenAIAdapter(),
            "http://127.0.0.1:1/v1",
            None,
            TransportConfig(allow_private_network=True),
        ),
    ],
)
async def test_every_transport_error_has_a_code(
    name: str, adapter: Any, base_url: str | None, responses: Any, config: TransportConfig
) -> None:
    """Each kind of failure the transport reports carries a ``code`` (the SSRF refusal included)."""
    config = attrs.evolve(config, transient_retries=0)
    server = ReplayServer(body=b"", responses=responses or [(200, SSE, b"")])
    async with server:
        http = adapter.build_request(CHAT, base_url=base_url or server.base_url, api_key="k")
        chunks = await drain(stream_source(adapter, http, config=config))
    errors = _errors(chunks)
    assert errors, name
    assert all(isinstance(e.code, (str, int)) and e.code != "" for e in errors), [e.code for e in errors]


async def test_an_observer_raising_os_error_is_its_error_not_a_transport_failure() -> None:
    """An exception from downstream of the read loop reaches on_error as itself, once, with no retry."""
    server = ReplayServer(body=_stream("a", "b"))
    adapter = OpenAIAdapter()
    stats = TransportStats()
    seen: list[Any] = []
    errors: list[BaseException] = []
    done = asyncio.Event()

    def on_next(chunk: RawStreamChunk) -> None:
        seen.append(chunk)
        raise ConnectionResetError("a sink's own failure")

    def on_error(exc: BaseException) -> None:
        errors.append(exc)
        done.set()

    async with server:
        http = adapter.build_request(CHAT, base_url=server.base_url, api_key="k")
        stream_source(
            adapter, http, config=TransportConfig(allow_private_network=True, backoff=0.01), stats=stats
        ).subscribe(on_next, on_error, done.set)
        await asyncio.wait_for(done.wait(), 5)
    [error] = errors
    assert isinstance(error, ConnectionResetError) and str(error) == "a sink's own failure"
    assert len(seen) == 1 and stats.attempts == 1


@pytest.mark.parametrize("size", [7, 1000, 1 << 20])
async def test_a_large_read_is_parsed_a_slice_at_a_time_with_the_same_chunks(
    size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces of 7 bytes, 1000 bytes or the whole body in one write: the same chunks, in order.

    A read larger than READ_SLICE goes to the SSE parser in slices, so the copies of its
    events' bytes never all exist at once (the 1k-chunk reply's memory peak).
    """
    from rxcord.providers import sse, transport

    fed: list[int] = []
    real = sse.SseParser.feed_raw

    def counting(self: sse.SseParser, chunk: bytes) -> list[Any]:
        fed.append(len(chunk))
        return real(self, chunk)

    monkeypatch.setattr(sse.SseParser, "feed_raw", counting)
    texts = [f"é{n}🙂" * (n % 5 + 1) for n in range(3000)]
    server = ReplayServer(body=_stream(*texts), chunking=Chunking(size=size))
    async with server:
        chunks, stats = await _run(server)
    assert _texts(chunks) == texts and not _errors(chunks)
    assert transport.READ_SLICE == 16 * 1024 and max(fed) <= 16 * 1024
    assert sum(fed) == len(server.body) and stats.closed
