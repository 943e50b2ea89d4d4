"""Reaching Discord at start-up, and closing whatever was opened: one line, never a traceback.

Every way the start can fail to reach Discord is a ``DiscordUnreachableError`` whose message
is one line naming the setting to fix: ``discord.base_url`` (login over REST refused the
connection, or answered an HTTP error), ``discord.token_env`` (Discord refused the token),
``discord.gateway_url`` (nothing listens there, the connection ended before READY, or no
READY within a minute). The gateway is probed with a plain TCP connection first: discord.py
would otherwise log a traceback and fail on its own missing state (``self.ws`` is ``None``)
when the first connection is refused.

Closing runs every step whatever the earlier ones did: a close before ``start``, a second
close, a close after a failed start never raise; a failed step is logged.
"""

from __future__ import annotations

__all__ = ("close_steps", "connect", "login", "probe_gateway")

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Final

import aiohttp
import discord
import yarl
from loguru import logger

from rxcord.discord import DiscordUnreachableError

_log = logger.bind(stage="bot")

READY_TIMEOUT: Final = 60.0
"""Seconds from connecting to the gateway to READY (Discord sends it within a few)."""
_PROBE_TIMEOUT: Final = 10.0


def _why(exc: BaseException) -> str:
    """The cause as one short line."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}"[:200] if text else type(exc).__name__


async def login(client: discord.Client, token: str, *, base: str, token_env: str) -> None:
    """Log in over REST; ``DiscordUnreachableError`` naming ``discord.base_url`` or ``discord.token_env``."""
    try:
        await client.login(token)
    except discord.LoginFailure:
        raise DiscordUnreachableError(
            f"Discord refused the bot token in ${token_env} (discord.token_env)"
        ) from None
    except discord.HTTPException as exc:
        raise DiscordUnreachableError(
            f"discord.base_url = {base} answered HTTP {exc.status} (it is the API base, ending in /api/v10)"
        ) from None
    except (aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise DiscordUnreachableError(f"cannot reach discord.base_url = {base} ({_why(exc)})") from None


async def probe_gateway(gateway: str | None) -> None:
    """A TCP connection to the configured gateway, closed at once (``None``: Discord's own)."""
    if not gateway:
        return
    url = yarl.URL(gateway)
    port = url.port or (443 if url.scheme == "wss" else 80)
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(url.host, port), _PROBE_TIMEOUT)
    except (OSError, TimeoutError) as exc:
        raise DiscordUnreachableError(f"cannot reach discord.gateway_url = {gateway} ({_why(exc)})") from None
    writer.close()
    with contextlib.suppress(OSError):  # the probe's own close: nothing was sent
        await writer.wait_closed()


async def connect(client: discord.Client, ready: asyncio.Event, gateway: str | None) -> asyncio.Task[None]:
    """Connect to the gateway until READY; the connection's task (it runs until ``close``)."""
    where = f"discord.gateway_url = {gateway}" if gateway else "Discord's gateway (discord.gateway_url)"
    task = asyncio.create_task(client.connect(reconnect=True))
    waiting = asyncio.create_task(ready.wait())
    done, _ = await asyncio.wait({waiting, task}, timeout=READY_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
    if waiting in done:
        return task
    waiting.cancel()
    if task not in done:
        task.cancel()
        raise DiscordUnreachableError(f"no READY from {where} within {READY_TIMEOUT:.0f} s")
    exc = task.exception() if not task.cancelled() else None
    cause = f" ({_why(exc)})" if exc is not None else ""
    raise DiscordUnreachableError(f"the connection to {where} ended before READY{cause}")


async def close_steps(*steps: tuple[str, Callable[[], Awaitable[object]]]) -> None:
    """Run every step in order; one that fails is logged and the next still runs."""
    for name, step in steps:
        try:
            await step()
        except Exception as exc:
            _log.warning("closing: {step} failed ({error})", step=name, error=type(exc).__name__)
