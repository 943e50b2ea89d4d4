"""``rxcord bot --config bot.toml``: load the configuration, run the bot until SIGINT/SIGTERM."""

from __future__ import annotations

__all__ = ("bot_command", "serve_bot")

import asyncio
import signal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final

from loguru import logger

from rxcord import InputError, MissingCredentialError
from rxcord.bot.config import BotConfig, load_config
from rxcord.bot.runtime import restore_collector, tuned_collector

_SIGHUP: Final = getattr(signal, "SIGHUP", None)


async def serve_bot(
    config: BotConfig,
    *,
    ready: Callable[[], object] | None = None,
    config_path: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    say: Callable[[str], object] | None = None,
) -> None:
    """Run the bot until SIGINT or SIGTERM, then shut it down gracefully; SIGHUP reloads *config_path*.

    *say* gets the lines an operator reads at start: the invite link (``invite: https://...``).
    """
    from rxcord.bot.app import RxcordBot

    bot = RxcordBot(config, config_path=config_path, env=env)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if _SIGHUP is not None:  # not on Windows
        loop.add_signal_handler(_SIGHUP, bot.reload_from_signal)
    previous = None
    try:
        await bot.start()
        if config.runtime.gc_tuning:
            # After start: the client, its caches and the configuration live as long as the process.
            previous = tuned_collector()
        if say is not None:
            say(f"invite: {bot.invite_url}")
        if ready is not None:
            ready()
        closed = asyncio.create_task(bot.wait_closed())
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({closed, stopping}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
    finally:
        if previous is not None:
            restore_collector(previous)
        await bot.close()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        if _SIGHUP is not None:
            loop.remove_signal_handler(_SIGHUP)


def bot_command(
    config_path: str, *, verbose: bool = False, err: Callable[[str], object] | None = None
) -> int:
    """The command: 0 after a clean shutdown, 2 with one line on stderr for an unusable config.

    Logs (rxcord's namespace only, never a secret) go to stderr at INFO, DEBUG with ``-v``
    (the CLI adds that handler itself).
    """
    write = err or (lambda line: print(line, file=sys.stderr, flush=True))
    try:
        config = load_config(Path(config_path))
        try:
            import discord  # noqa: F401
        except ImportError:
            raise InputError("rxcord bot needs discord.py: pip install 'rxcord[bot]'") from None
        logger.enable("rxcord")
        if not verbose:
            logger.add(sys.stderr, level="INFO", filter="rxcord")
        asyncio.run(
            serve_bot(config, ready=lambda: write("bot ready"), config_path=Path(config_path), say=write)
        )
    except (InputError, MissingCredentialError) as exc:
        write(f"rxcord bot: {exc}")
        return 2
    return 0
