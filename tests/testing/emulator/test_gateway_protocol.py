"""The gateway protocol on a raw websocket: HELLO, IDENTIFY, heartbeats, RESUME, close codes, intents."""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig
from tests.testing.emulator.support import USER_ID, WAIT, eventually, post

GUILDS, GUILD_MESSAGES, TYPING, DMS, CONTENT = 1, 1 << 9, 1 << 11, 1 << 12, 1 << 15


class Socket:
    """A raw gateway connection that decodes text and zlib-stream frames alike."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.inflate = zlib.decompressobj()
        self.binary_frames = 0

    async def receive(self) -> dict[str, Any]:
        message = await self.ws.receive(timeout=WAIT)
        if message.type == aiohttp.WSMsgType.BINARY:
            self.binary_frames += 1
            assert message.data.endswith(b"\x00\x00\xff\xff")
            decoded: dict[str, Any] = json.loads(self.inflate.decompress(message.data))
            return decoded
        assert message.type == aiohttp.WSMsgType.TEXT, message
        frame: dict[str, Any] = json.loads(message.data)
        return frame

    async def send(self, op: int, d: Any) -> None:
        await self.ws.send_json({"op": op, "d": d})

    async def identify(self, token: str, intents: int) -> list[dict[str, Any]]:
        """IDENTIFY; returns READY (and GUILD_CREATE when GUILDS is asked)."""
        await self.send(2, {"token": token, "intents": intents, "properties": {"os": "linux"}})
        frames = [await self.receive()]
        if intents & GUILDS:
            frames.append(await self.receive())
        return frames

    async def closed_with(self) -> int | None:
        message = await self.ws.receive(timeout=WAIT)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING)
        return self.ws.close_code


@pytest.fixture
async def connect(emulator: DiscordEmulator, session: aiohttp.ClientSession) -> AsyncIterator[Any]:
    sockets: list[aiohttp.ClientWebSocketResponse] = []

    async def open_socket(query: str = "?v=10&encoding=json") -> Socket:
        ws = await session.ws_connect(emulator.gateway_url + query)
        sockets.append(ws)
        socket = Socket(ws)
        hello = await socket.receive()
        assert hello == {
            "op": 10,
            "d": {"heartbeat_interval": emulator.config.heartbeat_interval_ms},
            "s": None,
            "t": None,
        }
        return socket

    yield open_socket
    for ws in sockets:
        await ws.close()


async def test_identify_gets_ready_then_the_guild(emulator: DiscordEmulator, connect: Any) -> None:
    """READY (s=1) names the session and the resume URL; GUILD_CREATE (s=2) the channels and members."""
    socket = await connect()
    ready, guild = await socket.identify(emulator.config.token, GUILDS)
    assert (ready["t"], ready["s"], guild["t"], guild["s"]) == ("READY", 1, "GUILD_CREATE", 2)
    assert ready["d"]["resume_gateway_url"] == emulator.gateway_url
    assert ready["d"]["user"]["id"] == emulator.config.bot_id and ready["d"]["session_id"]
    assert ready["d"]["guilds"] == [{"id": emulator.config.guild_id, "unavailable": True}]
    channels = guild["d"]["channels"]
    assert [c["id"] for c in channels] == [c.id for c in emulator.config.channels]
    assert {c["type"] for c in channels} == {0}
    assert guild["d"]["member_count"] == len(guild["d"]["members"]) == 1
    assert guild["d"]["roles"][0]["id"] == emulator.config.guild_id


async def test_heartbeat_is_acknowledged(emulator: DiscordEmulator, connect: Any) -> None:
    """Op 1 is answered with op 11, before and after IDENTIFY."""
    socket = await connect()
    await socket.send(1, None)
    assert (await socket.receive())["op"] == 11
    await socket.identify(emulator.config.token, 0)
    await socket.send(1, 1)
    assert (await socket.receive())["op"] == 11
    assert emulator.counters.gateway["heartbeat"] == 2


async def test_resume_is_answered_with_invalid_session(emulator: DiscordEmulator, connect: Any) -> None:
    """Sessions are not kept: RESUME gets INVALID_SESSION false, and IDENTIFY then works on that socket."""
    socket = await connect()
    await socket.send(6, {"token": emulator.config.token, "session_id": "old", "seq": 7})
    assert await socket.receive() == {"op": 9, "d": False, "s": None, "t": None}
    [ready] = await socket.identify(emulator.config.token, 0)
    assert ready["t"] == "READY" and emulator.counters.gateway["resume"] == 1


@pytest.mark.parametrize(
    ("frames", "code"),
    [
        ([{"op": 2, "d": {"token": "wrong", "intents": 0}}], 4004),
        ([{"op": 8, "d": {"guild_id": "1"}}], 4003),
        (
            [
                {"op": 2, "d": {"token": "TOKEN", "intents": 0}},
                {"op": 2, "d": {"token": "TOKEN", "intents": 0}},
            ],
            4005,
        ),
        ([{"op": 2, "d": {"token": "TOKEN", "intents": 0}}, {"op": 42, "d": None}], 4001),
        (["not json"], 4002),
        ([{"op": 2, "d": {"token": "TOKEN"}}], 4013),
    ],
)
async def test_protocol_errors_close_with_discords_codes(
    emulator: DiscordEmulator, connect: Any, frames: list[Any], code: int
) -> None:
    socket = await connect()
    for frame in frames:
        if isinstance(frame, str):
            await socket.ws.send_str(frame)
            continue
        if frame["op"] == 2 and frame["d"]["token"] == "TOKEN":
            await socket.ws.send_json({"op": 2, "d": {**frame["d"], "token": emulator.config.token}})
            continue
        await socket.ws.send_json(frame)
    while True:
        message = await socket.ws.receive(timeout=WAIT)
        if message.type != aiohttp.WSMsgType.TEXT:
            break
    assert socket.ws.close_code == code


async def test_wrong_api_version_is_4012(
    connect: Any, emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    async with session.ws_connect(emulator.gateway_url + "?v=9&encoding=json") as ws:
        message = await ws.receive(timeout=WAIT)
        assert message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
        assert ws.close_code == 4012


async def test_zlib_stream_frames_form_one_stream(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession, channel: str
) -> None:
    """With compress=zlib-stream every frame is binary, all from one deflate context (hikari needs it)."""
    socket = Socket(
        await session.ws_connect(emulator.gateway_url + "?v=10&encoding=json&compress=zlib-stream")
    )
    assert (await socket.receive())["op"] == 10
    await socket.identify(emulator.config.token, GUILDS | GUILD_MESSAGES | CONTENT)
    await post(
        session,
        f"{emulator.base_url}/_emulator/messages",
        {"channel_id": channel, "author_id": USER_ID, "username": "u", "content": "zipped"},
    )
    created = await socket.receive()
    assert created["t"] == "MESSAGE_CREATE" and created["d"]["content"] == "zipped"
    assert socket.binary_frames == 4
    await socket.ws.close()


async def test_dispatches_follow_intents_and_the_message_content_rule(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession, channel: str
) -> None:
    """Without MESSAGE_CONTENT a guild message is blank unless it mentions the bot; typing has its intent."""
    plain = await connect()
    await plain.identify(emulator.config.token, GUILD_MESSAGES)
    full = await connect()
    await full.identify(emulator.config.token, GUILD_MESSAGES | CONTENT | TYPING)
    url = f"{emulator.base_url}/_emulator/messages"
    user = {"channel_id": channel, "author_id": USER_ID, "username": "carol"}
    await post(session, f"{emulator.base_url}/_emulator/typing", user)
    await post(session, url, {**user, "content": "secret"})
    await post(session, url, {**user, "content": f"hey <@{emulator.config.bot_id}>"})
    typing = await full.receive()
    assert typing["t"] == "TYPING_START" and typing["d"]["user_id"] == USER_ID
    assert typing["d"]["member"]["user"]["username"] == "carol"
    seen_full = [await full.receive(), await full.receive()]
    seen_plain = [await plain.receive(), await plain.receive()]
    assert [f["d"]["content"] for f in seen_full] == ["secret", f"hey <@{emulator.config.bot_id}>"]
    assert [f["d"]["content"] for f in seen_plain] == ["", f"hey <@{emulator.config.bot_id}>"]
    assert [f["s"] for f in seen_plain] == [2, 3]
    created = seen_full[0]["d"]
    assert created["guild_id"] == emulator.config.guild_id and created["member"]["roles"] == []
    assert created["author"]["username"] == "carol"


async def test_messages_outside_the_guild_are_direct_messages(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession
) -> None:
    """A numeric channel outside the guild is a DM channel: DIRECT_MESSAGES, no guild_id, full content."""
    guild_only = await connect()
    await guild_only.identify(emulator.config.token, GUILD_MESSAGES)
    dms = await connect()
    await dms.identify(emulator.config.token, DMS)
    body = {"channel_id": "555000000000000001", "author_id": USER_ID, "username": "dave", "content": "psst"}
    await post(session, f"{emulator.base_url}/_emulator/messages", body)
    frame = await dms.receive()
    assert frame["t"] == "MESSAGE_CREATE" and "guild_id" not in frame["d"] and frame["d"]["content"] == "psst"
    await eventually(lambda: emulator.counters.gateway["MESSAGE_CREATE"] == 1, "exactly one dispatch")
    await guild_only.send(1, None)
    assert (await guild_only.receive())["op"] == 11  # nothing was queued before the ACK


async def test_request_guild_members_gets_one_chunk(emulator: DiscordEmulator, connect: Any) -> None:
    socket = await connect()
    await socket.identify(emulator.config.token, 0)
    await socket.send(8, {"guild_id": emulator.config.guild_id, "query": "", "limit": 0, "nonce": "n1"})
    chunk = await socket.receive()
    assert chunk["t"] == "GUILD_MEMBERS_CHUNK" and chunk["d"]["nonce"] == "n1"
    assert [m["user"]["id"] for m in chunk["d"]["members"]] == [emulator.config.bot_id]


async def test_closing_the_emulator_closes_its_sockets() -> None:
    async with DiscordEmulator(EmulatorConfig()) as emulator, aiohttp.ClientSession() as session:
        ws = await session.ws_connect(emulator.gateway_url)
        socket = Socket(ws)
        assert (await socket.receive())["op"] == 10
        closed = asyncio.ensure_future(socket.closed_with())
        await emulator.close()
        assert await closed == 1001


async def test_a_new_user_joins_as_a_member_and_mentions_carry_names(
    emulator: DiscordEmulator, connect: Any, session: aiohttp.ClientSession, channel: str
) -> None:
    """GUILD_MEMBER_ADD before a user's first message, UPDATE on a rename; mentions use known names."""
    socket = await connect()
    await socket.identify(emulator.config.token, GUILD_MESSAGES | CONTENT | (1 << 1))
    url = f"{emulator.base_url}/_emulator/messages"
    await post(
        session, url, {"channel_id": channel, "author_id": USER_ID, "username": "frank", "content": "hi"}
    )
    joined, first = await socket.receive(), await socket.receive()
    assert (joined["t"], first["t"]) == ("GUILD_MEMBER_ADD", "MESSAGE_CREATE")
    assert joined["d"]["user"]["username"] == "frank" and joined["d"]["guild_id"] == emulator.config.guild_id
    other = "300000000000000002"
    body = {"channel_id": channel, "author_id": other, "username": "gina", "content": f"<@{USER_ID}> look"}
    await post(session, url, body)
    assert (await socket.receive())["t"] == "GUILD_MEMBER_ADD"
    mention = await socket.receive()
    assert [u["username"] for u in mention["d"]["mentions"]] == ["frank"]
    await post(session, url, {**body, "username": "gina2", "content": "renamed"})
    renamed = await socket.receive()
    assert renamed["t"] == "GUILD_MEMBER_UPDATE" and renamed["d"]["user"]["username"] == "gina2"
