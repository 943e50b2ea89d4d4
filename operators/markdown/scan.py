"""Incremental scanner of the markdown a Discord message must not be cut inside (stages 05 and 07).

Theory
------
Discord renders a markdown subset, and the end of a message acts like the end
of the text: a fenced block cut in two shows its second half as prose, a
masked link cut in two is two broken halves, a mention cut in two is plain
digits. The live buffer manager (stage 05) and the message splitter (stage 07)
both need to know, for every place a cut could go, whether it is safe and how
good it is. This module answers that once, for both.

``MarkdownScanner`` reads text left to right, in pieces of any size, and
records *cut points* (``Cut``). Every decision waits until enough text has
arrived to be final (the first characters of a line decide its kind, a
whitespace run is judged at the character that ends it), so any chunking of
the same text yields the same cut points. Work per character is constant: no
rescan of earlier text.

Cut points, best first (``Level``):

* ``PARAGRAPH``: a whitespace run holding a blank line, or the end of a block
  (the line after a closing fence, the line after the last row of a table);
* ``LINE``: a whitespace run holding one line break;
* ``SENTENCE``: whitespace after ``.``, ``!``, ``?`` or ``…`` (closing quotes,
  brackets and emphasis markers may follow), or the place right after a CJK
  full stop (``。！？``), which needs no whitespace;
* ``WORD``: any other whitespace.

A cut point spans a whitespace run: ``end`` is where the text before it ends,
``start`` where the text after it begins. For runs with line breaks ``start``
is after the last line break, so indentation stays with its line. Inside a
fenced block the only cut points are line starts (``LINE``, carrying the
``Fence`` to close before the cut and reopen after it); never right after the
opening line nor right before the closing one (both would leave an empty block).

No cut point is recorded

* inside inline code (a backtick run up to the next run of the same length;
  an unmatched run lasts until the next blank line),
* inside ``<...>`` (mentions ``<@id>`` ``<@!id>`` ``<@&id>`` ``<#id>``, slash
  commands ``</name sub:id>``, custom emoji, timestamps ``<t:1:R>``,
  ``<https://...>``): from a ``<`` followed by a non-space up to ``>``, the end
  of the line, or 256 characters,
* inside a masked link ``[text](url)`` (up to 1024 characters, one line),
* inside a table (consecutive lines starting with ``|``, but not ``||``: a
  spoiler): a table is held whole,
* between the words of a list item line (``- ``, ``* ``, ``+ ``, ``1. ``,
  ``1) ``) until the line ends,
* before a combining mark, zero-width joiner or variation selector (such a
  cut would split a grapheme cluster),
* on a space before text that would become markdown at the start of the next
  message (``- ``, ``* ``, ``+ ``, ``> ``, ``>>> ``, ``# ``, ``-# ``, ``1. ``,
  ``1) ``, a run of three backticks or tildes): such a cut is held until the
  text after it shows what it is.

Bare URLs, ``@everyone`` and custom emoji hold no whitespace, so no cut point
is ever inside one. Line kinds follow CommonMark where Discord agrees: a
fence is a line starting (after any indentation) with three or more backticks
(whose info string holds no backtick) or tildes, closed by a line of at least
as many of the same character and nothing else; a ``>>> `` line may open one,
as Discord renders a block inside a quote. Three backticks in the
middle of a line are treated as an inline code run, which is also
conservative for Discord (which renders them as a block).

The vocabulary it records lives in ``rxcord.operators.markdown.cuts`` (``Cut``,
``CutList``, ``Level``, ``Fence``, ``FenceSpan``); grapheme boundaries and
display width in ``rxcord.operators.markdown.graphemes``; never-cut tokens in
``rxcord.operators.markdown.tokens``; tables in ``rxcord.operators.markdown.tables``; which
cut is taken and how it is repaired in ``rxcord.operators.markdown.cut_policy``.
"""

from __future__ import annotations

__all__ = ("SCAN_SLICE", "MarkdownScanner")

