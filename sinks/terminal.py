"""A sink that prints messages to a text stream (``rxcord chat`` without Discord)."""

from __future__ import annotations

__all__ = ("TerminalSink",)

import sys
from collections.abc import Mapping
from typing import Any, TextIO

import attrs

from rxcord.core.config import StreamContext
from rxcord.core.state import SentMessage
from rxcord.sinks.uploads import split_uploads


@attrs.define
class TerminalSink:
    """Prints each message's content (and embed titles) as it is "sent"."""

    out: TextIO = attrs.field(factory=lambda: sys.stdout)
    count: int = 0

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        """Print the message."""
        self.count += 1
        content = payload.get("content")
        if content:
            self.out.write(content + "\n")
        for embed in payload.get("embeds") or []:
            self.out.write(f"[{embed.get('title', 'error')}] {embed.get('description', '')}\n")
        body, _ = split_uploads(payload)
        for attachment in body.get("attachments") or []:
            # A terminal cannot show a picture: its name, and its alt text (a table's markdown).
            self.out.write(f"[{attachment.get('filename')}]\n{attachment.get('description') or ''}\n")
        self.out.flush()
        return SentMessage(payload=body, message_id=str(self.count), channel_id=context.channel_id)

    async def trigger_typing(self, context: StreamContext) -> None:
        """Nothing to show in a terminal."""

    async def recent_messages(self, context: StreamContext, limit: int) -> None:
        """A terminal cannot be read back: ``None``."""
        return None
