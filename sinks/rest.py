"""Stage 07 I/O: deliver messages to Discord over REST, as the bot or through a webhook.

``RestSink`` implements ``rxcord.sinks.base.DiscordSink`` with aiohttp. It is the seam
where HTTP becomes rxcord's vocabulary: above it nothing sees an aiohttp
exception or a status code, only ``SentMessage`` values and the
``rxcord.core.errors`` tree (``discord_error`` is the one mapping).

Policy, from the project's Discord delivery facts (``shared/reference/discord-delivery-facts.md``) §6 and §9:

* **429** is the rate limiter's business (``rxcord.sinks.ratelimit``): it waits what
  Discord asks and the request is retried, holding the bucket so order holds, until the
  request's 429 budget (seconds of waits, not a count of tries: "The 429 budget" there)
  is spent; then ``RateLimitError`` (``budget_spent``).
* **5xx and connection errors** are retried ``max_retries`` times with capped
  exponential backoff plus jitter (``Backoff``; the jitter's random source is
  seedable). A channel message carries a ``nonce`` with ``enforce_nonce: true``
  (one is generated if the caller gave none) and keeps it across retries, so a
  retry after a failure that happened *after* Discord stored the message
  returns that message instead of posting it twice: the bot path is
  **exactly once** (within Discord's nonce window).
* **Webhook messages are at most once.** Webhooks have no ``enforce_nonce``, so
  a retry after Discord may have stored the message could post it twice. A
  failure that proves the request never reached the API is retried (the
  connection could not be opened, a 429, or 502 / 503 / 504, which Discord's
  edge answers when the API did not take the request); an *ambiguous* one (the
  connection reset or timed out after the request was written, or a 500) is
  not: the message counts as possibly delivered, ``create_message`` returns it
  with ``message_id=None`` and logs a warning, and the stream goes on. So a
  webhook answer is never duplicated; a message can be lost only when such an
  ambiguous failure happened *before* Discord stored it.
* **401** on the bot token: the token is revoked or wrong. The sink remembers
  it and never sends with it again; the first and every later call raise
  ``TokenRejectedError`` at once (each 401 counts toward Discord's
  invalid-request limit).
* **Bodies are read with a bound** (``max_body``, 1 MiB by default, counted
  after decompression: the sink decompresses gzip / deflate itself, in
  bounded steps): a larger answer is not kept (its status still counts; a
  2xx then has no message id).
* **Other 4xx** are never retried: 403 / 50001 or 50013 stop the stream
  (``DiscordStopError``, ``missing_access``), 404 / 10003 too
  (``channel_deleted``), 404 / 10015 and 401 / 50027 mark the webhook dead
  (``UnknownWebhookError``; later sends to it fail at once without a request,
  since Discord restricts clients that keep using dead webhooks), anything else
  is a ``DiscordError``.
* **A reply whose target is gone** (400 / 50035 ``MESSAGE_REFERENCE_UNKNOWN_MESSAGE``,
  404 / 10008, or 403 / 160002 when the bot may not read history) is sent
  once more without ``message_reference``: the answer matters more than the
  reply arrow.
* Webhooks cannot reply (Discord ignores ``message_reference`` there), so the
  sink drops it, along with ``nonce``/``enforce_nonce``; it fills ``username``
  and ``avatar_url`` from the context's persona when the payload has none,
  the name passed through ``rxcord.sinks.persona.webhook_username`` (a name
  Discord rejects is never sent, whoever supplied it).
* ``edit_message`` / ``delete_message`` use ``PATCH`` / ``DELETE
  /channels/{channel_id}/messages/{message_id}`` (or the webhook's
  ``/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}``): routes of
  their own, so their buckets are their own until Discord names a shared hash.

The bot token and webhook tokens never reach a log line, an exception or a
repr: routes carry a digest of the webhook token, exceptions are built from
Discord's JSON, and transport errors are re-raised ``from None`` with secrets
redacted from their text.
"""

