"""A local emulator of the Discord REST API, for stage 07 tests, notebooks and benchmarks.

Stage 07 talks to Discord over HTTP; testing it against the real service is
slow, rate limited and needs a bot. This aiohttp application answers the
routes rxcord (and discord.py/hikari pointed at it) use, the way Discord does
as far as the project's Discord delivery facts (``shared/reference/discord-delivery-facts.md``) documents it:
validation errors with their JSON codes and nested ``errors`` trees,
rate-limit headers on every limited response, 429 bodies, ``enforce_nonce``
deduplication, replies, webhooks. It binds to 127.0.0.1 only by default and
never contacts anything.

Rate limits
-----------
Buckets are sliding windows in leaky-bucket (GCRA) form, which is how
Discord's buckets have behaved since 2022-11 (facts §1.6): every accepted
request pushes the bucket's "theoretical arrival time" ``window / limit``
seconds forward; a request is refused while that time is more than
``window - window / limit`` seconds ahead. ``Remaining`` is how many requests
fit now, ``Reset-After`` the time until the bucket is empty again, so one
slot frees every ``window / limit`` seconds (5/5 s regains one per second,
not all five at the 5-second mark). Counters are keyed by (bucket, major
parameter): per channel for messages, per webhook id + token for webhooks.
``POST``, ``PATCH`` and ``DELETE`` on messages get distinct bucket hashes
(Discord counts them separately since 2026-01). Reads, typing and identity
routes have no per-route limit and send no bucket headers; every request
counts against the global limit (50/s per ``Authorization`` value, or per
"IP" for unauthenticated webhook calls). 429 bodies and headers follow §1.3
(``Retry-After`` whole seconds rounded up, body ``retry_after`` in seconds with
millisecond precision). Time comes from the running loop (``loop.time()``) or
an injected clock; the epoch in ``X-RateLimit-Reset`` and in snowflakes is
that clock shifted by one reading of the wall clock.

Decisions where Discord is undocumented
---------------------------------------
* Any numeric channel id exists unless listed in ``deleted_channels``.
* ``enforce_nonce`` deduplicates per (channel, author, nonce) for
  ``nonce_window`` seconds; webhooks ignore it (Discord: not available).
* A ``message_reference`` sent to a webhook is ignored, as Discord ignores
  fields webhooks do not accept: the message is posted as a plain message and
  ``counters.ignored_webhook_references`` counts it.
* Embed total size errors use the code ``MAX_EMBED_SIZE_EXCEEDED`` (the message
  text is Discord's; the code name is not documented).
* The Cloudflare ban (``ban_threshold`` invalid responses in ``ban_window``)
  answers 429 with a JSON ``code: 0`` body, no rate-limit headers and no
  ``Via`` header, which is how clients recognise it.

Fault injection (``Fault``) lets failure tests script 5xx answers, 5xx
answers *after* the message was stored (the ambiguous failure nonces exist
for), dropped connections and 429s of any scope.
"""

from __future__ import annotations

__all__ = (
    "DiscordEmulator",
    "EmulatedWebhook",
    "EmulatorConfig",
    "EmulatorCounters",
    "Fault",
    "check_message_payload",
    "run_forever",
    "serve",
)

import asyncio
import collections
import contextlib
import datetime
import hashlib
import json
import math
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, Final, Literal

import attrs
from aiohttp import web
from aiohttp.typedefs import Handler

API_PREFIX: Final = "/api/v10"
DISCORD_EPOCH_MS: Final = 1_420_070_400_000
"""Milliseconds from the Unix epoch to Discord's (2015-01-01), the origin of snowflake timestamps."""

_SLACK: Final = 1e-6
"""Tolerance (seconds) when admitting a request, so a client that waited the exact advertised time passes."""

ROUTE_CREATE: Final = "POST /channels/{channel_id}/messages"
ROUTE_LIST: Final = "GET /channels/{channel_id}/messages"
ROUTE_GET: Final = "GET /channels/{channel_id}/messages/{message_id}"
ROUTE_EDIT: Final = "PATCH /channels/{channel_id}/messages/{message_id}"
ROUTE_DELETE: Final = "DELETE /channels/{channel_id}/messages/{message_id}"
ROUTE_TYPING: Final = "POST /channels/{channel_id}/typing"
ROUTE_EXECUTE: Final = "POST /webhooks/{webhook_id}/{webhook_token}"
ROUTE_WEBHOOK: Final = "GET /webhooks/{webhook_id}/{webhook_token}"
ROUTE_ME: Final = "GET /users/@me"
ROUTE_APPLICATION: Final = "GET /oauth2/applications/@me"
ROUTE_GATEWAY: Final = "GET /gateway/bot"

_CREATE_FLAGS: Final = 4 | 4096 | 8192 | 32768
"""Flags settable on create: SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_VOICE_MESSAGE, IS_COMPONENTS_V2."""
_MENTION_TYPES: Final = ("users", "roles", "everyone")
_USER_MENTION = re.compile(r"<@!?(\d{15,21})>")
_ROLE_MENTION = re.compile(r"<@&(\d{15,21})>")

FaultKind = Literal["error", "error_after_accept", "rate_limit", "disconnect"]
Scope = Literal["user", "shared", "global"]


# -- configuration -----------------------------------------------------------


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


