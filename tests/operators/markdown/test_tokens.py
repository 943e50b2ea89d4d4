"""Never-cut tokens (``rxcord.operators.markdown.tokens``)."""

from __future__ import annotations

from rxcord.operators.markdown.scan import MarkdownScanner
from rxcord.operators.markdown.tokens import token_spans


def scan(text: str) -> MarkdownScanner:
    scanner = MarkdownScanner()
    scanner.feed(text)
    scanner.finish()
    return scanner


def test_token_spans_cover_discord_tokens_outside_fences() -> None:
    """Mentions, emoji, timestamps, commands, URLs and masked links are tokens; not inside code blocks."""
    text = (
        "<@1> <@!2> <@&3> <#4> </a b:5> <:e:6> <a:f:7> <t:8:R> https://x.y/z <https://q> [m](https://w) @here"
    )
    found = [text[a:b] for a, b in token_spans(text)]
    assert found == [*text.split(" ")[:4], "</a b:5>", *text.split(" ")[6:]]
    code = "```\n<@1>\n```\n<@2>"
    scanner = scan(code)
    assert [code[a:b] for a, b in token_spans(code, scanner.fences)] == ["<@2>"]
