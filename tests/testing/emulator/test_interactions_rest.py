"""Command registration, the interaction callback, follow-ups and webhook message edits over raw HTTP."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator
from tests.testing.emulator.support import USER_ID, post

BOT = {"Authorization": "Bot emulator-token"}
ASK = {"name": "ask", "description": "Ask", "options": [{"type": 3, "name": "prompt", "description": "q"}]}


async def _call(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, Any]:
    async with session.request(method, url, json=body, headers=headers) as resp:
        data = await resp.json() if resp.content_type == "application/json" else None
        return resp.status, data, resp.headers


async def _registered(emulator: DiscordEmulator, session: aiohttp.ClientSession, guild: bool = False) -> str:
    app = emulator.config.application_id
    scope = f"/guilds/{emulator.config.guild_id}" if guild else ""
    status, commands, _ = await _call(
        session, "PUT", f"{emulator.base_url}/applications/{app}{scope}/commands", [ASK], BOT
    )
    assert status == 200
    return str(commands[0]["id"])


async def _invoke(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str, **extra: Any
) -> dict[str, Any]:
    body = {"channel_id": channel, "author_id": USER_ID, "username": "alice", "command": "ask", **extra}
    status, summary = await post(session, f"{emulator.base_url}/_emulator/interactions", body)
    assert status == 200, summary
    return summary  # type: ignore[no-any-return]


async def test_command_registration_routes(emulator: DiscordEmulator, session: aiohttp.ClientSession) -> None:
    """PUT overwrites (ids kept by name), POST adds or replaces, GET lists, DELETE removes; token needed."""
    app = emulator.config.application_id
    url = f"{emulator.base_url}/applications/{app}/commands"
    first_id = await _registered(emulator, session)
    status, replaced, _ = await _call(
        session, "PUT", url, [ASK, {"name": "stop", "description": "Stop"}], BOT
    )
    assert status == 200 and replaced[0]["id"] == first_id and replaced[1]["application_id"] == app
    status, created, _ = await _call(session, "POST", url, {"name": "kill", "description": "Kill"}, BOT)
    assert status == 201
    status, same, _ = await _call(session, "POST", url, {"name": "kill", "description": "Abort"}, BOT)
    assert status == 200 and same["id"] == created["id"] and same["description"] == "Abort"
    assert (await _call(session, "DELETE", f"{url}/{created['id']}", None, BOT))[0] == 204
    status, listed, _ = await _call(session, "GET", url, None, BOT)
    assert [c["name"] for c in listed] == ["ask", "stop"]
    guild_url = f"{emulator.base_url}/applications/{app}/guilds/{emulator.config.guild_id}/commands"
    assert (await _call(session, "GET", guild_url, None, BOT))[1] == []
    assert (await _call(session, "GET", url))[0] == 401


async def test_unknown_command_is_refused_with_the_registered_names(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    await _registered(emulator, session)
    body = {"channel_id": channel, "author_id": USER_ID, "command": "nope"}
    status, error = await post(session, f"{emulator.base_url}/_emulator/interactions", body)
    assert status == 404 and error["code"] == 10063 and "ask" in error["message"]


async def test_guild_command_wins_and_options_are_typed(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    await _registered(emulator, session)
    guild_id = await _registered(emulator, session, guild=True)
    summary = await _invoke(emulator, session, channel, options={"prompt": "hi", "n": 3})
    payload = emulator.interactions.by_id[summary["id"]].payload
    assert payload["data"]["id"] == guild_id and payload["data"]["guild_id"] == emulator.config.guild_id
    assert payload["data"]["options"] == [
        {"name": "prompt", "type": 3, "value": "hi"},
        {"name": "n", "type": 4, "value": 3},
    ]
    assert payload["member"]["user"]["id"] == USER_ID and payload["attachment_size_limit"] > 0


async def test_callback_answers_once_and_follow_ups_use_the_token(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    """A message callback is the original; a second is 40060; follow-ups and @original edits work."""
    await _registered(emulator, session)
    summary = await _invoke(emulator, session, channel)
    callback = f"{emulator.base_url}/interactions/{summary['id']}/{summary['token']}/callback"
    status, body, _ = await _call(
        session, "POST", callback + "?with_response=true", {"type": 4, "data": {"content": "hi!"}}
    )
    assert status == 200 and body["interaction"]["id"] == summary["id"]
    assert body["resource"]["message"]["content"] == "hi!" and body["resource"]["message"]["type"] == 20
    assert (await _call(session, "POST", callback, {"type": 4, "data": {"content": "again"}}))[1][
        "code"
    ] == 40060
    hook = f"{emulator.base_url}/webhooks/{emulator.config.application_id}/{summary['token']}"
    status, follow_up, _ = await _call(session, "POST", hook + "?wait=true", {"content": "more"})
    assert status == 200 and follow_up["webhook_id"] == emulator.config.application_id
    status, edited, _ = await _call(session, "PATCH", hook + "/messages/@original", {"content": "hi, edited"})
    assert status == 200 and edited["edited_timestamp"] is not None
    assert (await _call(session, "DELETE", f"{hook}/messages/{follow_up['id']}"))[0] == 204
    assert [m["content"] for m in emulator.messages(channel)] == ["hi, edited"]
    bad = f"{emulator.base_url}/interactions/{summary['id']}/wrong-token/callback"
    assert (await _call(session, "POST", bad, {"type": 4, "data": {"content": "x"}}))[1]["code"] == 10062


async def test_callback_without_with_response_is_204_and_bad_types_are_400(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    await _registered(emulator, session)
    summary = await _invoke(emulator, session, channel)
    callback = f"{emulator.base_url}/interactions/{summary['id']}/{summary['token']}/callback"
    assert (await _call(session, "POST", callback, {"type": 3}))[0] == 400
    assert (await _call(session, "POST", callback, {"type": 4, "data": {"content": ""}}))[1]["code"] == 50006
    assert (await _call(session, "POST", callback, {"type": 5, "data": {"flags": 64}}))[0] == 204
    interaction = emulator.interactions.by_id[summary["id"]]
    assert interaction.response_type == 5 and emulator.messages(channel) == []  # an ephemeral placeholder


async def test_webhook_messages_edit_and_delete_with_their_own_buckets(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    """PATCH and DELETE on a webhook's message: own bucket hashes, only the webhook's own messages."""
    hook = emulator.add_webhook(channel)
    url = f"{emulator.base_url}/webhooks/{hook.id}/{hook.token}"
    _, message, execute_headers = await _call(session, "POST", url + "?wait=true", {"content": "hook says"})
    status, edited, edit_headers = await _call(
        session, "PATCH", f"{url}/messages/{message['id']}", {"content": "hook edits"}
    )
    assert status == 200 and edited["content"] == "hook edits"
    assert (await _call(session, "GET", f"{url}/messages/{message['id']}"))[1]["content"] == "hook edits"
    user_message = emulator.seed_message(channel, "not the hook's")
    assert (await _call(session, "PATCH", f"{url}/messages/{user_message}", {"content": "x"}))[1][
        "code"
    ] == 10008
    status, _, delete_headers = await _call(session, "DELETE", f"{url}/messages/{message['id']}")
    assert status == 204
    buckets = {h["X-RateLimit-Bucket"] for h in (execute_headers, edit_headers, delete_headers)}
    assert len(buckets) == 3
    assert [m["content"] for m in emulator.messages(channel)] == ["not the hook's"]


@pytest.mark.parametrize("path", ["/gateway", "/gateway/bot"])
async def test_gateway_routes_point_at_the_emulator(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, path: str
) -> None:
    status, body, _ = await _call(session, "GET", emulator.base_url + path, None, BOT)
    assert status == 200 and body["url"] == emulator.gateway_url
    assert body["url"].startswith(f"ws://127.0.0.1:{emulator.port}/")
