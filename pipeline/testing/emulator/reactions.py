"""The bot's own reactions: add (``PUT .../reactions/{emoji_name}/@me``) and remove (``DELETE``).

The message object carries ``reactions`` as Discord shows them (emoji, count, ``me``: whether
the bot reacted), and each change is published (``reaction_add`` / ``reaction_remove``, with
the message id, the emoji and the user) so a test can read the order of what happened, not
only the state at the end. Unicode emoji only (a custom emoji's ``name:id`` is kept as text).
"""

from __future__ import annotations

__all__ = ("ROUTE_REACTION", "install")

import urllib.parse
from typing import TYPE_CHECKING, Any, Final

from aiohttp import web

from rxcord.core.errors import ApiError

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator
    from rxcord.testing.emulator.store import Stored

ROUTE_REACTION: Final = "/channels/{channel_id}/messages/{message_id}/reactions/{emoji_name}/@me"


def install(emu: DiscordEmulator) -> None:
    """Add the routes; who reacted with what is kept per message, by emoji, in reaction order."""
    users: dict[str, dict[str, list[str]]] = {}

    def target(request: web.Request) -> tuple[Stored, str]:
        channel_id = request.match_info["channel_id"]
        emu.check_channel(channel_id)
        stored = emu.store.get_in(channel_id, request.match_info["message_id"])
        emoji = urllib.parse.unquote(request.match_info["emoji_name"])
        if not emoji or len(emoji) > 64:
            raise ApiError(400, 10014, "Unknown Emoji")
        return stored, emoji

    def publish(kind: str, stored: Stored, emoji: str) -> None:
        by_emoji = users.get(stored.id, {})
        stored.message["reactions"] = _reactions(by_emoji, emu.config.bot_id)
        data = {"message_id": stored.id, "channel_id": stored.channel_id, "emoji": emoji}
        emu.events.publish(kind, {**data, "user_id": emu.config.bot_id})

    async def add(emu_: DiscordEmulator, request: web.Request) -> web.Response:
        stored, emoji = target(request)
        reacted = users.setdefault(stored.id, {}).setdefault(emoji, [])
        if emu.config.bot_id not in reacted:  # adding twice is a no-op, as on Discord
            reacted.append(emu.config.bot_id)
            publish("reaction_add", stored, emoji)
        return web.Response(status=204)

    async def remove(emu_: DiscordEmulator, request: web.Request) -> web.Response:
        stored, emoji = target(request)
        reacted = users.get(stored.id, {}).get(emoji, [])
        if emu.config.bot_id in reacted:
            reacted.remove(emu.config.bot_id)
            if not reacted:
                del users[stored.id][emoji]
            publish("reaction_remove", stored, emoji)
        return web.Response(status=204)

    emu.add(f"PUT {ROUTE_REACTION}", add)
    emu.add(f"DELETE {ROUTE_REACTION}", remove)


def _reactions(by_emoji: dict[str, list[str]], bot_id: str) -> list[dict[str, Any]]:
    return [
        {
            "emoji": {"id": None, "name": emoji},
            "count": len(reacted),
            "count_details": {"burst": 0, "normal": len(reacted)},
            "me": bot_id in reacted,
            "me_burst": False,
            "burst_colors": [],
        }
        for emoji, reacted in by_emoji.items()
    ]
