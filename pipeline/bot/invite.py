"""The bot's invite link: the OAuth2 URL a server admin opens to add the bot, with the permissions it needs.

The permission integer is computed from named flags (Discord's bit numbers), so adding one is a
one-word change and the test checks the number against discord.py's own flags.
"""

from __future__ import annotations

__all__ = ("NEEDED", "PERMISSION_BITS", "invite_url", "permissions_value")

from collections.abc import Iterable
from typing import Final
from urllib.parse import urlencode

PERMISSION_BITS: Final = {
    "ADD_REACTIONS": 6,
    "VIEW_CHANNEL": 10,
    "SEND_MESSAGES": 11,
    "EMBED_LINKS": 14,
    "ATTACH_FILES": 15,
    "READ_MESSAGE_HISTORY": 16,
    "USE_APPLICATION_COMMANDS": 31,
    "SEND_MESSAGES_IN_THREADS": 38,
}
"""Discord's permission bits the bot uses, by name."""

NEEDED: Final = (
    "VIEW_CHANNEL",  # see the channels it answers in
    "SEND_MESSAGES",  # answer
    "SEND_MESSAGES_IN_THREADS",  # answer in threads (SEND_MESSAGES does not apply there)
    "READ_MESSAGE_HISTORY",  # read reply chains, and reply at all (160002 without it)
    "EMBED_LINKS",  # error embeds
    "ATTACH_FILES",  # tables as pictures, long code as files
    "ADD_REACTIONS",  # the writing and the limits' reactions
    "USE_APPLICATION_COMMANDS",  # /stop, /kill, /model
)


def permissions_value(names: Iterable[str] = NEEDED) -> int:
    """The permission integer of *names* (``KeyError`` for a name Discord does not have here)."""
    value = 0
    for name in names:
        value |= 1 << PERMISSION_BITS[name]
    return value


def invite_url(application_id: int | str, names: Iterable[str] = NEEDED) -> str:
    """``https://discord.com/oauth2/authorize?client_id=...&scope=bot+applications.commands&permissions=N``."""
    query = urlencode(
        {
            "client_id": str(application_id),
            "scope": "bot applications.commands",
            "permissions": str(permissions_value(names)),
        }
    )
    return f"https://discord.com/oauth2/authorize?{query}"
