"""Stage 07 I/O without I/O: a ``DiscordSink`` that records what it is given.

For tests, notebooks and benchmarks of the delivery logic: no HTTP, no rate
limits, no waiting. It remembers every ``(context, payload)``, edit, delete and typing call,
answers with increasing message ids, can raise a chosen exception on the Nth
send (to exercise stop and error paths), can answer the Nth send ambiguously
(no message id, the message stored or not: a 500 or a reset after the request
was sent, a 2xx without a usable body), can honour ``enforce_nonce`` as Discord
does, lists its messages back (``recent_messages``, newest first, as Discord's
message objects), and can optionally validate payloads with Discord's
rules (``rxcord.sinks.payload_rules``) so an over-long message fails here as it would on Discord.
"""

from __future__ import annotations

__all__ = ("MemorySink",)

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from rxcord.core.config import StreamContext
from rxcord.core.errors import DiscordError
from rxcord.core.state import SentMessage
from rxcord.sinks.payload_rules import check_message_payload
from rxcord.sinks.rest import discord_error
from rxcord.sinks.uploads import Upload, split_uploads


@attrs.define
class MemorySink:
    """An in-memory ``DiscordSink``.

    Example::

        sink = MemorySink(failures={3: DiscordStopError(status=403, code=50001)})
        await sink.create_message(ctx, {"content": "a"})   # id "1"
        sink.contents                                       # ["a"]

    Args:
        failures: Send number (1-based, counting every ``create_message`` call) -> exception to raise.
        typing_failures: Typing call number (1-based) -> exception to raise.
        validate: Check payloads with Discord's rules (``check_message_payload``) and raise what
            ``RestSink`` would raise for the 400.
        first_id: The first message id handed out.
        ambiguous: Send number (1-based) -> ``"stored"`` or ``"lost"``: that send is answered
            without a message id, the message kept or not (what ``RestSink`` returns after an
            ambiguous failure of a webhook message, or a 2xx it could not read).
        enforce_nonces: Answer a bot send with the ``nonce`` of an earlier one (and
            ``enforce_nonce``) with that message, as Discord does (404 / 10008 once deleted).
        readable: Whether ``recent_messages`` can read the channel (``False``: a webhook-only sink).
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
    ambiguous: dict[int, Literal["stored", "lost"]] = attrs.Factory(dict)
    enforce_nonces: bool = False
    readable: bool = True
    reads: int = attrs.field(default=0, init=False)
    """``recent_messages`` calls."""
    files: dict[str, tuple[Upload, ...]] = attrs.field(factory=dict, init=False)
    """Message id -> the files sent with it (``rxcord.sinks.uploads``; ``sent`` holds the JSON body)."""
    _nonces: dict[tuple[str, str], str] = attrs.field(factory=dict, init=False)
    """(channel, nonce) -> message id, for ``enforce_nonces``."""

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
        recorded, uploads = split_uploads(payload)
        channel_id = context.thread_id if context.uses_webhook and context.thread_id else context.channel_id
        nonce = self._nonce(context, payload)
        if nonce is not None and (channel_id, nonce) in self._nonces:
            return self.results[self._index_of(self._nonces[channel_id, nonce])]
        outcome = self.ambiguous.pop(self.send_calls, None)
        if outcome == "lost":
            return SentMessage(payload=recorded, message_id=None, channel_id=channel_id)
        message = SentMessage(
            payload=recorded, message_id=str(self.first_id + self.accepted), channel_id=channel_id
        )
        self.accepted += 1
        if uploads:
            self.files[str(message.message_id)] = uploads
        self.sent.append((context, recorded))
        self.results.append(message)
        if nonce is not None:
            self._nonces[channel_id, nonce] = str(message.message_id)
        if outcome == "stored":
            return attrs.evolve(message, message_id=None)
        return message

    def _nonce(self, context: StreamContext, payload: Mapping[str, Any]) -> str | None:
        nonce = payload.get("nonce")
        if not self.enforce_nonces or context.uses_webhook or not payload.get("enforce_nonce"):
            return None
        if nonce is None:
            return None
        return str(nonce)

    def _index_of(self, message_id: str) -> int:
        for index, message in enumerate(self.results):
            if message.message_id == message_id:
                return index
        raise discord_error(404, {"code": 10008, "message": "Unknown Message"})

    async def recent_messages(self, context: StreamContext, limit: int) -> list[dict[str, Any]] | None:
        """The channel's latest *limit* messages, newest first, shaped as Discord's (``None``: unreadable)."""
        self.reads += 1
        if not self.readable:
            return None
        channel_id = context.thread_id if context.uses_webhook and context.thread_id else context.channel_id
        out: list[dict[str, Any]] = []
        for (sent_in, payload), message in zip(reversed(self.sent), reversed(self.results), strict=True):
            if message.channel_id != channel_id:
                continue
            out.append(_discord_message(sent_in, payload, message))
            if len(out) >= limit:
                break
        return out

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
        return self._index_of(message_id)

    async def trigger_typing(self, context: StreamContext) -> None:
        """Record one typing call (or raise the injected failure)."""
        self.typing_calls += 1
        failure = self.typing_failures.pop(self.typing_calls, None)
        if failure is not None:
            raise failure
        self.typing.append(context)

    @property
    def payloads(self) -> list[dict[str, Any]]:
        """The payload of every message the channel holds now, in order (edits applied, deletes gone).

        A read-only attribute like ``sent`` and ``edits`` (it was a method before 0.2): filter
        ``results`` by ``channel_id`` for one channel.
        """
        return [m.payload if isinstance(m.payload, dict) else dict(m.payload) for m in self.results]

    @property
    def contents(self) -> list[str]:
        """The ``content`` of every message the channel holds now (``""`` when absent), in order."""
        return [str(payload.get("content") or "") for payload in self.payloads]


def _discord_message(
    context: StreamContext, payload: Mapping[str, Any], message: SentMessage
) -> dict[str, Any]:
    """A recorded message as Discord lists it (the fields a lookup reads)."""
    out: dict[str, Any] = {
        "id": message.message_id,
        "channel_id": message.channel_id,
        "content": str(payload.get("content") or ""),
        "embeds": list(payload.get("embeds") or ()),
        "author": {"bot": True},
    }
    if context.uses_webhook:
        out["webhook_id"] = context.webhook_id
    elif payload.get("nonce") is not None:
        out["nonce"] = payload["nonce"]
    return out
