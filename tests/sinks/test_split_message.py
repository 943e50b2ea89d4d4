"""Stage 07 message splitter: limits, cut preferences, fences, quotes, tokens, graphemes."""

from __future__ import annotations

import itertools
import re
import sys
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.operators.markdown.cut_policy import is_blank_piece
from rxcord.operators.markdown.graphemes import is_grapheme_boundary
from rxcord.operators.markdown.scan import MarkdownScanner
from rxcord.operators.markdown.tables import render_table
from rxcord.operators.markdown.tokens import TOKEN_RE
from rxcord.sinks.split_message import MIN_LIMIT, cut_pieces, split_message

# -- independent checkers (also used by the flusher tests) ---------------------------------------------------

_OPEN = re.compile(r"(`{3,}|~{3,})(.*)")
_CLOSE = re.compile(r"(`{3,}|~{3,})\s*")


def fences_balanced(message: str) -> bool:
    """Whether every fenced block opened in *message* is closed in it (CommonMark line rules; a
    ``>>> `` quote line may open a block, as in Discord)."""
    marker: str | None = None
    for line in message.split("\n"):
        body = line.lstrip()
        if marker is None:
            if body.startswith((">>> ", ">>>\t")):
                body = body[4:].lstrip(" \t")
            m = _OPEN.match(body)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                marker = m.group(1)
        else:
            m = _CLOSE.fullmatch(body)
            if m and m.group(1)[0] == marker[0] and len(m.group(1)) >= len(marker):
                marker = None
    return marker is None


_REOPEN = re.compile(r"(?:`{3,}|~{3,})[^\n]*\n")
_ADDED_CLOSE = re.compile(r"\n(?:`{3,}|~{3,})\Z")


def reconstruct(original: str, pieces: list[str], *, drop_whitespace: bool) -> list[tuple[int, int]] | None:
    """Where each piece's own text lies in *original*, once the added fence/quote text is removed.

    A piece may end with an added fence close (``"\\n```"``) and, after the
    first, start with an added ``">>> "`` and/or a reopened fence line. With
    *drop_whitespace*, whitespace of *original* may be missing between pieces
    and at both ends. Returns the ``(start, end)`` span of each piece, or ``None``
    when *original* cannot be rebuilt that way.
    """
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * len(pieces) + 100))

    def skips(p: int) -> list[int]:
        out = [p]
        if drop_whitespace:
            while p < len(original) and original[p].isspace():
                p += 1
                out.append(p)
        return out

    @cache
    def go(i: int, p: int) -> tuple[tuple[int, int], ...] | None:
        if i == len(pieces):
            rest = original[p:]
            return () if not rest or (drop_whitespace and rest.isspace()) else None
        piece = pieces[i]
        prefixes = [""]
        if i > 0:
            if piece.startswith(">>> "):
                prefixes.append(">>> ")
            for quote in list(prefixes):
                m = _REOPEN.match(piece, len(quote))
                if m:
                    prefixes.append(quote + m.group(0))
        suffixes = [""]
        m = _ADDED_CLOSE.search(piece)
        if m:
            suffixes.append(m.group(0))
        for pre in prefixes:
            for suf in suffixes:
                if len(pre) + len(suf) > len(piece):
                    continue
                body = piece[len(pre) : len(piece) - len(suf)]
                for q in skips(p):
                    if original.startswith(body, q):
                        found = go(i + 1, q + len(body))
                        if found is not None:
                            return ((q, q + len(body)), *found)
        return None

    result = go(0, 0)
    return None if result is None else list(result)


def fenced_regions(text: str) -> list[tuple[int, int]]:
    scanner = MarkdownScanner()
    scanner.feed(text)
    scanner.finish()
    return [(f.start, len(text) if f.end is None else f.end) for f in scanner.fences]


# -- properties ----------------------------------------------------------------------------------------------