import re
from typing import Final

import attrs

from rxcord.operators.markdown.cuts import Cut, CutList, Fence, FenceSpan, Level
from rxcord.operators.markdown.graphemes import is_extend
from rxcord.operators.markdown.tables import TableSpan

SCAN_SLICE: Final = 2048
"""The most text a consumer hands the scanner at once (the flusher, the splitter): a huge delta or
segment is scanned in slices, so no single step holds the loop for long (the cut points are the same)."""

# ---------------------------------------------------------------------------------------------------------
# Characters

_TERMINATORS: Final = frozenset(".!?…")
_CJK_TERMINATORS: Final = frozenset("。！？")
_CLOSERS: Final = frozenset("\"')]*_~”’»」』")
_PLAIN_RUN: Final = re.compile(r"[^\s`<>\[\]().!?…。！？\"')*_~”’»」』]+")
"""Characters that change no scanner state beyond ``sentence = False``."""
_QUIET_SPAN: Final = re.compile(r"[^\n`<>\[\]()。！？]+")
"""Prose the quiet path reads in one go: no line break, code, angle, link or CJK full stop."""
_SPACE_RUN_OR_END: Final = re.compile(r"[^\S\n]+|$")
_CLOSER_CHARS: Final = "".join(_CLOSERS)
_WORD: Final = int(Level.WORD)
_SENTENCE: Final = int(Level.SENTENCE)
_ANGLE_MAX: Final = 256
_LINK_MAX: Final = 1024
_OL_RE: Final = re.compile(r"\d{1,9}[.)][ \t]")
_MARKER_START: Final = frozenset("-*+>#0123456789`~")
"""First characters of line-start markdown (bullets, quotes, headings, numbered items, fences)."""
_LOOK_MAX: Final = 12
_OL_PREFIX_RE: Final = re.compile(r"\d{1,9}[.)]?")
_HEAD_SHORT: Final = 16
"""A line start longer than this is classified from its last characters (``_classify_long``)."""

# Line kinds.
_HEAD: Final = 0
"""Not decided yet: the start of the line is buffered."""
_PLAIN: Final = 1
_LIST: Final = 2
_ROW: Final = 3
_QUOTE: Final = 4
_CODE: Final = 5
_OPEN_CAND: Final = 6
"""Starts with three fence characters: decided at the line break (the info string matters)."""
_CLOSE_CAND: Final = 7
"""Inside a block, starts with enough fence characters: a closing line if nothing else follows."""
_BLANK: Final = 8


def _ends_sentence(text: str, j: int, end: int, sentence: bool) -> bool:
    """The sentence flag after the word ``text[j:end]``: ``.!?…`` then closers ends a sentence."""
    last = text[end - 1]
    if last in _TERMINATORS:
        return True
    if last not in _CLOSERS:
        return False
    word = text[j:end].rstrip(_CLOSER_CHARS)
    return word[-1] in _TERMINATORS if word else sentence


# ---------------------------------------------------------------------------------------------------------
# The scanner


def _run_len(text: str, char: str) -> int:
    return len(text) - len(text.lstrip(char))


def _block_line_kind(s: str, fence: Fence, *, complete: bool) -> int:
    """The kind of a line inside a code block from its start *s*, or -1 while undecided."""
    if not s:
        return _CODE if complete else -1
    if s[0] != fence.char:
        return _CODE
    run = _run_len(s, fence.char)
    if run >= fence.length:
        return _CLOSE_CAND
    return -1 if run == len(s) and not complete else _CODE


def _quote_line_kind(s: str, *, complete: bool) -> int:
    """The kind of a line outside a block starting with ``>``, or -1 while undecided."""
    if len(s) > 3 and s.startswith(">>>"):
        if s[3] not in " \t":
            return _PLAIN
        # Discord renders a block inside the quote: `>>> ```py` opens a fence.
        return _after_quote_kind(s[4:].lstrip(" \t"), complete)
    return -1 if not complete and ">>>".startswith(s) else _PLAIN


