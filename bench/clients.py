"""The contenders of figure 1: rxcord's full chain and the baselines, each reading one capture.

Every contender returns a ``Work`` record (events seen, characters of content and
reasoning collected) so the runner can check that all of them did the same work.

* ``floor_bytes``: (a) the floor. The capture's bytes, in the same pieces the server
  writes, split into SSE events by a minimal splitter and each decoded with orjson.
  No I/O.
* ``floor_aiohttp``: (b) the transport floor. aiohttp reads the same server; the
  same splitter and orjson decode each event.
* ``openai_sdk``: (c) the official OpenAI Python SDK streaming the same server
  (``AsyncOpenAI.chat.completions.create(stream=True)``) and collecting content.
* ``litellm_stream``: (d) LiteLLM's ``acompletion(stream=True)`` on the same server (the
  ``openai/`` route, the offline cost map: ``LITELLM_LOCAL_MODEL_COST_MAP=True``),
  collecting content; it runs in a child process of its own (``bench.peer``: its import would
  add about 350,000 tracked objects to the measuring process).
* ``rxcord_chain``: the full seven-stage chain (``rxcord.compose.run.run_stream``:
  transport, SSE parser, normalizer, idle timeout, stop gate, scan, flusher,
  cleaner, typing heartbeat, serialized delivery, result fold) with aggregated
  delivery into ``rxcord.sinks.memory.MemorySink``.
"""

from __future__ import annotations

__all__ = (
    "Splitter",
    "Work",
    "floor_aiohttp",
    "floor_bytes",
    "floor_collect",
    "litellm_module",
    "litellm_stream",
    "openai_sdk",
    "rxcord_chain",
)

import os
from collections.abc import Iterable
from typing import Any

import aiohttp
import attrs
import orjson

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink

REQUEST_BODY = {
    "model": "gpt-4o-mini",
    "messages": [{"role": "user", "content": "bench"}],
    "stream": True,
    "stream_options": {"include_usage": True},
}


@attrs.frozen
class Work:
    """What one contender did with one stream."""

    events: int
    """SSE events decoded (``[DONE]`` excluded); ``-1`` when the contender cannot count them."""
    content: int
    """Characters of answer text collected (``-1``: not collected)."""
    reasoning: int = -1
    result: Any = attrs.field(default=None, eq=False, repr=False)
    reads: int = -1
    """Pieces aiohttp handed over (``-1``: not counted)."""


class Splitter:
    """The minimal SSE splitter of the floors: blank-line separated events, ``data: `` lines."""

    __slots__ = ("buf",)

    def __init__(self) -> None:
        self.buf = b""

    def feed(self, piece: bytes) -> list[bytes]:
        buf = self.buf + piece
        events = buf.split(b"\n\n")
        self.buf = events.pop()
        return [event[6:] for event in events if event.startswith(b"data: ")]


def floor_bytes(pieces: Iterable[bytes]) -> Work:
    """(a) Split the pieces into SSE events and decode each with orjson."""
    splitter = Splitter()
    loads = orjson.loads
    events = 0
    for piece in pieces:
        for data in splitter.feed(piece):
            if data == b"[DONE]":
                continue
            loads(data)
            events += 1
    return Work(events=events, content=-1)


async def floor_aiohttp(session: aiohttp.ClientSession, base_url: str) -> Work:
    """(b) aiohttp reads the server; the same splitter and orjson decode each event."""
    splitter = Splitter()
    loads = orjson.loads
    events = 0
    reads = 0
    async with session.post(f"{base_url}/chat/completions", json=REQUEST_BODY) as response:
        async for piece in response.content.iter_any():
            reads += 1
            for data in splitter.feed(piece):
                if data == b"[DONE]":
                    continue
                loads(data)
                events += 1
    return Work(events=events, content=-1, reads=reads)