ATOMS = [
    "\n",
    "\n\n",
    " ",
    "   ",
    ". ",
    "? ",
    "Hello",
    "world",
    "é",
    "e\u0301",
    "👨\u200d👩\u200d👧\u200d👦",
    "🇫🇷",
    "日本語です。",
    "`code span`",
    "`",
    "```py\n",
    "```\n",
    "~~~\n",
    "~~~javascript\n",
    "    indented(x)\n",
    "<@123456789012345678>",
    "<@!42>",
    "<@&42>",
    "<#99>",
    "<:smile:12345>",
    "<a:wave:678>",
    "<t:1700000000:R>",
    "</ping sub:123>",
    "https://example.com/a/b?c=d",
    "<https://example.com/x>",
    "[a masked link](https://e.com/p)",
    "@everyone",
    "- ",
    "1. ",
    ">>> ",
    "> ",
    "**bold**",
    "||spoiler||",
    "| a | b |\n",
]
TEXT = st.lists(
    st.one_of(st.sampled_from(ATOMS), st.text(alphabet="abc ,.!\n", max_size=12)), max_size=80
).map("".join)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(MIN_LIMIT, 120))
def test_split_invariants(text: str, limit: int) -> None:
    """Messages fit, are never blank, balance fences, and rebuild the text minus cut whitespace."""
    messages = split_message(text, limit)
    if not text.strip():
        assert messages == []
        return
    body, pieces = cut_pieces(text.strip(), limit)
    assert messages == [piece for piece in pieces if not is_blank_piece(piece)]
    for message in messages:
        assert 0 < len(message) <= limit
        assert message.strip() and not is_blank_piece(message)
        assert fences_balanced(message), message
    spans = reconstruct(body, pieces, drop_whitespace=True)
    assert spans is not None, pieces


@settings(max_examples=300, deadline=None)
@given(TEXT, st.integers(48, 120))
def test_tokens_and_graphemes_are_never_cut(text: str, limit: int) -> None:
    """No cut falls inside a token (outside code) shorter than a quarter message, nor in a cluster."""
    body, messages = cut_pieces(text.strip(), limit)
    spans = reconstruct(body, messages, drop_whitespace=True)
    assert spans is not None
    blocks = fenced_regions(body)
    for match in TOKEN_RE.finditer(body):
        start, end = match.span()
        if end - start > limit // 4 or any(a <= start < b for a, b in blocks):
            continue
        assert any(a <= start and end <= b for a, b in spans), (match.group(0), messages)
    for a, b in spans:
        assert is_grapheme_boundary(body, a) and is_grapheme_boundary(body, b)


# -- units ---------------------------------------------------------------------------------------------------


def test_short_text_is_one_message_and_blank_is_none() -> None:
    """Text that fits is sent stripped, as is; blank text gives no message."""
    assert split_message("  hello  \n") == ["hello"]
    assert split_message(" \n\t ") == []
    assert split_message("") == []


def test_limit_below_minimum_is_refused() -> None:
    """A limit too small for fence repair raises ValueError."""
    with pytest.raises(ValueError, match="at least"):
        split_message("text", MIN_LIMIT - 1)


def test_prefers_paragraph_then_line_then_sentence_then_space() -> None:
    """The best kind of cut in the second half of the message wins."""
    para = "A" * 30 + " one.\n\n" + "B" * 30
    assert split_message(para, 60) == ["A" * 30 + " one.", "B" * 30]
    line = "A" * 30 + " one.\n" + "B" * 30
    assert split_message(line, 60) == ["A" * 30 + " one.", "B" * 30]
    sentence = "A" * 30 + " one. two " + "B" * 30
    assert split_message(sentence, 60) == ["A" * 30 + " one.", "two " + "B" * 30]
    word = "A" * 30 + " one two " + "B" * 30
    assert split_message(word, 60) == ["A" * 30 + " one two", "B" * 30]


