"""The emulator's REST API answers like Discord: validation, codes, rate-limit headers, webhooks."""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.sinks.payload_rules import check_message_payload
from rxcord.testing.emulator import (
    DiscordEmulator,
    EmulatorConfig,
    Fault,
    run_forever,
    serve,
)

TOKEN = "emulator-token"
CHANNEL = "100000000000000001"
ROUTE_CREATE = "POST /channels/{channel_id}/messages"


class Client:
    """A raw HTTP client for the emulator (no rate limiting: we want to see Discord's answers)."""

    def __init__(self, session: aiohttp.ClientSession, base: str) -> None:
        self.session = session
        self.base = base

    async def call(
        self, method: str, path: str, body: Any = None, *, token: str | None = TOKEN
    ) -> tuple[int, Any, Any]:
        headers = {"Authorization": f"Bot {token}"} if token else {}
        async with self.session.request(method, self.base + path, json=body, headers=headers) as resp:
            data = await resp.json() if resp.content_type == "application/json" else None
            return resp.status, resp.headers, data

    async def send(self, content: Any = "hi", channel: str = CHANNEL, **fields: Any) -> tuple[int, Any, Any]:
        body = {"content": content, **fields} if content is not None else fields
        return await self.call("POST", f"/channels/{channel}/messages", body)


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    async with DiscordEmulator(EmulatorConfig(channel_window=0.5)) as emu:
        yield emu


@pytest.fixture
async def client(emulator: DiscordEmulator) -> AsyncIterator[Client]:
    async with aiohttp.ClientSession() as session:
        yield Client(session, emulator.base_url)


def _codes(errors: Any) -> list[str]:
    found: list[str] = []
    if isinstance(errors, dict):
        for key, value in errors.items():
            if key == "_errors":
                found += [item["code"] for item in value]
            else:
                found += _codes(value)
    return found


# -- validation ---------------------------------------------------------------


@pytest.mark.parametrize("content", ["", "   \n\t", None])
async def test_empty_message_is_50006(client: Client, emulator: DiscordEmulator, content: str | None) -> None:
    """Empty, whitespace-only or missing content without embeds is 400 / 50006."""
    status, _, body = await client.send(content)
    assert status == 400
    assert body == {"message": "Cannot send an empty message", "code": 50006}
    assert emulator.messages(CHANNEL) == []


async def test_content_over_2000_code_points_is_rejected_with_the_errors_tree(client: Client) -> None:
    """2001 code points give 50035 with Discord's exact nested errors tree."""
    status, _, body = await client.send("x" * 2001)
    assert status == 400
    assert body == {
        "message": "Invalid Form Body",
        "code": 50035,
        "errors": {
            "content": {
                "_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]
            }
        },
    }


async def test_content_over_4000_reports_the_4000_limit(client: Client) -> None:
    """Beyond 4000 code points the error names the Nitro ceiling, as Discord does for bots."""
    _, _, body = await client.send("x" * 4001)
    assert body["errors"]["content"]["_errors"][0]["message"] == "Must be 4000 or fewer in length."


async def test_length_counts_code_points_not_utf16_units(client: Client, emulator: DiscordEmulator) -> None:
    """2000 astral emoji (4000 UTF-16 units) are accepted: the limit counts code points."""
    status, _, body = await client.send("\U0001f600" * 2000)
    assert status == 200
    assert body["content"] == "\U0001f600" * 2000


@pytest.mark.parametrize(
    ("embeds", "path", "code"),
    [
        ([{"title": "t"}] * 11, ("embeds",), "BASE_TYPE_MAX_LENGTH"),
        ([{"description": "d" * 4097}], ("embeds", "0", "description"), "BASE_TYPE_MAX_LENGTH"),
        ([{"title": "t" * 257}], ("embeds", "0", "title"), "BASE_TYPE_MAX_LENGTH"),
        ([{"description": "d" * 4000}, {"description": "d" * 2001}], ("embeds",), "MAX_EMBED_SIZE_EXCEEDED"),
        (
            [{"fields": [{"name": "n", "value": "v" * 1025}]}],
            ("embeds", "0", "fields", "0", "value"),
            "BASE_TYPE_MAX_LENGTH",
        ),
    ],
)
async def test_embed_limits(
    client: Client, embeds: list[dict[str, Any]], path: tuple[str, ...], code: str
) -> None:
    """Embed count, field lengths and the 6000 total are enforced at the right error path."""
    status, _, body = await client.send(None, embeds=embeds)
    assert (status, body["code"]) == (400, 50035)
    node = body["errors"]
    for part in path:
        node = node[part]
    assert node["_errors"][0]["code"] == code


