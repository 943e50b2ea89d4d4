"""Figure 4's live peer: what a user would write instead of rxcord, at the same load.

The OpenAI SDK's streaming loop (``AsyncOpenAI.chat.completions.create(stream=True)``,
pointed at the loopback benchmark server) feeding a hand-written discord.py-style bot: it
accumulates the deltas and sends a message at each paragraph break, or when the text held
reaches Discord's 2,000 characters, to a memory sink (an awaited coroutine that keeps the
message, as ``channel.send`` would be awaited). No guards, no cleaning, no markdown repair,
no rate limits: the least a working bot does.

Each stream notes when each chunk reached the bot's loop; a chunk's lag is that moment minus
the server's write of its event, as for the chain (``bench.live.measure_lag``). CPU per chunk
is the client process's CPU time over the run divided by the chunks.
"""

from __future__ import annotations

__all__ = ("LIMIT", "HandWrittenBot", "live_sdk_client", "measure_sdk_bot")

import time
from typing import Any, Final

from bench.live import LagResult, _paced_url, _reset, paced_lag
from bench.server import ServerProcess

LIMIT: Final = 2000
"""Discord's message length."""


class HandWrittenBot:
    """Accumulate deltas; send at a paragraph break or at ``LIMIT`` characters (a user's bot)."""

    def __init__(self) -> None:
        self.buffer = ""
        self.sent: list[str] = []

    async def send(self, text: str) -> None:
        """The memory sink: ``await channel.send(text)``."""
        self.sent.append(text)

    async def feed(self, delta: str) -> None:
        self.buffer += delta
        while True:
            cut = self.buffer.find("\n\n")
            if cut < 0 and len(self.buffer) < LIMIT:
                return
            at = min(cut if cut >= 0 else LIMIT, LIMIT)
            piece, self.buffer = self.buffer[:at], self.buffer[at:].lstrip("\n")
            if piece.strip():
                await self.send(piece)

    async def close(self) -> None:
        if self.buffer.strip():
            await self.send(self.buffer)
        self.buffer = ""


def live_sdk_client(server: ServerProcess) -> Any | None:
    """An ``AsyncOpenAI`` client without httpx's 100-connection cap (hundreds of streams); ``None``
    without the ``openai`` package (the ``bench`` extra)."""
    try:
        import openai
    except ImportError:
        return None
    limits = openai.DEFAULT_CONNECTION_LIMITS.__class__(max_connections=None, max_keepalive_connections=None)
    return openai.AsyncOpenAI(
        api_key="bench-key",
        base_url=server.url("none", "event"),
        max_retries=0,
        http_client=openai.DefaultAsyncHttpxClient(limits=limits),
    )


async def measure_sdk_bot(
    server: ServerProcess, session: Any, client: Any, chunks: int, *, streams: int, rate: float, skip: int = 1
) -> LagResult:
    """*streams* paced streams read by the OpenAI SDK into ``HandWrittenBot``s at once."""
    await _reset(session, server)
    pace_ms = 1000.0 / rate
    stamps: dict[str, list[float]] = {}

    async def one(number: int) -> bool:
        stream_id = f"sdk{number}"
        seen = stamps[stream_id] = []
        url = _paced_url(server, chunks, number, streams, pace_ms, stream_id)
        bot = HandWrittenBot()
        stream = await client.with_options(base_url=url).chat.completions.create(
            model="bench-model",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        async for chunk in stream:
            seen.append(time.monotonic())
            if chunk.choices and chunk.choices[0].delta.content:
                await bot.feed(chunk.choices[0].delta.content)
        await bot.close()
        return len(seen) == chunks and bool(bot.sent)

    return await paced_lag(session, server, one, stamps, chunks=chunks, streams=streams, rate=rate, skip=skip)
