"""Text that must never be cut: Discord's message formats, URLs, masked links, inline code.

``TOKEN_RE`` matches each such token; ``token_spans`` lists them outside fenced
blocks, for the message splitter's hard cuts.
"""

from __future__ import annotations

__all__ = ("TOKEN_RE", "token_spans")

import re
from typing import Final

from rxcord.operators.markdown.cuts import FenceSpan

TOKEN_RE: Final = re.compile(
    r"<@[!&]?\d+>"  # user and role mentions
    r"|<#\d+>"  # channel
    r"|</[-\w]+(?: [-\w]+){0,2}:\d+>"  # slash command
    r"|<a?:\w+:\d+>"  # custom emoji
    r"|<t:-?\d+(?::[tTdDfFsSR])?>"  # timestamp
    r"|<id:(?:customize|browse|guide|linked-roles)(?::\d+)?>"  # guild navigation
    r"|<[A-Za-z][A-Za-z0-9+.-]*:[^\s<>]+>"  # <https://...>: a link without a preview
    r"|\[[^\[\]\n]*\]\((?:<[^<>\n]*>|[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"\n]*\")?\)"  # masked link
    r"|(?:https?|ftp)://[^\s<>]+"  # bare URL
    r"|@everyone|@here"
    r"|(?<!`)(`{1,2})(?!`)[^`\n]+?(?<!`)\1(?!`)"  # inline code
)
"""Text that must never be cut (Discord's message formats, URLs, masked links, inline code)."""


def token_spans(text: str, fences: list[FenceSpan] | None = None) -> list[tuple[int, int]]:
    """Sorted, disjoint ``(start, end)`` spans of ``TOKEN_RE`` matches in *text*, outside fenced blocks."""
    blocks = [(f.start, len(text) if f.end is None else f.end) for f in fences or ()]
    spans: list[tuple[int, int]] = []
    k = 0
    for match in TOKEN_RE.finditer(text):
        start, end = match.span()
        while k < len(blocks) and blocks[k][1] <= start:
            k += 1
        if k < len(blocks) and blocks[k][0] <= start:
            continue
        if spans and start < spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans
