"""The emulator itself: one aiohttp application, its lifecycle and its request pipeline.

Every Discord route goes through the pipeline: authentication, the global limit, faults, the
route's bucket.

The routes live in their own modules (``messages``, ``webhooks``, ``identity``,
``interactions``, ``gateway``, ``inject``); each has an ``install(emulator)`` function.
"""

from __future__ import annotations

__all__ = ("DiscordEmulator", "Handler")

import collections
import secrets
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs
from aiohttp import web
from aiohttp.typedefs import Handler as _Middleware

from rxcord.core.errors import ApiError, EmulatorNotStartedError
from rxcord.testing.emulator.config import (
    API_PREFIX,
    GATEWAY_PATH,
    ROUTE_EXECUTE,
    EmulatedWebhook,
    EmulatorConfig,
    EmulatorCounters,
    Fault,
    FaultKind,
)
from rxcord.testing.emulator.events import EventHub
from rxcord.testing.emulator.guild import Guild
from rxcord.testing.emulator.limits import Window, bucket_hash, bucket_headers, too_many
from rxcord.testing.emulator.origin import local_only
from rxcord.testing.emulator.store import MessageStore
from rxcord.testing.emulator.validation import form_error
from rxcord.testing.emulator.wire import json_response, user_object
from rxcord.testing.page import mount as mount_page
from rxcord.testing.page import page_url as page_address

if TYPE_CHECKING:
    from rxcord.testing.emulator.interactions import Interaction

Handler = Callable[["DiscordEmulator", web.Request], Awaitable[web.StreamResponse]]
"""A route handler: the emulator and the request."""

_BAN_BODY: Final = {
    "code": 0,
    "message": "You are being blocked from accessing our API temporarily due to exceeding "
    "our rate limits frequently. Please read our docs at "
    "https://discord.com/developers/docs/topics/rate-limits to prevent this moving forward.",
}


@attrs.define
class _FaultState:
    fault: Fault
    left: int


@attrs.frozen
class _Endpoint:
    route_key: str
    handler: Handler
    window: Window | None = None
    bucket_hash: str | None = None
    bot_auth: bool = True


@web.middleware
async def _json_not_found(request: web.Request, handler: _Middleware) -> web.StreamResponse:
    """Answer unknown routes and methods the way Discord does (JSON, code 0)."""
    try:
        return await handler(request)
    except web.HTTPMethodNotAllowed:
        return json_response(405, {"message": "405: Method Not Allowed", "code": 0})
    except web.HTTPNotFound:
        return json_response(404, {"message": "404: Not Found", "code": 0})