async def floor_collect(session: aiohttp.ClientSession, base_url: str) -> Work:
    """(b) plus keeping the answer and the reasoning: the memory floor (it returns what rxcord returns)."""
    splitter = Splitter()
    loads = orjson.loads
    events = 0
    text: list[str] = []
    thinking: list[str] = []
    async with session.post(f"{base_url}/chat/completions", json=REQUEST_BODY) as response:
        async for piece in response.content.iter_any():
            for data in splitter.feed(piece):
                if data == b"[DONE]":
                    continue
                chunk = loads(data)
                events += 1
                choices = chunk["choices"]
                if choices:
                    delta = choices[0]["delta"]
                    content = delta.get("content")
                    if content:
                        text.append(content)
                    reasoning = delta.get("reasoning_content")
                    if reasoning:
                        thinking.append(reasoning)
    answer = "".join(text)
    thought = "".join(thinking)
    return Work(events=events, content=len(answer), reasoning=len(thought), result=(answer, thought))


async def openai_sdk(client: Any, base_url: str) -> Work:
    """(c) The official OpenAI SDK's stream iterator, collecting content (``client`` is ``AsyncOpenAI``)."""
    sdk = client.with_options(base_url=base_url)
    stream = await sdk.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "user", "content": "bench"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    text: list[str] = []
    events = 0
    async for chunk in stream:
        events += 1
        if chunk.choices:
            content = chunk.choices[0].delta.content
            if content:
                text.append(content)
    answer = "".join(text)
    return Work(events=events, content=len(answer), result=answer)


def litellm_module() -> Any | None:
    """LiteLLM, set up offline (the bundled cost map, no telemetry); ``None`` when not installed."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        return None
    litellm.telemetry = False
    litellm.suppress_debug_info = True
    return litellm


async def litellm_stream(module: Any, base_url: str) -> Work:
    """(d) LiteLLM streaming the same server through its OpenAI route, collecting content."""
    stream = await module.acompletion(
        model="openai/gpt-4o-mini",
        api_base=base_url,
        api_key="bench-key",
        messages=[{"role": "user", "content": "bench"}],
        stream=True,
        stream_options={"include_usage": True},
        max_retries=0,
    )
    text: list[str] = []
    async for chunk in stream:
        if chunk.choices:
            content = chunk.choices[0].delta.content
            if content:
                text.append(content)
    answer = "".join(text)
    return Work(events=-1, content=len(answer), result=answer)


_ADAPTER = OpenAIAdapter()
_CHAT = ChatRequest(model="gpt-4o-mini", messages=(Message.user("bench"),))
_TRANSPORT = TransportConfig(transient_retries=0, allow_private_network=True)
"""The benchmark server is on 127.0.0.1: the SSRF guard's opt-out (a base URL override is checked)."""
AGGREGATED = StreamConfig(max_messages=100_000, max_flushes=100_000)
"""Aggregated delivery without the per-turn message cap: a 100k-chunk answer is ~175 messages."""


def rxcord_job(
    session: aiohttp.ClientSession,
    base_url: str,
    sink: Any,
    *,
    config: StreamConfig = AGGREGATED,
    channel_id: str = "100000000000000001",
) -> StreamJob:
    """The ``StreamJob`` of one benchmark stream (stage 01 runs here)."""
    request = _ADAPTER.build_request(_CHAT, base_url=base_url, api_key="bench-key", stream=True)
    return StreamJob(
        adapter=_ADAPTER,
        request=request,
        sink=sink,
        context=StreamContext(channel_id=channel_id),
        config=config,
        transport=_TRANSPORT,
        session=session,
    )


async def rxcord_chain(session: aiohttp.ClientSession, base_url: str) -> Work:
    """The full seven-stage chain, aggregated delivery into a ``MemorySink``."""
    sink = MemorySink()
    result: StreamResult = await run_stream(rxcord_job(session, base_url, sink), nonce_prefix="bench")
    reasoning = len(result.reasoning or "")
    return Work(events=-1, content=len(result.accumulated_text), reasoning=reasoning, result=result)
