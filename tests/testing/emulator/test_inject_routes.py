"""The /_emulator/ routes: act as a user, list channels and messages, and the event stream."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from rxcord.testing.emulator import ApiError, DiscordEmulator, EmulatorConfig
from tests.testing.emulator.support import USER_ID, WAIT, post

BOT = {"Authorization": "Bot emulator-token"}


def _user(channel: str, **extra: Any) -> dict[str, Any]:
    return {"channel_id": channel, "author_id": USER_ID, "username": "alice", **extra}


async def test_injected_message_is_a_user_message_in_the_channel(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    """The answer is the message object; the REST API lists it; a reply references its target."""
    status, first = await post(
        session, f"{emulator.base_url}/_emulator/messages", _user(channel, content="hello")
    )
    assert status == 200 and first["author"] == {**first["author"], "id": USER_ID, "username": "alice"}
    assert "bot" not in first["author"] and first["channel_id"] == channel and first["type"] == 0
    _, reply = await post(
        session,
        f"{emulator.base_url}/_emulator/messages",
        _user(channel, content="again", message_reference={"message_id": first["id"]}),
    )
    assert reply["type"] == 19 and reply["referenced_message"]["id"] == first["id"]
    async with session.get(f"{emulator.base_url}/channels/{channel}/messages", headers=BOT) as resp:
        listed = await resp.json()
    assert [m["content"] for m in listed] == ["again", "hello"]
    assert emulator.counters.messages_created == 0  # not a bot create


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"author_id": USER_ID, "content": "x"}, 400),
        ({"channel_id": "general", "author_id": USER_ID, "content": "x"}, 400),
        ({"channel_id": "1200000000000000010", "author_id": "1100000000000000001", "content": "x"}, 400),
        ({"channel_id": "1200000000000000010", "author_id": USER_ID, "content": " "}, 400),
        ({"channel_id": "1200000000000000010", "author_id": USER_ID, "content": "x" * 4001}, 400),
        ({"channel_id": "1200000000000000010", "author_id": USER_ID, "username": "", "content": "x"}, 400),
        ({"channel_id": "13", "author_id": USER_ID, "content": "x"}, 404),
        (
            {
                "channel_id": "1200000000000000010",
                "author_id": USER_ID,
                "content": "x",
                "message_reference": {"message_id": "1"},
            },
            400,
        ),
    ],
)
async def test_bad_injections_are_refused(
    session: aiohttp.ClientSession, body: dict[str, Any], status: int
) -> None:
    async with DiscordEmulator(EmulatorConfig(deleted_channels={"13"})) as emulator:
        got, error = await post(session, f"{emulator.base_url}/_emulator/messages", body)
        assert got == status and isinstance(error["code"], int)
        assert emulator.all_messages() == []


async def test_attachments_are_message_attachments(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    body = _user(
        channel,
        content="",
        attachments=[{"url": "http://127.0.0.1:9/notes.txt", "content_type": "text/plain", "size": 5}],
    )
    _, message = await post(session, f"{emulator.base_url}/_emulator/messages", body)
    [attachment] = message["attachments"]
    assert attachment["filename"] == "notes.txt" and attachment["size"] == 5 and attachment["id"].isdigit()
    assert attachment["content_type"] == "text/plain" and attachment["proxy_url"] == attachment["url"]


async def test_channels_and_channel_messages(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    """The guild's channels come first, then other channels with messages; messages oldest first."""
    await post(session, f"{emulator.base_url}/_emulator/messages", _user(channel, content="one"))
    async with session.post(
        f"{emulator.base_url}/channels/4242/messages", json={"content": "two"}, headers=BOT
    ):
        pass
    await post(session, f"{emulator.base_url}/_emulator/messages", _user(channel, content="three"))
    async with session.get(f"{emulator.base_url}/_emulator/channels") as resp:
        channels = await resp.json()
    names = [c.get("name") for c in channels]
    assert names[: len(emulator.config.channels)] == [c.name for c in emulator.config.channels]
    assert channels[-1]["id"] == "4242" and channels[-1]["guild_id"] is None
    async with session.get(f"{emulator.base_url}/_emulator/channels/{channel}/messages") as resp:
        messages = await resp.json()
    assert [m["content"] for m in messages] == ["one", "three"]
    async with session.get(f"{emulator.base_url}/_emulator/guild") as resp:
        guild = await resp.json()
    assert [m["user"]["username"] for m in guild["members"]] == [emulator.config.bot_username, "alice"]