async def test_embed_only_message_is_accepted_with_type_rich(client: Client) -> None:
    """A message with only an embed is not empty; the embed comes back typed ``rich``."""
    status, _, body = await client.send(None, embeds=[{"description": "hello"}])
    assert status == 200
    assert body["embeds"] == [{"description": "hello", "type": "rich"}]


@pytest.mark.parametrize(
    ("allowed", "code"),
    [
        ({"parse": ["users"], "users": ["123456789012345678"]}, "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE"),
        ({"parse": ["roles"], "roles": ["123456789012345678"]}, "MESSAGE_ALLOWED_MENTIONS_PARSE_EXCLUSIVE"),
        ({"parse": ["channels"]}, "BASE_TYPE_CHOICES"),
    ],
)
async def test_allowed_mentions_shape_errors(client: Client, allowed: dict[str, Any], code: str) -> None:
    """``parse`` values are checked and ``parse`` excludes an explicit list of the same type."""
    status, _, body = await client.send("hi", allowed_mentions=allowed)
    assert status == 400
    assert _codes(body["errors"]) == [code]


async def test_mentions_follow_allowed_mentions(client: Client) -> None:
    """Mentions are computed from the content and filtered by ``allowed_mentions``."""
    content = "<@111111111111111111> <@!222222222222222222> <@&333333333333333333> @everyone"
    _, _, default = await client.send(content)
    assert [u["id"] for u in default["mentions"]] == ["111111111111111111", "222222222222222222"]
    assert default["mention_roles"] == ["333333333333333333"]
    assert default["mention_everyone"] is True
    _, _, none = await client.send(content, allowed_mentions={"parse": []})
    assert (none["mentions"], none["mention_roles"], none["mention_everyone"]) == ([], [], False)
    _, _, one = await client.send(content, allowed_mentions={"users": ["222222222222222222"]})
    assert [u["id"] for u in one["mentions"]] == ["222222222222222222"]


async def test_nonce_longer_than_25_is_rejected(client: Client) -> None:
    """A string nonce is at most 25 characters."""
    status, _, body = await client.send("hi", nonce="n" * 26)
    assert status == 400
    assert _codes(body["errors"]) == ["BASE_TYPE_MAX_LENGTH"]


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.sampled_from(["a", " ", "\n", "\U0001f600", "\u200b"]), max_size=2010))
def test_check_message_payload_content_rule(text: str) -> None:
    """Content is valid iff it is not blank and has at most 2000 code points."""
    error = check_message_payload({"content": text})
    if len(text) > 2000:
        assert error is not None and error["code"] == 50035
    elif not text.strip():
        assert error == {"message": "Cannot send an empty message", "code": 50006}
    else:
        assert error is None


# -- replies and nonces ---------------------------------------------------------


async def test_reply_to_unknown_message_fails_unless_fail_if_not_exists_is_false(
    client: Client, emulator: DiscordEmulator
) -> None:
    """A reference to a missing message is 50035 MESSAGE_REFERENCE_UNKNOWN_MESSAGE, or a plain send."""
    status, _, body = await client.send("hi", message_reference={"message_id": "999999999999999999"})
    assert status == 400
    assert body["errors"]["message_reference"]["_errors"][0]["code"] == "MESSAGE_REFERENCE_UNKNOWN_MESSAGE"
    ref = {"message_id": "999999999999999999", "fail_if_not_exists": False}
    status, _, body = await client.send("hi", message_reference=ref)
    assert status == 200
    assert "message_reference" not in body and body["type"] == 0