def test_early_paragraph_break_loses_to_later_sentence() -> None:
    """A paragraph break in the first half of a message does not leave it nearly empty."""
    text = "Hi.\n\n" + "word " * 20
    first = split_message(text, 60)[0]
    assert first.startswith("Hi.\n\nword") and len(first) > 30


@pytest.mark.parametrize(
    ("opener", "close"),
    [("```", "```"), ("```python", "```"), ("~~~", "~~~"), ("~~~ js", "~~~"), ("````md", "````")],
)
def test_cut_inside_fence_closes_and_reopens_with_language(opener: str, close: str) -> None:
    """A long block is cut at line starts; each piece closes the fence and the next reopens it."""
    code = "".join(f"value_{i} = {i}\n" for i in range(30))
    text = f"Intro.\n\n{opener}\n{code}{close}\nAfter."
    messages = split_message(text, 120)
    assert len(messages) > 2
    for message in messages:
        assert len(message) <= 120 and fences_balanced(message)
    for message in messages[1:-1]:
        assert message.startswith(opener + "\n")
    assert reconstruct(text, messages, drop_whitespace=True) is not None


def test_code_indentation_survives_a_cut() -> None:
    """Cuts inside a block drop nothing: indentation at the start of the next piece is kept."""
    code = "".join(f"    line_{i}()\n" for i in range(20))
    messages = split_message(f"```py\n{code}```", 80)
    assert all(m.startswith("```py\n    line_") for m in messages)


def test_unclosed_fence_is_closed_at_the_end() -> None:
    """Text ending inside a block gets a closing fence, so the message renders as code."""
    assert split_message("Look:\n```py\nx = 1") == ["Look:\n```py\nx = 1\n```"]


def test_quote_all_is_reopened() -> None:
    """After a `>>> ` line, every later message starts with `>>> `."""
    text = "Intro\n>>> " + "quoted words " * 12
    messages = split_message(text, 60)
    assert len(messages) > 2
    assert all(m.startswith(">>> ") for m in messages[1:])
    assert reconstruct(text, messages, drop_whitespace=True) is not None


@pytest.mark.parametrize(
    "token",
    [
        "<@123456789012345678>",
        "<@!123456789012345678>",
        "<@&123456789012345678>",
        "<#123456789012345678>",
        "</deploy app now:123456789012345678>",
        "<:blobwave:123456789012345678>",
        "<a:blobdance:123456789012345678>",
        "<t:1700000000:R>",
        "https://example.com/some/path?x=1",
        "<https://example.com/some/path>",
        "[the masked link](https://example.com/p)",
    ],
)
def test_tokens_are_kept_whole(token: str) -> None:
    """A token that would straddle the limit moves whole to the next message."""
    text = "x" * 25 + token + " tail"
    messages = split_message(text, 40)
    assert any(token in m for m in messages), messages


def test_overlong_token_is_hard_cut_on_grapheme_boundaries() -> None:
    """A URL longer than a message is cut as a last resort, never inside a cluster."""
    url = "https://example.com/" + "e\u0301" * 60
    messages = split_message(url, 40)
    assert all(len(m) <= 40 for m in messages)
    assert "".join(messages) == url
    assert all(m[0] != "́" for m in messages)


def test_zwj_emoji_and_flags_are_not_split() -> None:
    """A run of ZWJ families and flags is cut between clusters."""
    family = "👨\u200d👩\u200d👧\u200d👦"
    text = (family + "🇯🇵") * 12
    messages = split_message(text, 40)
    assert "".join(messages) == text
    for m in messages:
        assert m.startswith(family) or m.startswith("🇯🇵")


def test_masked_link_text_with_spaces_is_not_cut() -> None:
    """Spaces inside a masked link's text are not cut points."""
    text = "intro " * 4 + "[read the full documentation here](https://e.com/docs) outro"
    messages = split_message(text, 80)
    assert len(messages) == 2
    assert any("[read the full documentation here](https://e.com/docs)" in m for m in messages)


