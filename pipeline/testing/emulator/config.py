"""What an emulator is configured with and what it counts: limits, channels, the guild, faults."""

from __future__ import annotations

__all__ = (
    "API_PREFIX",
    "DISCORD_EPOCH_MS",
    "GATEWAY_PATH",
    "ROUTE_APPLICATION",
    "ROUTE_CREATE",
    "ROUTE_DELETE",
    "ROUTE_EDIT",
    "ROUTE_EXECUTE",
    "ROUTE_GATEWAY",
    "ROUTE_GET",
    "ROUTE_LIST",
    "ROUTE_ME",
    "ROUTE_TYPING",
    "ROUTE_WEBHOOK",
    "ROUTE_WEBHOOK_DELETE",
    "ROUTE_WEBHOOK_EDIT",
    "ROUTE_WEBHOOK_GET",
    "EmulatedChannel",
    "EmulatedWebhook",
    "EmulatorConfig",
    "EmulatorCounters",
    "Fault",
    "FaultKind",
    "Scope",
)

import collections
from typing import Final, Literal

import attrs

API_PREFIX: Final = "/api/v10"
GATEWAY_PATH: Final = "/gateway"
"""Where the gateway websocket is served (``ws://HOST:PORT/gateway``)."""
DISCORD_EPOCH_MS: Final = 1_420_070_400_000
"""Milliseconds from the Unix epoch to Discord's (2015-01-01), the origin of snowflake timestamps."""

ROUTE_CREATE: Final = "POST /channels/{channel_id}/messages"
ROUTE_LIST: Final = "GET /channels/{channel_id}/messages"
ROUTE_GET: Final = "GET /channels/{channel_id}/messages/{message_id}"
ROUTE_EDIT: Final = "PATCH /channels/{channel_id}/messages/{message_id}"
ROUTE_DELETE: Final = "DELETE /channels/{channel_id}/messages/{message_id}"
ROUTE_TYPING: Final = "POST /channels/{channel_id}/typing"
ROUTE_EXECUTE: Final = "POST /webhooks/{webhook_id}/{webhook_token}"
ROUTE_WEBHOOK: Final = "GET /webhooks/{webhook_id}/{webhook_token}"
ROUTE_WEBHOOK_GET: Final = "GET /webhooks/{webhook_id}/{webhook_token}/messages/{message_id}"
ROUTE_WEBHOOK_EDIT: Final = "PATCH /webhooks/{webhook_id}/{webhook_token}/messages/{message_id}"
ROUTE_WEBHOOK_DELETE: Final = "DELETE /webhooks/{webhook_id}/{webhook_token}/messages/{message_id}"
ROUTE_ME: Final = "GET /users/@me"
ROUTE_APPLICATION: Final = "GET /oauth2/applications/@me"
ROUTE_GATEWAY: Final = "GET /gateway/bot"

FaultKind = Literal["error", "error_after_accept", "rate_limit", "disconnect"]
Scope = Literal["user", "shared", "global"]


@attrs.frozen
class Fault:
    """One scripted failure, matched against requests in order and used ``count`` times.

    Kinds:

    * ``"error"``: answer ``status`` (e.g. 500, 502, 503, 504, 524) without doing anything.
    * ``"error_after_accept"``: do the request (store the message), then answer ``status``.
    * ``"disconnect"``: close the connection without an answer.
    * ``"rate_limit"``: answer 429 with ``retry_after`` and ``scope`` (``global`` pauses
      everything; ``shared`` does not count as invalid), without using the bucket.
    """

    kind: FaultKind
    route: str | None = None
    """A route key such as ``"POST /channels/{channel_id}/messages"``; ``None`` matches every route."""
    major: str | None = None
    """A channel id or webhook id to match; ``None`` matches any."""
    count: int = 1
    status: int = 500
    retry_after: float = 0.05
    scope: Scope = "user"
    code: int | None = None
    """Optional JSON code in the 429 body (e.g. 20028 for a channel write limit)."""


@attrs.frozen
class EmulatedWebhook:
    """A webhook the emulator knows: executing it posts into ``channel_id``."""

    id: str
    token: str = attrs.field(repr=False)
    channel_id: str
    name: str = "Captain Hook"


