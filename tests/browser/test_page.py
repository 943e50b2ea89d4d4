"""The emulator's page in a real headless Chromium: replays, live streams, rich messages, the composer."""

from __future__ import annotations

import asyncio
import io
import json
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from PIL import Image
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.request import ChatRequest, Message
from rxcord.core.state import StreamResult
from rxcord.core.types import DeliveryMode, ErrorType, ProviderError
from rxcord.providers.registry import default_registry
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.error_embed import error_embed
from rxcord.sinks.rest import RestSink
from rxcord.testing.emulator import DiscordEmulator
from rxcord.testing.replay import ReplayServer
from tests.browser.conftest import ARTIFACTS, ServerThread, wait_for

pytestmark = pytest.mark.browser

DEMO_DATA = Path(__file__).parent.parent.parent / "pipeline" / "data"
FENCE = re.compile(r"```(?:([A-Za-z0-9_+\-.#]+?)\n)?\n*([^\n][\s\S]*?)\n*```")
USER_ID = "300000000000000001"

_SNAPSHOT = """
return [...document.querySelectorAll('#messages .msg')].map((n) => {
  const content = n.querySelector('.msg-content');
  const tag = n.querySelector('.tag');
  const reply = n.querySelector('.reply');
  const author = n.querySelector('.msg-author');
  return {
    id: n.dataset.id,
    author: author ? author.textContent : null,
    text: content ? content.textContent : '',
    codes: [...n.querySelectorAll('.md-codeblock')].map(
      (b) => [b.dataset.lang, b.querySelector('pre code').textContent]),
    tag: tag ? tag.textContent : null,
    edited: !!n.querySelector('.edited'),
    embeds: [...n.querySelectorAll('.embed')].map((e) => ({
      title: (e.querySelector('.embed-title') || {}).textContent || null,
      description: (e.querySelector('.embed-description') || {}).textContent || null,
      footer: (e.querySelector('.embed-footer') || {}).textContent || null,
      colour: getComputedStyle(e).borderLeftColor})),
    reply: reply ? reply.textContent : null,
    mentions: [...n.querySelectorAll('.md-mention')].map((m) => [m.textContent, m.dataset.pinged]),
    mentioned: n.classList.contains('mentioned'),
    html: content ? content.innerHTML : '',
  };
});
"""


# -- fixtures and helpers ---------------------------------------------------------------


def channel_of(emulator: DiscordEmulator, index: int = 0) -> str:
    return emulator.config.channels[index].id


def open_page(
    browser: webdriver.Chrome, emulator: DiscordEmulator, channel_id: str, *, as_user: str | None = None
) -> None:
    """Open the page on a channel (optionally as the user *as_user*, id ``USER_ID``)."""
    browser.get(emulator.page_url + "#" + channel_id)
    if as_user is not None:
        me = json.dumps({"id": USER_ID, "username": as_user})
        browser.execute_script("localStorage.setItem('rxcord-emulator-me', arguments[0])", me)
        browser.refresh()
    wait_for(
        lambda: browser.execute_script(
            "return window.rxcordPage && rxcordPage.ready && rxcordPage.connected"
        ),
        what="the page to load and connect to the event stream",
    )