async def _read_events(resp: aiohttp.ClientResponse, count: int) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    kind, data = "", ""
    async with asyncio.timeout(WAIT):
        while len(events) < count:
            line = (await resp.content.readline()).decode().rstrip("\n")
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = line.removeprefix("data: ")
            elif line == "" and kind:
                events.append((kind, json.loads(data)))
                kind, data = "", ""
    return events


async def test_event_stream_reports_messages_typing_and_rate_limits(session: aiohttp.ClientSession) -> None:
    """SSE: create, edit, delete, typing, a bucket running dry and the 429 after it, in order."""
    async with DiscordEmulator(EmulatorConfig(channel_limit=1, channel_window=60)) as emulator:
        base = emulator.base_url
        async with session.get(f"{base}/_emulator/events") as events:
            assert events.content_type == "text/event-stream"
            assert (await events.content.readline()).startswith(b":")
            async with session.post(
                f"{base}/channels/77/messages", json={"content": "a"}, headers=BOT
            ) as resp:
                created = await resp.json()
            async with session.post(f"{base}/channels/77/typing", headers=BOT):
                pass
            async with session.post(
                f"{base}/channels/77/messages", json={"content": "b"}, headers=BOT
            ) as resp:
                assert resp.status == 429
            path = f"{base}/channels/77/messages/{created['id']}"
            async with session.patch(path, json={"content": "a2"}, headers=BOT):
                pass
            async with session.delete(path, headers=BOT):
                pass
            seen = await _read_events(events, 7)
    kinds = [kind for kind, _ in seen]
    assert kinds == [
        "message_create",
        "bucket_exhausted",
        "typing_start",
        "rate_limit",
        "message_update",
        "bucket_exhausted",
        "message_delete",
    ]
    assert seen[0][1]["message"]["content"] == "a" and seen[4][1]["message"]["content"] == "a2"
    assert seen[3][1]["route"] == "POST /channels/{channel_id}/messages" and seen[3][1]["major"] == "77"
    assert seen[3][1]["scope"] == "user" and seen[3][1]["retry_after"] >= 1
    assert seen[6][1]["id"] == created["id"]


async def test_event_stream_replays_after_last_event_id(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    for text in ("one", "two", "three"):
        await post(session, f"{emulator.base_url}/_emulator/messages", _user(channel, content=text))
    first = emulator.events.recent(frozenset({"message_create"}))[0].id
    async with session.get(
        f"{emulator.base_url}/_emulator/events", headers={"Last-Event-ID": str(first)}
    ) as events:
        seen = await _read_events(events, 2)
    assert [data["message"]["content"] for _, data in seen] == ["two", "three"]
    assert [kind for kind, _ in seen] == ["message_create", "message_create"]


async def test_closing_the_emulator_ends_open_event_streams(session: aiohttp.ClientSession) -> None:
    """A connected page does not hold the emulator open: the stream ends when it closes."""
    emulator = DiscordEmulator()
    await emulator.start()
    async with session.get(f"{emulator.base_url}/_emulator/events") as events:
        assert (await events.content.readline()).startswith(b":")
        await asyncio.wait_for(emulator.close(), WAIT)
        rest = await asyncio.wait_for(events.content.read(), WAIT)
    assert b"event:" not in rest


async def test_python_helpers_act_as_a_user_and_wait_for_events(
    emulator: DiscordEmulator, channel: str
) -> None:
    """post_as_user and invoke_as_user are the routes without HTTP; events.expect sees what follows."""
    waiting = emulator.events.expect("message_create", lambda d: d["message"]["content"] == "b")
    first = emulator.post_as_user(channel, "a", username="erin")
    reply = emulator.post_as_user(channel, "b", reply_to=str(first["id"]))
    event = await asyncio.wait_for(waiting, WAIT)
    assert event.data["message"]["id"] == reply["id"] and reply["referenced_message"]["id"] == first["id"]
    assert emulator.guild.users[USER_ID]["username"] == "user"
    with pytest.raises(ApiError) as refused:
        emulator.post_as_user(channel, "   ")
    assert refused.value.status == 400 and refused.value.body["code"] == 50006
    emulator.interactions.overwrite(None, [{"name": "stop", "description": "Stop"}])
    interaction = emulator.invoke_as_user(channel, "stop")
    assert interaction.command == "stop" and interaction.response_type is None
    assert (
        emulator.events.recent(frozenset({"interaction_create"}))[-1].data["interaction"]["id"]
        == interaction.id
    )
