"""A scripted fake Discord REST API on 127.0.0.1, for the fault suite and the RestSink tests.

Every message-writing request (bot create, webhook execute, edit, delete) takes the next
``Step`` of the script for its kind, or succeeds when the script is empty. A step can fail
*before* or *after* the message is stored, so the tests can tell a lost message from a
duplicated one. Bot creates with ``enforce_nonce`` are deduplicated as Discord does.
``GET /channels/{id}/messages?limit=N`` lists a channel's messages newest first (bot token
only, as on Discord: a webhook token cannot list), with ``nonce`` on bot messages and
``webhook_id`` on webhook ones.
"""

from __future__ import annotations

import asyncio
import collections
import gzip
import json
import zlib
from typing import Any, Literal

import attrs
from aiohttp import web

StepKind = Literal["ok", "status", "reset", "stall"]
Kind = Literal["create", "edit", "delete", "typing"]


@attrs.define
class Step:
    """One scripted answer.

    ``status``: answer ``status`` with ``body`` (a dict is JSON; bytes are sent as they are,
    ``None`` sends no body) and ``headers``; ``reset``: close the connection without an
    answer; ``stall``: never answer. ``store``: store the message first (a failure *after*
    Discord kept it). ``encoding``: ``"gzip"`` compresses ``body`` (bytes only).
    """

    kind: StepKind = "ok"
    status: int = 200
    body: Any = None
    headers: dict[str, str] = attrs.Factory(dict)
    store: bool = False
    encoding: str | None = None
    raw: bytes | None = None
    """A pre-compressed body sent with ``encoding`` as is (a decompression bomb)."""


def json_step(status: int, body: Any, headers: dict[str, str] | None = None, *, store: bool = False) -> Step:
    """A ``status`` step with a JSON body."""
    return Step("status", status=status, body=body, headers=headers or {}, store=store)


def rate_limited(
    retry_after: float | None = 0.05,
    *,
    scope: str | None = "user",
    is_global: bool = False,
    json_body: bool = True,
    header: str | None = None,
) -> Step:
    """A 429 as Discord (JSON) or Cloudflare (no JSON, ``header`` only) sends it."""
    headers: dict[str, str] = {}
    if scope is not None:
        headers["X-RateLimit-Scope"] = scope
    if is_global:
        headers["X-RateLimit-Global"] = "true"
    if header is not None:
        headers["Retry-After"] = header
    if not json_body:
        return Step("status", status=429, body=None, headers=headers)
    body: dict[str, Any] = {"message": "You are being rate limited.", "global": is_global}
    if retry_after is not None:
        body["retry_after"] = retry_after
    return Step("status", status=429, body=body, headers=headers)


