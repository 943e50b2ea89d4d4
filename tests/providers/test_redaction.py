"""Secrets by value: a sentinel key, bot token and webhook token echoed back are never kept or shown."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from rxcord.cli.main import main
from rxcord.compose.run import stream_to_discord
from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError, RedactedError
from rxcord.core.redact import REDACTED, Redactor, credentials_in
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ErrorType, ProviderError, StreamStatus
from rxcord.operators.aio import drain
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.google import GoogleAdapter
from rxcord.providers.transport import TransportConfig, stream_source
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import Chunking, ReplayServer

API_KEY = "local-endpoint-key-7Hq2"  # no shape the regex scrubber knows
BOT_TOKEN = "MTk4NjIy.sentinel-bot-token.Xq9"
WEBHOOK_TOKEN = "sentinel-webhook-token-Zk81"
SENTINELS = (API_KEY, BOT_TOKEN, WEBHOOK_TOKEN)
CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
LOCAL = TransportConfig(allow_private_network=True, transient_retries=0)
JSON = "application/json"


def _echo_body() -> bytes:
    """A 401 that echoes every secret back, as a careless proxy does."""
    message = f"Invalid API key {API_KEY} (bot {BOT_TOKEN}, webhook {WEBHOOK_TOKEN})"
    return json.dumps(
        {"error": {"message": message, "type": "invalid_request_error", "key": API_KEY}}
    ).encode()


def _leaks(*shown: object) -> list[str]:
    text = "\n".join(s if isinstance(s, str) else repr(s) for s in shown)
    return [secret for secret in SENTINELS if secret in text]


# -- the redactor --------------------------------------------------------------------------------


def test_the_redactor_replaces_exact_values_everywhere() -> None:
    """Text, bytes, nested values (keys included), percent-encoded forms and exceptions."""
    redactor = Redactor.of(API_KEY, None, "", "EMPTY")
    assert redactor.text(f"a {API_KEY} b") == f"a {REDACTED} b"
    assert redactor.data(f"x{API_KEY}x".encode()) == f"x{REDACTED}x".encode()
    slashed = Redactor.of("abc/def+ghi=jk")
    assert slashed.text("?key=abc%2Fdef%2Bghi%3Djk&x=abc/def+ghi=jk") == f"?key={REDACTED}&x={REDACTED}"
    assert API_KEY not in redactor.text(f"?k={API_KEY}&q=1")
    value = {"error": {API_KEY: [API_KEY, (1, f"..{API_KEY}..")]}, "n": 3, "ok": None}
    assert _leaks(redactor.value(value)) == []
    assert redactor.value(value)["n"] == 3
    redacted = redactor.value(ConnectionError(f"refused for {API_KEY}"))
    assert isinstance(redacted, RedactedError) and _leaks(redacted, str(redacted)) == []
    clean = ValueError("nothing secret")
    assert redactor.value(clean) is clean
    assert redactor.text("EMPTY stays") == "EMPTY stays"  # too short to be a credential
    assert API_KEY not in repr(redactor) and not Redactor.of(None, "short")


def test_the_redactor_redacts_a_provider_error() -> None:
    """Message, code and original_error of a ProviderError."""
    error = ProviderError(
        type=ErrorType.API_ERROR,
        message=f"bad key {API_KEY}",
        retryable=False,
        code=API_KEY,
        original_error={"error": {"message": API_KEY}},
    )
    clean = Redactor.of(API_KEY).error(error)
    assert _leaks(clean.message, clean.code, clean.original_error) == []
    assert clean.type is error.type and clean.retryable is error.retryable


def test_a_value_nested_deeper_than_the_walk_is_replaced_whole() -> None:
    """The walk is bounded: a deep value (from a hostile body) cannot reach the recursion limit."""
    deep: Any = API_KEY
    for _ in range(400):
        deep = [deep]
    assert _leaks(json.dumps(Redactor.of(API_KEY).value(deep))) == []


def test_credentials_in_a_request() -> None:
    """Auth headers (without their scheme) and key parameters are the request's credentials."""
    assert credentials_in({"Authorization": f"Bearer {API_KEY}", "Accept": "x"}) == (API_KEY,)
    assert credentials_in({"x-api-key": API_KEY}) == (API_KEY,)
    assert credentials_in({"x-goog-api-key": API_KEY}) == (API_KEY,)
    assert credentials_in({}, f"https://h/v1?alt=sse&key={API_KEY}") == (API_KEY,)


# -- the transport -------------------------------------------------------------------------------


async def test_a_401_echoing_the_key_is_redacted_in_the_transport() -> None:
    """The key echoed in a 401 body is gone from the message, the data and original_error."""
    adapter = CustomAdapter()
    async with ReplayServer(body=b"", responses=[(401, JSON, _echo_body())]) as server:
        http = adapter.build_request(CHAT, base_url=server.base_url, api_key=API_KEY)
        [chunk] = await drain(stream_source(adapter, http, config=LOCAL))
    assert chunk.error is not None and chunk.error.status == 401
    assert REDACTED in chunk.error.message
    assert API_KEY not in repr((chunk.error.message, chunk.error.original_error, chunk.data))
    assert server.requests[0].headers["Authorization"] == f"Bearer {API_KEY}"  # it was sent, though


async def test_an_sse_error_event_echoing_the_key_is_redacted() -> None:
    """An error event after a 200 (classified later, by the normalizer) never carries the key either."""
    event = {"error": {"message": f"key {API_KEY} revoked", "code": 401}}
    body = f"data: {json.dumps(event)}\n\n".encode()
    async with ReplayServer(body=body) as server:
        result = await stream_to_discord(
            CustomAdapter(),
            CHAT,
            sink=MemorySink(),
            base_url=server.base_url,
            api_key=API_KEY,
            transport=LOCAL,
        )
    assert result.status is StreamStatus.ERROR and result.error is not None
    assert REDACTED in result.error.message and _leaks(result, result.error.original_error) == []