class DiscordEmulator:
    """An aiohttp application emulating Discord's REST API and gateway (see the package docstring).

    Example::

        async with DiscordEmulator(EmulatorConfig(channel_window=0.5)) as emulator:
            sink = RestSink(emulator.base_url, emulator.config.token)
            ...
            assert [m["content"] for m in emulator.messages("42")] == ["hello"]

    Args:
        config: Limits, channel states, the guild, webhooks and faults; defaults to Discord's
            observed values.
        clock: Monotonic seconds for rate limits and timestamps; defaults to the running loop's ``time``.
    """

    def __init__(
        self, config: EmulatorConfig | None = None, *, clock: Callable[[], float] | None = None
    ) -> None:
        from rxcord.testing.emulator import (
            gateway,
            identity,
            inject,
            interactions,
            messages,
            reactions,
            threads,
            uploads,
            webhooks,
        )

        self.config = config if config is not None else EmulatorConfig()
        self.counters = EmulatorCounters()
        self.events = EventHub()
        self.store = MessageStore(self.config, self.events, clock)
        self.guild = Guild(self.config, self.events, self.store.users)
        self._runner: web.AppRunner | None = None
        self._base_url: str | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.webhooks: dict[str, EmulatedWebhook] = {hook.id: hook for hook in self.config.webhooks}
        self.files: dict[str, bytes] = {}
        """Attachment id -> the bytes uploaded (``rxcord.testing.emulator.uploads``)."""
        self._faults = [_FaultState(fault, fault.count) for fault in self.config.fault_plan]
        self._invalid: collections.deque[float] = collections.deque()
        cfg = self.config
        self._global = Window(cfg.global_limit, cfg.global_window)
        self._webhook_channels = (
            Window(cfg.webhook_channel_limit, cfg.webhook_channel_window)
            if cfg.webhook_channel_limit
            else None
        )
        # Loopback clients only (Host and Origin checked first): see rxcord.testing.emulator.origin.
        self.app = web.Application(middlewares=[local_only(lambda: self.host), _json_not_found])
        messages.install(self)
        reactions.install(self)
        threads.install(self)
        webhooks.install(self)
        identity.install(self)
        self.interactions = interactions.install(self)
        self.gateway = gateway.install(self)
        inject.install(self)
        uploads.install(self)
        mount_page(self.app, API_PREFIX)  # the page at "/" (rxcord.testing.page)
        self.app.on_shutdown.append(self._on_shutdown)

    def __repr__(self) -> str:
        return f"<DiscordEmulator {self._base_url or 'not started'} messages={len(self.store.order)}>"

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
        self.host, self.port = host, int(bound[1])
        self._base_url = f"http://{host}:{self.port}{API_PREFIX}"
        return self._base_url

    async def close(self) -> None:
        """Stop serving (idempotent); connected gateway clients are closed with 1001."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _on_shutdown(self, app: web.Application) -> None:
        await self.gateway.close_all()

    async def __aenter__(self) -> DiscordEmulator:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        """The API base URL (``http://127.0.0.1:PORT/api/v10``); raises before ``start``."""
        if self._base_url is None:
            raise EmulatorNotStartedError("the emulator is not started")
        return self._base_url

    @property
    def gateway_url(self) -> str:
        """The gateway's websocket URL (``ws://127.0.0.1:PORT/gateway``); raises before ``start``."""
        if self._base_url is None:
            raise EmulatorNotStartedError("the emulator is not started")
        return f"ws://{self.host}:{self.port}{GATEWAY_PATH}"

    @property
    def page_url(self) -> str:
        """The emulator's page (``http://127.0.0.1:PORT/``, ``rxcord.testing.page``); raises before start."""
        return page_address(self.base_url)

    # -- inspection and test helpers ------------------------------------------

    def messages(self, channel_id: str) -> list[dict[str, Any]]:
        """Accepted, undeleted, non-ephemeral messages of a channel, in acceptance order.

        Each is the payload as sent with the message object's fields on top
        (``id``, ``author``, normalised ``embeds``, ``mentions``, ...).
        """
        return [stored.record() for stored in self.store.live(channel_id)]

    def all_messages(self) -> list[dict[str, Any]]:
        """Accepted, undeleted, non-ephemeral messages of every channel, in acceptance order."""
        found = (self.store.messages[mid] for mid in self.store.order)
        return [s.record() for s in found if not s.deleted and not s.ephemeral]

    def add_webhook(self, channel_id: str, *, name: str = "Captain Hook") -> EmulatedWebhook:
        """Create a webhook posting into ``channel_id`` and return it (with its id and token)."""
        hook = EmulatedWebhook(
            id=self.store.snowflake(), token=secrets.token_urlsafe(32), channel_id=channel_id, name=name
        )
        self.webhooks[hook.id] = hook
        return hook

    def remove_webhook(self, webhook_id: str) -> None:
        """Delete a webhook; executing it then answers 404 / 10015."""
        self.webhooks.pop(webhook_id, None)

    def seed_message(
        self, channel_id: str, content: str = "hello", *, author_id: str = "200000000000000001"
    ) -> str:
        """Store a user's message (no HTTP, no limits, no validation), e.g. to reply to; returns its id."""
        author = user_object(author_id, f"user-{author_id[-4:]}")
        return str(self.store.create(channel_id, {"content": content}, author=author)["id"])

    def post_as_user(
        self,
        channel_id: str,
        content: str,
        *,
        author_id: str = "300000000000000001",
        username: str = "user",
        reply_to: str | None = None,
    ) -> dict[str, Any]:
        """What ``POST /_emulator/messages`` does, from Python: a validated user message, dispatched.

        Raises:
            ApiError: The route's 4xx answer (unknown channel, empty content, unknown reply target).
        """
        from rxcord.testing.emulator import inject

        body: dict[str, Any] = {
            "channel_id": channel_id,
            "author_id": author_id,
            "username": username,
            "content": content,
        }
        if reply_to is not None:
            body["message_reference"] = {"message_id": reply_to}
        return inject.user_message(self, body)

    def invoke_as_user(
        self,
        channel_id: str,
        command: str,
        options: Mapping[str, Any] | None = None,
        *,
        author_id: str = "300000000000000001",
        username: str = "user",
    ) -> Interaction:
        """What ``POST /_emulator/interactions`` does, from Python: a registered slash command, invoked.

        Await ``interaction.answered.wait()`` for the bot's initial response.
        """
        from rxcord.testing.emulator import inject

        body = {
            "channel_id": channel_id,
            "author_id": author_id,
            "username": username,
            "command": command,
            "options": dict(options or {}),
        }
        return inject.user_command(self, body)

    def delete_message(self, message_id: str) -> None:
        """Delete a stored message as its author or a moderator would (replies to it then fail)."""
        stored = self.store.messages.get(message_id)
        if stored is not None:
            self.store.delete(stored)

    def publish_typing(self, channel_id: str, user_id: str) -> None:
        """Publish ``typing_start`` (the gateway's ``TYPING_START``; Discord shows it for 10 s)."""
        wall = self.store.wall(self.store.now())
        data = {"channel_id": channel_id, "user_id": user_id, "timestamp": int(wall), "duration": 10.0}
        self.events.publish("typing_start", data)

    def inject(self, fault: Fault) -> None:
        """Append a fault to the plan at run time."""
        self._faults.append(_FaultState(fault, fault.count))

    # -- plumbing ------------------------------------------------------------

    def add(
        self, route_key: str, handler: Handler, window: Window | None = None, *, auth: bool = True
    ) -> None:
        """Serve a Discord route (``"METHOD /template"`` under ``/api/v10``) through the request pipeline.

        Args:
            route_key: The route, e.g. ``"POST /channels/{channel_id}/messages"`` (also the counter key).
            handler: Answers an admitted request.
            window: The route's bucket (its own hash), or ``None`` for an unlimited route.
            auth: Require ``Authorization: Bot <token>``.
        """
        method, template = route_key.split(" ", 1)
        endpoint = _Endpoint(
            route_key=route_key,
            handler=handler,
            window=window,
            bucket_hash=bucket_hash(route_key) if window is not None else None,
            bot_auth=auth,
        )

        async def dispatch(request: web.Request) -> web.StreamResponse:
            return await self._dispatch(endpoint, request)

        self.app.router.add_route(method, API_PREFIX + template, dispatch)

    def add_plain(self, method: str, path: str, handler: Handler) -> None:
        """Serve a route that is not Discord's (the gateway, ``/_emulator/...``): no limits, no auth."""

        async def plain(request: web.Request) -> web.StreamResponse:
            try:
                return await handler(self, request)
            except ApiError as exc:
                return json_response(exc.status, exc.body)

        self.app.router.add_route(method, path, plain)

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

    def _finish(self, response: web.Response, route_key: str, major: str) -> web.Response:
        counters = self.counters
        status = response.status
        counters.statuses[status] += 1
        if status == 429:
            counters.rate_limited += 1
            self.events.publish(
                "rate_limit",
                {
                    "route": route_key,
                    "major": major.split("/", 1)[0],
                    "scope": response.headers.get("X-RateLimit-Scope", "ban"),
                    "retry_after": float(response.headers.get("Retry-After", "0")),
                },
            )
        elif response.headers.get("X-RateLimit-Remaining") == "0":
            self.events.publish(
                "bucket_exhausted",
                {
                    "route": route_key,
                    "major": major.split("/", 1)[0],
                    "reset_after": float(response.headers.get("X-RateLimit-Reset-After", "0")),
                },
            )
        shared = response.headers.get("X-RateLimit-Scope") == "shared"
        if status in (401, 403) or (status == 429 and not shared):
            counters.invalid_requests += 1
            self._invalid.append(self.store.now())
        response.headers.setdefault("Via", "1.1 google")
        return response

    async def _dispatch(self, endpoint: _Endpoint, request: web.Request) -> web.StreamResponse:
        now = self.store.now()
        wall = self.store.wall(now)
        route_key = endpoint.route_key
        self.counters.requests[route_key] += 1
        info = request.match_info
        fault_major = info.get("channel_id") or info.get("webhook_id") or info.get("interaction_id")
        major = (
            f"{info['webhook_id']}/{info['webhook_token']}" if "webhook_id" in info else (fault_major or "")
        )
        if self._banned(now):
            self.counters.rate_limited += 1
            self.counters.statuses[429] += 1
            return json_response(429, _BAN_BODY)
        identity = request.headers.get("Authorization") or "anonymous"
        if endpoint.bot_auth and identity != f"Bot {self.config.token}":
            return self._finish(
                json_response(401, {"message": "401: Unauthorized", "code": 0}), route_key, major
            )
        global_verdict = self._global.take(identity, now)
        if not global_verdict.allowed:
            self.counters.global_rate_limited += 1
            self.counters.rate_limited_routes[route_key] += 1
            return self._finish(too_many(global_verdict.retry_after, "global", {}), route_key, major)

        fault = self._take_fault(route_key, fault_major, ("rate_limit",))
        if fault is not None:
            headers: dict[str, str] = {}
            if endpoint.window is not None and fault.scope != "global":
                verdict = endpoint.window.take(major, now, consume=False)
                headers = bucket_headers(endpoint.bucket_hash or "", verdict, wall)
                if fault.scope == "user":
                    headers["X-RateLimit-Remaining"] = "0"
            self.counters.rate_limited_routes[route_key] += 1
            response = too_many(fault.retry_after, fault.scope, headers, fault.code)
            return self._finish(response, route_key, major)

        headers = {}
        if endpoint.window is not None:
            verdict = endpoint.window.take(major, now)
            headers = bucket_headers(endpoint.bucket_hash or "", verdict, wall)
            if not verdict.allowed:
                self.counters.rate_limited_routes[route_key] += 1
                return self._finish(too_many(verdict.retry_after, "user", headers), route_key, major)
        hidden = self._hidden_webhook_limit(route_key, info.get("webhook_id"), now, headers)
        if hidden is not None:
            return self._finish(hidden, route_key, major)

        fault = self._take_fault(route_key, fault_major, ("error", "disconnect", "error_after_accept"))
        if fault is not None and fault.kind == "disconnect":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        if fault is not None and fault.kind == "error":
            response = json_response(fault.status, {"message": f"{fault.status}: Server Error", "code": 0})
        else:
            try:
                result = await endpoint.handler(self, request)
                assert isinstance(result, web.Response)  # every handler answers with a plain Response
                response = result
            except ApiError as exc:
                response = json_response(exc.status, exc.body)
            if fault is not None and response.status < 300:
                response = json_response(
                    fault.status, {"message": f"{fault.status}: Server Error", "code": 0}
                )
        response.headers.update(headers)
        return self._finish(response, route_key, major)

    def _hidden_webhook_limit(
        self, route_key: str, webhook_id: str | None, now: float, headers: dict[str, str]
    ) -> web.Response | None:
        if self._webhook_channels is None or route_key != ROUTE_EXECUTE or webhook_id is None:
            return None
        hook = self.webhooks.get(webhook_id)
        if hook is None:
            return None
        verdict = self._webhook_channels.take(hook.channel_id, now)
        if verdict.allowed:
            return None
        self.counters.rate_limited_routes[route_key] += 1
        return too_many(verdict.retry_after, "shared", headers, 20028)

    # -- shared checks ---------------------------------------------------------

    def check_channel(self, channel_id: str) -> None:
        """Raise Discord's error for a malformed, deleted, forbidden or unwritable channel."""
        if not channel_id.isdigit():
            problem = (("channel_id",), "NUMBER_TYPE_COERCE", f'Value "{channel_id}" is not snowflake.')
            raise form_error([problem])
        cfg = self.config
        if channel_id in cfg.deleted_channels:
            raise ApiError(404, 10003, "Unknown Channel")
        if channel_id in cfg.forbidden_channels:
            raise ApiError(403, 50001, "Missing Access")
        if channel_id in cfg.missing_permission_channels:
            raise ApiError(403, 50013, "Missing Permissions")
