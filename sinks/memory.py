"""Stage 07 I/O without I/O: a ``DiscordSink`` that records what it is given.

For tests, notebooks and benchmarks of the delivery logic: no HTTP, no rate
limits, no waiting. It remembers every ``(context, payload)``, edit, delete and typing call,
answers with increasing message ids, can raise a chosen exception on the Nth
send (to exercise stop and error paths), and can optionally validate payloads
with the emulator's rules so an over-long message fails here as it would on
Discord.
"""

from __future__ import annotations

__all__ = ("MemorySink",)

from collections.abc import Mapping
from typing import Any

import attrs
from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError
from rxcord.core.state import SentMessage
from rxcord.sinks.emulator import check_message_payload
from rxcord.sinks.rest import discord_error


@attrs.define
class MemorySink:
    """An in-memory ``DiscordSink``.

    Example::

        sink = MemorySink(failures={3: DiscordStopError(status=403, code=50001)})
        await sink.create_message(ctx, {"content": "a"})   # id "1"
        sink.contents()                                     # ["a"]

    Args:
        failures: Send number (1-based, counting every ``create_message`` call) -> exception to raise.
        typing_failures: Typing call number (1-based) -> exception to raise.
        validate: Check payloads with Discord's rules (``check_message_payload``) and raise what
            ``RestSink`` would raise for the 400.
        first_id: The first message id handed out.
    """

    failures: dict[int, BaseException] = attrs.Factory(dict)
    typing_failures: dict[int, BaseException] = attrs.Factory(dict)
    validate: bool = False
    first_id: int = 1
    sent: list[tuple[StreamContext, dict[str, Any]]] = attrs.field(factory=list, init=False)
    """Every accepted ``(context, payload)``, in order (payloads are shallow copies)."""
    typing: list[StreamContext] = attrs.field(factory=list, init=False)
    """Every accepted typing call's context."""
    results: list[SentMessage] = attrs.field(factory=list, init=False)
    """What ``create_message`` returned, in order."""
    send_calls: int = attrs.field(default=0, init=False)
    """``create_message`` calls, including failed ones."""
    typing_calls: int = attrs.field(default=0, init=False)
    edits: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list, init=False)
    """Every accepted edit: ``(message_id, payload)``, in order."""
    deleted: list[str] = attrs.field(factory=list, init=False)
    """Ids of deleted messages, in order (they leave ``results`` and ``sent``)."""
    edit_failures: dict[int, BaseException] = attrs.Factory(dict)
    """Edit or delete call number (1-based, both counted together) -> exception to raise."""
    edit_calls: int = attrs.field(default=0, init=False)
    accepted: int = attrs.field(default=0, init=False)
    """Messages accepted so far (ids are ``first_id + accepted``; a deleted id is never reused)."""

    def fail_on(self, send_number: int, error: BaseException) -> None:
        """Raise ``error`` on the ``send_number``-th ``create_message`` call (1-based)."""
        self.failures[send_number] = error

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        """Record one message and return it with the next id (or raise the injected failure)."""
        self.send_calls += 1
        failure = self.failures.pop(self.send_calls, None)
        if failure is not None:
            raise failure
        if self.validate:
            error = check_message_payload(payload, webhook=context.uses_webhook)
            if error is not None:
                raise discord_error(400, error)
        recorded = dict(payload)
        channel_id = context.thread_id if context.uses_webhook and context.thread_id else context.channel_id
        message = SentMessage(
            payload=recorded, message_id=str(self.first_id + self.accepted), channel_id=channel_id
        )
        self.accepted += 1
        self.sent.append((context, recorded))
        self.results.append(message)
        return message

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        """Update a recorded message's payload (404 / 10008 if it was never sent or is deleted)."""
        index = self._index(message_id)
        if self.validate:
            error = check_message_payload(payload, webhook=context.uses_webhook)
            if error is not None:
                raise discord_error(400, error)
        old = self.results[index]
        recorded = {**old.payload, **payload}
        message = SentMessage(payload=recorded, message_id=message_id, channel_id=old.channel_id)
        self.results[index] = message
        self.sent[index] = (self.sent[index][0], recorded)
        self.edits.append((message_id, dict(payload)))
        return message

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        """Forget a recorded message; one already gone counts as deleted (as ``RestSink`` does)."""
        try:
            index = self._index(message_id)
        except DiscordError:
            return
        del self.results[index]
        del self.sent[index]
        self.deleted.append(message_id)

    def _index(self, message_id: str) -> int:
        self.edit_calls += 1
        failure = self.edit_failures.pop(self.edit_calls, None)
        if failure is not None:
            raise failure
        for index, message in enumerate(self.results):
            if message.message_id == message_id:
                return index
        raise discord_error(404, {"code": 10008, "message": "Unknown Message"})

    async def trigger_typing(self, context: StreamContext) -> None:
        """Record one typing call (or raise the injected failure)."""
        self.typing_calls += 1
        failure = self.typing_failures.pop(self.typing_calls, None)
        if failure is not None:
            raise failure
        self.typing.append(context)

    def payloads(self, channel_id: str | None = None) -> list[dict[str, Any]]:
        """Recorded payloads, optionally only those sent to ``channel_id``."""
        return [
            message.payload if isinstance(message.payload, dict) else dict(message.payload)
            for message in self.results
            if channel_id is None or message.channel_id == channel_id
        ]

    def contents(self, channel_id: str | None = None) -> list[str]:
        """The ``content`` of every recorded message (``""`` when absent), optionally for one channel."""
        return [str(payload.get("content") or "") for payload in self.payloads(channel_id)]
