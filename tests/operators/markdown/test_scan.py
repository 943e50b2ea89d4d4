"""The markdown scanner shared by stage 05 (flusher) and stage 07 (message splitter)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.operators.markdown.cut_policy import Fence, Level
from rxcord.operators.markdown.cuts import Cut, CutList, NullCuts
from rxcord.operators.markdown.graphemes import is_grapheme_boundary
from rxcord.operators.markdown.scan import MarkdownScanner
from tests.strategies import cut as chunked

ATOMS = [
    "\n",
    "\n\n",
    " ",
    "  ",
    ". ",
    "! ",
    "word",
    "Hi",
    "e\u0301",
    "\u0301",
    "👨\u200d👩\u200d👧",
    "🇫🇷🇩🇪",
    "日本語。",
    "`",
    "``",
    "`code here`",
    "```py\n",
    "```\n",
    "~~~\n",
    "````\n",
    "  ",
    "<@123456789012345678>",
    "</ping sub:123>",
    "<t:1700000000:R>",
    "https://example.com/a?b=c",
    "[a link](https://e.com/p)",
    "- ",
    "1. ",
    ">>> ",
    "| a | b |\n",
    "|---|---|\n",
    "||spoiler||",
    "<",
    ">",
    "[",
    "]",
    "(",
    ")",
    "|",
    "~",
]

TEXT = st.lists(st.one_of(st.sampled_from(ATOMS), st.text(alphabet="ab ,.\n", max_size=5)), max_size=50).map(
    "".join
)


def scan(text: str) -> MarkdownScanner:
    scanner = MarkdownScanner()
    scanner.feed(text)
    scanner.finish()
    return scanner


def scan_chunks(chunks: list[str]) -> MarkdownScanner:
    scanner = MarkdownScanner()
    for chunk in chunks:
        scanner.feed(chunk)
    scanner.finish()
    return scanner


def at(text: str, scanner: MarkdownScanner) -> list[tuple[str, str, Level]]:
    """Cuts as (text before, text after, level), for readable assertions."""
    return [(text[: c.end], text[c.start :], c.level) for c in scanner.cuts]


# -- chunk invariance ----------------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(TEXT, st.lists(st.integers(0, 400), max_size=12))
def test_any_chunking_gives_the_same_cuts_tables_and_fences(text: str, cuts: list[int]) -> None:
    """Cut points, tables, fences and the quote start do not depend on how the text is chunked."""
    whole = scan(text)
    parts = scan_chunks(chunked(text, cuts))
    assert parts.cuts == whole.cuts
    assert parts.tables == whole.tables
    assert parts.fences == whole.fences
    assert parts.quote_from == whole.quote_from
    assert parts.fence == whole.fence


@settings(max_examples=200, deadline=None)
@given(TEXT)
def test_the_compact_cut_list_reads_back_as_cut_values(text: str) -> None:
    """Indexing, negative indexing and iteration agree, fences included; the arrays line up."""
    cuts = scan(text + "\n```py\na\nb\nc\n```\n").cuts
    values = list(cuts)
    assert [cuts[i] for i in range(len(cuts))] == values
    assert [cuts[i - len(cuts)] for i in range(len(cuts))] == values
    assert list(cuts.ends) == [cut.end for cut in values]
    assert any(cut.fence is not None for cut in values)
    copy = CutList()
    for cut in values:
        copy.append(cut)
    assert copy == cuts and copy == values
    copy.clear()
    assert len(copy) == 0 and not copy.fences and copy != cuts


def test_a_scanner_with_null_cuts_still_reads_fences_and_tables() -> None:
    """``NullCuts`` drops the cut points and nothing else the scanner decides."""
    text = "a b\n\n| x | y |\n|---|---|\n| 1 | 2 |\n\n```py\nx\ny\n```\nc d"
    full = scan(text)
    bare = MarkdownScanner(cuts=NullCuts())
    bare.feed(text)
    bare.finish()
    assert len(full.cuts) > 0 and len(bare.cuts) == 0
    assert (bare.tables, bare.fences, bare.fence, bare.quote_from) == (
        full.tables,
        full.fences,
        full.fence,
        full.quote_from,
    )


PROSE_ATOMS = [
    *ATOMS,
    "The end.",
    "Really?!",
    "Wait…",
    'done."',
    "(ok.)",
    "*bold.*",
    "_it_",
    "~x~",
    "’quoted’",
    "\t",
    "\u00a0",
    "\u3000",
    "\r",
    "-x",
    "#tag",
    "42",
    "~~",
    "+1",
    "e\u0301t\u00e9",
]
PROSE = st.lists(
    st.one_of(st.sampled_from(PROSE_ATOMS), st.text(alphabet="ab .!?\"'*_~-#1\n\t", max_size=6)), max_size=60
).map("".join)


@settings(max_examples=400, deadline=None)
@given(PROSE, st.lists(st.integers(0, 400), max_size=8))
def test_the_quiet_path_decides_exactly_what_the_character_path_decides(text: str, cuts: list[int]) -> None:
    """Reading plain prose a word at a time changes no cut, table, fence or position."""
    quick, slow = MarkdownScanner(), MarkdownScanner(quiet_path=False)
    for chunk in chunked(text, cuts):
        quick.feed(chunk)
        slow.feed(chunk)
        # What the live flusher reads between deltas agrees too.
        assert (quick.cuts, quick.pos, quick.tail_cut(), quick.in_code) == (
            slow.cuts,
            slow.pos,
            slow.tail_cut(),
            slow.in_code,
        )
    quick.finish()
    slow.finish()
    assert quick.cuts == slow.cuts
    assert (quick.tables, quick.fences, quick.fence, quick.quote_from) == (
        slow.tables,
        slow.fences,
        slow.fence,
        slow.quote_from,
    )
    assert (quick.pos, quick.fed, quick.tail_cut(), quick.in_code) == (
        slow.pos,
        slow.fed,
        slow.tail_cut(),
        slow.in_code,
    )


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_cuts_are_ordered_and_sit_on_whitespace_or_line_starts(text: str) -> None:
    """Cuts increase; the text between end and start is whitespace; every start is a grapheme boundary."""
    scanner = scan(text)
    last = -1
    for cut in scanner.cuts:
        assert last < cut.start
        assert 0 < cut.end <= cut.start < len(text)
        assert text[cut.end : cut.start].isspace() or cut.end == cut.start
        assert is_grapheme_boundary(text, cut.start)
        if cut.fence is not None:
            assert cut.end == cut.start and text[cut.start - 1] == "\n"
        last = cut.start


# -- levels --------------------------------------------------------------------------------------------------


def test_levels_paragraph_line_sentence_word() -> None:
    """Blank lines are paragraph cuts, line breaks line cuts, `. ` sentence cuts, spaces word cuts."""
    text = "One two. Three\nfour\n\n  five"
    assert at(text, scan(text)) == [
        ("One", "two. Three\nfour\n\n  five", Level.WORD),
        ("One two.", "Three\nfour\n\n  five", Level.SENTENCE),
        ("One two. Three", "four\n\n  five", Level.LINE),
        ("One two. Three\nfour", "  five", Level.PARAGRAPH),
    ]


def test_sentence_end_may_be_followed_by_closers() -> None:
    """`."` and `!)` followed by a space still end a sentence; `e.g` does not."""
    text = 'He said "yes." Then (wow!) ok e.g.x y'
    levels = [c.level for c in scan(text).cuts]
    assert levels == [
        Level.WORD,
        Level.WORD,
        Level.SENTENCE,
        Level.WORD,
        Level.SENTENCE,
        Level.WORD,
        Level.WORD,
    ]


def test_cjk_full_stop_is_a_cut_without_whitespace() -> None:
    """A CJK full stop is a sentence cut even with no space after it (but not before a closing bracket)."""
    text = "日本語です。次の文」。終わり"
    assert at(text, scan(text)) == [
        ("日本語です。", "次の文」。終わり", Level.SENTENCE),
        ("日本語です。次の文」。", "終わり", Level.SENTENCE),
    ]


def test_whitespace_before_combining_mark_is_not_a_cut() -> None:
    """A space followed by a combining mark is one grapheme cluster: no cut there."""
    text = "a \u0301b c"
    assert at(text, scan(text)) == [("a \u0301b", "c", Level.WORD)]


# -- protected constructs ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x `inline code with spaces` y",
        "x ``code with ` tick`` y",
        "x [masked link text](https://e.com/a) y",
        "x </command sub group:123> y",
        "x <https://example.com/with> y",
        "x [t](https://e.com/a_(b)) y",
    ],
)
def test_no_cut_inside_inline_constructs(text: str) -> None:
    """Inline code, masked links and <...> constructs are never cut: only the outer spaces are cuts."""
    assert [(c.end, c.start) for c in scan(text).cuts] == [(1, 2), (len(text) - 2, len(text) - 1)]


def test_unmatched_backtick_blocks_cuts_until_a_blank_line() -> None:
    """An unmatched backtick run is held as inline code until the paragraph ends."""
    text = "a ` b c\nd\n\ne f"
    assert at(text, scan(text)) == [
        ("a", "` b c\nd\n\ne f", Level.WORD),
        ("a ` b c\nd", "e f", Level.PARAGRAPH),
        ("a ` b c\nd\n\ne", "f", Level.WORD),
    ]


def test_lone_angle_bracket_and_comparison_do_not_block() -> None:
    """`a < b` is not a construct (`<` before a space), so its spaces are cuts."""
    assert len(scan("a < b c").cuts) == 3


def test_list_item_line_has_no_word_cuts() -> None:
    """While a list item line is written, its words are not cut; the line break is."""
    text = "- first item here\n2. second item\nplain text"
    assert at(text, scan(text)) == [
        ("- first item here", "2. second item\nplain text", Level.LINE),
        ("- first item here\n2. second item", "plain text", Level.LINE),
        ("- first item here\n2. second item\nplain", "text", Level.WORD),
    ]


def test_table_is_held_whole_and_recorded() -> None:
    """Rows of a table have no cuts between or inside them; the table end is a paragraph cut."""
    text = "Intro\n| a | b |\n|---|---|\n| 1 | 2 |\nAfter it"
    scanner = scan(text)
    assert at(text, scanner) == [
        ("Intro", "| a | b |\n|---|---|\n| 1 | 2 |\nAfter it", Level.LINE),
        ("Intro\n| a | b |\n|---|---|\n| 1 | 2 |", "After it", Level.PARAGRAPH),
        ("Intro\n| a | b |\n|---|---|\n| 1 | 2 |\nAfter", "it", Level.WORD),
    ]
    (table,) = scanner.tables
    assert text[table.start : table.end] == "| a | b |\n|---|---|\n| 1 | 2 |\n"


def test_spoiler_line_is_not_a_table_row() -> None:
    """A line starting with `||` is a spoiler, not a table row."""
    scanner = scan("||secret|| text\nmore")
    assert scanner.tables == []
    assert len(scanner.cuts) == 2


def test_table_ends_at_blank_line_and_at_end_of_text() -> None:
    """A blank line or the end of the text completes a table."""
    assert [(t.start, t.end) for t in scan("|a|\n\nx").tables] == [(0, 4)]
    assert [(t.start, t.end) for t in scan("x\n|a|\n|b|").tables] == [(2, 9)]


@pytest.mark.parametrize(
    "marker", ["- x", "* x", "+ x", "> x", ">>> x", "# x", "### x", "-# x", "12. x", "3) x", "```x```", "~~~"]
)
def test_no_word_cut_before_line_start_markdown(marker: str) -> None:
    """A space cut never moves `- `, `> `, `# `, `1. ` or a fence run to the start of a message."""
    text = f"aa {marker} bb"
    starts = [text[c.start :] for c in scan(text).cuts]
    assert f"{marker} bb" not in starts
    assert "bb" in starts


@pytest.mark.parametrize(
    "text", ["aa -x bb", "aa #tag bb", "aa 3.5 bb", "aa >b bb", "aa `code` bb", "aa ~~s~~ bb"]
)
def test_word_cut_before_ordinary_text_starting_like_a_marker(text: str) -> None:
    """Text that only starts like a marker (`-x`, `#tag`, `3.5`, inline code) keeps its cut."""
    assert text[scan(text).cuts[0].start :] == text[3:]


def test_quote_line_may_open_a_fence() -> None:
    """`>>> ```py` opens a block inside the quote (Discord renders it); the reopen leaves the quote out."""
    scanner = scan("Intro\n>>> ```py\nx = 1\ny = 2\n```\nafter")
    (span,) = scanner.fences
    assert span.fence == Fence(">>> ```py", "`", 3)
    assert span.fence.reopen(2000) == "```py\n"
    assert scanner.quote_from == 6


