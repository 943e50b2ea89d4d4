"""``python -m rxcord.bot.offline``: a stand-in model on 127.0.0.1, to try the bot with no key.

It serves a bundled capture (a reasoning model answering with code longer than one Discord
message, recorded from OpenRouter) to every request, paced like a real stream, with
``rxcord.testing.ReplayServer``. Point the bot's ``[provider]`` at the URL it prints: ``name =
"openrouter"``, any model, any key, ``allow_private_network = true``. Every question gets the
same answer; that is enough to watch the streaming, the delivery modes, /stop and /kill.
"""

from __future__ import annotations

__all__ = ("serve_offline_provider",)

import argparse
import asyncio
import contextlib
from collections.abc import Callable, Sequence
from importlib import resources

from rxcord.testing import ReplayServer

CAPTURE = "openrouter_reasoning_code.sse"


async def serve_offline_provider(
    port: int = 0, *, pace: float = 0.005, ready: Callable[[str], object] = print
) -> None:
    """Serve the capture until cancelled; *ready* gets the provider's base URL."""
    body = (resources.files("rxcord.data") / CAPTURE).read_bytes()
    server = ReplayServer(body=body, pace=pace)
    url = await server.start(port=port)
    try:
        ready(f'provider: {url}  (name = "openrouter", any model and key)')
        await asyncio.Event().wait()
    finally:
        await server.close()


def main(argv: Sequence[str] | None = None) -> None:
    """The command."""
    parser = argparse.ArgumentParser(prog="python -m rxcord.bot.offline", description=__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--pace", type=float, default=0.005, help="seconds between streamed lines")
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            serve_offline_provider(args.port, pace=args.pace, ready=lambda line: print(line, flush=True))
        )


if __name__ == "__main__":  # pragma: no cover
    main()
