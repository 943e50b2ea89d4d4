"""Configuration of one stream: what to do (``StreamConfig``) and where (``StreamContext``).

A leaf module, like ``rxcord.core.types``. Both classes are frozen: a stream's
configuration never changes while it runs.
"""

from __future__ import annotations

__all__ = ("Guards", "RenderModifiers", "StreamConfig", "StreamContext", "TableStyle")

import enum
from typing import Any

import attrs

from rxcord.core.errors import InputError
from rxcord.core.types import DeliveryMode

DISCORD_MESSAGE_LIMIT = 2000
"""Discord's content limit for bots, in code points."""


class TableStyle(str, enum.Enum):
    """How a markdown table is sent (Discord does not render them)."""

    PICTURE = "picture"
    """A wide table is a PNG attachment, its markdown the alt text; a narrow one stays monospace."""
    MONOSPACE = "monospace"
    """Every table is an aligned monospace code block in the text."""


@attrs.frozen(kw_only=True)
class Guards:
    """Which stage 03 text guards a provider's stream needs: declared by the adapter, as data.

    The guards exist because some backends leak reasoning into the answer text or
    write tool calls as prose. An adapter declares the ones its wire can need; the
    default pipeline (``rxcord.compose.pipeline``) adds exactly those stages, and a
    caller can add or remove them for a custom endpoint.
    """

    think_tags: bool = False
    """Reroute ``<think>`` blocks leaked into the content into reasoning (``think_strip``)."""
    think_start_window: int = 0
    """Characters at the stream's start held for a stray ``</think>`` (a template-opened block).

    ``0``: nothing is held, so live text starts at once; openers are still caught
    anywhere. Every adapter that runs the think stripper holds the same window (256)
    wherever an open-weight model may answer, so a leading stray closer gives the same
    result on each (OpenAI's own API holds none: ``guards_for``); a graceful stop delivers
    what the window held as the answer (``rxcord.operators.reasoning.held_at_stop``).
    """
    spill: bool = False
    """Catch a tagless reasoning tail glued to the first visible text (``spill_guard``)."""
    verbatim_tools: frozenset[str] = frozenset()
    """Recover tool calls written as prose, for these exposed tool names (empty: off)."""


@attrs.frozen(kw_only=True)
class RenderModifiers:
    """The humanizer's render modifiers (stage 06). Splits and pacing need live delivery."""

    force_lowercase: bool = False
    """Lowercase prose (never code, URLs, mentions or emoji)."""
    sentence_splitting: bool = False
    """Send each sentence as its own message (live delivery only)."""
    punctuation_splits: bool = False
    """Strip semicolons, roll comma splits and emphasis (live delivery only)."""
    paced_messages: bool = False
    """Interruptible, length-scaled delays between follow-up messages (live delivery only)."""
    seed: int = 0
    """Seed of the random source for rolls and pauses, so output is reproducible."""


def _positive_or_none(_: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    if value is not None and not value > 0:  # NaN too
        raise InputError(f"{attribute.name} must be a number of seconds above 0, or None (no deadline)")


@attrs.frozen(kw_only=True)
class StreamConfig:
    """Behaviour of one stream, from flush timing to caps."""

    delivery: DeliveryMode = DeliveryMode.AGGREGATED
    """Aggregated (one batch) or live (segments as they become safe to send)."""
    live_idle_flush: float = 1.5
    """Live mode: flush what is safe after this many seconds without new text."""
    live_min_chars: int = 1
    """Live mode: do not flush a boundary segment shorter than this."""
    idle_timeout: float = 60.0
    """No chunk for this many seconds ends the stream with a retryable ``timeout`` error."""
    max_stream_seconds: float | None = attrs.field(default=600.0, validator=_positive_or_none)
    """The whole stream's deadline, from its start: past it the stream stops (``stream_deadline``),
    keeping and delivering the text so far. ``None``: no deadline (only ``idle_timeout`` bounds it)."""
    typing_interval: float = 8.0
    """Refresh Discord's typing indicator this often while nothing has been sent (it lasts 10 s)."""
    message_limit: int = DISCORD_MESSAGE_LIMIT
    """Maximum code points per Discord message."""
    max_messages: int = 100
    """Per-turn cap on messages sent; reaching it stops the stream with ``send_message_limit``."""
    max_flushes: int = 1000
    """Per-turn cap on flushes; reaching it stops the stream with ``flush_limit``."""
    suppress_user_errors: bool = False
    """Never show the error embed (the caller reports errors itself)."""
    defer_notice: bool = False
    """Leave the error notice to the turn runner (one notice per turn, not per attempt)."""
    speaker_names: tuple[str, ...] = ()
    """Other speakers' names; the model writing ``\\nName:`` stops the stream (``speaker_guard``)."""
    persona_name: str | None = None
    """The bot persona's name: a leading ``Name:`` prefix in output is removed."""
    allow_everyone: bool = False
    """Allow ``@everyone``/``@here`` pings (off: ``allowed_mentions`` never parses them)."""
    allow_roles: bool = False
    """Allow role pings."""
    render: RenderModifiers = RenderModifiers()
    tables: TableStyle = TableStyle.PICTURE
    """Markdown tables: pictures (attachments, text before sent first) or monospace blocks.

    ``PICTURE`` sends a table wider than ``rxcord.operators.markdown.tables.INLINE_WIDTH`` columns
    as a PNG in every delivery mode (edit in place commits the text before it and edits the
    text after it in new messages)."""
    """Humanizer render modifiers."""
    prefill: str = ""
    """Assistant prefill sent with the request; the delivered text starts with it."""


@attrs.frozen(kw_only=True)
class StreamContext:
    """Where the answer goes in Discord."""

    channel_id: str = "1"
    """The target channel (or thread) id."""
    guild_id: str | None = None
    reply_to_message_id: str | None = None
    """The user message the answer replies to (first message only)."""
    thread_id: str | None = None
    """For webhooks: post into this thread of the webhook's channel."""
    webhook_id: str | None = None
    webhook_token: str | None = attrs.field(default=None, repr=False)
    """Secret: never logged or shown in a repr."""
    persona_username: str | None = None
    """Webhook username override (validated against Discord's rules)."""
    persona_avatar_url: str | None = None
    locale: str | None = None
    """The Discord locale of the reader (``en-US``, ``de``, ``pt-BR``: the guild's
    ``preferred_locale`` or the interaction's ``locale``); notices are written in it
    (``rxcord.io.locales``). ``None``: the locale already bound, else English."""

    @property
    def uses_webhook(self) -> bool:
        """Whether delivery goes through the persona webhook."""
        return self.webhook_id is not None and self.webhook_token is not None