def gzip_bomb(size: int) -> bytes:
    """``size`` zero bytes, gzip-compressed in pieces (about 1 KiB per MiB)."""
    out = bytearray()
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    piece = bytes(1 << 20)
    for _ in range(size // len(piece)):
        out += compressor.compress(piece)
    out += compressor.flush()
    return bytes(out)


@attrs.define
class Hook:
    id: str
    token: str
    channel_id: str


class FakeDiscord:
    """The fake API: ``async with FakeDiscord() as discord: ... discord.base_url``."""

    def __init__(self, token: str = "fake-bot-token") -> None:
        self.token: str | None = token
        self.scripts: dict[str, collections.deque[Step]] = collections.defaultdict(collections.deque)
        self.messages: list[dict[str, Any]] = []
        """Stored messages in storage order (deleted ones removed)."""
        self.requests: list[tuple[str, str]] = []
        """Every request: (method, path with tokens masked)."""
        self.hooks: dict[str, Hook] = {}
        self._next_id = 1_000
        self._nonces: dict[tuple[str, str], dict[str, Any]] = {}
        self._runner: web.AppRunner | None = None
        self._stalled: list[asyncio.Future[None]] = []
        self.base_url = ""

    # -- control ---------------------------------------------------------------

    def script(self, *steps: Step, on: Kind = "create") -> None:
        """Queue answers for the next requests of one kind."""
        self.scripts[on].extend(steps)

    def add_webhook(self, channel_id: str) -> Hook:
        hook = Hook(id=str(self._snowflake()), token=f"hook-token-{len(self.hooks)}", channel_id=channel_id)
        self.hooks[hook.id] = hook
        return hook

    def revoke(self) -> None:
        """The bot token stops working: every bot request gets 401 from now on."""
        self.token = None

    def contents(self, channel_id: str | None = None) -> list[str]:
        return [m["content"] for m in self.messages if channel_id is None or m["channel_id"] == channel_id]

    def records(self, channel_id: str) -> list[str]:
        """Stored messages as text: the content, or ``[embed] title`` for content-less ones."""
        out = []
        for m in self.messages:
            if m["channel_id"] != channel_id:
                continue
            if m.get("content"):
                out.append(str(m["content"]))
            else:
                out.append("[embed] " + " ".join(str(e.get("title", "")) for e in m.get("embeds") or ()))
        return out

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application(client_max_size=32 << 20)
        app.router.add_route("*", "/api/v10/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/api/v10"
        return self

    async def __aexit__(self, *exc: object) -> None:
        for future in self._stalled:
            if not future.done():
                future.set_result(None)
        if self._runner is not None:
            await self._runner.cleanup()

    # -- the API ---------------------------------------------------------------

    def _snowflake(self) -> int:
        self._next_id += 1
        return self._next_id

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        parts = request.match_info["tail"].strip("/").split("/")
        method = request.method
        masked = "/".join("<token>" if p.startswith("hook-token") else p for p in parts)
        self.requests.append((method, masked))
        body: dict[str, Any] = {}
        if request.can_read_body:
            body = json.loads(await request.read() or b"{}")
        if parts[0] == "channels":
            if request.headers.get("Authorization") != f"Bot {self.token}" or self.token is None:
                return web.json_response({"message": "401: Unauthorized", "code": 0}, status=401)
            channel = parts[1]
            if parts[2:] == ["typing"]:
                return await self._answer("typing", request, None, lambda: web.Response(status=204))
            if parts[2:] == ["messages"] and method == "POST":
                return await self._create(request, channel, body, webhook=False)
            if parts[2:] == ["messages"] and method == "GET":
                return self._list(channel, int(request.query.get("limit", "50")))
            if len(parts) == 4 and parts[2] == "messages":
                return await self._message(request, method, channel, parts[3], body)
        if parts[0] == "webhooks":
            hook = self.hooks.get(parts[1])
            if hook is None or hook.token != parts[2]:
                return web.json_response({"message": "Unknown Webhook", "code": 10015}, status=404)
            channel = request.query.get("thread_id", hook.channel_id)
            if len(parts) == 3 and method == "POST":
                return await self._create(request, channel, body, webhook=True, hook=hook.id)
            if len(parts) == 5 and parts[3] == "messages":
                return await self._message(request, method, channel, parts[4], body)
        return web.json_response({"message": "404: Not Found", "code": 0}, status=404)

    def _list(self, channel: str, limit: int) -> web.StreamResponse:
        found = [m for m in reversed(self.messages) if m["channel_id"] == channel][: max(1, min(limit, 100))]
        return web.json_response(found)

    async def _create(
        self,
        request: web.Request,
        channel: str,
        body: dict[str, Any],
        *,
        webhook: bool,
        hook: str | None = None,
    ) -> web.StreamResponse:
        nonce = body.get("nonce")
        if not webhook and body.get("enforce_nonce") and nonce is not None:
            known = self._nonces.get((channel, str(nonce)))
            if known is not None:
                return web.json_response(known)
        stored: dict[str, Any] = {}

        def store() -> None:
            if stored:
                return
            message = {
                "id": str(self._snowflake()),
                "channel_id": channel,
                "content": body.get("content", ""),
                "embeds": body.get("embeds") or [],
                "webhook": webhook,
                "username": body.get("username"),
                "author": {"bot": True},
            }
            if hook is not None:
                message["webhook_id"] = hook
            elif nonce is not None:
                message["nonce"] = nonce
            self.messages.append(message)
            stored.update(message)
            if not webhook and body.get("enforce_nonce") and nonce is not None:
                self._nonces[(channel, str(nonce))] = message

        def ok() -> web.StreamResponse:
            store()
            return web.json_response(stored)

        return await self._answer("create", request, store, ok)

    async def _message(
        self, request: web.Request, method: str, channel: str, message_id: str, body: dict[str, Any]
    ) -> web.StreamResponse:
        found = next((m for m in self.messages if m["id"] == message_id and m["channel_id"] == channel), None)
        kind: Kind = "edit" if method == "PATCH" else "delete"

        def apply() -> None:
            if found is None:
                return
            if method == "PATCH":
                found.update({k: v for k, v in body.items() if k in ("content", "embeds")})
            elif method == "DELETE" and found in self.messages:
                self.messages.remove(found)

        def ok() -> web.StreamResponse:
            if found is None:
                return web.json_response({"message": "Unknown Message", "code": 10008}, status=404)
            apply()
            return web.Response(status=204) if method == "DELETE" else web.json_response(found)

        return await self._answer(kind, request, apply, ok)

    async def _answer(self, kind: Kind, request: web.Request, store: Any, ok: Any) -> web.StreamResponse:
        queue = self.scripts[kind]
        step = queue.popleft() if queue else Step()
        if step.kind == "ok":
            return ok()  # type: ignore[no-any-return]
        if step.store and store is not None:
            store()
        if step.kind == "reset":
            if request.transport is not None:
                request.transport.close()
            return web.Response(status=500)
        if step.kind == "stall":
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._stalled.append(future)
            await future
            return web.Response(status=500)
        headers = dict(step.headers)
        if step.raw is not None:
            headers.setdefault("Content-Type", "application/json")
            if step.encoding:
                headers["Content-Encoding"] = step.encoding
            return web.Response(status=step.status, body=step.raw, headers=headers)
        if step.body is None:
            return web.Response(status=step.status, headers=headers)
        if isinstance(step.body, bytes):
            payload = step.body
            headers.setdefault("Content-Type", "text/html")
        else:
            payload = json.dumps(step.body).encode()
            headers.setdefault("Content-Type", "application/json")
        if step.encoding == "gzip":
            payload = gzip.compress(payload)
            headers["Content-Encoding"] = "gzip"
        return web.Response(status=step.status, body=payload, headers=headers)
