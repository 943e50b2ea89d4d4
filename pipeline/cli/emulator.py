"""``rxcord emulator``: serve the Discord REST emulator on 127.0.0.1 until interrupted."""

from __future__ import annotations

__all__ = ("serve_emulator",)

from collections.abc import Callable


async def serve_emulator(port: int, out: Callable[[str], None]) -> None:
    """Serve the emulator on *port* (0: any free port); print its base URL and bot token once ready."""
    from rxcord.sinks.emulator import EmulatorConfig, run_forever

    config = EmulatorConfig()

    def ready(base_url: str) -> None:
        out(base_url)
        out(f"bot token: {config.token}")

    await run_forever("127.0.0.1", port, config, ready=ready)
