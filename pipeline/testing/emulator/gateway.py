"""A minimal Discord gateway (v10, JSON encoding) on the emulator's port, at ``/gateway``.

What it does, in the order a client sees it:

* On connect it sends HELLO with ``EmulatorConfig.heartbeat_interval_ms``; every HEARTBEAT (op 1)
  is answered with HEARTBEAT_ACK (op 11).
* IDENTIFY (op 2) with the bot token answers READY (the bot user, the guild as unavailable,
  a session id and ``resume_gateway_url`` = this gateway), then GUILD_CREATE for the guild with
  its text channels, its roles (``@everyone`` and any created) and members (with the ``GUILDS``
  intent). A wrong
  token closes with 4004, a second IDENTIFY with 4005, an opcode before IDENTIFY with 4003, an
  unknown opcode with 4001, a frame that is not a JSON object (or over 4096 bytes) with 4002.
* RESUME (op 6) is answered with INVALID_SESSION ``false``: sessions are not kept, the client
  identifies again (discord.py does so at once).
* REQUEST_GUILD_MEMBERS (op 8) is answered with one GUILD_MEMBERS_CHUNK; a presence (IDENTIFY's
  or PRESENCE_UPDATE's) is kept as ``GatewaySession.presence``; voice updates are ignored.
* Dispatches: MESSAGE_CREATE, MESSAGE_UPDATE, MESSAGE_DELETE (``GUILD_MESSAGES`` /
  ``DIRECT_MESSAGES``), TYPING_START (the typing intents), THREAD_CREATE (``GUILDS``),
  GUILD_MEMBER_ADD / UPDATE when a user first acts, is renamed or gets other roles
  (``GUILD_MEMBERS``), GUILD_ROLE_CREATE / UPDATE (``GUILDS``), INTERACTION_CREATE (always), each
  with ``s`` increasing by one per connection. Without the ``MESSAGE_CONTENT`` intent, content,
  embeds, attachments and components are blanked except in DMs, the bot's own messages and
  messages that mention the bot (Discord's rule). Ephemeral messages are never dispatched.
* Sharding: IDENTIFY's ``shard: [id, count]`` (default ``[0, 1]``) picks what a session gets,
  as Discord routes it: the guild's events (READY's guild, GUILD_CREATE, messages, typing,
  members, threads, interactions) go to shard ``(guild_id >> 22) % count``, DMs to shard 0. An
  invalid pair closes with 4010. ``Gateway.interaction_shard`` (tests) delivers interactions to
  one shard instead: an interaction reaching another process, as through an HTTP interactions
  endpoint behind a load balancer.
* ``?compress=zlib-stream`` gets binary frames of one zlib stream per connection (what hikari
  requires); without it, or with ``zstd-stream`` (not implemented), frames are plain text, which
  discord.py accepts whatever it asked for.

Not emulated: the identify rate limit (and its ``max_concurrency`` buckets), the
120-events-per-minute send limit, session resumption, a server-side heartbeat timeout, ETF
encoding, presences and voice.
"""

from __future__ import annotations

__all__ = ("Gateway", "GatewaySession", "Intent", "install")

import asyncio
import contextlib
import enum
import json
import secrets
import zlib
from typing import TYPE_CHECKING, Any, Final

from aiohttp import WSMsgType, web

from rxcord.core import safe_json
from rxcord.testing.emulator.config import GATEWAY_PATH
from rxcord.testing.emulator.events import EmulatorEvent
from rxcord.testing.emulator.wire import user_object

if TYPE_CHECKING:
    from rxcord.testing.emulator.app import DiscordEmulator

_MAX_FRAME: Final = 4096
_CLOSE_REASONS: Final = {
    4001: "Unknown opcode.",
    4002: "Error while decoding payload.",
    4003: "Not authenticated.",
    4004: "Authentication failed.",
    4005: "Already authenticated.",
    4010: "Invalid shard.",
    4012: "Invalid API version.",
    4013: "Invalid intent(s).",
}


class Intent(enum.IntFlag):
    """The gateway intents the emulator filters dispatches by."""

    GUILDS = 1 << 0
    GUILD_MEMBERS = 1 << 1
    GUILD_MESSAGES = 1 << 9
    GUILD_MESSAGE_TYPING = 1 << 11
    DIRECT_MESSAGES = 1 << 12
    DIRECT_MESSAGE_TYPING = 1 << 14
    MESSAGE_CONTENT = 1 << 15


class Op(enum.IntEnum):
    """Gateway opcodes."""

    DISPATCH = 0
    HEARTBEAT = 1
    IDENTIFY = 2
    PRESENCE_UPDATE = 3
    VOICE_STATE_UPDATE = 4
    RESUME = 6
    RECONNECT = 7
    REQUEST_GUILD_MEMBERS = 8
    INVALID_SESSION = 9
    HELLO = 10
    HEARTBEAT_ACK = 11


