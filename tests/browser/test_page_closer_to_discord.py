"""The emulator's page, closer to Discord: code blocks, reply previews, interaction headers,
ephemeral answers, a stable "you", unread counts, and a screenshot taken once rendered."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from rxcord.testing.emulator import DiscordEmulator
from tests.browser.conftest import ServerThread, wait_for
from tests.browser.test_page import USER_ID, _emulator_post, as_user, channel_of, open_page, rest

pytestmark = pytest.mark.browser

OTHER = "300000000000000002"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshot_page.py"


def _count(browser: webdriver.Chrome, selector: str) -> int:
    return int(browser.execute_script("return document.querySelectorAll(arguments[0]).length", selector))


def _unread(browser: webdriver.Chrome) -> dict[str, str]:
    script = """
    const counts = {};
    for (const li of document.querySelectorAll('#channels .channel')) {
      const count = li.querySelector('.channel-count');
      counts[li.dataset.id] = count ? count.textContent : '';
    }
    return counts;
    """
    return dict(browser.execute_script(script))


def test_a_code_block_is_as_wide_as_the_message_and_has_no_language_label(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel)
    body = {"content": "Here:\n```python\nprint(1)\n```"}
    assert server_thread.run(rest(emulator, "POST", f"/channels/{channel}/messages", body))[0] == 200
    wait_for(lambda: _count(browser, "#messages .md-codeblock") == 1, what="the code block")
    sizes = browser.execute_script(
        """
        const block = document.querySelector('#messages .md-codeblock');
        const content = block.closest('.msg-content');
        return {block: block.getBoundingClientRect().width, content: content.getBoundingClientRect().width,
                text: block.textContent, lang: block.dataset.lang};
        """
    )
    assert sizes["content"] > 300 and abs(sizes["block"] - sizes["content"]) <= 1, sizes
    assert sizes["text"] == "print(1)" and sizes["lang"] == "python"  # the language is no label
    assert _count(browser, "#messages .md-codeblock-lang") == 0


def test_the_reply_preview_is_one_line_of_text_without_markdown(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    bot = emulator.config.bot_id
    open_page(browser, emulator, channel, as_user="alice")
    question = server_thread.run(
        as_user(
            emulator,
            channel,
            "alice",
            f"# Title\n**bold** and `code` ~~gone~~\n```py\nx = 1\n```\n> quoted <@{bot}> " + "long " * 60,
        )
    )
    reply = {"content": "answer", "message_reference": {"message_id": question["id"]}}
    assert server_thread.run(rest(emulator, "POST", f"/channels/{channel}/messages", reply))[0] == 200
    wait_for(lambda: _count(browser, "#messages .reply-content") == 1, what="the reply preview")
    preview = browser.execute_script(
        """
        const bar = document.querySelector('#messages .reply');
        const text = bar.querySelector('.reply-content');
        const line = parseFloat(getComputedStyle(text).lineHeight) || 20;
        return {text: text.textContent, height: text.getBoundingClientRect().height, line,
                bar: bar.getBoundingClientRect().height, wide: text.scrollWidth > text.clientWidth};
        """
    )
    text = preview["text"]
    assert text.startswith(f"Title bold and code gone x = 1 quoted @{emulator.config.bot_username} long")
    assert not any(mark in text for mark in ("#", "*", "`", "~", ">", "\n", "<@"))
    assert preview["height"] < 1.5 * preview["line"] and preview["bar"] < 2 * preview["line"], preview
    assert preview["wide"], "the rest is cut off on the same line (ellipsis), not wrapped"


def _invoke_and_answer(
    emulator: DiscordEmulator, server_thread: ServerThread, channel: str, author: str, name: str
) -> None:
    """/stop as *author*, answered by "the bot" with an ephemeral message (callback type 4, flag 64)."""

    async def run() -> None:
        app = emulator.config.application_id
        status, _ = await rest(emulator, "PUT", f"/applications/{app}/commands", [{"name": "stop"}])
        assert status == 200
        body = {"channel_id": channel, "author_id": author, "username": name, "command": "stop"}
        interaction = await _emulator_post(emulator, "interactions", body)
        answer = {"type": 4, "data": {"content": "Stopped.", "flags": 64}}
        path = f"/interactions/{interaction['id']}/{interaction['token']}/callback"
        assert (await rest(emulator, "POST", path, answer))[0] == 204

    server_thread.run(run())


def test_an_ephemeral_answer_shows_who_used_the_command_and_can_be_dismissed(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel, as_user="alice")
    server_thread.run(as_user(emulator, channel, "alice", "before"))
    _invoke_and_answer(emulator, server_thread, channel, USER_ID, "alice")
    _invoke_and_answer(emulator, server_thread, channel, OTHER, "bob")
    wait_for(lambda: _count(browser, "#messages .ephemeral") == 2, what="two ephemeral answers")
    rows = browser.execute_script(
        """
        return [...document.querySelectorAll('#messages .msg')].map((n) => ({
          header: [...n.querySelectorAll('.interaction-header span')]
            .map((s) => s.textContent).join('') || null,
          footer: (n.querySelector('.ephemeral') || {}).textContent || null,
          text: (n.querySelector('.msg-content') || {}).textContent || ''}));
        """
    )
    assert [row["header"] for row in rows] == [None, "alice used /stop", "bob used /stop"]
    assert rows[1]["footer"] == "Only you can see this · Dismiss message" and rows[1]["text"] == "Stopped."
    assert rows[2]["footer"] == "Only bob can see this · Dismiss message"
    browser.find_elements(By.CSS_SELECTOR, "#messages .ephemeral-dismiss")[0].click()
    wait_for(lambda: _count(browser, "#messages .msg") == 2, what="the dismissed answer to go")
    assert _count(browser, "#messages .ephemeral") == 1
    footer = browser.find_element(By.CSS_SELECTOR, "#messages .ephemeral").text
    assert footer.startswith("Only bob")
    stored = server_thread.call(lambda: emulator.store.live(channel, ephemeral=True))
    assert len(stored) == 3, "dismissing hides it on the page only"


def test_you_stay_the_same_user_across_page_loads(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    open_page(browser, emulator, channel)
    first = browser.find_element(By.ID, "me-id").text
    saved = json.loads(browser.execute_script("return localStorage.getItem('rxcord-emulator-me')"))
    assert saved["id"] == first and first.isdigit() and 15 <= len(first) <= 21
    browser.refresh()
    open_page(browser, emulator, channel)
    assert browser.find_element(By.ID, "me-id").text == first
    box = browser.find_element(By.ID, "composer-input")
    box.send_keys("after the reload")
    box.send_keys(Keys.ENTER)
    wait_for(lambda: _count(browser, "#messages .msg") == 1, what="the message")
    [stored] = server_thread.call(lambda: emulator.messages(channel))
    assert stored["author"]["id"] == first


def test_unread_counts_are_per_channel_not_yours_and_cleared_when_viewed(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    shown, other, third = channel_of(emulator), channel_of(emulator, 1), channel_of(emulator, 2)
    open_page(browser, emulator, shown, as_user="alice")

    async def traffic() -> None:
        post = f"/channels/{other}/messages"
        for content in ("one", "two"):
            assert (await rest(emulator, "POST", post, {"content": content}))[0] == 200
        await as_user(emulator, other, "alice", "mine")  # your own: not unread
        await as_user(emulator, shown, "alice", "here")  # the channel shown: read
        body = {"channel_id": third, "author_id": OTHER, "username": "bob", "content": "hi"}
        await _emulator_post(emulator, "messages", body)

    server_thread.run(traffic())
    wait_for(lambda: _unread(browser)[third] == "1", what="the third channel's count")
    assert _unread(browser) == {**_unread(browser), shown: "", other: "2", third: "1"}
    browser.find_element(By.CSS_SELECTOR, f'#channels .channel[data-id="{other}"]').click()
    wait_for(lambda: _unread(browser)[other] == "", what="the count cleared once viewed")
    server_thread.run(rest(emulator, "POST", f"/channels/{shown}/messages", {"content": "meanwhile"}))
    wait_for(lambda: _unread(browser)[shown] == "1", what="the first channel's new message")
    assert _unread(browser)[third] == "1" and _unread(browser)[other] == ""


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshot_page", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_screenshot_waits_for_the_rendered_page(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread, tmp_path: Path
) -> None:
    channel = channel_of(emulator)

    async def messages() -> None:
        for n in range(3):
            body = {"content": f"**message {n}**"}
            assert (await rest(emulator, "POST", f"/channels/{channel}/messages", body))[0] == 200

    server_thread.run(messages())
    readme = (SCRIPT.parents[1] / "README.md").read_text()
    assert "scripts/screenshot_page.py" in readme and "data-ready" in readme
    out = tmp_path / "page.png"
    count = _script().capture(browser, emulator.page_url + "#" + channel, out)
    assert count == 3
    assert browser.execute_script("return document.body.dataset.ready") == "true"
    rendered = browser.execute_script("return document.querySelectorAll('#messages .msg strong').length")
    assert rendered == 3, "the picture was taken after the messages were rendered"
    image = Image.open(io.BytesIO(out.read_bytes())).convert("RGB")
    assert len(image.getcolors(maxcolors=1 << 20) or []) > 100


def test_the_screenshot_script_names_what_never_came(
    browser: webdriver.Chrome, emulator: DiscordEmulator, tmp_path: Path
) -> None:
    out = tmp_path / "never.png"
    with pytest.raises(TimeoutError, match="no-such-thing"):
        _script().capture(browser, emulator.page_url, out, wait_for=".no-such-thing", timeout=8)
    assert not out.exists()


def test_a_role_mention_shows_the_role_s_name_also_when_created_later(
    browser: webdriver.Chrome, emulator: DiscordEmulator, server_thread: ServerThread
) -> None:
    channel = channel_of(emulator)
    guild = emulator.config.guild_id
    mods, later = "1300000000000000001", "1300000000000000002"
    server_thread.run(_emulator_post(emulator, "roles", {"guild_id": guild, "role_id": mods, "name": "mods"}))
    open_page(browser, emulator, channel)
    body = {"content": f"<@&{mods}> and <@&{later}>", "allowed_mentions": {"parse": []}}
    assert server_thread.run(rest(emulator, "POST", f"/channels/{channel}/messages", body))[0] == 200

    def pills() -> list[str]:
        return list(
            browser.execute_script(
                "return [...document.querySelectorAll('.md-mention-role')].map((m) => m.textContent)"
            )
        )

    wait_for(lambda: len(pills()) == 2, what="two role pills")
    assert pills() == ["@mods", "@role-0002"]
    server_thread.run(
        _emulator_post(emulator, "roles", {"guild_id": guild, "role_id": later, "name": "helpers"})
    )
    wait_for(lambda: pills() == ["@mods", "@helpers"], what="the new role's name on the pill")