def _after_quote_kind(rest: str, complete: bool) -> int:
    """The kind of a ``>>> `` line from what follows its whitespace: a fence opens a block in it."""
    if not rest:
        return _QUOTE if complete else -1
    if rest[0] in "`~":
        run = _run_len(rest, rest[0])
        if run >= 3:
            return _OPEN_CAND
        if run == len(rest) and not complete:
            return -1
    return _QUOTE


def _line_marker(look: str) -> int:
    """Whether *look* starts with line-start markdown: 1 yes, 0 no, -1 not known yet."""
    c = look[0]
    n = len(look)
    if c in "`~":
        run = _run_len(look, c)
        return 1 if run >= 3 else -1 if run == n else 0
    if c in "-*+":
        if n < 2:
            return -1
        if look[1] in " \t":
            return 1
        if c == "-" and look[1] == "#":
            return -1 if n < 3 else int(look[2] in " \t")
        return 0
    if c == ">":
        if look.startswith(">>>"):
            return -1 if n < 4 else int(look[3] in " \t")
        if n < 2 or look == ">>":
            return -1
        return int(look[1] in " \t")
    if c == "#":
        run = _run_len(look, "#")
        if run > 3:
            return 0
        return -1 if run == n else int(look[run] in " \t")
    if _OL_RE.match(look):
        return 1
    return -1 if _OL_PREFIX_RE.fullmatch(look) else 0