from __future__ import annotations

__all__ = ("DEFAULT_MAX_BODY", "Backoff", "RestSink", "discord_error")

import asyncio
import json
import random
import secrets
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import aiohttp
import attrs
from loguru import logger

from rxcord.core.body import Overflow, read_capped
from rxcord.core.config import StreamContext
from rxcord.core.errors import (
    DiscordError,
    DiscordStopError,
    ResponseTooLargeError,
    TokenRejectedError,
    UndecodableBodyError,
    UnknownWebhookError,
)
from rxcord.core.inflate import body_reader
from rxcord.core.state import SentMessage
from rxcord.core.types import StopKind
from rxcord.core.version import __version__
from rxcord.sinks.persona import webhook_username
from rxcord.sinks.ratelimit import RateLimiter, Route, webhook_major
from rxcord.sinks.uploads import split_uploads

_log = logger.bind(stage="07-rest")

USER_AGENT: Final = f"DiscordBot (https://github.com/rxcord/rxcord, {__version__})"
"""Discord asks for ``DiscordBot ($url, $version)``."""

_CREATE_TEMPLATE: Final = "/channels/{channel_id}/messages"
_MESSAGE_TEMPLATE: Final = "/channels/{channel_id}/messages/{message_id}"
_TYPING_TEMPLATE: Final = "/channels/{channel_id}/typing"
_WEBHOOK_TEMPLATE: Final = "/webhooks/{webhook_id}/{webhook_token}"
_WEBHOOK_MESSAGE_TEMPLATE: Final = "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}"
_REFERENCE_GONE_CODES: Final = frozenset({10008, 160002})
_UNKNOWN_MESSAGE: Final = 10008
_NOT_HANDLED: Final = frozenset({502, 503, 504})
"""5xx answers of Discord's edge when the API did not take the request (retried even for webhooks)."""
_UNSENT_ERRORS: Final = (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError)
"""Transport failures before the request was written (retried even for webhooks)."""
_WEBHOOK_ONLY_FIELDS: Final = ("username", "avatar_url", "thread_name", "applied_tags", "tts")

DEFAULT_MAX_BODY: Final = 1 << 20
"""Bytes of a Discord response body kept, after decompression (a message object is a few KiB)."""


