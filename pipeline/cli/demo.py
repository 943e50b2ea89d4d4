"""``rxcord demo``: bundled recorded replies through all seven stages into the embedded emulator.

No keys and no network beyond 127.0.0.1: each capture is served by the
replay server, streamed by the real provider adapter over HTTP, and
delivered with live delivery through the REST sink into the Discord
emulator, which applies Discord's validation and rate limits. Each message
is printed as the emulator accepts it.
"""

from __future__ import annotations

__all__ = ("DEMO_CAPTURES", "run_demo")

from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, Final

import aiohttp
import attrs

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import SentMessage, StreamResult
from rxcord.core.types import DeliveryMode
from rxcord.providers.registry import default_registry
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.base import DiscordSink
from rxcord.testing.replay import Chunking, ReplayServer

DEMO_CAPTURES: Final = (
    ("openrouter", "openrouter_reasoning_code.sse", "a reasoning model writes code longer than one message"),
    ("custom", "openai_think_leak.sse", "a local model leaks <think> into its answer"),
    ("google", "google_thoughts.sse", "Gemini with thought summaries"),
)

_RULE = "─" * 64


@attrs.define
class _PrintingSink:
    """Prints each message the moment Discord (the emulator) accepts it."""

    inner: DiscordSink
    out: Callable[[str], None]

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        sent = await self.inner.create_message(context, payload)
        content = payload.get("content") or ""
        self.out(
            f"{_RULE}\n[#{context.channel_id} · message {sent.message_id}] ({len(content)} chars)\n{content}"
        )
        return sent

    async def trigger_typing(self, context: StreamContext) -> None:
        await self.inner.trigger_typing(context)


def _summary(title: str, result: StreamResult) -> str:
    usage = result.usage
    finish = result.finish_reason.value if result.finish_reason else None
    lines = [
        _RULE,
        f"▶ {title}",
        f"  status={result.status.value} finish={finish} messages={len(result.messages)}"
        f" chunks={result.chunk_count}",
        f"  reasoning kept out of Discord: {len(result.reasoning or '')} chars"
        + (f" · served by {result.serving_provider}" if result.serving_provider else ""),
    ]
    if usage is not None:
        lines.append(
            f"  usage: {usage.input_tokens} in (cache read {usage.cache_read_tokens})"
            f" / {usage.output_tokens} out" + (f" · cost ${usage.cost}" if usage.cost is not None else "")
        )
    return "\n".join(lines)


async def run_demo(out: Callable[[str], None]) -> list[StreamResult]:
    """Run every bundled capture; print messages as they land and a summary of each result."""
    from rxcord.sinks.rest import RestSink
    from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig

    registry = default_registry()
    emulator = DiscordEmulator(EmulatorConfig())
    base_url = await emulator.start()
    out(f"Discord emulator on {base_url} (Discord's rate limits and validation apply)")
    results: list[StreamResult] = []
    try:
        async with aiohttp.ClientSession() as session:
            rest = RestSink(base_url, emulator.config.token, session=session)
            for index, (provider, name, title) in enumerate(DEMO_CAPTURES):
                body = resources.files("rxcord.data").joinpath(name).read_bytes()
                adapter = registry.create(provider)
                async with ReplayServer(body=body, chunking=Chunking(seed=index), pace=0.0005) as server:
                    chat = ChatRequest(model="demo-model", messages=(Message.user("demo"),))
                    http = adapter.build_request(chat, base_url=server.base_url, api_key="demo-key")
                    job = StreamJob(
                        adapter=adapter,
                        request=http,
                        sink=_PrintingSink(rest, out),
                        context=StreamContext(channel_id=str(200000000000000000 + index)),
                        config=StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.5),
                        transport=TransportConfig(allow_private_network=True),  # served on 127.0.0.1
                    )
                    out(f"\n=== {title} ({provider}) ===")
                    result = await run_stream(job)
                results.append(result)
                out(_summary(title, result))
    finally:
        await emulator.close()
    return results