class GatewaySession:
    """One websocket connection: its sequence, intents and an ordered outbox.

    Frames are queued and written by one task, so dispatches published from synchronous code
    (the store) keep their order.
    """

    def __init__(self, ws: web.WebSocketResponse, *, zlib_stream: bool) -> None:
        self.ws = ws
        self.session_id: str | None = None
        self.intents = 0
        self.seq = 0
        self.shard: tuple[int, int] = (0, 1)
        """IDENTIFY's ``[shard_id, shard_count]``."""
        self.presence: dict[str, Any] | None = None
        """The presence IDENTIFY or the latest PRESENCE_UPDATE set (status, activities), as sent."""
        self._zlib = zlib.compressobj() if zlib_stream else None
        self._outbox: asyncio.Queue[dict[str, Any] | int] = asyncio.Queue()
        self._writer = asyncio.get_running_loop().create_task(self._write())

    @property
    def identified(self) -> bool:
        """Whether IDENTIFY succeeded on this connection."""
        return self.session_id is not None

    def serves(self, guild_id: str | None) -> bool:
        """Whether this session's shard gets the events of *guild_id* (``None``: a DM, shard 0)."""
        shard_id, count = self.shard
        if guild_id is None:
            return shard_id == 0
        return (int(guild_id) >> 22) % count == shard_id

    def send(self, op: Op, d: Any = None) -> None:
        """Queue a non-dispatch frame."""
        self._outbox.put_nowait({"op": int(op), "d": d, "s": None, "t": None})

    def dispatch(self, event: str, d: Any) -> None:
        """Queue a dispatch with the next sequence number."""
        self.seq += 1
        self._outbox.put_nowait({"op": 0, "d": d, "s": self.seq, "t": event})

    def close(self, code: int) -> None:
        """Close with ``code`` once everything queued before was written."""
        self._outbox.put_nowait(code)

    async def finished(self) -> None:
        """Wait until the writer stopped (after a close or the socket's end)."""
        with contextlib.suppress(asyncio.CancelledError):
            await self._writer

    def stop(self) -> None:
        """Stop writing (the socket is gone)."""
        self._writer.cancel()

    async def _write(self) -> None:
        while True:
            item = await self._outbox.get()
            if isinstance(item, int):
                reason = _CLOSE_REASONS.get(item, "").encode()
                await self.ws.close(code=item, message=reason)
                return
            if self.ws.closed:
                return
            text = json.dumps(item)
            try:
                if self._zlib is not None:
                    data = self._zlib.compress(text.encode()) + self._zlib.flush(zlib.Z_SYNC_FLUSH)
                    await self.ws.send_bytes(data)
                else:
                    await self.ws.send_str(text)
            except (ConnectionError, RuntimeError):
                return  # the socket went away while writing