def test_quote_all_is_recorded_outside_code() -> None:
    """A `>>> ` line sets quote_from; inside a fence it is code."""
    assert scan("a\n>>> quoted\nmore").quote_from == 2
    assert scan("```\n>>> code\n```\n").quote_from is None
    assert scan(">>>no space").quote_from is None


# -- fences --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("opener", "closer", "fence"),
    [
        ("```", "```", Fence("```", "`", 3)),
        ("```python", "```", Fence("```python", "`", 3)),
        ("~~~", "~~~", Fence("~~~", "~", 3)),
        ("~~~ js", "~~~~", Fence("~~~ js", "~", 3)),
        ("````md", "````", Fence("````md", "`", 4)),
    ],
)
def test_fences_with_and_without_language(opener: str, closer: str, fence: Fence) -> None:
    """A fence opens at its line, cuts inside are line starts carrying the fence, and it closes."""
    text = f"Before\n{opener}\na b\nc d\n\ne\n{closer}\nAfter text"
    scanner = scan(text)
    inside = [c for c in scanner.cuts if c.fence is not None]
    assert [(text[c.start :].split("\n", maxsplit=1)[0], c.fence) for c in inside] == [
        ("c d", fence),
        ("", fence),
        ("e", fence),
    ]
    assert scanner.fence is None
    (span,) = scanner.fences
    assert span.fence == fence and text[span.start :].startswith(opener)
    assert text[span.end :].startswith(closer) if span.end is not None else False
    after = [c for c in scanner.cuts if c.fence is None and c.start > text.index(closer, span.content_start)]
    assert after[0].level == Level.PARAGRAPH and text[after[0].start :] == "After text"


