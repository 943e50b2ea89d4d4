"""The think-tag start window per destination: none at OpenAI's own API, 256 everywhere else.

The rule is the adapter's (``ChatCompletionsAdapter.serves_tagless`` / ``guards_for``); the
stream tests run it through ``run_stream``, ``stream_to_discord``, the ``Streamer`` and
``run_turn`` against a replay server on 127.0.0.1 and read what happened from the stream's
timeline and result: raw events counted before the first visible text, never time.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson
import pytest

from rxcord.compose.run import StreamJob, run_stream, stream_to_discord
from rxcord.compose.streamer import Streamer
from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.config import StreamConfig
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.core.types import DeliveryMode, StreamStatus
from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW, WHOLE_REPLY
from rxcord.operators.timeline import NORMALIZE, TRANSPORT, Timeline
from rxcord.providers.chat_completions.adapter import ChatCompletionsAdapter, WireOptions
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.nvidia import NvidiaAdapter
from rxcord.providers.openai import OPENAI_BASE_URL, OpenAIAdapter
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

LOCAL = TransportConfig(allow_private_network=True)
REQUEST = ChatRequest(model="local-model", messages=(Message.user("hi"),))
WORDS = ["word "] * 100
"""500 characters of plain text, five per delta: the window (256) decides at the 52nd."""
LEAK = ["The user ", "greets me.", "</think>", "Hello ", "there."]
"""A template-opened block: only its closer reaches the content."""


def _sse(pieces: Sequence[str]) -> bytes:
    """A Chat Completions stream: one content delta per piece, a finish reason, ``[DONE]``."""
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in pieces]
    events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    lines = [b"data: " + orjson.dumps(event) + b"\n\n" for event in events]
    return b"".join(lines) + b"data: [DONE]\n\n"


def _tagless_at(origin: str) -> OpenAIAdapter:
    """The OpenAI adapter with *origin* (the replay server) declared as its own tagless API."""
    wire = WireOptions(
        provider="openai",
        default_base_url=OpenAIAdapter.wire.default_base_url,
        max_tokens_key=OpenAIAdapter.wire.max_tokens_key,
        send_top_k=False,
        max_stop=4,
        tagless_origins=frozenset({origin}),
    )
    adapter: OpenAIAdapter = type("TaglessAtReplay", (OpenAIAdapter,), {"wire": wire})()
    return adapter


async def _run(adapter: ChatCompletionsAdapter, base_url: str, timeline: Timeline) -> StreamResult:
    request = adapter.build_request(REQUEST, base_url=base_url, api_key=None)
    job = StreamJob(
        adapter=adapter,
        request=request,
        sink=MemorySink(),
        config=StreamConfig(delivery=DeliveryMode.EDIT),
        transport=LOCAL,
    )
    return await run_stream(job, timeline=timeline)


def _raws_before_first_text(timeline: Timeline) -> int:
    """How many raw chunks stage 02 passed before stage 03 let the first visible text through."""
    raws = 0
    for event in timeline.events:
        if event.lane == TRANSPORT and event.kind == "raw":
            raws += 1
        elif event.lane == NORMALIZE and event.kind == "text":
            return raws
    raise AssertionError("no visible text came out of stage 03")


# -- the rule --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [None, OPENAI_BASE_URL, "https://API.OpenAI.com:443/v1/chat/completions", "https://api.openai.com"],
)
def test_openai_at_its_own_api_holds_no_start_window(url: str | None) -> None:
    """Default host (any spelling of its origin): the stripper and the spill guard run, no window."""
    adapter = OpenAIAdapter()
    guards = adapter.guards_for(url)
    assert adapter.serves_tagless(url)
    assert guards.think_tags and guards.spill
    assert guards.think_start_window == 0


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/v1",
        "http://[::1]:8000/v1",
        "http://localhost:11434/v1",
        "https://api.openai.com:8443/v1",
        "http://api.openai.com/v1",
        "https://api.openai.com@127.0.0.1/v1",
        "https://api.openai.com.proxy.test/v1",
        "https://api.openai.com./v1",
        "https://proxy.test/api.openai.com/v1",
        "api.openai.com/v1",
        "http://[::1/v1",
    ],
)
def test_every_other_base_url_of_openai_keeps_the_window(url: str) -> None:
    """A local server, a proxy, another port or scheme, a userinfo trick: the 256 characters stay held."""
    adapter = OpenAIAdapter()
    assert not adapter.serves_tagless(url)
    assert adapter.guards_for(url).think_start_window == DEFAULT_START_WINDOW


@pytest.mark.parametrize("url", [None, OPENAI_BASE_URL, "http://127.0.0.1:8080/v1"])
@pytest.mark.parametrize(
    "adapter", [OpenRouterAdapter(), NvidiaAdapter(), CustomAdapter()], ids=["openrouter", "nvidia", "custom"]
)
def test_the_other_chat_completions_adapters_keep_the_window_everywhere(
    adapter: ChatCompletionsAdapter, url: str | None
) -> None:
    """OpenRouter, NVIDIA and custom endpoints serve open-weight models: the window wherever they point."""
    assert not adapter.serves_tagless(url)
    assert adapter.guards_for(url) == adapter.guards
    assert adapter.guards.think_start_window == DEFAULT_START_WINDOW


def test_a_template_opened_custom_endpoint_holds_the_whole_reply_even_at_openais_host() -> None:
    assert CustomAdapter(think_opened_by_template=True).guards_for(OPENAI_BASE_URL).think_start_window == (
        WHOLE_REPLY
    )


def test_guards_without_a_destination_hold_the_window() -> None:
    """``adapter.guards`` alone does not know where a request goes: the safe window."""
    assert OpenAIAdapter().guards.think_start_window == DEFAULT_START_WINDOW
    assert OpenAIAdapter().guards_for(None) != OpenAIAdapter().guards


# -- the streams -----------------------------------------------------------------------------------


async def test_openai_at_a_local_base_url_holds_the_first_text_until_the_window_decides() -> None:
    timeline = Timeline()
    async with ReplayServer(body=_sse(WORDS)) as server:
        result = await _run(OpenAIAdapter(), server.base_url, timeline)
    assert result.status is StreamStatus.COMPLETED and result.visible_text == "".join(WORDS)
    assert (
        _raws_before_first_text(timeline) == DEFAULT_START_WINDOW // len(WORDS[0]) + 1
    )  # the 257th character


async def test_openai_at_its_own_origin_releases_the_first_text_with_the_first_delta() -> None:
    timeline = Timeline()
    async with ReplayServer(body=_sse(WORDS)) as server:
        result = await _run(_tagless_at(server.base_url), server.base_url, timeline)
    assert result.status is StreamStatus.COMPLETED and result.visible_text == "".join(WORDS)
    assert _raws_before_first_text(timeline) == 1


async def test_a_leak_through_a_local_openai_base_url_is_still_rerouted() -> None:
    """``reasoning</think>answer`` from 127.0.0.1: the text before the stray closer is reasoning."""
    async with ReplayServer(body=_sse(LEAK)) as server:
        result = await _run(OpenAIAdapter(), server.base_url, Timeline())
    assert result.visible_text == "Hello there."
    assert result.reasoning is not None and "greets me." in result.reasoning


async def test_at_a_tagless_origin_a_stray_closer_is_removed_and_the_text_before_it_shown() -> None:
    """The documented trade of no window: the closer never reaches the answer, what preceded it stays."""
    async with ReplayServer(body=_sse(LEAK)) as server:
        result = await _run(_tagless_at(server.base_url), server.base_url, Timeline())
    assert "</think>" not in result.visible_text
    assert result.visible_text.startswith("The user greets me.")


@pytest.mark.parametrize("entry", ["stream_to_discord", "streamer", "run_turn"])
async def test_every_entry_point_reads_the_guards_of_the_requests_destination(entry: str) -> None:
    """The bot's turn, the Streamer and the free function: the leak tells which window ran."""
    async with ReplayServer(body=_sse(LEAK)) as server:
        texts = []
        for adapter in (OpenAIAdapter(), _tagless_at(server.base_url)):
            texts.append((await _enter(entry, adapter, server.base_url)).visible_text)
    assert texts[0] == "Hello there."
    assert texts[1].startswith("The user greets me.")


async def _enter(entry: str, adapter: OpenAIAdapter, base_url: str) -> StreamResult:
    if entry == "stream_to_discord":
        return await stream_to_discord(
            adapter, REQUEST, sink=MemorySink(), base_url=base_url, api_key=None, transport=LOCAL
        )
    if entry == "streamer":
        async with Streamer(sink=MemorySink(), transport=LOCAL) as streamer:
            return await streamer.stream(adapter, REQUEST, base_url=base_url)
    candidates = fallback_order(adapter, ["local-model"], [None], base_url=base_url)
    return (await run_turn(candidates, REQUEST, sink=MemorySink(), transport=LOCAL)).result
