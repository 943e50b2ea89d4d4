"""Identity routes: the bot user, its application, and where the gateway is."""

from __future__ import annotations

__all__ = ("install",)

from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from rxcord.testing.emulator.config import ROUTE_APPLICATION, ROUTE_GATEWAY, ROUTE_ME
from rxcord.testing.emulator.wire import json_response, user_object

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator

ROUTE_GATEWAY_PLAIN: Final = "GET /gateway"


def install(emu: DiscordEmulator) -> None:
    """Add ``/users/@me``, ``/oauth2/applications/@me``, ``/gateway`` and ``/gateway/bot``."""
    emu.add(ROUTE_ME, me)
    emu.add(ROUTE_APPLICATION, application)
    emu.add(ROUTE_GATEWAY, gateway_bot)
    emu.add(ROUTE_GATEWAY_PLAIN, gateway, auth=False)


async def me(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /users/@me``: the bot user with every field discord.py reads."""
    cfg = emu.config
    body = {
        **user_object(cfg.bot_id, cfg.bot_username, bot=True),
        "system": False,
        "mfa_enabled": False,
        "banner": None,
        "accent_color": None,
        "locale": "en-US",
        "verified": True,
        "email": None,
        "flags": 0,
        "premium_type": 0,
        "avatar_decoration_data": None,
    }
    return json_response(200, body)


async def application(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /oauth2/applications/@me``: every field Discord's description requires.

    Those of ``PrivateApplicationResponse``, so discord.py's AppInfo also finds all it reads.
    """
    cfg = emu.config
    body: dict[str, Any] = {
        "id": cfg.application_id,
        "name": cfg.bot_username,
        "icon": None,
        "description": "",
        "summary": "",
        "type": None,
        "bot_public": True,
        "bot_require_code_grant": False,
        "verify_key": "0" * 64,
        "flags": 0,
        "owner": user_object(cfg.owner_id, "emulator-owner"),
        "team": None,
        "rpc_origins": [],
        "redirect_uris": [],
        "tags": [],
        "interactions_endpoint_url": None,
        "role_connections_verification_url": None,
        "integration_types_config": {},
        "approximate_guild_count": 1,
        "approximate_user_install_count": 0,
        "approximate_user_authorization_count": 0,
        "flags_new": "0",
        "explicit_content_filter": 0,
        "eligible_oauth2_scopes": ["bot", "applications.commands"],
        "bot": user_object(cfg.bot_id, cfg.bot_username, bot=True),
    }
    return json_response(200, body)


async def gateway(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /gateway``: the emulator's own websocket URL (nothing external is ever contacted)."""
    return json_response(200, {"url": emu.gateway_url})


async def gateway_bot(emu: DiscordEmulator, request: web.Request) -> web.Response:
    """``GET /gateway/bot``: the URL, one shard and a session start limit that never runs out."""
    body = {
        "url": emu.gateway_url,
        "shards": 1,
        "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1},
    }
    return json_response(200, body)