def snapshot(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    return list(browser.execute_script(_SNAPSHOT))


def code_lines(blocks: list[str]) -> list[str]:
    return [line for block in blocks for line in block.split("\n")]


async def rest(emulator: DiscordEmulator, method: str, path: str, body: Any = None) -> Any:
    headers = {"Authorization": f"Bot {emulator.config.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, emulator.base_url + path, json=body, headers=headers) as response,
    ):
        data = await response.json() if response.content_type == "application/json" else None
        return response.status, data


async def as_user(emulator: DiscordEmulator, channel_id: str, username: str, content: str) -> dict[str, Any]:
    body = {"channel_id": channel_id, "author_id": USER_ID, "username": username, "content": content}
    async with (
        aiohttp.ClientSession() as session,
        session.post(emulator.base_url + "/_emulator/messages", json=body) as response,
    ):
        assert response.status == 200, await response.text()
        return dict(await response.json())


async def stream_into(
    emulator: DiscordEmulator, provider: str, base_url: str, channel_id: str, config: StreamConfig
) -> StreamResult:
    """One stream from a local provider server into the emulator, through the whole chain."""
    adapter = default_registry().create(provider)
    chat = ChatRequest(model="replay-model", messages=(Message.user("replay"),))
    http = adapter.build_request(chat, base_url=base_url, api_key="replay-key", stream=True)
    async with aiohttp.ClientSession() as session:
        job = StreamJob(
            adapter=adapter,
            request=http,
            sink=RestSink(emulator.base_url, emulator.config.token, session=session),
            context=StreamContext(channel_id=channel_id),
            config=config,
            transport=TransportConfig(allow_private_network=True, transient_retries=0),
        )
        return await run_stream(job, nonce_prefix="browser")


async def replay(emulator: DiscordEmulator, capture: str, provider: str, channel_id: str) -> StreamResult:
    server = ReplayServer(body=(DEMO_DATA / capture).read_bytes())
    async with server:
        return await stream_into(
            emulator, provider, server.base_url, channel_id, StreamConfig(delivery=DeliveryMode.AGGREGATED)
        )


# -- tests ------------------------------------------------------------------------------


def test_replayed_long_answer_keeps_its_code_blocks(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel)
    result = server_thread.run(replay(emulator, "openrouter_reasoning_code.sse", "openrouter", channel))
    stored = server_thread.call(lambda: emulator.messages(channel))
    assert len(stored) == len(result.messages) >= 2, "the capture is longer than one Discord message"
    shown = wait_for(
        lambda: (rows := snapshot(browser)) and len(rows) == len(stored) and rows,
        what=f"{len(stored)} messages on the page",
    )
    assert [row["id"] for row in shown] == [str(message["id"]) for message in stored]
    for row, message in zip(shown, stored, strict=True):
        assert message["content"].count("```") % 2 == 0, "every message's fences are balanced"
        expected = [[lang or "", body] for lang, body in FENCE.findall(message["content"])]
        assert row["codes"] == expected
    # Every code block of the answer reaches the page line for line, however the messages split
    # it (delivery closes a fence at a message's end and reopens it in the next).
    original = [body for _lang, body in FENCE.findall(result.visible_text)]
    assert original, "the capture's answer has code blocks"
    shown_code = "\n".join(code_lines([code for row in shown for _lang, code in row["codes"]]))
    for block in original:
        assert "\n".join(code_lines([block])) in shown_code
    # No fence is shown as text, and nothing was rendered as markup inside code.
    assert all("```" not in row["text"] for row in shown)


def _sse(content: str, finish: str | None = None) -> bytes:
    chunk = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    chunk["choices"] = [
        {"index": 0, "delta": {"content": content} if content else {}, "finish_reason": finish}
    ]
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


class GatedProvider:
    """An OpenAI-compatible streaming endpoint that sends its first half, then waits for ``gate``."""

    def __init__(self, first: list[str], second: list[str]) -> None:
        self.first, self.second = first, second
        self.gate = asyncio.Event()
        self.runner: web.AppRunner | None = None
        self.base_url = ""

    async def start(self) -> str:
        app = web.Application()
        app.router.add_post("/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/v1"
        return self.base_url

    async def handle(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for piece in self.first:
            await response.write(_sse(piece))
        await self.gate.wait()
        for piece in self.second:
            await response.write(_sse(piece))
        await response.write(_sse("", "stop") + b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def close(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


def test_live_stream_appears_in_order_while_it_runs(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator, 1)
    # Each paragraph is long enough that the first three pass the think-tag start window
    # (256 characters held on OpenAI-compatible adapters) before the provider pauses.
    filler = "These words only make the paragraph long enough to leave the start window."
    paragraphs = [f"Part {n}: **step {n}** of the answer, with `code {n}`. {filler}\n\n" for n in range(1, 7)]
    provider = GatedProvider(paragraphs[:3], paragraphs[3:])
    base_url = server_thread.run(provider.start())
    open_page(browser, emulator, channel)
    config = StreamConfig(delivery=DeliveryMode.LIVE, live_idle_flush=0.2)
    running = server_thread.submit(stream_into(emulator, "openai", base_url, channel, config))
    try:
        early = wait_for(lambda: snapshot(browser), timeout=60, what="the first live message on the page")
        assert not running.done(), "the provider is still holding the second half"
        early_text = " ".join(row["text"] for row in early)
        assert "Part 1" in early_text and "Part 4" not in early_text
        server_thread.loop.call_soon_threadsafe(provider.gate.set)
        result = running.result(120)
    finally:
        server_thread.loop.call_soon_threadsafe(provider.gate.set)
        server_thread.run(provider.close())
    stored = server_thread.call(lambda: emulator.messages(channel))
    assert result.status.value == "completed"
    final = wait_for(
        lambda: (rows := snapshot(browser)) and len(rows) == len(stored) and rows,
        what="every live message on the page",
    )
    assert [row["id"] for row in final] == [str(m["id"]) for m in stored]
    assert [row["id"] for row in early] == [row["id"] for row in final[: len(early)]], "earlier ones stay"
    text = " ".join(row["text"] for row in final)
    positions = [text.index(f"Part {n}:") for n in range(1, 7)]
    assert positions == sorted(positions), "the parts appear in the order they were streamed"
    assert all("**" not in row["text"] for row in final), "bold is rendered, not shown"


def test_rich_messages_render_like_discord_and_a_screenshot_is_saved(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    other = channel_of(emulator, 2)
    bot = emulator.config.bot_id
    open_page(browser, emulator, channel, as_user="alice")

    async def scene() -> None:
        question = await as_user(emulator, channel, "alice", f"<@{bot}> how do I reverse a list in Python?")
        answer = {
            "content": (
                f"## Reversing a list\nHi <@{USER_ID}>! Two ways, *both* **idiomatic**:\n"
                "- `items.reverse()` works in place\n- `items[::-1]` makes a copy\n"
                "```python\nitems = [1, 2, 3]\nprint(items[::-1])  # [3, 2, 1]\n```\n"
                "> Prefer the copy when others hold the list.\n-# answered by rxcord · ||no spoilers||"
            ),
            "message_reference": {"message_id": question["id"]},
            "allowed_mentions": {"parse": [], "users": [USER_ID]},
        }
        status, sent = await rest(emulator, "POST", f"/channels/{channel}/messages", answer)
        assert status == 200, sent
        quiet = {"content": f"FYI <@{USER_ID}> (this one does not ping)", "allowed_mentions": {"parse": []}}
        assert (await rest(emulator, "POST", f"/channels/{channel}/messages", quiet))[0] == 200
        status, draft = await rest(emulator, "POST", f"/channels/{channel}/messages", {"content": "draft"})
        edited = {"content": "~~draft~~ final answer, __underlined__"}
        assert (await rest(emulator, "PATCH", f"/channels/{channel}/messages/{draft['id']}", edited))[
            0
        ] == 200
        hook = emulator.add_webhook(channel, name="Captain Hook")
        persona = {"content": "Speaking as the persona.", "username": "Ada (persona)"}
        status, _ = await rest(emulator, "POST", f"/webhooks/{hook.id}/{hook.token}?wait=true", persona)
        assert status == 200
        error = ProviderError(type=ErrorType.RATE_LIMIT, message="Slow down.", retryable=False, status=429)
        assert (
            await rest(emulator, "POST", f"/channels/{channel}/messages", {"embeds": [error_embed(error)]})
        )[0] == 200
        # Six creates into another channel: the sixth is refused with a 429.
        statuses = [
            (await rest(emulator, "POST", f"/channels/{other}/messages", {"content": f"n{n}"}))[0]
            for n in range(6)
        ]
        assert 429 in statuses
        assert (await rest(emulator, "POST", f"/channels/{channel}/typing"))[0] == 204

    server_thread.run(scene())
    rows = wait_for(lambda: (rows := snapshot(browser)) and len(rows) == 6 and rows, what="six messages")
    question, answer, quiet, edited, persona, error = rows
    assert question["author"] == "alice" and question["tag"] is None
    assert answer["tag"] == "APP" and answer["reply"] is not None and "alice" in answer["reply"]
    assert f"@{emulator.config.bot_username}" in answer["reply"] and "<@" not in answer["reply"]
    assert answer["mentioned"] and answer["mentions"] == [["@alice", "true"]]
    html = answer["html"]
    for fragment in ("<h2", "<em>both</em>", "<strong>idiomatic</strong>", "<ul", "md-quote", "md-subtext"):
        assert fragment in html
    assert "md-spoiler" in html and answer["codes"] == [
        ["python", "items = [1, 2, 3]\nprint(items[::-1])  # [3, 2, 1]"]
    ]
    assert quiet["mentions"] == [["@alice", "false"]] and not quiet["mentioned"]
    assert edited["edited"] and "<s>draft</s>" in edited["html"] and "<u>underlined</u>" in edited["html"]
    assert persona["author"] == "Ada (persona)" and persona["tag"] == "BOT"
    assert error["embeds"] == [
        {
            "title": "Rate limited",
            "description": "Slow down.",
            "footer": "HTTP 429",
            "colour": "rgb(254, 231, 92)",
        }
    ]
    typing = wait_for(lambda: browser.find_element(By.ID, "typing").text, what="the typing indicator")
    assert emulator.config.bot_username in typing and "typing" in typing
    log = wait_for(
        lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#ratelog-entries .rate-429")],
        what="a 429 in the rate-limit log",
    )
    assert any("POST /channels/{channel_id}/messages" in entry for entry in log)

    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / "emulator-page.png"
    png = browser.get_screenshot_as_png()
    path.write_bytes(png)
    image = Image.open(io.BytesIO(png)).convert("RGB")
    assert image.size[0] >= 1000 and image.size[1] >= 600
    colours = image.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 200, "a rendered page has text, avatars, pills and code, not a blank canvas"
    background = max(colours)[0] / (image.size[0] * image.size[1])
    assert background < 0.8, "no single colour covers most of the page"


def test_composer_posts_as_the_user_and_slash_commands_reach_the_emulator(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel)
    box = browser.find_element(By.ID, "composer-input")
    box.send_keys("hello **bot**")
    box.send_keys(Keys.ENTER)
    rows = wait_for(lambda: snapshot(browser), what="the typed message on the page")
    stored = server_thread.call(lambda: emulator.messages(channel))
    assert [m["content"] for m in stored] == ["hello **bot**"]
    assert rows[0]["text"] == "hello bot" and "<strong>bot</strong>" in rows[0]["html"]
    username = browser.execute_script("return document.getElementById('me-username').value")
    assert rows[0]["author"] == username == stored[0]["author"]["username"]
    assert box.get_attribute("value") == ""
    # "@name" of a known user (here the bot, a guild member) is sent as a mention.
    box.send_keys(f"@{emulator.config.bot_username} ping, (@nobody)")
    box.send_keys(Keys.ENTER)
    wait_for(lambda: len(snapshot(browser)) == 2, what="the second message")
    stored = server_thread.call(lambda: emulator.messages(channel))
    assert stored[1]["content"] == f"<@{emulator.config.bot_id}> ping, (@nobody)"
    assert [m["id"] for m in stored[1]["mentions"]] == [emulator.config.bot_id]


async def _emulator_post(emulator: DiscordEmulator, route: str, body: dict[str, Any]) -> dict[str, Any]:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{emulator.base_url}/_emulator/{route}", json=body) as response,
    ):
        assert response.status in (200, 204), await response.text()
        return dict(await response.json()) if response.status == 200 else {}


def test_edits_deletes_typing_and_threads_arrive_live(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel)

    async def post_two() -> tuple[dict[str, Any], dict[str, Any]]:
        first = (await rest(emulator, "POST", f"/channels/{channel}/messages", {"content": "first *draft*"}))[
            1
        ]
        second = (
            await rest(emulator, "POST", f"/channels/{channel}/messages", {"content": "to be deleted"})
        )[1]
        return first, second

    first, second = server_thread.run(post_two())
    wait_for(lambda: len(snapshot(browser)) == 2, what="two messages")
    path = f"/channels/{channel}/messages/{first['id']}"
    assert server_thread.run(rest(emulator, "PATCH", path, {"content": "first, final"}))[0] == 200
    rows = wait_for(
        lambda: (rows := snapshot(browser)) and rows[0]["edited"] and rows, what="the edit, marked (edited)"
    )
    assert rows[0]["text"] == "first, final(edited)" and not rows[1]["edited"]
    path = f"/channels/{channel}/messages/{second['id']}"
    assert server_thread.run(rest(emulator, "DELETE", path))[0] == 204
    rows = wait_for(lambda: (rows := snapshot(browser)) and len(rows) == 1 and rows, what="the delete")
    assert rows[0]["id"] == str(first["id"])

    # A user types, then starts a thread from the message and writes in it.
    who = {"channel_id": channel, "author_id": USER_ID, "username": "dora"}
    server_thread.run(_emulator_post(emulator, "typing", who))
    typing = wait_for(lambda: browser.find_element(By.ID, "typing").text, what="dora typing")
    assert typing.startswith("dora") and "is typing" in typing
    thread = server_thread.run(
        _emulator_post(emulator, "threads", {**who, "name": "follow-ups", "message_id": str(first["id"])})
    )
    server_thread.run(
        _emulator_post(emulator, "messages", {**who, "channel_id": thread["id"], "content": "in it"})
    )
    sidebar = wait_for(
        lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#channels .channel.thread")],
        what="the thread in the sidebar",
    )
    assert any("follow-ups" in entry for entry in sidebar)
    box = wait_for(
        lambda: [e.text for e in browser.find_elements(By.CSS_SELECTOR, "#messages .thread-box")],
        what="the thread on its starter message",
    )
    assert [entry.split() for entry in box] == [["follow-ups", "1", "message", "›"]]
    browser.find_element(By.CSS_SELECTOR, "#messages .thread-box").click()
    rows = wait_for(
        lambda: (rows := snapshot(browser)) and rows[0]["text"] == "in it" and rows, what="the thread"
    )
    assert [row["author"] for row in rows] == ["dora"]
    assert browser.find_element(By.ID, "channel-name").text == "follow-ups"


def test_a_revealed_spoiler_stays_revealed_while_new_messages_arrive(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel)
    path = f"/channels/{channel}/messages"
    server_thread.run(rest(emulator, "POST", path, {"content": "the answer is ||42||"}))
    spoiler = wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, ".md-spoiler"), what="the spoiler")[0]
    assert "revealed" not in (spoiler.get_attribute("class") or "")
    spoiler.click()
    server_thread.run(rest(emulator, "POST", path, {"content": "another message"}))
    wait_for(lambda: len(snapshot(browser)) == 2, what="the second message")
    classes = browser.execute_script("return document.querySelector('.md-spoiler').className")
    assert "revealed" in classes
