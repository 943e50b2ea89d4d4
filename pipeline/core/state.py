"""Values that flow after routing: ``StreamState``, ``Segment``, ``Delivery`` and ``StreamResult``.

A leaf module. ``StreamState`` is what the scan accumulator (stage 04) emits
once per routed chunk; it holds only this step's delta plus the running
terminal facts, so the accumulator's cost per chunk does not grow with the
length of the stream. Full texts are assembled once, at the end, into the
``StreamResult``.
"""

from __future__ import annotations

__all__ = ("Delivery", "Segment", "SentMessage", "StreamResult", "StreamState", "TypingPulse")

from collections.abc import Mapping
from typing import Any

import attrs

from rxcord.core.types import (
    FinishReason,
    FunctionCall,
    ProviderError,
    SegmentKind,
    StopKind,
    StopSignal,
    StreamStatus,
    ThoughtLogEntry,
    Usage,
)


@attrs.frozen(kw_only=True)
class StreamState:
    """The orchestrator's state after routing one ``ProcessedChunk`` (or a stop)."""

    status: StreamStatus = StreamStatus.STREAMING
    """``STREAMING`` until a call, an error or a stop decides the outcome."""
    index: int = 0
    """How many processed chunks have been routed (1 after the first)."""
    delta: str = ""
    """Visible text this step routed to the buffer."""
    thoughts: tuple[ThoughtLogEntry, ...] = ()
    """Reasoning this step carried."""
    function_call: FunctionCall | None = None
    """The call this step completed, if any."""
    error: ProviderError | None = None
    """The error that ended the stream."""
    stop: StopSignal | None = None
    """The stop that ended the stream."""
    finish_reason: FinishReason | None = None
    """The latest normalized finish reason."""
    raw_finish_reason: str | None = None
    """The provider's own finish reason."""
    usage: Usage | None = None
    """The latest usage report (streams that repeat usage are taken at their last report)."""
    serving_provider: str | None = None
    """First non-empty serving backend."""
    request_id: str | None = None
    """The provider's id of the response (from a ``done`` chunk's ``request_id`` metadata)."""

    @property
    def ended(self) -> bool:
        """Whether the outcome is decided and no more text will be routed."""
        return self.status is not StreamStatus.STREAMING


@attrs.frozen(kw_only=True)
class Segment:
    """A piece of the buffer released by the flusher (stage 05)."""

    kind: SegmentKind
    text: str = ""
    embed: Mapping[str, Any] | None = None
    """The embed object for ``ERROR_EMBED`` segments."""
    final: bool = False
    """The last segment of the stream (no more text follows)."""


@attrs.frozen(kw_only=True)
class SentMessage:
    """One Discord message as the sink sent it."""

    payload: Mapping[str, Any]
    """The JSON body exactly as sent (content, allowed_mentions, nonce, ...)."""
    message_id: str | None = None
    """The id Discord returned (``None`` for fire-and-forget webhooks)."""
    channel_id: str | None = None


@attrs.frozen(kw_only=True)
class Delivery:
    """What stage 07 did with one segment or typing pulse."""

    segment: Segment | None = None
    """The segment delivered (``None`` for a typing pulse)."""
    messages: tuple[SentMessage, ...] = ()
    """Messages sent for this segment (empty for thought and details segments)."""
    typing: int = 0
    """Typing-indicator calls made."""
    stopped: StopKind | None = None
    """Set when delivery hit an internal stop (missing access, deleted channel, message cap) or an
    interrupt that discarded messages."""
    partial: bool = False
    """Only some of the segment's messages were sent (a stop cut it short): ``messages`` is what went out."""


@attrs.frozen(kw_only=True)
class StreamResult:
    """The outcome of one stream.

    Two texts, read by the names that say which is which:

    * ``generated_text`` (the field ``visible_text``): what the model generated, as stage 03
      emitted it, before stage 06's cleaning (mentions, render modifiers) and before any
      user stage between ``flush`` and ``deliver`` (a moderation filter) changed it.
    * ``discord_text`` (the field ``accumulated_text``): what Discord holds, the contents of
      ``messages`` as sent (cleaned, filtered, cut short by a stop or a cap).

    ``messages`` are the messages left in Discord, in order, also after a kill or an interrupt
    (``rxcord.compose.stopped``). ``usage`` is the provider's report, or an estimate flagged
    ``Usage.estimated`` when a stop ended the stream before the report came. The fields keep
    their names (the constructor, cattrs and ``rxcord replay --json`` use them); the two
    properties are the names to read in new code.
    """

    status: StreamStatus
    accumulated_text: str = ""
    """Text that reached Discord (after cleaning and user stages), concatenated: what Discord
    holds (read it as ``discord_text``).

    A segment a stop cut short counts with the messages that were sent (their contents,
    joined by newlines), so a reply stopped by ``send_message_limit`` reports only what
    Discord accepted.
    """
    visible_text: str = ""
    """Visible text as stage 03 emitted it, routed before the stream ended, concatenated: what
    the model generated (read it as ``generated_text``; "visible" as opposed to reasoning, not
    as what Discord shows). It differs from ``accumulated_text`` when a stop, a cap or a Discord refusal
    kept some of it from Discord (and by cleaning: mentions, render modifiers)."""
    reasoning: str | None = None
    """All reasoning text (raw and summary), concatenated; ``None`` when there was none."""
    thought_log: str | None = None
    """Compiled thought log (summaries, raw thoughts, in-band ``<think>`` blocks, serving-provider footer)."""
    thoughts: tuple[ThoughtLogEntry, ...] = ()
    details_content: str | None = None
    """Collected ``<details>`` blocks, for short-term memory."""
    usage: Usage | None = None
    serving_provider: str | None = None
    function_call: FunctionCall | None = None
    """The first function call (the one the tool loop runs first)."""
    function_calls: tuple[FunctionCall, ...] = ()
    """Every function call, in order."""
    error: ProviderError | None = None
    finish_reason: FinishReason | None = None
    raw_finish_reason: str | None = None
    messages: tuple[SentMessage, ...] = ()
    """The Discord messages the reply left, in order (after a kill or an interrupt too: the
    delivery's record of what Discord accepted)."""
    chunk_count: int = 0
    """Processed chunks routed."""
    request_id: str | None = None
    """The provider's identity of the response (``chatcmpl-...``, ``gen-...``, ``msg_...``), when sent."""

    @property
    def generated_text(self) -> str:
        """What the model generated (stage 03's visible text): the field ``visible_text``."""
        return self.visible_text

    @property
    def discord_text(self) -> str:
        """What Discord holds of the reply (the contents of ``messages``): the field ``accumulated_text``."""
        return self.accumulated_text


@attrs.frozen
class TypingPulse:
    """A request to show (or refresh) Discord's typing indicator."""
