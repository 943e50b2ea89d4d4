"""``RestSource`` against the emulator's REST API: split answers, thread starters, attachments.

The answers are posted as the bot over REST, the way the sinks send them: the first part replies
to the question, the later parts reply to nothing. Attachments are served on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from rxcord.discord.chain import collect
from rxcord.discord.conversation import Attachment, ContextLimits
from rxcord.discord.sources import RestSource, read_capped_text
from rxcord.sinks.ratelimit import RateLimiter
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig
from rxcord.testing.emulator.server import serve
from tests.local_app import serve_app

GENERAL = "1200000000000000010"
ALICE = "3000000000000000001"


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    async with serve(config=EmulatorConfig()) as emu:
        yield emu


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as client:
        yield client


async def _user(
    session: aiohttp.ClientSession, emu: DiscordEmulator, channel: str, content: str, **more: Any
) -> str:
    body = {"channel_id": channel, "author_id": ALICE, "username": "alice", "content": content, **more}
    async with session.post(f"{emu.base_url}/_emulator/messages", json=body) as response:
        assert response.status == 200, await response.text()
        return str((await response.json())["id"])


async def _bot(
    session: aiohttp.ClientSession, emu: DiscordEmulator, channel: str, content: str, reply_to: str | None
) -> str:
    body: dict[str, Any] = {"content": content}
    if reply_to is not None:
        body["message_reference"] = {"message_id": reply_to}
    headers = {"Authorization": f"Bot {emu.config.token}"}
    async with session.post(f"{emu.base_url}/channels/{channel}/messages", json=body, headers=headers) as r:
        assert r.status == 200, await r.text()
        return str((await r.json())["id"])


async def test_a_reply_to_the_last_part_reads_the_whole_answer_over_rest(
    emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    question = await _user(session, emulator, GENERAL, "the question")
    parts = [await _bot(session, emulator, GENERAL, "part one", question)]
    parts += [await _bot(session, emulator, GENERAL, f"part {n}", None) for n in ("two", "three")]
    trigger_id = await _user(
        session, emulator, GENERAL, "and then?", message_reference={"message_id": parts[-1]}
    )
    source = RestSource(emulator.base_url, emulator.config.token, session, RateLimiter())
    trigger = await source.message(GENERAL, trigger_id)
    assert trigger is not None and trigger.reply_to == parts[-1]
    lines, more = await collect(trigger, source, ContextLimits(), assistant_ids={emulator.config.bot_id})
    assert [line.id for line in lines] == [question, *parts, trigger_id] and not more
    assert [line.content for line in lines[1:4]] == ["part one", "part two", "part three"]
    assert all(line.is_bot for line in lines[1:4])


async def test_a_thread_started_from_a_message_reads_its_starter_over_rest(
    emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    starter = await _user(session, emulator, GENERAL, "let's plan the trip")
    body = {"channel_id": GENERAL, "author_id": ALICE, "username": "alice", "name": "trip"}
    async with session.post(
        f"{emulator.base_url}/_emulator/threads", json={**body, "message_id": starter}
    ) as response:
        assert response.status == 200, await response.text()
        thread = str((await response.json())["id"])
    assert thread == starter  # what the reader relies on: the thread has its starter's id
    earlier = await _user(session, emulator, thread, "we need a name")
    trigger_id = await _user(session, emulator, thread, "any ideas?")
    source = RestSource(emulator.base_url, emulator.config.token, session, RateLimiter())
    trigger = await source.message(thread, trigger_id)
    assert trigger is not None
    lines, more = await collect(
        trigger, source, ContextLimits(), assistant_ids={emulator.config.bot_id}, thread=(GENERAL, thread)
    )
    assert [line.id for line in lines] == [starter, earlier, trigger_id] and not more
    assert lines[0].content == "let's plan the trip" and lines[0].channel_id == GENERAL


@pytest.fixture
async def files() -> AsyncIterator[tuple[str, list[str]]]:
    """A file server on 127.0.0.1: ``/big`` (1 MB of ``x``), ``/missing`` (404); logs each path."""
    asked: list[str] = []

    async def big(request: web.Request) -> web.StreamResponse:
        asked.append(request.path)
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        for _ in range(64):
            await response.write(b"x" * 16_384)
        return response

    async def missing(request: web.Request) -> web.Response:
        asked.append(request.path)
        return web.Response(status=404)

    app = web.Application()
    app.router.add_get("/big", big)
    app.router.add_get("/missing", missing)
    async with serve_app(app) as origin:
        yield origin, asked


async def test_attachments_are_read_capped_and_from_allowed_hosts_only(
    files: tuple[str, list[str]], session: aiohttp.ClientSession
) -> None:
    origin, asked = files
    hosts = {"127.0.0.1"}

    def attachment(url: str) -> Attachment:
        return Attachment(filename="notes.txt", url=url, content_type="text/plain")

    text = await read_capped_text(session, attachment(f"{origin}/big"), 100, hosts)
    assert text == "x" * 101  # one more than asked: the caller can tell it was cut
    assert await read_capped_text(session, attachment(f"{origin}/missing"), 100, hosts) is None
    assert asked == ["/big", "/missing"]
    # Another host (here the same server under another name), another scheme: refused unread.
    other = origin.replace("127.0.0.1", "localhost")
    assert await read_capped_text(session, attachment(f"{other}/big"), 100, hosts) is None
    assert await read_capped_text(session, attachment("file:///etc/passwd"), 100, hosts) is None
    assert asked == ["/big", "/missing"]


async def test_the_rest_source_reads_attachments_from_the_api_host_only(
    files: tuple[str, list[str]], session: aiohttp.ClientSession
) -> None:
    origin, asked = files
    source = RestSource(f"{origin}/api/v10", "token", session, RateLimiter())
    big = Attachment(filename="a.txt", url=f"{origin}/big")
    assert await source.attachment_text(big, 10) == "x" * 11
    assert asked == ["/big"]


class _NoConnections:
    """A session that fails the test if anything is fetched through it."""

    def get(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"fetched {args}")


async def test_an_attachment_elsewhere_is_refused_before_any_connection() -> None:
    source = RestSource("https://discord.com/api/v10", "token", _NoConnections(), RateLimiter())  # type: ignore[arg-type]
    for url in (
        "http://169.254.169.254/latest/meta-data",
        "http://10.0.0.1/a.txt",
        "ftp://cdn.discordapp.com/a",
    ):
        assert await source.attachment_text(Attachment(filename="a.txt", url=url), 10) is None
