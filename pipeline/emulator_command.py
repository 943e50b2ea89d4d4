"""``rxcord emulator``: serve the Discord REST emulator on 127.0.0.1 until interrupted."""

from __future__ import annotations

__all__ = ("serve_emulator",)

import asyncio
from collections.abc import Callable


async def serve_emulator(port: int, out: Callable[[str], None]) -> None:
    """Start the emulator on *port* (0: any free port), print its base URL, serve until cancelled."""
    from sinks.emulator import DiscordEmulator, EmulatorConfig

    emulator = DiscordEmulator(EmulatorConfig())
    base_url = await emulator.start(port=port)
    out(base_url)
    out(f"bot token: {emulator.config.token}")
    try:
        await asyncio.Event().wait()
    finally:
        await emulator.close()