@attrs.frozen
class Backoff:
    """Capped exponential backoff with additive jitter, for 5xx and connection errors.

    Attempt ``n`` (1-based) waits ``min(cap, base * 2 ** (n - 1)) + uniform(0, jitter)``
    seconds (hikari's shape: base 2, up to 1 s of jitter, capped at 16 s).
    """

    base: float = 1.0
    cap: float = 16.0
    jitter: float = 1.0

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt``."""
        exponential: float = self.base * 2.0 ** (attempt - 1)
        return min(self.cap, exponential) + rng.uniform(0.0, self.jitter)


def _flatten_errors(errors: Any, path: str = "") -> list[str]:
    """Discord's nested ``errors`` tree as ``"In content: Must be ..."`` lines (discord.py's wording)."""
    lines: list[str] = []
    if not isinstance(errors, Mapping):
        return lines
    for key, value in errors.items():
        if key == "_errors" and isinstance(value, list):
            where = path or "body"
            lines += [f"In {where}: {item.get('message', '')}" for item in value if isinstance(item, Mapping)]
        else:
            lines += _flatten_errors(value, f"{path}.{key}" if path else str(key))
    return lines


def _error_codes(errors: Any) -> set[str]:
    codes: set[str] = set()
    if isinstance(errors, Mapping):
        for key, value in errors.items():
            if key == "_errors" and isinstance(value, list):
                codes |= {str(item.get("code")) for item in value if isinstance(item, Mapping)}
            else:
                codes |= _error_codes(value)
    return codes


def discord_error(status: int, body: Any) -> DiscordError:
    """Map a Discord error answer to the ``rxcord.core.errors`` exception stage 07 raises.

    Args:
        status: The HTTP status.
        body: The decoded JSON body (``{"code", "message", "errors"}``) or ``None``.

    Returns:
        ``DiscordStopError`` (``missing_access`` for 403 / 50001, 50013; ``channel_deleted`` for
        404 / 10003), ``UnknownWebhookError`` (404 / 10015, 401 / 50027), ``TokenRejectedError``
        (any other 401) or ``DiscordError``.
    """
    code: int | None = None
    message = f"HTTP {status}"
    if isinstance(body, Mapping):
        raw_code = body.get("code")
        code = raw_code if isinstance(raw_code, int) and not isinstance(raw_code, bool) else None
        message = str(body.get("message") or message)
        details = _flatten_errors(body.get("errors"))
        if details:
            message = f"{message}: {'; '.join(details)}"
    if status == 403 and code in (50001, 50013):
        return DiscordStopError(status=status, code=code, message=message, stop_kind=StopKind.MISSING_ACCESS)
    if status == 404 and code == 10003:
        return DiscordStopError(status=status, code=code, message=message, stop_kind=StopKind.CHANNEL_DELETED)
    if (status, code) in ((404, 10015), (401, 50027)):
        return UnknownWebhookError(status=status, code=code, message=message)
    if status == 401:
        return TokenRejectedError(status=status, code=code, message=message)
    return DiscordError(status=status, code=code, message=message)


def _reference_gone(status: int, body: Any) -> bool:
    if not isinstance(body, Mapping):
        return False
    code = body.get("code")
    if code in _REFERENCE_GONE_CODES and status in (403, 404):
        return True
    return (
        status == 400
        and code == 50035
        and "MESSAGE_REFERENCE_UNKNOWN_MESSAGE" in _error_codes(body.get("errors"))
    )


@attrs.frozen
class _Answer:
    status: int
    body: Any
    sent: Mapping[str, Any] | None
    """The payload of the attempt that got this answer."""
    uncertain: bool = False
    """An ambiguous failure that was not retried (at-most-once): Discord may have stored it."""


class RestSink:
    """``DiscordSink`` over Discord's REST API (bot token), or a webhook when the context has one.

    Example::

        async with RestSink(base_url, token) as sink:
            sent = await sink.create_message(StreamContext(channel_id="42"), {"content": "hi"})

    Args:
        base_url: API base including the version, e.g. ``https://discord.com/api/v10``
            or an emulator's ``base_url``.
        token: The bot token (without ``Bot``); ``None`` allows webhook delivery only.
        session: An aiohttp session to use (not closed by ``aclose``); one is created if ``None``.
        limiter: A shared ``RateLimiter`` (share one per bot token); a new one if ``None``.
        max_retries: Retries of 5xx answers and connection errors per message.
        backoff: Delay policy between those retries.
        seed: Seed of the jitter's random source (``None``: unpredictable).
        sleep: Awaitable sleep used for backoff (tests inject a recorder).
        timeout: Total seconds per HTTP attempt.
        max_body: Bytes of a response body kept, after decompression; more is not read.
    """

    __slots__ = (
        "_backoff",
        "_base_url",
        "_dead_webhooks",
        "_limiter",
        "_max_body",
        "_max_retries",
        "_owns_session",
        "_rejected",
        "_rng",
        "_session",
        "_sleep",
        "_timeout",
        "_token",
    )

    def __init__(
        self,
        base_url: str,
        token: str | None,
        session: aiohttp.ClientSession | None = None,
        limiter: RateLimiter | None = None,
        max_retries: int = 5,
        *,
        backoff: Backoff = Backoff(),
        seed: int | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        timeout: float = 30.0,
        max_body: int = DEFAULT_MAX_BODY,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._token = token
        self._session = session
        self._owns_session = session is None
        self._limiter = limiter if limiter is not None else RateLimiter()
        self._max_retries = max_retries
        self._backoff = backoff
        self._rng = random.Random(seed)
        self._sleep = sleep or asyncio.sleep
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._max_body = max_body
        self._dead_webhooks: set[str] = set()
        self._rejected = False
        """The bot token got a 401: nothing is sent with it any more."""

    def __repr__(self) -> str:
        token = "<hidden>" if self._token else None
        return f"RestSink(base_url={self._base_url!r}, token={token})"

    @property
    def limiter(self) -> RateLimiter:
        """The rate limiter this sink sends through."""
        return self._limiter

    @property
    def token_rejected(self) -> bool:
        """Whether Discord rejected the bot token (401); no request uses it since."""
        return self._rejected

    async def __aenter__(self) -> RestSink:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the HTTP session if this sink created it."""
        if self._owns_session and self._session is not None:
            await self._session.close()
            self._session = None

    # -- DiscordSink ---------------------------------------------------------

    async def create_message(self, context: StreamContext, payload: Mapping[str, Any]) -> SentMessage:
        """Send one message; see the module docstring for retries and error mapping.

        Returns:
            The message as sent (``payload`` is exactly the JSON of the accepted attempt) and its id
            (``None`` for a webhook message whose delivery is uncertain, see the module docstring).

        Raises:
            DiscordStopError: missing access or deleted channel (the stream must stop).
            UnknownWebhookError: the context's webhook is gone.
            TokenRejectedError: the bot token was rejected (now or before).
            DiscordError: any other refusal, or retries exhausted.
        """
        webhook = _webhook(context)
        if webhook is not None:
            return await self._execute_webhook(context, *webhook, payload)
        body = dict(payload)
        if body.get("nonce") is None:
            # secrets, not the seeded rng: a nonce repeated within Discord's window
            # would return an old message instead of posting the new one.
            body["nonce"] = secrets.token_hex(12)
        body.setdefault("enforce_nonce", True)
        for field in _WEBHOOK_ONLY_FIELDS:
            body.pop(field, None)
        route = Route("POST", _CREATE_TEMPLATE, (context.channel_id,))
        url = f"{self._base_url}/channels/{_quote(context.channel_id)}/messages"
        answer = await self._exchange(route, url, body, bot=True, secret=None)
        return self._sent(answer, context.channel_id)

    async def edit_message(
        self, context: StreamContext, message_id: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        """Edit a message (``PATCH``): the bot's, or the webhook's when the context has a webhook.

        Resend ``allowed_mentions`` with every edit: Discord parses an edit without it with the
        defaults (pings), not with the original message's settings.

        It raises the same errors as ``create_message``.
        """
        body = {
            k: v
            for k, v in payload.items()
            if k not in ("nonce", "enforce_nonce", "message_reference", *_WEBHOOK_ONLY_FIELDS)
        }
        webhook = _webhook(context)
        if webhook is not None:
            route, url = self._webhook_message(context, *webhook, message_id)
            answer = await self._webhook_exchange(webhook[0], route, url, body, secret=webhook[1])
            return self._sent(answer, context.thread_id or context.channel_id)
        route = Route("PATCH", _MESSAGE_TEMPLATE, (context.channel_id,))
        url = f"{self._base_url}/channels/{_quote(context.channel_id)}/messages/{_quote(message_id)}"
        answer = await self._exchange(route, url, body, bot=True, secret=None)
        return self._sent(answer, context.channel_id)

    async def delete_message(self, context: StreamContext, message_id: str) -> None:
        """Delete a message (``DELETE``); one that is already gone (404 / 10008) counts as deleted.

        It raises the same errors as ``create_message``.
        """
        webhook = _webhook(context)
        if webhook is not None:
            route, url = self._webhook_message(context, *webhook, message_id, method="DELETE")
            answer = await self._webhook_exchange(webhook[0], route, url, None, secret=webhook[1])
        else:
            route = Route("DELETE", _MESSAGE_TEMPLATE, (context.channel_id,))
            url = f"{self._base_url}/channels/{_quote(context.channel_id)}/messages/{_quote(message_id)}"
            answer = await self._exchange(route, url, None, bot=True, secret=None)
        if answer.status >= 300 and not _unknown_message(answer.status, answer.body):
            raise discord_error(answer.status, answer.body)

    async def trigger_typing(self, context: StreamContext) -> None:
        """Show the typing indicator (needs the bot token; a webhook-only sink skips it)."""
        if self._token is None and context.uses_webhook:
            return
        channel_id = context.thread_id if context.uses_webhook and context.thread_id else context.channel_id
        route = Route("POST", _TYPING_TEMPLATE, (channel_id,))
        url = f"{self._base_url}/channels/{_quote(channel_id)}/typing"
        answer = await self._exchange(route, url, None, bot=True, secret=None)
        if answer.status >= 300:
            raise discord_error(answer.status, answer.body)

    async def recent_messages(self, context: StreamContext, limit: int) -> list[Mapping[str, Any]] | None:
        """The channel's latest messages, newest first (``GET /channels/{channel_id}/messages``).

        Needs the bot token, even for a webhook context: a webhook token cannot list messages.
        ``None`` when the sink has no usable token or Discord refused (no history permission).
        """
        if self._token is None or self._rejected:
            return None
        channel_id = context.thread_id if context.uses_webhook and context.thread_id else context.channel_id
        route = Route("GET", _CREATE_TEMPLATE, (channel_id,))
        url = f"{self._base_url}/channels/{_quote(channel_id)}/messages?limit={int(limit)}"
        answer = await self._exchange(route, url, None, bot=True, secret=None)
        if answer.status >= 300 or not isinstance(answer.body, list):
            _log.warning("{route}: not readable (HTTP {status})", route=route.key, status=answer.status)
            return None
        return [message for message in answer.body if isinstance(message, Mapping)]

    # -- internals -----------------------------------------------------------

    async def _execute_webhook(
        self, context: StreamContext, webhook_id: str, webhook_token: str, payload: Mapping[str, Any]
    ) -> SentMessage:
        body = {k: v for k, v in payload.items() if k not in ("nonce", "enforce_nonce", "message_reference")}
        # A name Discord rejects would fail the message: never send one, whoever supplied it.
        username = webhook_username(body.pop("username", None) or context.persona_username)
        if username is not None:
            body["username"] = username
        if context.persona_avatar_url is not None:
            body.setdefault("avatar_url", context.persona_avatar_url)
        query = {"wait": "true"}
        if context.thread_id is not None:
            query["thread_id"] = context.thread_id
        url = (
            f"{self._base_url}/webhooks/{_quote(webhook_id)}/{_quote(webhook_token)}"
            f"?{urllib.parse.urlencode(query)}"
        )
        route = Route("POST", _WEBHOOK_TEMPLATE, webhook_major(webhook_id, webhook_token))
        answer = await self._webhook_exchange(
            webhook_id, route, url, body, secret=webhook_token, idempotent=False
        )
        return self._sent(answer, context.thread_id or context.channel_id)

    def _webhook_message(
        self,
        context: StreamContext,
        webhook_id: str,
        webhook_token: str,
        message_id: str,
        method: str = "PATCH",
    ) -> tuple[Route, str]:
        url = (
            f"{self._base_url}/webhooks/{_quote(webhook_id)}/{_quote(webhook_token)}"
            f"/messages/{_quote(message_id)}"
        )
        if context.thread_id is not None:
            url += f"?{urllib.parse.urlencode({'thread_id': context.thread_id})}"
        return Route(method, _WEBHOOK_MESSAGE_TEMPLATE, webhook_major(webhook_id, webhook_token)), url

    async def _webhook_exchange(
        self,
        webhook_id: str,
        route: Route,
        url: str,
        body: Mapping[str, Any] | None,
        *,
        secret: str,
        idempotent: bool = True,
    ) -> _Answer:
        if webhook_id in self._dead_webhooks:
            raise UnknownWebhookError(
                status=404, code=10015, message="Unknown Webhook (seen before; not retried)"
            )
        try:
            answer = await self._exchange(route, url, body, bot=False, secret=secret, idempotent=idempotent)
            gone = route.method == "DELETE" and _unknown_message(answer.status, answer.body)
            if answer.status >= 300 and not gone:
                raise discord_error(answer.status, answer.body)
        except UnknownWebhookError:
            self._dead_webhooks.add(webhook_id)
            raise
        except TokenRejectedError as exc:  # a webhook's 401: its token is not valid any more
            self._dead_webhooks.add(webhook_id)
            raise UnknownWebhookError(status=exc.status, code=exc.code, message=exc.message) from None
        return answer

    def _sent(self, answer: _Answer, fallback_channel: str) -> SentMessage:
        if answer.status >= 300 and not answer.uncertain:
            raise discord_error(answer.status, answer.body)
        body = answer.body if isinstance(answer.body, Mapping) and not answer.uncertain else {}
        message_id = body.get("id")
        channel_id = body.get("channel_id") or fallback_channel
        return SentMessage(
            payload=split_uploads(answer.sent or {})[0],
            message_id=str(message_id) if message_id is not None else None,
            channel_id=str(channel_id),
        )

    def _redact(self, text: str, secret: str | None) -> str:
        for value in (self._token, secret):
            if value:
                text = text.replace(value, "<redacted>")
        return text

    def _check_token(self, route: Route) -> None:
        if self._token is None:
            raise DiscordError(status=0, message=f"{route.key} needs a bot token; this sink has none")
        if self._rejected:
            raise TokenRejectedError(
                status=401, message=f"{route.key} not sent: Discord rejected the bot token earlier (401)"
            )

    async def _exchange(
        self,
        route: Route,
        url: str,
        payload: Mapping[str, Any] | None,
        *,
        bot: bool,
        secret: str | None,
        idempotent: bool = True,
    ) -> _Answer:
        """One logical request: rate-limited, retried, with the reply fallback; returns the final answer.

        ``idempotent=False`` (webhook messages) retries only failures that prove the request was
        not handled; an ambiguous one returns an ``uncertain`` answer (at most once).
        """
        if bot:
            self._check_token(route)
        failures = 0
        where = route.major[0] if route.major else ""
        async with self._limiter.acquire(route) as slot:
            while True:
                if bot:
                    self._check_token(route)  # another request may have learnt the 401 meanwhile
                await slot.wait()
                try:
                    status, headers, body = await self._send(route.method, url, payload, bot=bot)
                except (aiohttp.ClientError, TimeoutError) as exc:
                    failures += 1
                    reason = self._redact(f"{type(exc).__name__}: {exc}", secret)
                    if not idempotent and not isinstance(exc, _UNSENT_ERRORS):
                        return self._uncertain(route, where, reason, payload)
                    if failures > self._max_retries:
                        raise DiscordError(
                            status=0, message=f"{route.key} failed after {failures} attempts: {reason}"
                        ) from None
                    await self._wait_backoff(failures, route, where, reason)
                    continue
                _log.debug("{route} ({where}) -> {status}", route=route.key, where=where, status=status)
                if slot.update(status, headers, body) is not None:
                    continue  # the slot waits before the next try; it raises once the 429 budget is spent
                if status == 401 and bot:
                    self._rejected = True
                    _log.error(
                        "{route}: the bot token was rejected (401); no request will use it", route=route.key
                    )
                    raise discord_error(status, body)
                if status >= 500:
                    if not idempotent and status not in _NOT_HANDLED:
                        return self._uncertain(route, where, f"HTTP {status}", payload)
                    failures += 1
                    if failures > self._max_retries:
                        return _Answer(status, body, payload)
                    await self._wait_backoff(failures, route, where, f"HTTP {status}")
                    continue
                if payload is not None and "message_reference" in payload and _reference_gone(status, body):
                    _log.warning(
                        "{route} ({where}): reply target gone, sending without the reference",
                        route=route.key,
                        where=where,
                    )
                    payload = {k: v for k, v in payload.items() if k != "message_reference"}
                    continue
                return _Answer(status, body, payload)

    def _uncertain(self, route: Route, where: str, reason: str, payload: Mapping[str, Any] | None) -> _Answer:
        _log.warning(
            "{route} ({where}) failed ({reason}) after the request was sent; not retried "
            "(webhooks cannot deduplicate): the message may or may not be in Discord",
            route=route.key,
            where=where,
            reason=reason,
        )
        return _Answer(0, None, payload, uncertain=True)

    async def _wait_backoff(self, failures: int, route: Route, where: str, reason: str) -> None:
        delay = self._backoff.delay(failures, self._rng)
        _log.warning(
            "{route} ({where}) failed ({reason}); retry {n}/{max} in {delay:.2f} s",
            route=route.key,
            where=where,
            reason=reason,
            n=failures,
            max=self._max_retries,
            delay=delay,
        )
        await self._sleep(delay)

    async def _send(
        self, method: str, url: str, payload: Mapping[str, Any] | None, *, bot: bool
    ) -> tuple[int, Mapping[str, str], Any]:
        if self._session is None:
            self._session = aiohttp.ClientSession()
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"}
        if bot and self._token is not None:
            headers["Authorization"] = f"Bot {self._token}"
        data = _body(payload, headers)
        async with self._session.request(
            method, url, data=data, headers=headers, timeout=self._timeout, auto_decompress=False
        ) as response:
            raw = await _read_bounded(response, self._max_body)
            body: Any = None
            if raw and response.content_type == "application/json":
                try:
                    body = json.loads(raw)
                except (ValueError, RecursionError):
                    body = None
            return response.status, response.headers, body


def _body(payload: Mapping[str, Any] | None, headers: dict[str, str]) -> bytes | aiohttp.FormData | None:
    """The request body: JSON, or multipart (``payload_json`` and ``files[n]``) when files ride along.

    Built again for each attempt: a ``FormData`` can be sent once.
    """
    if payload is None:
        return None
    body, uploads = split_uploads(payload)
    if not uploads:
        headers["Content-Type"] = "application/json"
        return json.dumps(body).encode()
    form = aiohttp.FormData()
    form.add_field("payload_json", json.dumps(body), content_type="application/json")
    for n, upload in enumerate(uploads):
        form.add_field(f"files[{n}]", upload.data, filename=upload.filename, content_type=upload.content_type)
    return form


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes | None:
    """The body, decompressed in bounded steps (``rxcord.core.inflate``, the transport's rule).

    ``None`` above ``limit`` bytes, or in an encoding that was not asked for, or corrupt.
    """
    encoding = response.headers.get("Content-Encoding", "identity")
    try:
        read = body_reader(response.content.readany, encoding, limit + 1)
        return (await read_capped(read, limit, overflow=Overflow.RAISE)).data
    except UndecodableBodyError as exc:
        _log.warning("Discord's answer was not decodable ({why}); body ignored", why=exc)
        return None
    except ResponseTooLargeError:
        _log.warning("Discord response body above {limit} bytes; not read further", limit=limit)
        response.close()
        return None


def _webhook(context: StreamContext) -> tuple[str, str] | None:
    if context.webhook_id is not None and context.webhook_token is not None:
        return context.webhook_id, context.webhook_token
    return None


def _unknown_message(status: int, body: Any) -> bool:
    return status == 404 and isinstance(body, Mapping) and body.get("code") == _UNKNOWN_MESSAGE


def _quote(part: str) -> str:
    return urllib.parse.quote(part, safe="")
