"""``rxcord emulator``: serve the Discord emulator (REST API and gateway) on 127.0.0.1 until interrupted."""

from __future__ import annotations

__all__ = ("serve_emulator",)

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rxcord.testing.emulator import DiscordEmulator


async def serve_emulator(port: int, out: Callable[[str], None]) -> None:
    """Serve the emulator on *port* (0: any free port) and print, once ready, one per line:

    the REST base URL (``http://127.0.0.1:PORT/api/v10``), ``bot token: TOKEN`` and
    ``gateway: ws://127.0.0.1:PORT/gateway``, then the guild's text channels
    (``channel: #name ID``), the injection route a person acts as a user with and
    ``page: http://127.0.0.1:PORT/`` (the page of ``rxcord.testing.page``).
    """
    from rxcord.testing.emulator import EmulatorConfig, run_forever

    config = EmulatorConfig()

    def started(emulator: DiscordEmulator) -> None:
        out(emulator.base_url)
        out(f"bot token: {config.token}")
        out(f"gateway: {emulator.gateway_url}")
        out(f"guild: {config.guild_name} {config.guild_id}")
        for channel in config.channels:
            out(f"channel: #{channel.name} {channel.id}")
        out(f"act as a user: POST {emulator.base_url}/_emulator/messages (see the README)")
        out(f"page: {emulator.page_url}")

    await run_forever("127.0.0.1", port, config, started=started)