async def test_reply_to_existing_message(client: Client, emulator: DiscordEmulator) -> None:
    """A reply carries the reference, the referenced message and (by default) pings its author."""
    target = emulator.seed_message(CHANNEL, "question", author_id="444444444444444444")
    status, _, body = await client.send("answer", message_reference={"message_id": target})
    assert status == 200
    assert body["type"] == 19
    assert body["message_reference"]["message_id"] == target
    assert body["referenced_message"]["content"] == "question"
    assert [u["id"] for u in body["mentions"]] == ["444444444444444444"]
    emulator.delete_message(target)
    status, _, _ = await client.send("again", message_reference={"message_id": target})
    assert status == 400


async def test_enforce_nonce_returns_the_existing_message(client: Client, emulator: DiscordEmulator) -> None:
    """The same nonce with ``enforce_nonce`` creates nothing new and returns the first message."""
    _, _, first = await client.send("once", nonce="abc", enforce_nonce=True)
    _, _, second = await client.send("once", nonce="abc", enforce_nonce=True)
    assert first["id"] == second["id"] and first["nonce"] == "abc"
    assert len(emulator.messages(CHANNEL)) == 1
    assert emulator.counters.nonce_dedupes == 1
    _, _, third = await client.send("twice", nonce="abc")
    assert third["id"] != first["id"]
    assert len(emulator.messages(CHANNEL)) == 2


async def test_enforce_nonce_after_delete_is_unknown_message(
    client: Client, emulator: DiscordEmulator
) -> None:
    """A retry whose first message was deleted fails with 10008 instead of recreating it."""
    _, _, first = await client.send("once", nonce="n1", enforce_nonce=True)
    emulator.delete_message(first["id"])
    status, _, body = await client.send("once", nonce="n1", enforce_nonce=True)
    assert (status, body["code"]) == (404, 10008)


# -- channels and auth ----------------------------------------------------------


async def test_channel_states_and_auth() -> None:
    """Forbidden channels are 403/50001 or 50013, deleted ones 404/10003, a bad token 401."""
    config = EmulatorConfig(
        forbidden_channels={"2"},
        missing_permission_channels={"3"},
        deleted_channels={"4"},
        channel_window=0.5,
    )
    async with serve(config=config) as emu, aiohttp.ClientSession() as session:
        client = Client(session, emu.base_url)
        assert (await client.send(channel="2"))[2] == {"message": "Missing Access", "code": 50001}
        assert (await client.send(channel="3"))[2]["code"] == 50013
        status, _, body = await client.send(channel="4")
        assert (status, body) == (404, {"message": "Unknown Channel", "code": 10003})
        status, _, body = await client.call("POST", "/channels/5/messages", {"content": "x"}, token="wrong")
        assert (status, body) == (401, {"message": "401: Unauthorized", "code": 0})
        assert emu.counters.invalid_requests == 3


# -- rate limits ----------------------------------------------------------------


async def test_rate_limit_headers_on_every_response(client: Client) -> None:
    """Limit, Remaining, Reset (epoch, ms), Reset-After and an opaque Bucket hash are sent."""
    before = time.time()
    status, headers, _ = await client.send("a")
    after = time.time()
    assert status == 200
    assert headers["X-RateLimit-Limit"] == "5"
    assert headers["X-RateLimit-Remaining"] == "4"
    assert float(headers["X-RateLimit-Reset-After"]) == pytest.approx(0.1, abs=0.002)
    assert re.fullmatch(r"\d+\.\d{3}", headers["X-RateLimit-Reset"])
    # An epoch time: Reset-After from when the request was served, bracketed by the send (to the ms).
    reset = float(headers["X-RateLimit-Reset"])
    assert before + 0.1 - 0.005 <= reset <= after + 0.1 + 0.005
    assert re.fullmatch(r"[0-9a-f]{32}", headers["X-RateLimit-Bucket"])
    assert headers["Content-Type"] == "application/json"
    assert headers["Via"] == "1.1 google"