@attrs.define
class MarkdownScanner:
    """Reads text incrementally and records the places where it may be cut.

    Feed text with ``feed`` (any chunking), call ``finish`` once at the end.
    Consumers read and may clear ``cuts`` and ``tables`` as they go (or
    replace ``tables`` by the ones they keep); the scanner only appends to
    them. Positions count characters of the text fed.
    """

    cuts: CutList = attrs.field(factory=CutList)
    """Cut points, in increasing position order."""
    # Most texts have no table and no fenced block: their lists exist once one does
    # (``tables`` and ``fences`` read them).
    _tables: list[TableSpan] | None = attrs.field(default=None, init=False)
    _fences: list[FenceSpan] | None = attrs.field(default=None, init=False)
    fence: Fence | None = None
    """The fenced block open at the end of the text fed (decided at each opening line's line break)."""
    quote_from: int | None = None
    """Start of the first ``>>> `` line outside code: everything after it is quoted."""
    table_start: int | None = None
    """Start of the table being read, if any."""
    pos: int = 0
    """Characters processed (buffered line starts and fence lines are not yet counted)."""
    fed: int = 0
    """Characters fed."""

    _kind: int = _HEAD
    _line_start: int = 0
    # The buffered start of the line: its leading whitespace, then its characters (a long one
    # grows without copying); each ``None`` while empty, so a scanner mid-line holds no list.
    _head_ws: list[str] | None = None
    _head: list[str] | None = None
    _line: list[str] | None = None
    """The pieces of a fence line being read (``_OPEN_CAND``, ``_CLOSE_CAND``), else ``None``."""
    _content_start: int = 0
    _seen: bool = False
    # The whitespace run being read (``_ws_start`` < 0: none).
    _ws_start: int = -1
    _ws_nl: int = 0
    _ws_last_nl: int = 0
    _ws_ok: bool = False
    _ws_sentence: bool = False
    _ws_block: bool = False
    # A word cut waiting for the text after it: a cut before `- `, `# `, `> `, `1. ` or a
    # fence marker in the middle of a line would turn it into markdown in the next message.
    _deferred: Cut | None = None
    _look: str = ""
    # Inline state.
    _code: int = 0
    _ticks: int = 0
    _angle: int = -1
    _angle_pending: bool = False
    _bracket: int = 0
    _paren: int = 0
    _after_bracket: bool = False
    _link: int = 0
    _sentence: bool = False
    _cjk: bool = False
    quiet_path: bool = attrs.field(default=True, kw_only=True)
    """Read plain prose a word at a time (``False``: a character at a time; the same result, slower)."""
    fence_spans: bool = attrs.field(default=True, kw_only=True)
    """Record ``fences`` (``False``: a reader of the open ``fence`` only, such as the live flusher,
    does not keep a span per block for as long as its stream lasts)."""

    # -- public --------------------------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        """Scan *text*, the continuation of everything fed before."""
        self.fed += len(text)
        i, n = 0, len(text)
        while i < n:
            kind = self._kind
            if kind == _HEAD:
                i = self._feed_head(text, i, n)
            elif kind == _CODE:
                j = text.find("\n", i)
                if j < 0:
                    self.pos += n - i
                    return
                self.pos += j - i
                self._next_line()
                i = j + 1
            elif kind in (_OPEN_CAND, _CLOSE_CAND):
                line = self._line
                assert line is not None  # (set by ``_start_line`` with the kind)
                j = text.find("\n", i)
                if j < 0:
                    line.append(text[i:])
                    return
                line.append(text[i:j])
                i = j + 1
                self._end_fence_line(eof=False)
            else:
                i = self._feed_inline(text, i, n)

    def finish(self) -> None:
        """The text is complete: settle what was waiting for more (the last line, a table at the end)."""
        if self._kind == _HEAD and (self._head or self._head_ws):
            kind = self._classify(complete=True)
            if kind == _BLANK:
                self.pos += len(self._head_ws or ())
                self._head_ws = None
            else:
                self._start_line(kind)
        if self._kind in (_OPEN_CAND, _CLOSE_CAND):
            self._end_fence_line(eof=True)
        if self._ticks:
            self._settle_ticks()
        if self._deferred is not None:
            if _line_marker(self._look) != 1:
                self.cuts.append(self._deferred)
            self._deferred = None
        if self.table_start is not None:
            self._end_table(self.pos)

    @property
    def tables(self) -> list[TableSpan]:
        """Tables completed so far (a consumer may clear them, or replace them by the ones it keeps)."""
        tables = self._tables
        return [] if tables is None else tables

    @tables.setter
    def tables(self, kept: list[TableSpan]) -> None:
        self._tables = kept or None

    @property
    def fences(self) -> list[FenceSpan]:
        """Fenced blocks seen so far (the last one may still be open)."""
        fences = self._fences
        return [] if fences is None else fences

    @property
    def in_code(self) -> bool:
        """Whether a character fed next (not a backtick) would be inside code (fenced or inline)."""
        if self.fence is not None or self._kind == _OPEN_CAND:
            return True
        if self._kind == _HEAD and self._head and len(self._head) <= 3:
            # (Outside a block, a run of three fence characters decides the line at once.)
            head = "".join(self._head)
            if head[0] in "`~" and _run_len(head, head[0]) == len(head):
                if len(head) >= 3:
                    return True
                if head[0] == "`":
                    return self._code_after(len(head)) > 0
        return self._code_after(self._ticks) > 0

    @property
    def mid_line(self) -> bool:
        """Whether the line being read is prose whose kind is decided (not its start, not code)."""
        return self._kind in (_PLAIN, _LIST, _ROW, _QUOTE)

    @property
    def quiet(self) -> bool:
        """Whether nothing is pending that the next characters could settle differently.

        No code, angle bracket, link, held cut or CJK stop is open, and a whitespace run
        being read holds no line break: text without a line break read now can only
        record word and sentence cut points (what ``_feed_quiet`` does).
        """
        return (
            self._seen
            and self._deferred is None
            and not (
                self._ticks
                or self._code
                or self._angle_pending
                or self._bracket
                or self._paren
                or self._after_bracket
                or self._cjk
            )
            and self._angle < 0
            and (self._ws_start < 0 or self._ws_nl == 0)
        )

    def tail_cut(self) -> Cut | None:
        """The cut at the very end of the text fed, when it ends in a whitespace run where a cut is safe."""
        if self.fence is not None or self._kind in (_OPEN_CAND, _CLOSE_CAND) or self._head:
            return None
        if self._ws_start < 0:
            return None
        if self._ws_nl == 0:
            ok = self._ws_ok
            level = Level.SENTENCE if self._ws_sentence else Level.WORD
        else:
            # A line break inside a table may be followed by another row.
            ok = self.table_start is None and not self._code
            level = Level.PARAGRAPH if self._ws_nl >= 2 or self._ws_block else Level.LINE
        return Cut(self._ws_start, self.fed, level) if ok else None

    # -- lines ---------------------------------------------------------------------------------------------

    def _feed_head(self, text: str, i: int, n: int) -> int:
        while i < n:
            c = text[i]
            if c == "\n":
                kind = self._classify(complete=True)
                if kind == _BLANK:
                    self._blank_line()
                    return i + 1
                self._start_line(kind)
                return i
            head = self._head
            if head is None and c.isspace():
                ws = self._head_ws
                if ws is None:
                    self._head_ws = [c]
                else:
                    ws.append(c)
            else:
                if head is None:
                    self._head = [c]
                else:
                    head.append(c)
                kind = self._classify(complete=False)
                if kind >= 0:
                    self._start_line(kind)
                    return i + 1
            i += 1
        return i

    def _classify(self, *, complete: bool) -> int:
        """The kind of the current line from its start, or -1 while undecided."""
        head = self._head
        if head is None:
            s = ""
        elif len(head) > _HEAD_SHORT:
            return self._classify_long(head, complete=complete)
        else:
            s = "".join(head)
        if self.fence is not None:
            return _block_line_kind(s, self.fence, complete=complete)
        if not s:
            return _BLANK if complete else -1
        c = s[0]
        if c in "`~":
            run = _run_len(s, c)
            if run >= 3:
                return _OPEN_CAND
            return -1 if run == len(s) and not complete else _PLAIN
        if c == "|":
            if len(s) == 1:
                return _ROW if complete else -1
            return _PLAIN if s[1] == "|" else _ROW
        if c in "-*+":
            if len(s) == 1:
                return _PLAIN if complete else -1
            return _LIST if s[1] in " \t" else _PLAIN
        if "0" <= c <= "9":
            if _OL_RE.match(s):
                return _LIST
            return -1 if not complete and _OL_PREFIX_RE.fullmatch(s) else _PLAIN
        if c == ">":
            return _quote_line_kind(s, complete=complete)
        return _PLAIN

    def _classify_long(self, head: list[str], *, complete: bool) -> int:
        """``_classify`` for a head longer than ``_HEAD_SHORT``, in constant time.

        Only two heads stay undecided that long, and the last character decides
        each: inside a block, a run of fence characters shorter than the fence;
        outside, ``>>>`` and whitespace (then at most two fence characters).
        Joining and re-reading the whole head at every character would make a
        long one quadratic.
        """
        fence = self.fence
        if fence is not None:
            if head[-1] != fence.char:
                return _CODE
            if len(head) >= fence.length:
                return _CLOSE_CAND
            return _CODE if complete else -1
        # What follows the whitespace after `>>>`: before this character it was at most two
        # fence characters, so it lies in the last four characters.
        return _after_quote_kind("".join(head[-4:]).lstrip(" \t"), complete)

    def _start_line(self, kind: int) -> None:
        start = self._line_start
        ws = "" if self._head_ws is None else "".join(self._head_ws)
        head = "" if self._head is None else "".join(self._head)
        self._head_ws = self._head = None
        if kind == _CODE:
            if start > self._content_start:
                self.cuts.add(start, start, Level.LINE, self.fence)
            self._kind = _CODE
            self.pos = start + len(ws) + len(head)
            return
        if kind == _CLOSE_CAND:
            self._kind = kind
            self._line = [ws, head]
            return
        in_table = self.table_start is not None
        if kind == _ROW:
            if not in_table:
                self.table_start = start
        elif in_table:
            self._end_table(start)
        self.pos = start + len(ws)
        if kind == _OPEN_CAND:
            if self._ws_start >= 0:
                self._confirm(head[0])
            if head[0] == ">" and self.quote_from is None:
                self.quote_from = start
            self._seen = True
            self._kind = kind
            self._line = [ws, head]
            return
        if kind == _QUOTE and self.quote_from is None:
            self.quote_from = start
        self._kind = kind
        self._feed_inline(head, 0, len(head))

    def _blank_line(self) -> None:
        """A line holding only whitespace, outside a fenced block: a paragraph break."""
        self.pos = self._line_start + len(self._head_ws or ())
        self._head_ws = None
        self._code = 0
        if self.table_start is not None:
            self._end_table(self._line_start)
        self._newline()

    def _end_table(self, end: int) -> None:
        assert self.table_start is not None
        span = TableSpan(self.table_start, end)
        if self._tables is None:
            self._tables = [span]
        else:
            self._tables.append(span)
        self.table_start = None
        self._ws_block = True

    def _end_fence_line(self, *, eof: bool) -> None:
        line = "".join(self._line or ())
        self._line = None
        start = self._line_start
        text = body = line.lstrip()
        if self._kind == _OPEN_CAND:
            quoted = body.startswith(">")
            if quoted:
                body = body[3:].lstrip(" \t")
            char = body[0]
            run = _run_len(body, char)
            if char == "`" and "`" in body[run:]:
                # Not a fence: backticks in the info string. Read the line as prose.
                self._kind = _QUOTE if quoted else _PLAIN
                self._feed_inline(text, 0, len(text))
                if not eof:
                    self._newline()
                return
            fence = Fence(line.rstrip(), char, run)
            self.fence = fence
            self.pos = start + len(line) + (0 if eof else 1)
            self._content_start = self.pos
            if self.fence_spans:
                span = FenceSpan(start, self.pos, None, fence)
                if self._fences is None:
                    self._fences = [span]
                else:
                    self._fences.append(span)
            self._code = self._ticks = 0
            self._ws_start = -1
            self._kind = _HEAD
            self._line_start = self.pos
            return
        open_fence = self.fence
        assert open_fence is not None
        run = _run_len(body, open_fence.char)
        self.pos = start + len(line)
        if run >= open_fence.length and not body[run:].strip():
            fences = self._fences
            if fences is not None:  # (``fence_spans``: the block being closed is the last one)
                fences[-1] = attrs.evolve(fences[-1], end=start)
            self.fence = None
            self._ws_start = start + len(line.rstrip())
            self._ws_nl = 0
            self._ws_block = True
            self._ws_ok = False
            self._ws_sentence = False
            if not eof:
                self._newline()
            return
        if start > self._content_start:
            self.cuts.add(start, start, Level.LINE, open_fence)
        self._kind = _CODE
        if not eof:
            self._next_line()

    def _next_line(self) -> None:
        """A line break inside a fenced block."""
        self.pos += 1
        self._kind = _HEAD
        self._line_start = self.pos

    def _newline(self) -> None:
        """A line break outside a fenced block (``pos`` is at it)."""
        p = self.pos
        if self._ticks:
            self._settle_ticks()
        if self._deferred is not None:
            self._look_more("\n")
        if self._ws_start < 0 and self._seen:
            self._start_run(p)
        if self._ws_start >= 0:
            self._ws_nl += 1
            self._ws_last_nl = p + 1
        self._angle = -1
        self._angle_pending = self._after_bracket = False
        self._bracket = self._paren = 0
        self._cjk = False
        self.pos = p + 1
        self._kind = _HEAD
        self._line_start = p + 1

    # -- inline --------------------------------------------------------------------------------------------

    def _feed_inline(self, text: str, i: int, n: int) -> int:
        """Scan a prose line from ``text[i]``; return after its line break or at the end of *text*."""
        # Where the quiet span that holds ``i`` ends: every position inside a span of
        # ``_QUIET_SPAN`` characters has the same end, so it is matched once per span, not
        # again after every word the quiet path stops at (``0 1 2 …`` would be quadratic).
        quiet_end = -1
        while i < n:
            if self.quiet_path and self.quiet:
                if i >= quiet_end:
                    span = _QUIET_SPAN.match(text, i, n)
                    quiet_end = i if span is None else span.end()
                if quiet_end > i:
                    j = self._feed_quiet(text, i, quiet_end)
                    if j > i:
                        i = j
                        continue
            c = text[i]
            if c == "\n":
                self._newline()
                return i + 1
            match = _PLAIN_RUN.match(text, i)
            if match is not None:
                j = match.end()
                self._char(c)
                rest = j - i - 1
                if rest and self._deferred is not None:
                    self._look_more(text[i + 1 : min(j, i + 1 + _LOOK_MAX)])
                if rest:
                    self._sentence = self._cjk = False
                    if self._angle >= 0:
                        self._angle += rest
                        if self._angle > _ANGLE_MAX:
                            self._angle = -1
                    if self._bracket or self._paren:
                        self._grow_link(rest)
                self.pos += j - i
                i = j
                continue
            if c.isspace():
                self._space(c)
            else:
                self._char(c)
            self.pos += 1
            i += 1
        return i

    def _feed_quiet(self, text: str, i: int, k: int) -> int:
        """Scan ``text[i:k]`` (a ``_QUIET_SPAN``) in the quiet state, a word at a time.

        What ``_char`` and ``_space`` do there, without a call per character: a
        whitespace run opens a cut, the next word records it (a sentence cut
        after ``.!?…`` and closers, else a word cut; none before a combining
        mark). Stops before a word that may start line-start markdown after a
        space (``_add_word_cut`` holds such a cut): returns where it stopped.
        """
        base = self.pos - i
        add = self.cuts.add
        ok = self._kind not in (_LIST, _ROW)
        ws_start, ws_ok, ws_sentence = self._ws_start, self._ws_ok, self._ws_sentence
        sentence = self._sentence
        started = False
        j = i
        # Each whitespace run, then an empty match at the end of the span.
        for run in _SPACE_RUN_OR_END.finditer(text, i, k):
            start, end = run.span()
            if start > j:
                if ws_start >= 0:
                    c = text[j]
                    if c in _MARKER_START:
                        break
                    if ws_ok and not (c >= "\u0300" and is_extend(c)):
                        add(ws_start, base + j, _SENTENCE if ws_sentence else _WORD)
                    ws_start = -1
                sentence = _ends_sentence(text, j, start, sentence)
                j = start
            if start == end:
                break
            if ws_start < 0:
                ws_start, ws_ok, ws_sentence, started = base + start, ok, sentence, True
            j = end
        if started:
            self._ws_nl, self._ws_block = 0, False
        self._ws_start, self._ws_ok, self._ws_sentence = ws_start, ws_ok, ws_sentence
        self._sentence = sentence
        self.pos = base + j
        return j

    def _can_cut(self) -> bool:
        return not (
            self._code
            or self._ticks
            or self._angle >= 0
            or self._angle_pending
            or self._bracket
            or self._paren
            or self._kind in (_LIST, _ROW)
        )

    def _start_run(self, p: int) -> None:
        self._ws_start = p
        self._ws_nl = 0
        self._ws_ok = self._can_cut()
        self._ws_sentence = self._sentence
        self._ws_block = False

    def _space(self, c: str) -> None:
        if self._ticks:
            self._settle_ticks()
        if self._deferred is not None:
            self._look_more(c)
        self._angle_pending = self._after_bracket = False
        if self._angle >= 0:
            self._angle += 1
            if self._angle > _ANGLE_MAX:
                self._angle = -1
        if self._bracket or self._paren:
            self._grow_link(1)
        if self._ws_start < 0 and self._seen:
            self._start_run(self.pos)
        self._cjk = False

    def _confirm(self, c: str) -> None:
        """The whitespace run ends at ``self.pos`` with the character *c*: record its cut if safe."""
        a = self._ws_start
        self._ws_start = -1
        if self._ws_nl == 0:
            if self._ws_ok and not is_extend(c):
                level = Level.SENTENCE if self._ws_sentence else Level.WORD
                self._add_word_cut(a, self.pos, level, c)
            return
        if self.table_start is not None and self.table_start < self._line_start:
            return
        if self._code:
            return
        level = Level.PARAGRAPH if self._ws_nl >= 2 or self._ws_block else Level.LINE
        self.cuts.add(a, self._ws_last_nl, level)

    def _add_word_cut(self, end: int, start: int, level: Level, c: str) -> None:
        """Record a cut inside a line, or hold it while *c* may start line-start markdown."""
        if c in _MARKER_START:
            self._deferred = Cut(end, start, level)
            self._look = c
        else:
            self.cuts.add(end, start, level)

    def _look_more(self, text: str) -> None:
        """Text after a held cut: record the cut once it is known not to precede a line marker."""
        assert self._deferred is not None
        self._look += text
        verdict = _line_marker(self._look)
        if verdict < 0 and len(self._look) < _LOOK_MAX:
            return
        if verdict != 1:
            self.cuts.append(self._deferred)
        self._deferred = None

    def _char(self, c: str) -> None:
        """One non-whitespace character at ``self.pos``."""
        if self._deferred is not None:
            self._look_more(c)
        if self._ws_start >= 0:
            self._confirm(c)
        elif self._cjk and c not in _CLOSERS and not is_extend(c) and self._can_cut():
            self._add_word_cut(self.pos, self.pos, Level.SENTENCE, c)
        self._seen = True
        if c == "`":
            self._ticks += 1
            self._sentence = self._cjk = False
            return
        if self._ticks:
            self._settle_ticks()
        self._cjk = c in _CJK_TERMINATORS
        if c in _TERMINATORS:
            self._sentence = True
        elif c not in _CLOSERS:
            self._sentence = False
        if self._code:
            return
        self._track_angle(c)
        self._track_link(c)

    def _track_angle(self, c: str) -> None:
        """Outside code: the ``<...>`` span (a mention, an autolink) *c* opens, grows or closes."""
        if self._angle_pending:
            self._angle_pending = False
            if c not in "<>":
                self._angle = 0
        if self._angle >= 0:
            if c == ">":
                self._angle = -1
            else:
                self._angle += 1
                if self._angle > _ANGLE_MAX:
                    self._angle = -1
        elif c == "<":
            self._angle_pending = True

    def _track_link(self, c: str) -> None:
        """Outside code: the ``[text](url)`` link *c* opens, grows or closes."""
        if self._after_bracket:
            self._after_bracket = False
            if c == "(":
                self._paren = 1
                self._grow_link(1)
                return
        if self._paren:
            if c == "(":
                self._paren += 1
            elif c == ")":
                self._paren -= 1
            self._grow_link(1)
        elif c == "[":
            if not self._bracket:
                self._link = 0
            self._bracket += 1
            self._grow_link(1)
        elif self._bracket:
            if c == "]":
                self._bracket -= 1
                self._after_bracket = self._bracket == 0
            self._grow_link(1)

    def _grow_link(self, count: int) -> None:
        self._link += count
        if self._link > _LINK_MAX:
            self._bracket = self._paren = 0
            self._after_bracket = False

    def _code_after(self, ticks: int) -> int:
        """Inline code state once a pending backtick run of *ticks* ends."""
        if not ticks:
            return self._code
        if not self._code:
            return ticks
        return 0 if self._code == ticks else self._code

    def _settle_ticks(self) -> None:
        self._code = self._code_after(self._ticks)
        self._ticks = 0