class Gateway:
    """The emulator's gateway: connected sessions, and the translation of emulator events to dispatches."""

    def __init__(self, emu: DiscordEmulator) -> None:
        self.emu = emu
        self.sessions: list[GatewaySession] = []
        self.interaction_shard: int | None = None
        """Deliver INTERACTION_CREATE to this shard's sessions instead of the guild's shard (tests)."""
        emu.events.subscribe(self._on_event)

    # -- for tests and tools -------------------------------------------------

    def identified(self) -> list[GatewaySession]:
        """The sessions that completed IDENTIFY and are still open."""
        return [s for s in self.sessions if s.identified and not s.ws.closed]

    def dispatch(
        self,
        event: str,
        d: Any,
        intent: int = 0,
        *,
        guild_id: str | None = None,
        shard: int | None = None,
    ) -> int:
        """Send a dispatch to every identified session subscribed to ``intent``; returns how many got it.

        Only the sessions of the shard owning *guild_id* get it (``None``: the guild ``d`` names,
        else a DM: shard 0), or those of *shard* when one is named.
        """
        if guild_id is None and isinstance(d, dict) and d.get("guild_id") is not None:
            guild_id = str(d["guild_id"])  # a guild event names its guild: never taken for a DM
        count = 0
        for session in self.identified():
            if intent and not session.intents & intent:
                continue
            if not (session.shard[0] == shard if shard is not None else session.serves(guild_id)):
                continue
            session.dispatch(event, d)
            count += 1
        if count:
            self.emu.counters.gateway[event] += count
        return count

    def reconnect_all(self) -> None:
        """Send RECONNECT (op 7) to every session: clients reconnect and try to RESUME."""
        for session in self.sessions:
            session.send(Op.RECONNECT)

    async def close_all(self, code: int = 1001) -> None:
        """Close every connection (the emulator is shutting down)."""
        for session in list(self.sessions):
            session.close(code)
        for session in list(self.sessions):
            with contextlib.suppress(Exception):
                await asyncio.wait_for(session.finished(), 5)

    # -- the websocket -------------------------------------------------------

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """Serve one websocket connection until it closes."""
        ws = web.WebSocketResponse(max_msg_size=0, autoping=True)
        await ws.prepare(request)
        counters = self.emu.counters.gateway
        counters["connect"] += 1
        session = GatewaySession(ws, zlib_stream=request.query.get("compress") == "zlib-stream")
        self.sessions.append(session)
        try:
            version = request.query.get("v")
            if version is not None and version != "10":
                session.close(4012)
            else:
                session.send(Op.HELLO, {"heartbeat_interval": self.emu.config.heartbeat_interval_ms})
            async for message in ws:
                if message.type == WSMsgType.TEXT:
                    raw = str(message.data)
                elif message.type == WSMsgType.BINARY:
                    raw = bytes(message.data).decode("utf-8", "replace")
                else:
                    break
                code = self._receive(session, raw)
                if code is not None:
                    counters[f"close:{code}"] += 1
                    session.close(code)
        finally:
            self.sessions.remove(session)
            if ws.close_code is not None:
                counters[f"closed:{ws.close_code}"] += 1
            session.stop()
        return ws

    def _receive(self, session: GatewaySession, raw: str) -> int | None:
        """Handle one client frame; returns a close code when the connection must end."""
        if len(raw.encode()) > _MAX_FRAME:
            return 4002
        try:
            frame = safe_json.loads(raw)
        except ValueError:
            return 4002
        if not isinstance(frame, dict):
            return 4002
        op, d = frame.get("op"), frame.get("d")
        counters = self.emu.counters.gateway
        if op == Op.HEARTBEAT:
            counters["heartbeat"] += 1
            session.send(Op.HEARTBEAT_ACK)
            return None
        if op == Op.IDENTIFY:
            return self._identify(session, d)
        if op == Op.RESUME:
            counters["resume"] += 1
            session.send(Op.INVALID_SESSION, False)
            return None
        if not session.identified:
            return 4003
        if op == Op.REQUEST_GUILD_MEMBERS:
            nonce = d.get("nonce") if isinstance(d, dict) else None
            chunk = {
                "guild_id": self.emu.guild.id,
                "members": self.emu.guild.members(),
                "chunk_index": 0,
                "chunk_count": 1,
                "not_found": [],
                "nonce": nonce,
            }
            session.dispatch("GUILD_MEMBERS_CHUNK", chunk)
            return None
        if op == Op.PRESENCE_UPDATE and isinstance(d, dict):
            session.presence = d
            return None
        if op in (Op.PRESENCE_UPDATE, Op.VOICE_STATE_UPDATE):
            return None
        return 4001

    def _identify(self, session: GatewaySession, d: Any) -> int | None:
        emu = self.emu
        cfg = emu.config
        if session.identified:
            return 4005
        if not isinstance(d, dict):
            return 4002
        token = str(d.get("token") or "").removeprefix("Bot ")
        if not secrets.compare_digest(token.encode(), cfg.token.encode()):
            return 4004
        intents = d.get("intents")
        if isinstance(intents, bool) or not isinstance(intents, int) or intents < 0:
            return 4013
        shard = _shard(d.get("shard", [0, 1]))
        if shard is None:
            return 4010
        session.shard = shard
        owns_guild = session.serves(emu.guild.id)
        emu.counters.gateway["identify"] += 1
        session.intents = intents
        presence = d.get("presence")
        session.presence = presence if isinstance(presence, dict) else None
        session.session_id = secrets.token_hex(16)
        user = {
            **user_object(cfg.bot_id, cfg.bot_username, bot=True),
            "mfa_enabled": False,
            "verified": True,
            "email": None,
        }
        ready: dict[str, Any] = {
            "v": 10,
            "user": user,
            "guilds": [{"id": emu.guild.id, "unavailable": True}] if owns_guild else [],
            "session_id": session.session_id,
            "session_type": "normal",
            "resume_gateway_url": emu.gateway_url,
            "application": {"id": cfg.application_id, "flags": 0},
            "private_channels": [],
            "relationships": [],
            "presences": [],
            "guild_join_requests": [],
            "geo_ordered_rtc_regions": [],
            "user_settings": {},
            "_trace": ["rxcord-emulator"],
        }
        if "shard" in d:
            ready["shard"] = list(shard)
        session.dispatch("READY", ready)
        emu.counters.gateway["READY"] += 1
        if intents & Intent.GUILDS and owns_guild:
            session.dispatch("GUILD_CREATE", emu.guild.guild_object())
            emu.counters.gateway["GUILD_CREATE"] += 1
        return None

    # -- emulator events -> dispatches ---------------------------------------

    def _on_event(self, event: EmulatorEvent) -> None:
        if not self.sessions:
            return  # nobody listens: benchmarks pay nothing for the gateway
        data = event.data
        if event.kind in ("message_create", "message_update"):
            if data["ephemeral"]:
                return
            name = "MESSAGE_CREATE" if event.kind == "message_create" else "MESSAGE_UPDATE"
            self._dispatch_message(name, data["message"])
        elif event.kind == "message_delete":
            if data["ephemeral"]:
                return
            guild_id = self.emu.guild.guild_id_of(data["channel_id"])
            body = {"id": data["id"], "channel_id": data["channel_id"]}
            if guild_id is not None:
                body["guild_id"] = guild_id
            intent = Intent.GUILD_MESSAGES if guild_id else Intent.DIRECT_MESSAGES
            self.dispatch("MESSAGE_DELETE", body, intent, guild_id=guild_id)
        elif event.kind == "typing_start":
            self._dispatch_typing(data)
        elif event.kind == "interaction_create":
            interaction = data["interaction"]
            self.dispatch(
                "INTERACTION_CREATE",
                interaction,
                guild_id=interaction.get("guild_id"),
                shard=self.interaction_shard,
            )
        elif event.kind in ("member_add", "member_update"):
            name = "GUILD_MEMBER_ADD" if event.kind == "member_add" else "GUILD_MEMBER_UPDATE"
            guild = self.emu.guild.id
            self.dispatch(name, {**data["member"], "guild_id": guild}, Intent.GUILD_MEMBERS, guild_id=guild)
        elif event.kind in ("role_create", "role_update"):
            # discord.py resolves a member's role ids through its guild's roles: announce each one.
            name = "GUILD_ROLE_CREATE" if event.kind == "role_create" else "GUILD_ROLE_UPDATE"
            self.dispatch(name, {"guild_id": self.emu.guild.id, "role": data["role"]}, Intent.GUILDS)
        elif event.kind == "thread_create":
            thread = {**data["thread"], "newly_created": True}
            self.dispatch("THREAD_CREATE", thread, Intent.GUILDS, guild_id=self.emu.guild.id)

    def _dispatch_message(self, name: str, message: dict[str, Any]) -> None:
        emu = self.emu
        guild_id = emu.guild.guild_id_of(str(message["channel_id"]))
        body = dict(message)
        if guild_id is not None:
            body["guild_id"] = guild_id
            body["channel_type"] = 0
            if "webhook_id" not in message:
                body["member"] = emu.guild.member(message["author"], with_user=False)
        else:
            body["channel_type"] = 1
        intent = Intent.GUILD_MESSAGES if guild_id else Intent.DIRECT_MESSAGES
        exempt = (
            guild_id is None
            or str(message["author"]["id"]) == emu.config.bot_id
            or any(str(user["id"]) == emu.config.bot_id for user in message.get("mentions", ()))
        )
        blanked: dict[str, Any] | None = None
        count = 0
        for session in self.identified():
            if not session.intents & intent or not session.serves(guild_id):
                continue
            if exempt or session.intents & Intent.MESSAGE_CONTENT:
                session.dispatch(name, body)
            else:
                if blanked is None:
                    blanked = {**body, "content": "", "embeds": [], "attachments": [], "components": []}
                session.dispatch(name, blanked)
            count += 1
        if count:
            emu.counters.gateway[name] += count

    def _dispatch_typing(self, data: dict[str, Any]) -> None:
        emu = self.emu
        channel_id = str(data["channel_id"])
        guild_id = emu.guild.guild_id_of(channel_id)
        body: dict[str, Any] = {
            "channel_id": channel_id,
            "user_id": data["user_id"],
            "timestamp": data["timestamp"],
        }
        if guild_id is not None:
            body["guild_id"] = guild_id
            user = emu.guild.users.get(str(data["user_id"]))
            if str(data["user_id"]) == emu.config.bot_id:
                user = emu.store.bot_user()
            if user is not None:
                body["member"] = emu.guild.member(user)
        intent = Intent.GUILD_MESSAGE_TYPING if guild_id else Intent.DIRECT_MESSAGE_TYPING
        self.dispatch("TYPING_START", body, intent, guild_id=guild_id)


def _shard(value: Any) -> tuple[int, int] | None:
    """IDENTIFY's ``shard`` as ``(id, count)``; ``None`` when it is not ``[id, count]``, 0 <= id < count."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    shard_id, count = value
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (shard_id, count)):
        return None
    return (shard_id, count) if 0 <= shard_id < count else None


def install(emu: DiscordEmulator) -> Gateway:
    """Serve the gateway at ``/gateway`` and return it."""
    gateway = Gateway(emu)

    async def handle(emulator: DiscordEmulator, request: web.Request) -> web.StreamResponse:
        return await gateway.handle(request)

    emu.add_plain("GET", GATEWAY_PATH, handle)
    return gateway