async def test_routes_have_distinct_bucket_hashes(client: Client, emulator: DiscordEmulator) -> None:
    """Create, edit and webhook execute report three different bucket hashes; typing reports none."""
    hook = emulator.add_webhook(CHANNEL)
    _, create, message = await client.send("a")
    _, edit, _ = await client.call("PATCH", f"/channels/{CHANNEL}/messages/{message['id']}", {"content": "b"})
    _, execute, _ = await client.call(
        "POST", f"/webhooks/{hook.id}/{hook.token}", {"content": "c"}, token=None
    )
    _, typing, _ = await client.call("POST", f"/channels/{CHANNEL}/typing")
    hashes = {create["X-RateLimit-Bucket"], edit["X-RateLimit-Bucket"], execute["X-RateLimit-Bucket"]}
    assert len(hashes) == 3
    assert "X-RateLimit-Bucket" not in typing


async def test_429_body_and_headers(client: Client, emulator: DiscordEmulator) -> None:
    """The sixth quick create is a user-scope 429 shaped like Discord's; other channels are unaffected."""
    for _ in range(5):
        assert (await client.send("a"))[0] == 200
    status, headers, body = await client.send("a")
    assert status == 429
    assert set(body) == {"message", "retry_after", "global"}
    assert body["message"] == "You are being rate limited." and body["global"] is False
    assert 0 < body["retry_after"] <= 0.1 + 1e-3
    assert headers["Retry-After"] == str(math.ceil(body["retry_after"]))
    assert headers["X-RateLimit-Scope"] == "user"
    assert headers["X-RateLimit-Remaining"] == "0"
    assert "X-RateLimit-Global" not in headers
    assert (await client.send("b", channel="100000000000000002"))[0] == 200
    assert emulator.counters.rate_limited == 1


async def test_bucket_slides_one_slot_per_interval() -> None:
    """With a fake clock: after a burst of 5 (5 per 5 s) one slot frees each second, not all at 5 s."""
    now = [1000.0]
    emu = DiscordEmulator(EmulatorConfig(), clock=lambda: now[0])
    await emu.start()
    try:
        async with aiohttp.ClientSession() as session:
            client = Client(session, emu.base_url)
            for expected in ("4", "3", "2", "1", "0"):
                assert (await client.send("a"))[1]["X-RateLimit-Remaining"] == expected
            status, headers, body = await client.send("a")
            assert status == 429 and body["retry_after"] == pytest.approx(1.0)
            assert headers["X-RateLimit-Reset-After"] == "5.000"
            now[0] += 1.0
            status, headers, _ = await client.send("a")
            assert status == 200 and headers["X-RateLimit-Remaining"] == "0"
            assert (await client.send("a"))[0] == 429
    finally:
        await emu.close()


async def test_global_limit() -> None:
    """Past the global limit every route answers a global 429 without bucket headers."""
    async with serve(config=EmulatorConfig(global_limit=3, global_window=10.0)) as emu:
        async with aiohttp.ClientSession() as session:
            client = Client(session, emu.base_url)
            for _ in range(3):
                assert (await client.call("GET", "/users/@me"))[0] == 200
            status, headers, body = await client.send("a")
        assert status == 429
        assert body["global"] is True and body["retry_after"] > 0
        assert headers["X-RateLimit-Global"] == "true"
        assert headers["X-RateLimit-Scope"] == "global"
        assert "X-RateLimit-Bucket" not in headers
        assert emu.counters.global_rate_limited == 1


# -- webhooks -------------------------------------------------------------------


async def test_webhook_execute(client: Client, emulator: DiscordEmulator) -> None:
    """``wait=true`` returns the message, without it 204; ``thread_id`` posts into the thread."""
    hook = emulator.add_webhook(CHANNEL, name="Persona")
    path = f"/webhooks/{hook.id}/{hook.token}"
    status, _, body = await client.call(
        "POST", path + "?wait=true", {"content": "a", "username": "Ada"}, token=None
    )
    assert status == 200
    assert body["webhook_id"] == hook.id and body["author"]["username"] == "Ada"
    assert (await client.call("POST", path, {"content": "b"}, token=None))[0] == 204
    await client.call("POST", path + "?thread_id=700000000000000007", {"content": "c"}, token=None)
    assert [m["content"] for m in emulator.messages(CHANNEL)] == ["a", "b"]
    assert [m["content"] for m in emulator.messages("700000000000000007")] == ["c"]


