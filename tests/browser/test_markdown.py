"""The page's Discord markdown renderer (static/markdown.js), run in the real browser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from selenium import webdriver

from rxcord.testing.page import mount
from tests.browser.conftest import ServerThread, wait_for

pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser: webdriver.Chrome, server_thread: ServerThread) -> Iterator[webdriver.Chrome]:
    """The page served by a bare app (no emulator routes): only the renderer is used."""

    async def start() -> web.AppRunner:
        app = web.Application()
        mount(app)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        return runner

    runner = server_thread.run(start())
    port = runner.addresses[0][1]
    browser.get(f"http://127.0.0.1:{port}/")
    wait_for(lambda: browser.execute_script("return !!window.rxcordMarkdown"), what="markdown.js")
    try:
        yield browser
    finally:
        server_thread.run(runner.cleanup())


_RENDER = """
const [src, pinged] = arguments;
const label = (kind, id) => (kind === 'channel' ? '#' : '@') + id;
const ctx = {mention: (kind, id) => ({label: label(kind, id), pinged: pinged.includes(id)})};
const node = window.rxcordMarkdown.render(src, ctx);
return node.innerHTML;
"""

_TREE = """
const [src] = arguments;
function walk(node) {
  if (node.nodeType === 3) return node.textContent;
  const out = [node.tagName.toLowerCase()];
  if (node.className) out.push('.' + node.className);
  for (const child of node.childNodes) out.push(walk(child));
  return out;
}
return walk(window.rxcordMarkdown.render(src, {})).slice(2);
"""


def html(page: webdriver.Chrome, source: str, pinged: tuple[str, ...] = ()) -> str:
    return str(page.execute_script(_RENDER, source, list(pinged)))


def tree(page: webdriver.Chrome, source: str) -> Any:
    return page.execute_script(_TREE, source)


def test_inline_styles(page: webdriver.Chrome) -> None:
    assert html(page, "**bold** *it* _it2_ __under__ ~~gone~~") == (
        "<strong>bold</strong> <em>it</em> <em>it2</em> <u>under</u> <s>gone</s>"
    )
    assert html(page, "***both***") == "<strong><em>both</em></strong>"
    assert html(page, r"\*not italic\*") == "*not italic*"
    # Snake_case words are not italics (Discord's underscore rule needs a word boundary).
    assert html(page, "snake_case_name") == "snake_case_name"


def test_text_is_never_markup(page: webdriver.Chrome) -> None:
    rendered = html(page, "<b>hi</b> <img src=x onerror=alert(1)> & ok")
    assert "<b>" not in rendered and "<img" not in rendered
    assert "&lt;b&gt;hi&lt;/b&gt;" in rendered and "&amp; ok" in rendered


def test_code_block_keeps_its_text_and_its_language_without_a_label(page: webdriver.Chrome) -> None:
    source = "before\n```python\ndef f(x):\n    return x * 2  # **not bold**\n```\nafter"
    result = page.execute_script(
        """
        const node = window.rxcordMarkdown.render(arguments[0], {});
        const block = node.querySelector('.md-codeblock');
        return {lang: block.dataset.lang, labels: block.querySelectorAll('.md-codeblock-lang').length,
                klass: block.querySelector('pre code').className,
                code: block.querySelector('pre code').textContent,
                strong: node.querySelectorAll('strong').length,
                text: node.textContent};
        """,
        source,
    )
    assert result["lang"] == "python" and result["klass"] == "language-python"
    assert result["labels"] == 0, "Discord shows no language label"
    assert result["code"] == "def f(x):\n    return x * 2  # **not bold**"
    assert result["strong"] == 0
    assert result["text"].startswith("before") and result["text"].endswith("after")


def test_code_block_without_language_and_inline_code(page: webdriver.Chrome) -> None:
    assert tree(page, "```\nplain\n```") == [["div", ".md-codeblock", ["pre", ["code", "plain"]]]]
    assert html(page, "use `a *b* c` here") == 'use <code class="md-inline-code">a *b* c</code> here'
    assert html(page, "``a ` b``") == '<code class="md-inline-code">a ` b</code>'


def test_headings_subtext_and_line_start_rules(page: webdriver.Chrome) -> None:
    assert tree(page, "# Big\n## Mid\n### Small\n-# tiny print\ntext") == [
        ["h1", ".md-heading md-h1", "Big"],
        ["h2", ".md-heading md-h2", "Mid"],
        ["h3", ".md-heading md-h3", "Small"],
        ["small", ".md-subtext", "tiny print"],
        "text",
    ]
    # Not at the start of a line, or without the space: plain text.
    assert html(page, "a # b") == "a # b"
    assert html(page, "#nospace") == "#nospace"


def test_lists_nest_by_indentation(page: webdriver.Chrome) -> None:
    assert tree(page, "- one\n- two\n  - inner\n- three") == [
        [
            "ul",
            ".md-list",
            ["li", "one"],
            ["li", "two", ["ul", ".md-list", ["li", "inner"]]],
            ["li", "three"],
        ]
    ]
    ordered = page.execute_script(
        "const ol = window.rxcordMarkdown.render(arguments[0], {}).querySelector('ol');"
        "return [ol.start, ol.children.length];",
        "3. c\n4. d",
    )
    assert ordered == [3, 2]


def test_block_quotes(page: webdriver.Chrome) -> None:
    assert tree(page, "> quoted **line**\n> second\nafter") == [
        ["blockquote", ".md-quote", "quoted ", ["strong", "line"], ["br"], "second"],
        "after",
    ]
    assert tree(page, ">>> all\nof this") == [["blockquote", ".md-quote", "all", ["br"], "of this"]]
    assert html(page, ">no space") == "&gt;no space"


def test_spoilers_links_and_mentions(page: webdriver.Chrome) -> None:
    assert tree(page, "||secret||") == [["span", ".md-spoiler", "secret"]]
    links = page.execute_script(
        "const n = window.rxcordMarkdown.render(arguments[0], {});"
        "return [...n.querySelectorAll('a')].map(a => [a.textContent, a.href]);",
        "see [docs](https://example.com/a) and https://example.com/b.",
    )
    assert links == [["docs", "https://example.com/a"], ["https://example.com/b", "https://example.com/b"]]
    source = "hi <@123456789012345678> and <@!223456789012345678>"
    rendered = html(page, source, pinged=("123456789012345678",))
    assert 'class="md-mention md-mention-user pinged"' in rendered
    assert 'class="md-mention md-mention-user not-pinged"' in rendered
    assert "@123456789012345678" in rendered


def test_discord_does_not_render_these(page: webdriver.Chrome) -> None:
    # Markdown that Discord leaves alone stays text: setext headings, horizontal rules, tables.
    assert html(page, "Title\n===") == "Title<br>==="
    assert html(page, "---") == "---"
    assert html(page, "| a | b |") == "| a | b |"


def test_nesting_and_line_start_rules_inside_quotes(page: webdriver.Chrome) -> None:
    assert html(page, "__*both*__") == "<u><em>both</em></u>"
    assert tree(page, "> # quoted heading") == [
        ["blockquote", ".md-quote", ["h1", ".md-heading md-h1", "quoted heading"]]
    ]
    assert tree(page, "-# **bold** subtext") == [["small", ".md-subtext", ["strong", "bold"], " subtext"]]
    assert tree(page, "- **a** b") == [["ul", ".md-list", ["li", ["strong", "a"], " b"]]]


def test_code_is_literal(page: webdriver.Chrome) -> None:
    # Without a newline after it, the first word is code, not a language.
    assert tree(page, "```py print(1)```") == [["div", ".md-codeblock", ["pre", ["code", "py print(1)"]]]]
    assert html(page, r"`a \* b`") == r'<code class="md-inline-code">a \* b</code>'
    assert tree(page, "```js\nconst s = '<b>' + `x`;\n```") == [
        [
            "div",
            ".md-codeblock",
            ["pre", ["code", ".language-js", "const s = '<b>' + `x`;"]],
        ]
    ]


def test_discord_tokens(page: webdriver.Chrome) -> None:
    assert tree(page, "<:rxcord:123456789012345678>") == [["span", ".md-emoji", ":rxcord:"]]
    assert tree(page, "<#120000000000000001>") == [
        ["span", ".md-mention md-mention-channel not-pinged", "#120000000000000001"]
    ]
    assert tree(page, "@everyone hi")[0] == [
        "span",
        ".md-mention md-mention-everyone not-pinged",
        "@everyone",
    ]
    stamp = page.execute_script(
        "return window.rxcordMarkdown.render('<t:0:d>', {}).querySelector('time').dateTime"
    )
    assert stamp == "1970-01-01T00:00:00.000Z"
    assert html(page, r"\<@123456789012345678>") == "&lt;@123456789012345678&gt;"
    assert html(page, "<https://example.com/x>") == (
        '<a class="md-link" href="https://example.com/x" target="_blank" rel="noopener noreferrer">'
        "https://example.com/x</a>"
    )
    # Only http(s) links are links.
    assert html(page, "[x](javascript:alert(1))") == "[x](javascript:alert(1))"
