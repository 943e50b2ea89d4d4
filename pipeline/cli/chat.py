"""``rxcord chat``: stream a real reply through the chain, to the terminal or to Discord.

The API key comes from the provider's usual environment variable; the
Discord bot token from ``DISCORD_BOT_TOKEN`` (or a webhook URL). The Discord
base URL can be switched (``--discord-base-url`` or
``RXCORD_DISCORD_BASE_URL``), which is how tests point it at the emulator.
"""

from __future__ import annotations

__all__ = ("API_KEY_VARIABLES", "DEFAULT_BASE_URLS", "chat_command")

import argparse
import os
import re
from collections.abc import Callable
from typing import Final

import aiohttp

from rxcord.compose.run import stream_to_discord
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.errors import InputError, MissingCredentialError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import DeliveryMode
from rxcord.providers.registry import default_registry
from rxcord.providers.ssrf import endpoint_url
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.base import DiscordSink

API_KEY_VARIABLES: Final = {
    "openai": "OPENAI_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
    "google": "GEMINI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "nvidia": "NVIDIA_API_KEY",
    "custom": "RXCORD_API_KEY",
}
DEFAULT_BASE_URLS: Final = {
    "openai": "https://api.openai.com/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "google": "https://generativelanguage.googleapis.com",
    "anthropic": "https://api.anthropic.com",
    "nvidia": "https://integrate.api.nvidia.com/v1",
}
DISCORD_API: Final = "https://discord.com/api/v10"
_WEBHOOK_RE: Final = re.compile(
    r"^(?P<base>https?://[^/]+(?:/api(?:/v\d+)?)?)/webhooks/(?P<id>\d+)/(?P<token>[^/?#]+)"
)


async def chat_command(args: argparse.Namespace, out: Callable[[str], None]) -> None:
    """Run ``rxcord chat`` from parsed arguments."""
    registry = default_registry()
    if args.provider not in registry.names():
        raise InputError(f"unknown provider {args.provider!r}")
    variable = API_KEY_VARIABLES[args.provider]
    api_key = os.environ.get(variable)
    if not api_key:
        raise MissingCredentialError(variable)
    if args.base_url:
        endpoint_url(args.base_url, setting="--base-url")  # malformed: an InputError naming the flag
    base_url = args.base_url or DEFAULT_BASE_URLS.get(args.provider)
    if not base_url:
        raise InputError("--base-url is required for the custom provider")
    adapter = registry.create(args.provider)
    request = ChatRequest(model=args.model, system=args.system, messages=(Message.user(args.prompt),))
    transport = TransportConfig(allow_private_network=bool(getattr(args, "allow_loopback", False)))
    async with aiohttp.ClientSession() as session:
        sink, context = _target(args, session)
        result = await stream_to_discord(
            adapter,
            request,
            sink=sink,
            base_url=base_url,
            api_key=api_key,
            context=context,
            config=StreamConfig(delivery=DeliveryMode(args.delivery)),
            transport=transport,
            session=session,
            secrets=tuple(value for value in (os.environ.get("DISCORD_BOT_TOKEN"),) if value),
        )
    out(f"-- {result.status.value}" + (f": {result.error.message}" if result.error else ""))


def _target(args: argparse.Namespace, session: aiohttp.ClientSession) -> tuple[DiscordSink, StreamContext]:
    from rxcord.sinks.rest import RestSink
    from rxcord.sinks.terminal import TerminalSink

    discord_base = args.discord_base_url or os.environ.get("RXCORD_DISCORD_BASE_URL") or DISCORD_API
    if args.webhook_url:
        match = _WEBHOOK_RE.match(args.webhook_url)
        if match is None:
            raise InputError("--webhook-url is not a Discord webhook URL")
        base = args.discord_base_url or os.environ.get("RXCORD_DISCORD_BASE_URL") or match.group("base")
        if not base.rstrip("/").endswith(("/api", "/v10")) and "/api" not in base:
            base = base.rstrip("/") + "/api/v10"
        context = StreamContext(
            channel_id="webhook", webhook_id=match.group("id"), webhook_token=match.group("token")
        )
        return RestSink(base, None, session=session), context
    if args.discord_channel:
        token = os.environ.get("DISCORD_BOT_TOKEN")
        if not token:
            raise MissingCredentialError("DISCORD_BOT_TOKEN")
        return RestSink(discord_base, token, session=session), StreamContext(channel_id=args.discord_channel)
    return TerminalSink(), StreamContext(channel_id="terminal")