async def test_webhook_ignores_message_reference(client: Client, emulator: DiscordEmulator) -> None:
    """Webhooks cannot reply: a reference is ignored and counted."""
    hook = emulator.add_webhook(CHANNEL)
    target = emulator.seed_message(CHANNEL)
    body = {"content": "a", "message_reference": {"message_id": target}}
    status, _, message = await client.call(
        "POST", f"/webhooks/{hook.id}/{hook.token}?wait=true", body, token=None
    )
    assert status == 200 and "message_reference" not in message
    assert emulator.counters.ignored_webhook_references == 1


async def test_unknown_webhook_and_bad_token(client: Client, emulator: DiscordEmulator) -> None:
    """An unknown webhook is 404 / 10015; a wrong token 401 / 50027."""
    status, _, body = await client.call("POST", "/webhooks/1/abc", {"content": "a"}, token=None)
    assert (status, body["code"]) == (404, 10015)
    hook = emulator.add_webhook(CHANNEL)
    status, _, body = await client.call("POST", f"/webhooks/{hook.id}/nope", {"content": "a"}, token=None)
    assert (status, body["code"]) == (401, 50027)


@pytest.mark.parametrize(
    ("username", "code"),
    [
        ("my discord bot", "USERNAME_INVALID_CONTAINS"),
        ("Clyde", "USERNAME_INVALID_CONTAINS"),
        ("a@b", "USERNAME_INVALID_CONTAINS"),
        ("a#b", "USERNAME_INVALID_CONTAINS"),
        ("a:b", "USERNAME_INVALID_CONTAINS"),
        ("a```b", "USERNAME_INVALID_CONTAINS"),
        ("everyone", "USERNAME_INVALID"),
        ("Here", "USERNAME_INVALID"),
        ("", "BASE_TYPE_BAD_LENGTH"),
        ("x" * 81, "BASE_TYPE_BAD_LENGTH"),
    ],
)
async def test_webhook_username_rules(
    client: Client, emulator: DiscordEmulator, username: str, code: str
) -> None:
    """Username overrides follow Discord's name rules."""
    hook = emulator.add_webhook(CHANNEL)
    body = {"content": "a", "username": username}
    status, _, answer = await client.call("POST", f"/webhooks/{hook.id}/{hook.token}", body, token=None)
    assert (status, answer["code"]) == (400, 50035)
    assert answer["errors"]["username"]["_errors"][0]["code"] == code


# -- reads, typing, identity ----------------------------------------------------


async def test_list_messages_newest_first(client: Client) -> None:
    """GET messages returns the newest first and honours ``limit``."""
    for text in ("one", "two", "three"):
        await client.send(text)
    status, _, body = await client.call("GET", f"/channels/{CHANNEL}/messages?limit=2")
    assert status == 200
    assert [m["content"] for m in body] == ["three", "two"]
    assert (await client.call("GET", f"/channels/{CHANNEL}/messages?limit=101"))[0] == 400


async def test_typing_is_204_and_counted(client: Client, emulator: DiscordEmulator) -> None:
    """Typing answers 204 and is counted per channel."""
    status, _, _ = await client.call("POST", f"/channels/{CHANNEL}/typing")
    assert status == 204
    assert emulator.counters.typing[CHANNEL] == 1


