"""Running an emulator: for an ``async with`` block, or until cancelled (``rxcord emulator``)."""

from __future__ import annotations

__all__ = ("point_discord_py", "run_forever", "serve")

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

from rxcord.testing.emulator.app import DiscordEmulator
from rxcord.testing.emulator.config import EmulatorConfig


@contextlib.asynccontextmanager
async def serve(
    port: int = 0, config: EmulatorConfig | None = None, *, host: str = "127.0.0.1"
) -> AsyncIterator[DiscordEmulator]:
    """Run an emulator for the duration of an ``async with`` block.

    Example::

        async with serve(config=EmulatorConfig(channel_window=0.5)) as emulator:
            print(emulator.base_url, emulator.gateway_url)
    """
    emulator = DiscordEmulator(config)
    await emulator.start(host, port)
    try:
        yield emulator
    finally:
        await emulator.close()


async def run_forever(
    host: str = "127.0.0.1",
    port: int = 0,
    config: EmulatorConfig | None = None,
    *,
    ready: Callable[[str], object] | None = None,
    started: Callable[[DiscordEmulator], object] | None = None,
) -> None:
    """Serve until cancelled, printing nothing (the ``rxcord emulator`` command).

    Args:
        host: Address to bind; keep the default unless you know why.
        port: Port to bind (0 picks a free one).
        config: Emulator configuration.
        ready: Called once with the base URL when the server accepts connections (e.g. to print it).
        started: Called once with the running emulator (after ``ready``), e.g. to print its gateway URL.
    """
    async with serve(port, config, host=host) as emulator:
        if ready is not None:
            ready(emulator.base_url)
        if started is not None:
            started(emulator)
        await asyncio.Event().wait()


def point_discord_py(base_url: str, gateway_url: str) -> None:
    """Point an unmodified discord.py (2.x) at an emulator: REST and gateway, for the whole process.

    The override is two class attributes, which is all this does::

        discord.http.Route.BASE = base_url                                   # http://127.0.0.1:PORT/api/v10
        discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)  # ws://127.0.0.1:PORT/gateway

    Call it before ``client.start(token)`` / ``client.run(token)``; the token is
    ``EmulatorConfig.token`` (printed by ``rxcord emulator``). Needs ``rxcord[discord]``.
    """
    import discord
    import yarl

    discord.http.Route.BASE = base_url
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(gateway_url)