def test_whitespace_dropped_only_at_cuts() -> None:
    """Joining with the dropped whitespace rebuilds the text exactly."""
    text = "First paragraph here.\n\n   Second one is longer than the limit allows it to be.\n"
    messages = split_message(text, 40)
    spans = reconstruct(text.strip(), messages, drop_whitespace=True)
    assert spans is not None
    body = text.strip()
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert body[end:start].isspace()


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([*"ab \n\t\xa0.,`~>-#*_|", "<@123456789012345678>", "https://x.y/z "]), max_size=200
    )
)
def test_text_that_fits_is_one_stripped_message(parts: list[str]) -> None:
    """A text that fits and holds no fence or block quote comes back whole (stripped), never cut."""
    text = "".join(parts)
    if "```" in text or "~~~" in text or ">>>" in text:
        return
    assert split_message(text) == ([text.strip()] if text.strip() else [])


# -- long code blocks, tables and code spans (issue 14) ---------------------------------------------------


def test_a_cut_inside_a_block_never_leaves_a_line_that_closes_it() -> None:
    """A hard cut in a code line starting with a fence run moves off it: no piece reads it as a close."""
    messages = split_message("<@123456789012345678>```py\n```py\n```py\n", 40)
    assert messages and all(fences_balanced(m) for m in messages), messages


def test_fence_only_pieces_are_not_sent() -> None:
    """A message holding only fence lines and blank lines (an empty block) is never sent."""
    assert split_message("```python\n\n\n```") == []
    assert is_blank_piece(">>> ```py\n\n```") and not is_blank_piece("```py\nx\n```")


def test_a_rendered_table_longer_than_a_message_repeats_its_header() -> None:
    """A table block is cut between rows, never under its header, and each message repeats header and rule."""
    table = "| Name | Score |\n|---|--:|\n" + "".join(f"| player{i} | {i * 7} |\n" for i in range(40))
    rendered = render_table(table)
    assert rendered is not None
    header = rendered.split("\n")[1:3]
    messages = split_message("Scores:\n\n" + rendered + "\nThat is all.", 200)
    blocks = [m[m.index("```") : m.rindex("```") + 3] for m in messages if "```" in m]
    assert len(blocks) > 3
    rows: list[str] = []
    for block in blocks:
        lines = block.split("\n")
        assert lines[0] == "```" and lines[1:3] == header and lines[-1] == "```", block
        assert len(lines) > 4 and fences_balanced(block)
        rows += [line for line in lines[3:-1] if line]
    assert rows == rendered.rstrip("\n").split("\n")[3:-1]


def test_an_inline_code_span_longer_than_a_message_is_cut_as_a_block() -> None:
    """The span becomes a fenced block cut in message-sized pieces; the text before it is not sent alone."""
    code = "x = compute(a, b) + other(c) * 2; " * 12
    messages = split_message(f"I ran `{code.strip()}` and it worked.", 120)
    assert messages[0].startswith("I ran\n```\nx = compute")
    for message in messages:
        assert len(message) > 1 and fences_balanced(message), messages
        assert message.count("`") % 3 == 0
    inner = "".join(m.split("```\n", 1)[1].rsplit("\n```", 1)[0] for m in messages if "```" in m)
    assert inner == code.strip()
    assert messages[-1].endswith("and it worked.")


def test_text_before_a_block_goes_alone_when_the_block_line_fits_a_message() -> None:
    """The block is hard-cut with the text before it only when its first line fits no message at all."""
    line = "value = compute(alpha, beta)  # " + "z" * 20
    messages = split_message("Look.\n```py\n" + line + "\n```", 64)
    assert messages == ["Look.", "```py\n" + line + "\n```"]
    long_line = "value = " + "z" * 80
    first, *_ = split_message("Look.\n```py\n" + long_line + "\n```", 64)
    assert first.startswith("Look.\n```py\nvalue = zz") and first.endswith("\n```") and len(first) == 64
