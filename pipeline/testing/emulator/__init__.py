"""A local emulator of Discord's REST API and gateway, for tests, notebooks, benchmarks and bots.

Stage 07 talks to Discord over HTTP; testing it against the real service is slow, rate
limited and needs a bot. This aiohttp application answers the routes rxcord (and discord.py or
hikari pointed at it) use, the way Discord does as far as the project's Discord delivery facts
(``shared/reference/discord-delivery-facts.md``) document it: validation errors with their JSON
codes and nested ``errors`` trees, rate-limit headers on every limited response, 429 bodies,
``enforce_nonce`` deduplication, replies, webhooks. It also serves a minimal gateway (v10,
JSON) with one guild, application commands and interactions, so a whole bot runs offline, and
routes to act as a user and watch what happens. It binds to 127.0.0.1 only by default and
never contacts anything.

Modules, one job each:

* ``config``: ``EmulatorConfig`` (limits, channel states, the guild, faults), ``EmulatorCounters``,
  route keys.
* ``validation``: reading requests and raising Discord's error answers; the message-payload
  rules it applies are ``rxcord.sinks.payload_rules`` (Discord facts the memory sink uses too).
* ``limits``: the rate-limit simulation (GCRA windows, headers, 429 answers).
* ``store``: messages, nonces, snowflakes and the clock; ``guild``: the guild, its channels and
  members; ``events``: the event hub every change is published on.
* ``app``: ``DiscordEmulator`` and the request pipeline every Discord route goes through.
* ``messages``, ``reactions`` (the bot's own), ``webhooks``, ``identity``, ``interactions``: the
  REST routes.
* ``gateway``: the websocket gateway; ``inject``: the ``/_emulator/`` routes (act as a user,
  list channels and messages, server-sent events); ``members``: the ``/_emulator/`` routes that
  set a member's roles and a role's permissions (computed into interactions' permissions).
* ``server``: ``serve``, ``run_forever`` and ``point_discord_py``.

Pointing discord.py at it
-------------------------
An unmodified discord.py client needs one override, two class attributes set before
``client.start(token)`` (``point_discord_py(base_url, gateway_url)`` does exactly this)::

    discord.http.Route.BASE = "http://127.0.0.1:PORT/api/v10"
    discord.gateway.DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL("ws://127.0.0.1:PORT/gateway")

The token is ``EmulatorConfig.token`` (``rxcord emulator`` prints it). Every privileged intent is
granted; without ``message_content`` a bot sees content only in DMs, its own messages and
messages mentioning it, as on Discord.

Rate limits
-----------
Buckets are sliding windows in leaky-bucket (GCRA) form, which is how Discord's buckets have
behaved since 2022-11 (facts §1.6): every accepted request pushes the bucket's "theoretical
arrival time" ``window / limit`` seconds forward; a request is refused while that time is more
than ``window - window / limit`` seconds ahead. ``Remaining`` is how many requests fit now,
``Reset-After`` the time until the bucket is empty again, so one slot frees every
``window / limit`` seconds (5/5 s regains one per second, not all five at the 5-second mark).
Counters are keyed by (bucket, major parameter): per channel for messages, per webhook id +
token for webhooks. ``POST``, ``PATCH`` and ``DELETE`` on messages (channel and webhook ones)
get distinct bucket hashes (Discord counts them separately since 2026-01). Reads, typing,
identity, command and interaction-callback routes have no per-route limit and send no bucket
headers; every request counts against the global limit (50/s per ``Authorization`` value, or
per "IP" for unauthenticated webhook calls). 429 bodies and headers follow §1.3
(``Retry-After`` whole seconds rounded up, body ``retry_after`` in seconds with millisecond
precision). Time comes from the running loop (``loop.time()``) or an injected clock; the epoch
in ``X-RateLimit-Reset`` and in snowflakes is that clock shifted by one reading of the wall
clock. The ``/_emulator/`` routes and the gateway are not limited.

Decisions where Discord is undocumented
---------------------------------------
* Any numeric channel id exists unless listed in ``deleted_channels``; on the gateway, one
  outside the guild is a DM channel.
* ``enforce_nonce`` deduplicates per (channel, author, nonce) for ``nonce_window`` seconds;
  webhooks ignore it (Discord: not available).
* A ``message_reference`` sent to a webhook is ignored, as Discord ignores fields webhooks do
  not accept: the message is posted as a plain message and
  ``counters.ignored_webhook_references`` counts it.
* Embed total size errors use the code ``MAX_EMBED_SIZE_EXCEEDED`` (the message text is
  Discord's; the code name is not documented).
* The Cloudflare ban (``ban_threshold`` invalid responses in ``ban_window``) answers 429 with a
  JSON ``code: 0`` body, no rate-limit headers and no ``Via`` header, which is how clients
  recognise it.
* Interaction responses are not held to Discord's 3-second deadline; tokens last 15 minutes.

Fault injection (``Fault``) lets failure tests script 5xx answers, 5xx answers *after* the
message was stored (the ambiguous failure nonces exist for), dropped connections and 429s of
any scope.
"""

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
    "ApiError",
    "DiscordEmulator",
    "EmulatedChannel",
    "EmulatedWebhook",
    "EmulatorConfig",
    "EmulatorCounters",
    "EmulatorEvent",
    "EmulatorNotStartedError",
    "EventHub",
    "Fault",
    "FaultKind",
    "Interaction",
    "Scope",
    "point_discord_py",
    "run_forever",
    "serve",
)

from rxcord.core.errors import ApiError, EmulatorNotStartedError
from rxcord.testing.emulator.app import DiscordEmulator
from rxcord.testing.emulator.config import (
    API_PREFIX,
    DISCORD_EPOCH_MS,
    GATEWAY_PATH,
    ROUTE_APPLICATION,
    ROUTE_CREATE,
    ROUTE_DELETE,
    ROUTE_EDIT,
    ROUTE_EXECUTE,
    ROUTE_GATEWAY,
    ROUTE_GET,
    ROUTE_LIST,
    ROUTE_ME,
    ROUTE_TYPING,
    ROUTE_WEBHOOK,
    ROUTE_WEBHOOK_DELETE,
    ROUTE_WEBHOOK_EDIT,
    ROUTE_WEBHOOK_GET,
    EmulatedChannel,
    EmulatedWebhook,
    EmulatorConfig,
    EmulatorCounters,
    Fault,
    FaultKind,
    Scope,
)
from rxcord.testing.emulator.events import EmulatorEvent, EventHub
from rxcord.testing.emulator.interactions import Interaction
from rxcord.testing.emulator.server import point_discord_py, run_forever, serve