async def test_identity_routes_have_what_discord_py_reads(client: Client) -> None:
    """``/users/@me`` and ``/oauth2/applications/@me`` carry the fields discord.py's login reads."""
    status, headers, me = await client.call("GET", "/users/@me")
    assert status == 200 and headers["Content-Type"] == "application/json"
    assert {"id", "username", "discriminator", "avatar", "bot", "flags", "public_flags"} <= set(me)
    _, _, app = await client.call("GET", "/oauth2/applications/@me")
    required = {
        "id",
        "name",
        "description",
        "icon",
        "bot_public",
        "bot_require_code_grant",
        "owner",
        "verify_key",
    }
    assert required <= set(app)
    assert {"id", "username", "discriminator", "avatar"} <= set(app["owner"])


async def test_unknown_route_is_json_404(client: Client) -> None:
    """Unknown routes answer Discord's JSON 404."""
    status, _, body = await client.call("GET", "/nowhere")
    assert (status, body) == (404, {"message": "404: Not Found", "code": 0})


# -- faults and bans --------------------------------------------------------------


async def test_faults_error_and_error_after_accept(client: Client, emulator: DiscordEmulator) -> None:
    """An ``error`` fault stores nothing; ``error_after_accept`` stores the message and still answers 500."""
    emulator.inject(Fault("error", route=ROUTE_CREATE, status=502))
    assert (await client.send("lost"))[0] == 502
    emulator.inject(Fault("error_after_accept", route=ROUTE_CREATE))
    status, headers, _ = await client.send("kept")
    assert status == 500 and "X-RateLimit-Bucket" in headers
    assert [m["content"] for m in emulator.messages(CHANNEL)] == ["kept"]


async def test_shared_scope_fault_is_not_invalid(client: Client, emulator: DiscordEmulator) -> None:
    """A shared-scope 429 has remaining > 0, its own message and code, and is not counted as invalid."""
    emulator.inject(Fault("rate_limit", scope="shared", code=20028, retry_after=0.3))
    status, headers, body = await client.send("a")
    assert status == 429 and headers["X-RateLimit-Scope"] == "shared"
    assert int(headers["X-RateLimit-Remaining"]) > 0
    assert body == {
        "message": "The resource is being rate limited.",
        "retry_after": 0.3,
        "global": False,
        "code": 20028,
    }
    assert emulator.counters.invalid_requests == 0


async def test_cloudflare_ban_after_too_many_invalid_requests() -> None:
    """Past the invalid-request threshold every answer is the ban: 429, code 0, no retry_after, no Via."""
    async with serve(config=EmulatorConfig(ban_threshold=2)) as emu, aiohttp.ClientSession() as session:
        client = Client(session, emu.base_url)
        for _ in range(2):
            assert (await client.call("GET", "/users/@me", token="bad"))[0] == 401
        status, headers, body = await client.call("GET", "/users/@me")
        assert status == 429 and body["code"] == 0 and "retry_after" not in body
        assert "Via" not in headers and "X-RateLimit-Limit" not in headers


async def test_hidden_webhook_channel_limit_is_a_shared_429() -> None:
    """Webhooks of one channel share a hidden limit answered as a shared-scope 429 (code 20028)."""
    config = EmulatorConfig(webhook_channel_limit=2, webhook_channel_window=60.0)
    async with serve(config=config) as emu, aiohttp.ClientSession() as session:
        client = Client(session, emu.base_url)
        hooks = [emu.add_webhook(CHANNEL) for _ in range(3)]
        answers = [
            await client.call("POST", f"/webhooks/{h.id}/{h.token}", {"content": "a"}, token=None)
            for h in hooks
        ]
        assert [status for status, _, _ in answers] == [204, 204, 429]
        _, headers, body = answers[2]
        assert headers["X-RateLimit-Scope"] == "shared" and body["code"] == 20028
        assert int(headers["X-RateLimit-Remaining"]) > 0


async def test_run_forever_serves_until_cancelled() -> None:
    """``run_forever`` reports its base URL once serving and stops when cancelled."""
    ready: asyncio.Queue[str] = asyncio.Queue()
    task = asyncio.create_task(run_forever(ready=ready.put_nowait))
    base = await asyncio.wait_for(ready.get(), 5.0)
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+/api/v10", base)
    async with aiohttp.ClientSession() as session:
        assert (await Client(session, base).call("GET", "/users/@me"))[0] == 200
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