def test_shorter_or_other_marker_does_not_close() -> None:
    """A closing line needs the same character, at least as many, and nothing else."""
    text = "````\n```\n~~~~\n```` x\n````\nout"
    scanner = scan(text)
    assert scanner.fence is None
    assert scanner.fences[0].end == text.index("````\nout")


def test_backtick_in_info_string_is_not_a_fence() -> None:
    """```` ```a`b ```` is not an opening line (backticks in the info string): it is prose."""
    scanner = scan("```a`b c\nd e")
    assert scanner.fences == [] and scanner.fence is None


def test_unclosed_fence_at_end_and_opener_at_end() -> None:
    """A fence still open at the end stays in `fence`; an opening line at the very end opens one."""
    assert scan("x\n```py\ncode").fence == Fence("```py", "`", 3)
    assert scan("x\n```py").fence == Fence("```py", "`", 3)


def test_think_tags_and_html_in_code_are_code() -> None:
    """in_code is true inside fences, inline code and a pending fence line, false in prose."""
    scanner = MarkdownScanner()
    scanner.feed("text ")
    assert not scanner.in_code
    scanner.feed("`")
    assert scanner.in_code
    scanner.feed("x`")
    assert not scanner.in_code
    scanner.feed("\n``")
    assert scanner.in_code
    scanner.feed("`py\n")
    assert scanner.in_code
    scanner.feed("<details>\n```\n")
    assert not scanner.in_code


# -- tail cut ------------------------------------------------------------------------------------------------


def test_tail_cut_at_trailing_whitespace() -> None:
    """A whitespace run at the end is a cut of its kind; none inside a table, list item or fence."""

    def tail(text: str) -> Cut | None:
        scanner = MarkdownScanner()
        scanner.feed(text)
        return scanner.tail_cut()

    assert tail("Done. ") == Cut(5, 6, Level.SENTENCE)
    assert tail("a b\n\n") == Cut(3, 5, Level.PARAGRAPH)
    assert tail("word") is None
    assert tail("- item ") is None
    assert tail("| a |\n") is None
    assert tail("```\ncode\n") is None
    assert tail("x `a ") is None