@attrs.define
class EmulatorConfig:
    """Limits, channel states, webhooks and faults of one emulator.

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
    """Executions per ``webhook_window`` per webhook."""
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
    """The bot token bot routes require (``Authorization: Bot <token>``)."""
    bot_id: str = "1100000000000000001"
    bot_username: str = "rxcord-emulator"
    application_id: str = "1100000000000000001"
    owner_id: str = "1100000000000000002"
    nonce_window: float = 300.0
    """How long ``enforce_nonce`` remembers a nonce ("a few minutes" in Discord's words)."""
    ban_threshold: int | None = 10_000
    """Invalid responses (401, 403, non-shared 429) in ``ban_window`` that trigger the Cloudflare ban."""
    ban_window: float = 600.0


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


# -- validation (pure) -------------------------------------------------------

_Problem = tuple[tuple[str, ...], str, str]
"""A form problem: path in the request body, error code, message."""


class _ApiError(Exception):
    """A Discord error answer raised inside a handler."""

    def __init__(self, status: int, code: int, message: str, errors: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"message": message, "code": code}
        if errors is not None:
            self.body["errors"] = dict(errors)


def _error_tree(problems: Iterable[_Problem]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for path, code, message in problems:
        node = tree
        for part in path:
            node = node.setdefault(part, {})
        node.setdefault("_errors", []).append({"code": code, "message": message})
    return tree


def _form_error(problems: Iterable[_Problem]) -> _ApiError:
    return _ApiError(400, 50035, "Invalid Form Body", _error_tree(problems))


def _too_long(path: tuple[str, ...], limit: int) -> _Problem:
    return (path, "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")


def _trimmed_len(value: Any) -> int:
    return len(value.strip()) if isinstance(value, str) else 0


def _check_embeds(embeds: Any) -> list[_Problem]:
    if embeds is None:
        return []
    if not isinstance(embeds, list):
        return [(("embeds",), "BASE_TYPE_ARRAY", "Must be an array.")]
    problems: list[_Problem] = []
    if len(embeds) > 10:
        problems.append(_too_long(("embeds",), 10))
    total = 0
    field_limits = (("title", 256), ("description", 4096))
    for index, embed in enumerate(embeds):
        at = ("embeds", str(index))
        if not isinstance(embed, dict):
            problems.append((at, "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType"))
            continue
        for name, limit in field_limits:
            size = _trimmed_len(embed.get(name))
            total += size
            if size > limit:
                problems.append(_too_long((*at, name), limit))
        for name, inner, limit in (("footer", "text", 2048), ("author", "name", 256)):
            part = embed.get(name)
            size = _trimmed_len(part.get(inner)) if isinstance(part, dict) else 0
            total += size
            if size > limit:
                problems.append(_too_long((*at, name, inner), limit))
        fields = embed.get("fields") or []
        if isinstance(fields, list):
            if len(fields) > 25:
                problems.append(_too_long((*at, "fields"), 25))
            for number, field in enumerate(fields):
                field_at = (*at, "fields", str(number))
                if not isinstance(field, dict):
                    continue
                for name, limit in (("name", 256), ("value", 1024)):
                    if field.get(name) is None:
                        problems.append(((*field_at, name), "BASE_TYPE_REQUIRED", "This field is required"))
                        continue
                    size = _trimmed_len(field.get(name))
                    total += size
                    if size > limit:
                        problems.append(_too_long((*field_at, name), limit))
    if total > 6000:
        problems.append((("embeds",), "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000"))
    return problems


def _check_allowed_mentions(allowed: Any) -> list[_Problem]:
    if allowed is None:
        return []
    at = ("allowed_mentions",)
    if not isinstance(allowed, dict):
        return [(at, "MODEL_TYPE_CONVERT", "Only dictionaries may be used in a ModelType")]
    problems: list[_Problem] = []
    parse = allowed.get("parse") or []
    if not isinstance(parse, list):
        return [((*at, "parse"), "BASE_TYPE_ARRAY", "Must be an array.")]
    for index, value in enumerate(parse):
        if value not in _MENTION_TYPES:
            problems.append(
                (
                    (*at, "parse", str(index)),
                    "BASE_TYPE_CHOICES",
                    "Value must be one of {'everyone', 'roles', 'users'}.",
                )
            )
    for kind in ("users", "roles"):
        ids = allowed.get(kind) or []
        if not isinstance(ids, list):
            problems.append(((*at, kind), "BASE_TYPE_ARRAY", "Must be an array."))
            continue
        if len(ids) > 100:
            problems.append(_too_long((*at, kind), 100))
        if ids and kind in parse:
            problems.append(
                (
                    at,
                    "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE",
                    f'parse:["{kind}"] and {kind}: [ids...] are mutually exclusive.',
                )
            )
    return problems


def _check_nonce(nonce: Any) -> list[_Problem]:
    if nonce is None:
        return []
    if isinstance(nonce, bool) or not isinstance(nonce, int | str):
        return [(("nonce",), "NONCE_TYPE_INVALID", "Nonce must be an integer or a string.")]
    if isinstance(nonce, str) and len(nonce) > 25:
        return [_too_long(("nonce",), 25)]
    if isinstance(nonce, int) and not -(2**63) <= nonce < 2**63:
        return [(("nonce",), "NUMBER_TYPE_MAX", "Value must be a 64-bit integer.")]
    return []


def _check_username(username: Any) -> list[_Problem]:
    if username is None:
        return []
    at = ("username",)
    if not isinstance(username, str) or not 1 <= len(username) <= 80:
        return [(at, "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 80 in length.")]
    folded = username.casefold()
    for word in ("discord", "clyde"):
        if word in folded:
            return [(at, "USERNAME_INVALID_CONTAINS", f'Username cannot contain "{word}"')]
    for token in ("@", "#", ":", "```"):
        if token in username:
            return [(at, "USERNAME_INVALID_CONTAINS", f'Username cannot contain "{token}"')]
    if folded.strip() in ("everyone", "here"):
        return [(at, "USERNAME_INVALID", f'Username cannot be "{folded.strip()}"')]
    return []


def _form_problems(payload: Mapping[str, Any], *, webhook: bool) -> list[_Problem]:
    problems: list[_Problem] = []
    content = payload.get("content")
    if content is not None:
        if not isinstance(content, str):
            problems.append((("content",), "BASE_TYPE_STRING", "Could not interpret value as string."))
        elif len(content) > 4000 and not webhook:
            problems.append(_too_long(("content",), 4000))
        elif len(content) > 2000:
            problems.append(_too_long(("content",), 2000))
    problems += _check_embeds(payload.get("embeds"))
    problems += _check_allowed_mentions(payload.get("allowed_mentions"))
    if webhook:
        problems += _check_username(payload.get("username"))
        avatar = payload.get("avatar_url")
        if isinstance(avatar, str) and len(avatar) > 2048:
            problems.append(_too_long(("avatar_url",), 2048))
    else:
        problems += _check_nonce(payload.get("nonce"))
        reference = payload.get("message_reference")
        if reference is not None and (not isinstance(reference, dict) or not reference.get("message_id")):
            problems.append(
                (("message_reference", "message_id"), "BASE_TYPE_REQUIRED", "This field is required")
            )
    flags = payload.get("flags")
    if flags is not None and (isinstance(flags, bool) or not isinstance(flags, int)):
        problems.append((("flags",), "NUMBER_TYPE_COERCE", "Value is not int."))
    return problems


def _is_empty(payload: Mapping[str, Any]) -> bool:
    content = payload.get("content")
    if isinstance(content, str) and content.strip():
        return False
    return not any(payload.get(key) for key in ("embeds", "sticker_ids", "components", "attachments", "poll"))


def check_message_payload(payload: Any, *, webhook: bool = False) -> dict[str, Any] | None:
    """Validate a message create / webhook execute body the way Discord does, without state.

    Covers everything except checks that need stored messages (a reply's target).

    Args:
        payload: The decoded JSON body.
        webhook: Apply the webhook rules (username, 2000-character content, no nonce) instead.

    Returns:
        ``None`` when valid, else Discord's 400 error body: ``{"code": 50035, "message":
        "Invalid Form Body", "errors": {...}}`` or ``{"code": 50006, "message": "Cannot send an
        empty message"}``.
    """
    if not isinstance(payload, Mapping):
        return {"message": "The request body contains invalid JSON.", "code": 50109}
    problems = _form_problems(payload, webhook=webhook)
    if problems:
        return _form_error(problems).body
    if _is_empty(payload):
        return {"message": "Cannot send an empty message", "code": 50006}
    return None


# -- rate-limit windows ------------------------------------------------------


@attrs.frozen
class _Verdict:
    allowed: bool
    limit: int
    remaining: int
    reset_after: float
    retry_after: float


@attrs.define
class _Window:
    """Leaky-bucket (GCRA) counters of one limit, keyed by major parameter or identity."""

    limit: int
    window: float
    arrivals: dict[str, float] = attrs.Factory(dict)
    """Key -> theoretical arrival time."""

    def take(self, key: str, now: float, *, consume: bool = True) -> _Verdict:
        """Admit (and by default count) one request for ``key`` at ``now``."""
        interval = self.window / self.limit
        tat = max(self.arrivals.get(key, now), now)
        if tat + interval - now > self.window + _SLACK:
            retry = tat + interval - self.window - now
            return _Verdict(False, self.limit, 0, tat - now, retry)
        if consume:
            tat += interval
            self.arrivals[key] = tat
        reset_after = tat - now
        remaining = math.floor((self.window - reset_after) / interval + 1e-9)
        return _Verdict(True, self.limit, max(0, min(self.limit, remaining)), reset_after, 0.0)


def _ceil_ms(seconds: float) -> float:
    return math.ceil(max(seconds, 0.0) * 1000 - 1e-6) / 1000


@attrs.define
class _FaultState:
    fault: Fault
    left: int


@attrs.define
class _Stored:
    id: str
    channel_id: str
    author_id: str
    message: dict[str, Any]
    payload: dict[str, Any]
    deleted: bool = False


@attrs.frozen
class _Endpoint:
    route_key: str
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    window: _Window | None = None
    bucket_hash: str | None = None
    bot_auth: bool = True


def _json(status: int, body: Any, headers: Mapping[str, str] | None = None) -> web.Response:
    # Exactly "application/json": discord.py compares the header string and would
    # treat "application/json; charset=utf-8" as text.
    return web.Response(
        status=status,
        body=json.dumps(body).encode(),
        content_type="application/json",
        headers=dict(headers or {}),
    )


def _bucket_hash(route_key: str) -> str:
    return hashlib.sha256(f"rxcord-emulator {route_key}".encode()).hexdigest()[:32]


def _user(user_id: str, username: str, *, bot: bool = False) -> dict[str, Any]:
    user: dict[str, Any] = {
        "id": user_id,
        "username": username,
        "discriminator": "0",
        "global_name": None,
        "avatar": None,
        "public_flags": 0,
        "flags": 0,
        "primary_guild": None,
    }
    if bot:
        user["bot"] = True
    return user


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def _query_bool(value: str | None) -> bool:
    if value is None or value in ("false", "False", "0"):
        return False
    if value in ("true", "True", "1"):
        return True
    raise _form_error([(("wait",), "BASE_TYPE_BOOLEAN", "Must be either true or false.")])


# -- the emulator -------------------------------------------------------------


class DiscordEmulator:
    """An aiohttp application emulating Discord's REST API (see the module docstring).

    Example::

        async with DiscordEmulator(EmulatorConfig(channel_window=0.5)) as emulator:
            sink = RestSink(emulator.base_url, emulator.config.token)
            ...
            assert [m["content"] for m in emulator.messages("42")] == ["hello"]

    Args:
        config: Limits, channel states, webhooks and faults; defaults to Discord's observed values.
        clock: Monotonic seconds for rate limits and timestamps; defaults to the running loop's ``time``.
    """

    def __init__(
        self, config: EmulatorConfig | None = None, *, clock: Callable[[], float] | None = None
    ) -> None:
        self.config = config if config is not None else EmulatorConfig()
        self.counters = EmulatorCounters()
        self._clock = clock
        self._wall_offset: float | None = None
        self._last_snowflake = 0
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self._host = "127.0.0.1"
        self._port = 0
        self._messages: dict[str, _Stored] = {}
        self._order: list[str] = []
        self._channels: dict[str, list[str]] = collections.defaultdict(list)
        self._nonces: dict[tuple[str, str, str], tuple[str, float]] = {}
        self._webhooks: dict[str, EmulatedWebhook] = {hook.id: hook for hook in self.config.webhooks}
        self._faults = [_FaultState(fault, fault.count) for fault in self.config.fault_plan]
        self._invalid: collections.deque[float] = collections.deque()
        cfg = self.config
        self._global = _Window(cfg.global_limit, cfg.global_window)
        self._webhook_channels = (
            _Window(cfg.webhook_channel_limit, cfg.webhook_channel_window)
            if cfg.webhook_channel_limit
            else None
        )
        self.app = web.Application(middlewares=[_json_not_found])
        self._add(ROUTE_CREATE, self._create_message, _Window(cfg.channel_limit, cfg.channel_window))
        self._add(ROUTE_EDIT, self._edit_message, _Window(cfg.channel_limit, cfg.channel_window))
        self._add(ROUTE_DELETE, self._delete_message, _Window(cfg.channel_limit, cfg.channel_window))
        self._add(ROUTE_LIST, self._list_messages)
        self._add(ROUTE_GET, self._get_message)
        self._add(ROUTE_TYPING, self._typing)
        self._add(
            ROUTE_EXECUTE, self._execute_webhook, _Window(cfg.webhook_limit, cfg.webhook_window), auth=False
        )
        self._add(ROUTE_WEBHOOK, self._get_webhook, auth=False)
        self._add(ROUTE_ME, self._me)
        self._add(ROUTE_APPLICATION, self._application)
        self._add(ROUTE_GATEWAY, self._gateway)

    def __repr__(self) -> str:
        return f"<DiscordEmulator {self._base_url or 'not started'} messages={len(self._order)}>"

    # -- lifecycle -----------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0 picks a free port) and return the API base URL.

        Returns:
            The base URL including the version prefix, e.g. ``http://127.0.0.1:PORT/api/v10``.
        """
        runner = web.AppRunner(self.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        self._runner = runner
        bound = runner.addresses[0]
        self._host, self._port = host, int(bound[1])
        self._base_url = f"http://{host}:{self._port}{API_PREFIX}"
        return self._base_url

    async def close(self) -> None:
        """Stop serving (idempotent)."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> DiscordEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        """The API base URL (``http://127.0.0.1:PORT/api/v10``); raises before ``start``."""
        if self._base_url is None:
            raise RuntimeError("the emulator is not started")
        return self._base_url

    # -- inspection and test helpers ------------------------------------------

    def messages(self, channel_id: str) -> list[dict[str, Any]]:
        """Accepted, undeleted messages of a channel, in acceptance order.

        Each is the payload as sent with the message object's fields on top
        (``id``, ``author``, normalised ``embeds``, ``mentions``, ...).
        """
        ids = self._channels.get(channel_id, [])
        return [self._record(self._messages[mid]) for mid in ids if not self._messages[mid].deleted]

    def all_messages(self) -> list[dict[str, Any]]:
        """Accepted, undeleted messages of every channel, in acceptance order."""
        return [self._record(self._messages[mid]) for mid in self._order if not self._messages[mid].deleted]

    def add_webhook(self, channel_id: str, *, name: str = "Captain Hook") -> EmulatedWebhook:
        """Create a webhook posting into ``channel_id`` and return it (with its id and token)."""
        hook = EmulatedWebhook(
            id=self._snowflake(self._now()), token=secrets.token_urlsafe(32), channel_id=channel_id, name=name
        )
        self._webhooks[hook.id] = hook
        return hook

    def remove_webhook(self, webhook_id: str) -> None:
        """Delete a webhook; executing it then answers 404 / 10015."""
        self._webhooks.pop(webhook_id, None)

    def seed_message(
        self, channel_id: str, content: str = "hello", *, author_id: str = "200000000000000001"
    ) -> str:
        """Store a message from a user (no HTTP, no limits), e.g. a message to reply to; returns its id."""
        author = _user(author_id, f"user-{author_id[-4:]}")
        message = self._store(channel_id, {"content": content}, author=author, webhook=None, reference=None)
        return str(message["id"])

    def delete_message(self, message_id: str) -> None:
        """Delete a stored message as its author or a moderator would (replies to it then fail)."""
        stored = self._messages.get(message_id)
        if stored is not None:
            stored.deleted = True

    def inject(self, fault: Fault) -> None:
        """Append a fault to the plan at run time."""
        self._faults.append(_FaultState(fault, fault.count))

    # -- plumbing ------------------------------------------------------------

    def _add(
        self,
        route_key: str,
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
        window: _Window | None = None,
        *,
        auth: bool = True,
    ) -> None:
        method, template = route_key.split(" ", 1)
        endpoint = _Endpoint(
            route_key=route_key,
            handler=handler,
            window=window,
            bucket_hash=_bucket_hash(route_key) if window is not None else None,
            bot_auth=auth,
        )

        async def dispatch(request: web.Request) -> web.StreamResponse:
            return await self._dispatch(endpoint, request)

        self.app.router.add_route(method, API_PREFIX + template, dispatch)

    def _now(self) -> float:
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def _wall(self, now: float) -> float:
        if self._wall_offset is None:
            self._wall_offset = time.time() - now
        return now + self._wall_offset

    def _snowflake(self, now: float) -> str:
        millis = int(self._wall(now) * 1000) - DISCORD_EPOCH_MS
        value = max((millis << 22) | (1 << 17), self._last_snowflake + 1)
        self._last_snowflake = value
        return str(value)

    def _record(self, stored: _Stored) -> dict[str, Any]:
        return {**stored.payload, **stored.message}

    def _take_fault(self, route_key: str, major: str | None, kinds: tuple[FaultKind, ...]) -> Fault | None:
        for state in self._faults:
            fault = state.fault
            if (
                state.left > 0
                and fault.kind in kinds
                and fault.route in (None, route_key)
                and fault.major in (None, major)
            ):
                state.left -= 1
                self.counters.injected_faults += 1
                return fault
        return None

    def _banned(self, now: float) -> bool:
        horizon = now - self.config.ban_window
        while self._invalid and self._invalid[0] <= horizon:
            self._invalid.popleft()
        threshold = self.config.ban_threshold
        return threshold is not None and len(self._invalid) >= threshold

    def _bucket_headers(self, endpoint: _Endpoint, verdict: _Verdict, now: float) -> dict[str, str]:
        reset_after = _ceil_ms(verdict.reset_after)
        return {
            "X-RateLimit-Limit": str(verdict.limit),
            "X-RateLimit-Remaining": str(verdict.remaining),
            "X-RateLimit-Reset": f"{_ceil_ms(self._wall(now) + reset_after):.3f}",
            "X-RateLimit-Reset-After": f"{reset_after:.3f}",
            "X-RateLimit-Bucket": endpoint.bucket_hash or "",
        }

    def _too_many(
        self, retry_after: float, scope: Scope, headers: Mapping[str, str], code: int | None = None
    ) -> web.Response:
        retry = _ceil_ms(retry_after)
        body: dict[str, Any] = {
            "message": "The resource is being rate limited."
            if scope == "shared"
            else "You are being rate limited.",
            "retry_after": retry,
            "global": scope == "global",
        }
        if code is not None:
            body["code"] = code
        extra = {"Retry-After": str(max(1, math.ceil(retry - 1e-9))), "X-RateLimit-Scope": scope}
        if scope == "global":
            extra["X-RateLimit-Global"] = "true"
        return _json(429, body, {**headers, **extra})

    def _finish(self, response: web.Response) -> web.Response:
        counters = self.counters
        status = response.status
        counters.statuses[status] += 1
        if status == 429:
            counters.rate_limited += 1
        shared = response.headers.get("X-RateLimit-Scope") == "shared"
        if status in (401, 403) or (status == 429 and not shared):
            counters.invalid_requests += 1
            self._invalid.append(self._now())
        response.headers.setdefault("Via", "1.1 google")
        return response

    async def _dispatch(self, endpoint: _Endpoint, request: web.Request) -> web.StreamResponse:
        now = self._now()
        route_key = endpoint.route_key
        self.counters.requests[route_key] += 1
        if self._banned(now):
            self.counters.rate_limited += 1
            self.counters.statuses[429] += 1
            return _json(
                429,
                {
                    "code": 0,
                    "message": "You are being blocked from accessing our API temporarily due to exceeding "
                    "our rate limits frequently. Please read our docs at "
                    "https://discord.com/developers/docs/topics/rate-limits to prevent this moving forward.",
                },
            )
        identity = request.headers.get("Authorization") or "anonymous"
        if endpoint.bot_auth and identity != f"Bot {self.config.token}":
            return self._finish(_json(401, {"message": "401: Unauthorized", "code": 0}))
        global_verdict = self._global.take(identity, now)
        if not global_verdict.allowed:
            self.counters.global_rate_limited += 1
            self.counters.rate_limited_routes[route_key] += 1
            return self._finish(self._too_many(global_verdict.retry_after, "global", {}))

        info = request.match_info
        fault_major = info.get("channel_id") or info.get("webhook_id")
        major = (
            f"{info['webhook_id']}/{info['webhook_token']}" if "webhook_id" in info else (fault_major or "")
        )
        fault = self._take_fault(route_key, fault_major, ("rate_limit",))
        if fault is not None:
            headers: dict[str, str] = {}
            if endpoint.window is not None and fault.scope != "global":
                headers = self._bucket_headers(endpoint, endpoint.window.take(major, now, consume=False), now)
                if fault.scope == "user":
                    headers["X-RateLimit-Remaining"] = "0"
            self.counters.rate_limited_routes[route_key] += 1
            return self._finish(self._too_many(fault.retry_after, fault.scope, headers, fault.code))

        headers = {}
        if endpoint.window is not None:
            verdict = endpoint.window.take(major, now)
            headers = self._bucket_headers(endpoint, verdict, now)
            if not verdict.allowed:
                self.counters.rate_limited_routes[route_key] += 1
                return self._finish(self._too_many(verdict.retry_after, "user", headers))
        hidden = self._hidden_webhook_limit(route_key, info.get("webhook_id"), now, headers)
        if hidden is not None:
            return self._finish(hidden)

        fault = self._take_fault(route_key, fault_major, ("error", "disconnect", "error_after_accept"))
        if fault is not None and fault.kind == "disconnect":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        if fault is not None and fault.kind == "error":
            response = _json(fault.status, {"message": f"{fault.status}: Server Error", "code": 0})
        else:
            try:
                result = await endpoint.handler(request)
                assert isinstance(result, web.Response)  # every handler answers with a plain Response
                response = result
            except _ApiError as exc:
                response = _json(exc.status, exc.body)
            if fault is not None and response.status < 300:
                response = _json(fault.status, {"message": f"{fault.status}: Server Error", "code": 0})
        response.headers.update(headers)
        return self._finish(response)

    def _hidden_webhook_limit(
        self, route_key: str, webhook_id: str | None, now: float, headers: Mapping[str, str]
    ) -> web.Response | None:
        if self._webhook_channels is None or route_key != ROUTE_EXECUTE or webhook_id is None:
            return None
        hook = self._webhooks.get(webhook_id)
        if hook is None:
            return None
        verdict = self._webhook_channels.take(hook.channel_id, now)
        if verdict.allowed:
            return None
        self.counters.rate_limited_routes[route_key] += 1
        return self._too_many(verdict.retry_after, "shared", headers, 20028)

    # -- state checks --------------------------------------------------------

    def _check_channel(self, channel_id: str) -> None:
        if not channel_id.isdigit():
            problem = (("channel_id",), "NUMBER_TYPE_COERCE", f'Value "{channel_id}" is not snowflake.')
            raise _form_error([problem])
        cfg = self.config
        if channel_id in cfg.deleted_channels:
            raise _ApiError(404, 10003, "Unknown Channel")
        if channel_id in cfg.forbidden_channels:
            raise _ApiError(403, 50001, "Missing Access")
        if channel_id in cfg.missing_permission_channels:
            raise _ApiError(403, 50013, "Missing Permissions")

    def _stored_in(self, channel_id: str, message_id: str) -> _Stored:
        stored = self._messages.get(message_id)
        if stored is None or stored.deleted or stored.channel_id != channel_id:
            raise _ApiError(404, 10008, "Unknown Message")
        return stored

    async def _payload(self, request: web.Request) -> dict[str, Any]:
        if request.content_type == "multipart/form-data":
            form = await request.post()
            raw = form.get("payload_json")
            text = raw if isinstance(raw, str) else "{}"
        else:
            text = await request.text()
        try:
            data = json.loads(text) if text else {}
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise _ApiError(400, 50109, "The request body contains invalid JSON.")
        return data

    def _validate(self, payload: Mapping[str, Any], *, webhook: bool) -> None:
        error = check_message_payload(payload, webhook=webhook)
        if error is not None:
            raise _ApiError(400, int(error["code"]), str(error["message"]), error.get("errors"))

    # -- message construction --------------------------------------------------

    def _mentions(
        self, payload: Mapping[str, Any], *, webhook: bool, replied_author: Mapping[str, Any] | None
    ) -> tuple[list[dict[str, Any]], list[str], bool]:
        content = payload.get("content") or ""
        allowed = payload.get("allowed_mentions")
        if isinstance(allowed, dict):
            parse = list(allowed.get("parse") or [])
            users_allowed = {str(x) for x in allowed.get("users") or []}
            roles_allowed = {str(x) for x in allowed.get("roles") or []}
            ping_replied = allowed.get("replied_user") is True
        else:
            # Defaults: bots parse everything, webhooks only users; a reply pings its author.
            parse = ["users"] if webhook else list(_MENTION_TYPES)
            users_allowed, roles_allowed, ping_replied = set(), set(), True
        user_ids = [
            u for u in _unique(_USER_MENTION.findall(content)) if "users" in parse or u in users_allowed
        ]
        mentions = [_user(uid, f"user-{uid[-4:]}") for uid in user_ids]
        if replied_author is not None and ping_replied and replied_author["id"] not in user_ids:
            mentions.append(dict(replied_author))
        roles = [r for r in _unique(_ROLE_MENTION.findall(content)) if "roles" in parse or r in roles_allowed]
        everyone = "everyone" in parse and ("@everyone" in content or "@here" in content)
        return mentions, roles, everyone

    def _store(
        self,
        channel_id: str,
        payload: Mapping[str, Any],
        *,
        author: dict[str, Any],
        webhook: EmulatedWebhook | None,
        reference: _Stored | None,
    ) -> dict[str, Any]:
        now = self._now()
        message_id = self._snowflake(now)
        stamp = datetime.datetime.fromtimestamp(self._wall(now), tz=datetime.UTC)
        replied_author = reference.message["author"] if reference is not None else None
        mentions, roles, everyone = self._mentions(
            payload, webhook=webhook is not None, replied_author=replied_author
        )
        embeds = payload.get("embeds") or []
        flags = payload.get("flags") or 0
        message: dict[str, Any] = {
            "id": message_id,
            "type": 19 if reference is not None else 0,
            "channel_id": channel_id,
            "author": author,
            "content": payload.get("content") or "",
            "timestamp": stamp.isoformat(timespec="microseconds"),
            "edited_timestamp": None,
            "tts": bool(payload.get("tts", False)),
            "mention_everyone": everyone,
            "mentions": mentions,
            "mention_roles": roles,
            "attachments": [],
            "embeds": [{**embed, "type": "rich"} for embed in embeds],
            "components": list(payload.get("components") or []),
            "pinned": False,
            "flags": flags & _CREATE_FLAGS,
        }
        if payload.get("nonce") is not None and webhook is None:
            message["nonce"] = payload["nonce"]
        if webhook is not None:
            message["webhook_id"] = webhook.id
        if reference is not None:
            message["message_reference"] = {
                "type": 0,
                "message_id": reference.id,
                "channel_id": reference.channel_id,
            }
            message["referenced_message"] = {
                key: value for key, value in reference.message.items() if key != "referenced_message"
            }
        stored = _Stored(message_id, channel_id, str(author["id"]), message, dict(payload))
        self._messages[message_id] = stored
        self._order.append(message_id)
        self._channels[channel_id].append(message_id)
        return message

    def _bot_user(self) -> dict[str, Any]:
        return _user(self.config.bot_id, self.config.bot_username, bot=True)

    # -- handlers -------------------------------------------------------------

    async def _create_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self._check_channel(channel_id)
        payload = await self._payload(request)
        self._validate(payload, webhook=False)
        author = self._bot_user()
        nonce = payload.get("nonce")
        nonce_key: tuple[str, str, str] | None = None
        now = self._now()
        if payload.get("enforce_nonce") is True and nonce is not None:
            nonce_key = (channel_id, str(author["id"]), str(nonce))
            seen = self._nonces.get(nonce_key)
            if seen is not None and now - seen[1] <= self.config.nonce_window:
                earlier = self._messages[seen[0]]
                if earlier.deleted:
                    raise _ApiError(404, 10008, "Unknown Message")
                self.counters.nonce_dedupes += 1
                return _json(200, earlier.message)
        reference = self._reference(channel_id, payload.get("message_reference"))
        message = self._store(channel_id, payload, author=author, webhook=None, reference=reference)
        self.counters.messages_created += 1
        if nonce_key is not None:
            if len(self._nonces) >= 10_000:
                self._forget_nonces(now)
            self._nonces[nonce_key] = (str(message["id"]), now)
        return _json(200, message)

    def _forget_nonces(self, now: float) -> None:
        """Drop nonces older than the window (keeps long benchmark runs bounded)."""
        horizon = now - self.config.nonce_window
        self._nonces = {key: seen for key, seen in self._nonces.items() if seen[1] >= horizon}

    def _reference(self, channel_id: str, reference: Any) -> _Stored | None:
        if not isinstance(reference, dict):
            return None
        target_channel = str(reference.get("channel_id") or channel_id)
        target = self._messages.get(str(reference.get("message_id")))
        if target is not None and not target.deleted and target.channel_id == target_channel:
            return target
        if reference.get("fail_if_not_exists", True) is False:
            return None
        problem = (("message_reference",), "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
        raise _form_error([problem])

    async def _edit_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self._check_channel(channel_id)
        stored = self._stored_in(channel_id, request.match_info["message_id"])
        payload = await self._payload(request)
        problems = _form_problems(payload, webhook=False)
        if problems:
            raise _form_error(problems)
        if stored.author_id != self.config.bot_id and ("content" in payload or "embeds" in payload):
            raise _ApiError(403, 50005, "Cannot edit a message authored by another user")
        message = stored.message
        merged = {
            "content": message["content"],
            "embeds": message["embeds"],
            "components": message["components"],
        }
        merged.update({key: payload[key] for key in ("content", "embeds", "components") if key in payload})
        if _is_empty(merged):
            raise _ApiError(400, 50006, "Cannot send an empty message")
        mentions, roles, everyone = self._mentions(
            {**merged, "allowed_mentions": payload.get("allowed_mentions")},
            webhook=False,
            replied_author=None,
        )
        now = self._now()
        message.update(
            content=merged["content"] or "",
            embeds=[{**embed, "type": "rich"} for embed in merged["embeds"] or []],
            components=list(merged["components"] or []),
            mentions=mentions,
            mention_roles=roles,
            mention_everyone=everyone,
            edited_timestamp=datetime.datetime.fromtimestamp(self._wall(now), tz=datetime.UTC).isoformat(),
        )
        if isinstance(payload.get("flags"), int):
            # Only SUPPRESS_EMBEDS can be toggled on edit; other bits keep their value.
            message["flags"] = (message["flags"] & ~4) | (payload["flags"] & 4)
        stored.payload.update(payload)
        return _json(200, message)

    async def _delete_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self._check_channel(channel_id)
        self._stored_in(channel_id, request.match_info["message_id"]).deleted = True
        return web.Response(status=204)

    async def _get_message(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self._check_channel(channel_id)
        return _json(200, self._stored_in(channel_id, request.match_info["message_id"]).message)

    async def _list_messages(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self._check_channel(channel_id)
        raw = request.query.get("limit", "50")
        try:
            limit = int(raw)
        except ValueError:
            limit = -1
        if not 1 <= limit <= 100:
            problem = (("limit",), "NUMBER_TYPE_MAX", "Value must be between 1 and 100.")
            raise _form_error([problem])
        live = [
            self._messages[mid]
            for mid in self._channels.get(channel_id, ())
            if not self._messages[mid].deleted
        ]
        return _json(200, [stored.message for stored in reversed(live[-limit:])])

    async def _typing(self, request: web.Request) -> web.Response:
        channel_id = request.match_info["channel_id"]
        self._check_channel(channel_id)
        self.counters.typing[channel_id] += 1
        return web.Response(status=204)

    def _webhook(self, request: web.Request) -> EmulatedWebhook:
        hook = self._webhooks.get(request.match_info["webhook_id"])
        if hook is None:
            raise _ApiError(404, 10015, "Unknown Webhook")
        if not secrets.compare_digest(hook.token, request.match_info["webhook_token"]):
            raise _ApiError(401, 50027, "Invalid Webhook Token")
        return hook

    async def _execute_webhook(self, request: web.Request) -> web.Response:
        hook = self._webhook(request)
        wait = _query_bool(request.query.get("wait"))
        channel_id = request.query.get("thread_id") or hook.channel_id
        if channel_id in self.config.deleted_channels:
            raise _ApiError(404, 10003, "Unknown Channel")
        payload = await self._payload(request)
        self._validate(payload, webhook=True)
        if payload.get("message_reference") is not None:
            self.counters.ignored_webhook_references += 1
        author = {
            "id": hook.id,
            "username": payload.get("username") or hook.name,
            "discriminator": "0000",
            "avatar": None,
            "bot": True,
        }
        message = self._store(channel_id, payload, author=author, webhook=hook, reference=None)
        self.counters.messages_created += 1
        return _json(200, message) if wait else web.Response(status=204)

    async def _get_webhook(self, request: web.Request) -> web.Response:
        hook = self._webhook(request)
        body = {
            "id": hook.id,
            "type": 1,
            "channel_id": hook.channel_id,
            "guild_id": None,
            "name": hook.name,
            "avatar": None,
            "token": hook.token,
            "application_id": None,
        }
        return _json(200, body)

    async def _me(self, request: web.Request) -> web.Response:
        cfg = self.config
        body = {
            **_user(cfg.bot_id, cfg.bot_username, bot=True),
            "system": False,
            "mfa_enabled": False,
            "banner": None,
            "accent_color": None,
            "locale": "en-US",
            "verified": True,
            "email": None,
            "flags": 0,
            "premium_type": 0,
            "avatar_decoration_data": None,
        }
        return _json(200, body)

    async def _application(self, request: web.Request) -> web.Response:
        cfg = self.config
        # The fields discord.py's AppInfo reads with [] (not .get) are all present.
        body: dict[str, Any] = {
            "id": cfg.application_id,
            "name": cfg.bot_username,
            "icon": None,
            "description": "",
            "summary": "",
            "type": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "verify_key": "0" * 64,
            "flags": 0,
            "owner": _user(cfg.owner_id, "emulator-owner"),
            "team": None,
            "rpc_origins": [],
            "redirect_uris": [],
            "tags": [],
            "interactions_endpoint_url": None,
            "role_connections_verification_url": None,
            "integration_types_config": {},
            "approximate_guild_count": 0,
            "bot": _user(cfg.bot_id, cfg.bot_username, bot=True),
        }
        return _json(200, body)

    async def _gateway(self, request: web.Request) -> web.Response:
        # No gateway is emulated; the URL points back here so nothing external is ever contacted.
        body = {
            "url": f"ws://{self._host}:{self._port}/gateway-not-emulated",
            "shards": 1,
            "session_start_limit": {"total": 1000, "remaining": 1000, "reset_after": 0, "max_concurrency": 1},
        }
        return _json(200, body)


@web.middleware
async def _json_not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Answer unknown routes and methods the way Discord does (JSON, code 0)."""
    try:
        return await handler(request)
    except web.HTTPMethodNotAllowed:
        return _json(405, {"message": "405: Method Not Allowed", "code": 0})
    except web.HTTPNotFound:
        return _json(404, {"message": "404: Not Found", "code": 0})


@contextlib.asynccontextmanager
async def serve(
    port: int = 0, config: EmulatorConfig | None = None, *, host: str = "127.0.0.1"
) -> AsyncIterator[DiscordEmulator]:
    """Run an emulator for the duration of an ``async with`` block.

    Example::

        async with serve(config=EmulatorConfig(channel_window=0.5)) as emulator:
            print(emulator.base_url)
    """
    emulator = DiscordEmulator(config)
    await emulator.start(host, port)
    try:
        yield emulator
    finally:
        await emulator.close()


async def run_forever(
    host: str = "127.0.0.1",
    port: int = 0,
    config: EmulatorConfig | None = None,
    *,
    ready: Callable[[str], object] | None = None,
) -> None:
    """Serve until cancelled, printing nothing (the ``rxcord emulator`` command).

    Args:
        host: Address to bind; keep the default unless you know why.
        port: Port to bind (0 picks a free one).
        config: Emulator configuration.
        ready: Called once with the base URL when the server accepts connections (e.g. to print it).
    """
    async with serve(port, config, host=host) as emulator:
        if ready is not None:
            ready(emulator.base_url)
        await asyncio.Event().wait()