async def test_a_google_key_parameter_is_redacted() -> None:
    """A key sent as a URL parameter counts as the request's credential too."""
    adapter = GoogleAdapter()
    async with ReplayServer(body=b"", responses=[(400, JSON, _echo_body())]) as server:
        http = adapter.build_request(CHAT, base_url=server.base_url, api_key=API_KEY)
        http = type(http)(url=http.url + f"&key={API_KEY}", body=http.body, headers={}, stream=True)
        [chunk] = await drain(stream_source(adapter, http, config=LOCAL))
    assert chunk.error is not None and API_KEY not in repr((chunk.error.message, chunk.error.original_error))


# -- the stream: error embed, StreamResult, reprs, DiscordError ---------------------------------


async def test_no_secret_reaches_the_embed_the_result_or_a_repr() -> None:
    """Key, bot token and webhook token echoed in a 401: none is posted to Discord, kept or shown."""
    sink = MemorySink()
    context = StreamContext(channel_id="1", webhook_id="2", webhook_token=WEBHOOK_TOKEN)
    async with ReplayServer(body=b"", responses=[(401, JSON, _echo_body())]) as server:
        result = await stream_to_discord(
            CustomAdapter(),
            CHAT,
            sink=sink,
            base_url=server.base_url,
            api_key=API_KEY,
            context=context,
            transport=LOCAL,
            secrets=(BOT_TOKEN,),
        )
    assert result.status is StreamStatus.ERROR and result.error is not None
    posted = json.dumps(sink.payloads)
    assert "embeds" in posted and REDACTED in posted  # the error embed was posted, redacted
    assert _leaks(posted, result, result.error, result.error.message, result.error.original_error) == []


async def test_a_discord_error_is_redacted_before_it_is_raised() -> None:
    """A DiscordError whose text echoes the bot token leaves the stream redacted."""
    sink = MemorySink()
    sink.fail_on(1, DiscordError(status=400, code=50035, message=f"Invalid Form Body for {BOT_TOKEN}"))
    delta = {"id": "x", "choices": [{"index": 0, "delta": {"content": "hello"}}]}
    body = f"data: {json.dumps(delta)}\n\ndata: [DONE]\n\n".encode()
    async with ReplayServer(body=body) as server:
        with pytest.raises(DiscordError) as raised:
            await stream_to_discord(
                CustomAdapter(),
                CHAT,
                sink=sink,
                base_url=server.base_url,
                api_key=API_KEY,
                transport=LOCAL,
                secrets=(BOT_TOKEN,),
            )
    assert raised.value.status == 400 and REDACTED in raised.value.message
    assert _leaks(str(raised.value), raised.value) == []


# -- the CLI -------------------------------------------------------------------------------------


async def test_rxcord_chat_output_carries_no_secret(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``rxcord chat`` against an endpoint echoing the key prints the error without it."""
    async with ReplayServer(body=b"", responses=[(401, JSON, _echo_body())]) as server:
        monkeypatch.setenv("RXCORD_API_KEY", API_KEY)
        monkeypatch.setenv("DISCORD_BOT_TOKEN", BOT_TOKEN)  # configured: redacted although unused here
        argv = [
            "chat",
            "--provider",
            "custom",
            "--allow-loopback",
            "--model",
            "m",
            "--base-url",
            server.base_url,
        ]
        code = await asyncio.to_thread(main, [*argv, "hi"])
    out, err = capsys.readouterr()
    assert code == 0 and "error" in out and REDACTED in out + err
    assert [secret for secret in (API_KEY, BOT_TOKEN) if secret in out + err] == []


async def test_run_turn_redacts_every_candidates_key_and_the_notice() -> None:
    """Across a key fallback, no key (the other candidate's included) reaches the notice or any attempt."""
    other_key = "second-endpoint-key-9Pw4"
    echo = f"keys {API_KEY} and {other_key} and bot {BOT_TOKEN}"
    limited = (429, JSON, json.dumps({"error": {"message": echo}}).encode())
    refused = (401, JSON, json.dumps({"error": {"message": echo}}).encode())
    sink = MemorySink()
    async with ReplayServer(body=b"", responses=[limited, refused]) as server:
        candidates = fallback_order(CustomAdapter(), ["m"], [API_KEY, other_key], base_url=server.base_url)
        turn = await run_turn(candidates, CHAT, sink=sink, transport=LOCAL, secrets=(BOT_TOKEN,))
    assert len(server.requests) == 2 and turn.notice_sent
    shown = [json.dumps(sink.payloads), turn.result, *(a.error for a in turn.attempts)]
    shown += [a.error.original_error for a in turn.attempts if a.error is not None]
    assert "embeds" in shown[0]
    assert [
        s for s in (API_KEY, other_key, BOT_TOKEN) if any(s in repr(x) or s in str(x) for x in shown)
    ] == []


@pytest.mark.parametrize("size", [1, 3, 7])
async def test_a_key_in_the_reply_split_across_writes_is_redacted(size: int) -> None:
    """The key echoed in the streamed text, cut over several network writes, never reaches Discord."""
    events = [{"id": "x", "choices": [{"index": 0, "delta": {"content": f"your key is {API_KEY}!"}}]}]
    body = "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"
    sink = MemorySink()
    async with ReplayServer(body=body, chunking=Chunking(size=size)) as server:
        result = await stream_to_discord(
            CustomAdapter(), CHAT, sink=sink, base_url=server.base_url, api_key=API_KEY, transport=LOCAL
        )
    assert result.status is StreamStatus.COMPLETED
    assert sink.contents == [f"your key is {REDACTED}!"]