@attrs.frozen
class EmulatedChannel:
    """A text channel of the emulated guild (announced in ``GUILD_CREATE``)."""

    id: str
    name: str
    topic: str | None = None


def _default_channels() -> list[EmulatedChannel]:
    return [
        EmulatedChannel("1200000000000000010", "general", "Talk to the bot here"),
        EmulatedChannel("1200000000000000011", "bot-testing"),
        EmulatedChannel("1200000000000000012", "random"),
    ]


@attrs.define
class EmulatorConfig:
    """Limits, channel states, the guild, webhooks and faults of one emulator.

    The channel sets are read on every request, so a test may change them while
    the emulator runs (e.g. delete a channel in the middle of a stream).
    """

    channel_limit: int = 5
    """Message creates (and, separately, edits and deletes) per ``channel_window`` per channel."""
    channel_window: float = 5.0
    global_limit: int = 50
    """Requests per ``global_window`` per token (or per client without a token)."""
    global_window: float = 1.0
    webhook_limit: int = 5
    """Executions (and, separately, edits and deletes) per ``webhook_window`` per webhook."""
    webhook_window: float = 2.0
    webhook_channel_limit: int | None = None
    """Hidden per-channel webhook limit (Discord: about 30 per 60 s); answered as a shared-scope 429."""
    webhook_channel_window: float = 60.0
    forbidden_channels: set[str] = attrs.Factory(set)
    """Channels answering 403 / 50001 Missing Access."""
    missing_permission_channels: set[str] = attrs.Factory(set)
    """Channels answering 403 / 50013 Missing Permissions."""
    deleted_channels: set[str] = attrs.Factory(set)
    """Channels answering 404 / 10003 Unknown Channel. Every other numeric id exists."""
    webhooks: list[EmulatedWebhook] = attrs.Factory(list)
    fault_plan: list[Fault] = attrs.Factory(list)
    token: str = attrs.field(default="emulator-token", repr=False)
    """The bot token bot routes and IDENTIFY require (``Authorization: Bot <token>``)."""
    bot_id: str = "1100000000000000001"
    bot_username: str = "rxcord-emulator"
    application_id: str = "1100000000000000001"
    owner_id: str = "1100000000000000002"
    nonce_window: float = 300.0
    """How long ``enforce_nonce`` remembers a nonce ("a few minutes" in Discord's words)."""
    ban_threshold: int | None = 10_000
    """Invalid responses (401, 403, non-shared 429) in ``ban_window`` that trigger the Cloudflare ban."""
    ban_window: float = 600.0
    guild_id: str = "1200000000000000001"
    """The one guild the bot is in (its ``@everyone`` role has the same id)."""
    guild_name: str = "rxcord emulator"
    channels: list[EmulatedChannel] = attrs.Factory(_default_channels)
    """The guild's text channels. A numeric id outside the guild is a DM channel on the gateway."""
    heartbeat_interval_ms: int = 41_250
    """The interval the gateway's HELLO asks for (Discord's value)."""


@attrs.define
class EmulatorCounters:
    """What the emulator saw, for assertions and benchmarks."""

    requests: collections.Counter[str] = attrs.Factory(collections.Counter)
    """Requests per route key."""
    statuses: collections.Counter[int] = attrs.Factory(collections.Counter)
    rate_limited: int = 0
    """Every 429 answered (route, global, shared, injected and ban)."""
    rate_limited_routes: collections.Counter[str] = attrs.Factory(collections.Counter)
    global_rate_limited: int = 0
    """429s for the real global limit."""
    injected_faults: int = 0
    typing: collections.Counter[str] = attrs.Factory(collections.Counter)
    """Typing calls per channel id."""
    messages_created: int = 0
    nonce_dedupes: int = 0
    """Creates answered with an existing message because of ``enforce_nonce``."""
    invalid_requests: int = 0
    """401, 403 and non-shared 429 responses (what Discord's ban counts)."""
    ignored_webhook_references: int = 0
    gateway: collections.Counter[str] = attrs.Factory(collections.Counter)
    """Gateway traffic: ``connect``, ``identify``, ``resume``, ``heartbeat``, ``close:<code>`` (the
    emulator closed for a protocol error), ``closed:<code>`` (every ended connection) and each
    dispatched event name (one per session it reached)."""
