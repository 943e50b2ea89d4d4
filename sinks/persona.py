"""Persona names for webhook messages, made acceptable to Discord (stage 07, pure).

Discord rejects a webhook ``username`` override that is empty or longer
than 80 characters, contains ``discord`` or ``clyde`` (any case), ``@``,
``#``, ``:`` or a code fence, or is exactly ``everyone`` or ``here``. A
rejected name would fail every message of the answer, so the name is
repaired instead (the forbidden parts removed, whitespace collapsed, cut to
80 characters); a name that cannot be repaired falls back to the
webhook's own name (no override).

Webhooks cannot reply, so the delivery layer posts a short notice with a jump
link to the user's message (``reply_jump_link``). When the answer goes into a
thread, the user's message is in that thread, and so is the link.
"""

from __future__ import annotations

__all__ = ("reply_jump_link", "webhook_username")

import re
from typing import Final

from rxcord.core.config import StreamContext

_FORBIDDEN: Final = re.compile(r"discord|clyde|```|[@#:]", re.IGNORECASE)
_RESERVED: Final = frozenset({"everyone", "here"})
_MAX: Final = 80


def webhook_username(name: str | None) -> str | None:
    """A username override Discord accepts, derived from *name*; ``None`` when there is none."""
    if not name:
        return None
    cleaned = name
    while True:
        repaired = _FORBIDDEN.sub("", cleaned)
        if repaired == cleaned:
            break
        cleaned = repaired  # removal can join a new forbidden word ("disclydecord")
    cleaned = " ".join(cleaned.split())[:_MAX].strip()
    if not cleaned or cleaned.lower() in _RESERVED:
        return None
    return cleaned


def reply_jump_link(context: StreamContext) -> str:
    """The jump link to the message ``context`` replies to, in the thread when delivery goes to one."""
    guild = context.guild_id or "@me"
    channel = context.thread_id if context.uses_webhook and context.thread_id else context.channel_id
    return f"https://discord.com/channels/{guild}/{channel}/{context.reply_to_message_id}"
