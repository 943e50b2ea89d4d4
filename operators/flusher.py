"""The flusher: release routed text as segments at safe boundaries (stage 05), pure.

The state machine alone (no Rx, no clock): the ``flush`` operator (``rxcord.operators.flush``)
threads one ``Flusher`` per subscription through a stream.

Theory
------
The orchestrator (stage 04) routes visible text here one delta at a time. A
delta is not a unit a reader would recognise: it may end in the middle of a
word, a mention, a code block or a ``<think>`` tag. ``Flusher`` keeps the
text until a piece of it is safe to send, and hands it on as ``Segment``s.

Routing. Outside code, in-band reasoning blocks (``OPEN_RE`` ... ``CLOSE_RE``
from ``rxcord.operators.reasoning.tags``) become ``THOUGHT`` segments and
``<details>`` blocks (nested ones included) become ``DETAILS`` segments, each
holding the text between its tags; both are sent when their closing tag
arrives (or at the final flush, unclosed) and never reach the visible text,
which simply continues around them. A stray closing tag is dropped (the
stray-closer rule of ``rxcord.operators.reasoning.tags``: past stage 03 a stray
closer is only removed). A tag split across deltas (``"<thi"`` + ``"nk>"``) is
held back until it is decided; a tag is at most 64 characters long
(``MAX_TAG_LEN``). Tags inside fenced or inline code are text. Blocks that are
whitespace only are not sent.

Cutting. The visible text goes through ``MarkdownScanner``, which records the
places where a cut is safe (see ``rxcord.operators.markdown.scan``: never inside a
fenced block, inline code, a table, a list item line being written, a mention,
custom emoji, ``<...>`` construct or masked link, nor between whitespace and a
combining mark, nor on a space that would put ``- ``, ``> ``, ``# ``, ``1. `` or a
fence run at the start of a message). Whitespace at a cut stays at the end of the piece before it,
so in live mode the TEXT segments join back to the visible text exactly,
apart from the additions described below. Each piece of text is scanned once;
``push`` costs O(len(delta)) amortized, whatever the number of deltas.

Live delivery (``DeliveryMode.LIVE``) releases:

* every paragraph (a blank line, or the end of a fenced block or table) as
  its own segment, once the first character after it shows the break is
  complete, unless the segment would be shorter than ``live_min_chars``
  (it then waits for the next break);
* on ``idle()`` (no new text for ``live_idle_flush`` seconds), everything up
  to the best safe cut: the latest paragraph break, else line break, else
  sentence end, else space, including a whitespace run at the very end;
* when the text held reaches ``message_limit`` without a paragraph break, a
  message-sized piece, cut by the cut policy shared with stage 07
  (``rxcord.operators.markdown.cut_policy``): the best place in its second half (the
  kind order above) or else the latest place that fits. Inside a fenced block
  the piece is cut at a line start, closed with ``Fence.close`` (a line break
  and the marker) and the next piece starts with ``Fence.reopen`` (the opening
  line, language kept); never after blank code lines alone (that piece would
  be fences only). With no safe place at all (one long line of code, a huge
  URL) nothing is cut: the text waits for the next safe place and stage 07
  splits the longer segment. Pieces of one block sent as one message are
  joined back by ``cut_policy.join``.

After a ``>>> `` line every later segment starts with ``>>> `` (it quotes to
the end of a message, and each segment is a new message), unless it already
starts with ``>>>``.

Aggregated delivery releases nothing before ``flush()``, which returns one
batch: the reasoning and details segments, then all visible text as one TEXT
segment.

Tables (consecutive lines starting with ``|``) are held whole and, once
complete, replaced in the released text by ``render_table``'s monospace code
block with aligned columns (Discord does not render markdown tables); a run
of ``|`` lines that is not a table (no delimiter row) is released as written.

Caps. Released TEXT segments are counted; the one that reaches
``config.max_flushes`` is released, then the flusher releases nothing more
(``capped`` turns true) and the ``flush`` operator asks ``stops`` for a
``FLUSH_LIMIT`` stop. The final ``flush(final=True)`` marks the last segment
it returns ``final=True`` (it returns nothing when nothing was pending).
"""

from __future__ import annotations

__all__ = ("YIELD_AT", "Flusher")

import re
from typing import Final

import attrs
from loguru import logger

from rxcord.core.config import StreamConfig, TableStyle
from rxcord.core.state import Segment
from rxcord.core.text_buffer import TextBuffer
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.markdown.cut_policy import QUOTE, Fence, Level, choose, half_full, opening, rank
from rxcord.operators.markdown.cuts import Cut, CutList, NullCuts
from rxcord.operators.markdown.scan import SCAN_SLICE, MarkdownScanner
from rxcord.operators.markdown.tables import INLINE_WIDTH, TableSpan, inline_width, render_table
from rxcord.operators.reasoning.tags import (
    CLOSE_RE,
    DETAILS_CLOSE_RE,
    DETAILS_OPEN_RE,
    MAX_TAG_LEN,
    OPEN_RE,
    find_tag,
    match_tag,
    partial_details_len,
    partial_tag_len,
)

_log = logger.bind(stage="05-flush")


_PARAGRAPH: Final = int(Level.PARAGRAPH)
_TAG_START: Final = re.compile("<[A-Za-z/]")
YIELD_AT: Final = 8 * SCAN_SLICE
"""A live delta longer than this is pushed ``YIELD_AT`` characters at a time, each slice a step of
its own on the scheduler, so the loop runs between slices (a delta may be megabytes long, and
scanning costs microseconds per character)."""
_VISIBLE: Final = 0
_THINK: Final = 1
_DETAILS: Final = 2


_NO_BEST: Final = (-1,) * (2 * len(Level))
"""``Flusher._best`` with no cut kept: per level (``WORD`` first) the ``end`` and ``start`` of the
latest cut point outside a fenced block, -1 for none. Integers in a tuple, not ``Cut`` values in a
list: the collector stops walking a tuple of integers, and a stream holds it all along."""


@attrs.define
class Flusher:
    """Incremental buffer manager for one stream (pure: no Rx, no clock).

    Feed routed text with ``push``; call ``idle`` when no text came for
    ``config.live_idle_flush`` seconds (live mode); end with ``flush`` or
    ``discard``. Each call returns the segments it releases. After
    ``flush(final=True)`` or ``discard()`` every call returns ``[]``.
    """

    config: StreamConfig
    capped: bool = attrs.field(init=False, default=False)
    """Whether ``config.max_flushes`` TEXT segments were released (nothing more will be)."""
    _live: bool = attrs.field(init=False, default=False)
    _scanner: MarkdownScanner = attrs.field(init=False)
    _carry: str = attrs.field(init=False, default="")
    _mode: int = attrs.field(init=False, default=_VISIBLE)
    # The lists below are ``None`` while empty (most of a stream's life: a live stream holds
    # no reasoning block, side segment or table most of the time).
    _block: list[str] | None = attrs.field(init=False, default=None)
    _depth: int = attrs.field(init=False, default=0)
    _pieces: TextBuffer = attrs.field(init=False, factory=TextBuffer)
    """The visible text held (since ``_base``)."""
    _base: int = attrs.field(init=False, default=0)
    _fed: int = attrs.field(init=False, default=0)
    _reopen: str = attrs.field(init=False, default="")
    _quoted: bool = attrs.field(init=False, default=False)
    _prefix: int = attrs.field(init=False, default=0)
    """What the next segment starts with before its text (``_reopen``, the quote marker), counted once
    per release instead of at every delta."""
    _best: tuple[int, ...] = attrs.field(init=False, default=_NO_BEST)
    _best_fenced: Cut | None = attrs.field(init=False, default=None)
    _side: list[Segment] | None = attrs.field(init=False, default=None)
    _out: list[Segment] | None = attrs.field(init=False, default=None)
    _texts: int = attrs.field(init=False, default=0)
    _closed: bool = attrs.field(init=False, default=False)
    _unscanned: list[str] | None = attrs.field(init=False, default=None)
    """Text held but not yet scanned (live: see ``_defers``; aggregated: all of it until read)."""
    _blank_at: tuple[int, int] = attrs.field(init=False, default=(-1, -1))
    _blank: bool = attrs.field(init=False, default=False)

    def __attrs_post_init__(self) -> None:
        self._live = self.config.delivery is DeliveryMode.LIVE
        # Only the open fence is read here, never the spans of the blocks passed: none is kept.
        if self._live:
            self._scanner = MarkdownScanner(fence_spans=False)
        else:
            # Aggregated text is cut by stage 07 once, after cleaning: here only the fences,
            # tables and code state matter, so no cut point is recorded.
            self._scanner = MarkdownScanner(cuts=NullCuts(), fence_spans=False)

    # -- public --------------------------------------------------------------------------------------------

    def push(self, text: str) -> list[Segment]:
        """Append routed text; return the segments safe to release now (live mode; aggregated: none)."""
        if self._closed or self.capped or not text:
            return []
        buf = self._carry + text if self._carry else text
        self._carry = ""
        self._route(buf, final=False)
        return self._take()

    def idle(self) -> list[Segment]:
        """No new text for ``config.live_idle_flush`` seconds: release up to the best safe cut (live mode)."""
        if self._closed or self.capped or not self._live:
            return []
        self._catch_up()
        self._drain()
        candidates = self._best_cuts()
        tail = self._scanner.tail_cut()
        if tail is not None and tail.end > self._base:
            candidates.append(tail)
        if candidates:
            cut = max(candidates, key=_idle_key)
            self._release(cut.start, None)
        return self._take()

    def flush(self, *, final: bool) -> list[Segment]:
        """Release everything held (graceful end, function call, user stop).

        With ``final=True`` a partial tag is released as text, an unclosed
        reasoning or details block as its segment, the markdown state is settled
        (a table at the very end is rendered), the last segment returned is
        marked ``final`` and the flusher closes. With ``final=False`` the
        flusher keeps going; text held inside a fenced block is closed and
        reopened like a live cut, and a partial tag stays held.
        """
        if self._closed or self.capped:
            return []
        if final:
            carry, self._carry = self._carry, ""
            self._route(carry, final=True)
            if self._mode != _VISIBLE:
                self._end_block()
        if final and not self._live and self._tableless():
            # The end of an aggregated stream reads only the tables from the scanner (no cut
            # points, and no fence to close): text that cannot hold one is not scanned.
            self._unscanned = None
        self._catch_up()
        if final:
            self._scanner.finish()
        self._drain()
        if self._fed > self._base:
            fence = None if final else self._scanner.fence
            self._release(self._fed, fence)
        out = self._take()
        if self._side:
            out = self._side + out
            self._side = None
        if final:
            self._closed = True
            if out:
                out[-1] = attrs.evolve(out[-1], final=True)
        return out

    def discard(self) -> None:
        """Drop everything held (follow-up interrupt, internal stop); the flusher closes."""
        self._closed = True
        self._carry = ""
        self._block = self._unscanned = self._side = self._out = None
        self._pieces = TextBuffer()
        self._scanner.tables = []

    # -- routing -------------------------------------------------------------------------------------------

    def _route(self, buf: str, *, final: bool) -> None:
        """Split *buf* into visible text, reasoning and details blocks; hold an undecided tag."""
        i, n = 0, len(buf)
        while i < n:
            if self._mode == _VISIBLE:
                j = self._next_tag_start(buf, i)
                if j < 0:
                    self._visible(buf[i:])
                    return
                if j > i:
                    self._visible(buf[i:j])
                i = j
                self._catch_up()
                if self._scanner.in_code:
                    self._visible("<")
                    i += 1
                    continue
                match = match_tag(buf, i, OPEN_RE, DETAILS_OPEN_RE, CLOSE_RE, DETAILS_CLOSE_RE)
                if match is not None:
                    tag = match.group(0)
                    if OPEN_RE.fullmatch(tag):
                        self._mode = _THINK
                    elif DETAILS_OPEN_RE.fullmatch(tag):
                        self._mode, self._depth = _DETAILS, 1
                    # A stray closer is dropped (the stray-closer rule: past stage 03, only removed).
                    i = match.end()
                    continue
                if not final and self._undecided(buf, i):
                    self._carry = buf[i:]
                    return
                self._visible("<")
                i += 1
            elif self._mode == _THINK:
                i = self._route_think(buf, i, final=final)
            else:
                i = self._route_details(buf, i, final=final)

    @staticmethod
    def _next_tag_start(buf: str, i: int) -> int:
        """The first ``<`` at or after *i* that may start a tag, or still be undecided; -1: none.

        Every tag starts with ``<`` then a letter or ``/``; any other ``<`` is text, unless it
        is the last one, near the end of *buf*, where the next delta may still decide it (an
        undecided tail holds one ``<``). Runs of such ``<`` (``<<<<``) are skipped in one
        search instead of one routing step each.
        """
        found = _TAG_START.search(buf, i)
        near_end = buf.rfind("<", max(i, len(buf) - MAX_TAG_LEN))
        if found is None:
            return near_end
        return found.start() if near_end < 0 else min(found.start(), near_end)

    @staticmethod
    def _undecided(buf: str, at: int) -> bool:
        # Length first: copying the rest of the buffer at every "<" would be quadratic.
        if len(buf) - at >= MAX_TAG_LEN:
            return False
        tail = buf[at:]
        if ">" in tail:
            return False
        return partial_tag_len(tail) == len(tail) or partial_details_len(tail) > 0

    def _route_think(self, buf: str, i: int, *, final: bool) -> int:
        n = len(buf)
        match = find_tag(buf, i, CLOSE_RE)
        if match is not None:
            self._keep_block(buf[i : match.start()])
            self._end_block()
            return match.end()
        hold = 0 if final else partial_tag_len(buf[max(i, n - MAX_TAG_LEN) :])
        self._keep_block(buf[i : n - hold])
        if hold:
            self._carry = buf[n - hold :]
        return n

    def _route_details(self, buf: str, i: int, *, final: bool) -> int:
        n = len(buf)
        start = i
        while True:
            j = buf.find("<", i)
            if j < 0:
                self._keep_block(buf[start:])
                return n
            match = match_tag(buf, j, DETAILS_OPEN_RE, DETAILS_CLOSE_RE)
            if match is None:
                if not final and n - j < MAX_TAG_LEN and partial_details_len(buf[j:]):
                    self._keep_block(buf[start:j])
                    self._carry = buf[j:]
                    return n
                i = j + 1
                continue
            if DETAILS_OPEN_RE.fullmatch(match.group(0)):
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth == 0:
                    self._keep_block(buf[start:j])
                    self._end_block()
                    return match.end()
            i = match.end()

    def _keep_block(self, text: str) -> None:
        """Hold *text* of the reasoning or details block being read."""
        if self._block is None:
            self._block = [text]
        else:
            self._block.append(text)

    def _end_block(self) -> None:
        text = "".join(self._block or ())
        kind = SegmentKind.THOUGHT if self._mode == _THINK else SegmentKind.DETAILS
        self._block = None
        self._mode = _VISIBLE
        self._depth = 0
        if text.strip() and not self.capped:
            segment = Segment(kind=kind, text=text)
            if self._live:
                self._hand_on(segment)
            elif self._side is None:
                self._side = [segment]
            else:
                self._side.append(segment)

    # -- visible text --------------------------------------------------------------------------------------

    def _visible(self, text: str) -> None:
        if not text:
            return
        if not self._live or self._defers(text):
            # Aggregated: scanned only when the scanner is read (a "<" that may open a tag, the
            # end), in one piece; at the end not at all when it cannot hold a table (``flush``).
            unscanned = self._unscanned
            if unscanned is None:
                self._unscanned = [text]
            else:
                unscanned.append(text)
            self._pieces.append(text)
            self._fed += len(text)
            return
        scanner = self._scanner
        self._catch_up()
        i, n = 0, len(text)
        while i < n:
            j = text.find("\n", i, i + SCAN_SLICE)
            j = min(n, i + SCAN_SLICE) if j < 0 else j + 1
            room = self._room()
            if room > 0:
                j = min(j, i + room)
            piece = text[i:j]
            scanner.feed(piece)
            self._pieces.append(piece)
            self._fed += len(piece)
            i = j
            self._settle()

    def _defers(self, text: str) -> bool:
        """Whether live *text* can wait to be scanned: it cannot release anything now.

        Releases need a line break (paragraph cuts, tables, fences and quotes are all
        decided at one) or the held text reaching a message. Text without a line
        break, in the middle of a line whose start put the scanner in its quiet
        state, does neither while it fits: it is scanned later in one piece
        (``_catch_up``, before anything reads the scanner), which records the same
        cut points, since the scanner does not depend on chunking.
        """
        if "\n" in text or self._room() - len(text) <= 0:
            return False
        if self._unscanned:
            return True
        scanner = self._scanner
        return scanner.quiet_path and scanner.mid_line and scanner.quiet

    def _tableless(self) -> bool:
        """Whether the text not scanned yet cannot hold (or end) a table: no ``|``, no table open."""
        return self._scanner.table_start is None and not any("|" in text for text in self._unscanned or ())

    def _catch_up(self) -> None:
        """Scan the live text that was held unscanned, and take its cut points."""
        if self._unscanned:
            text = "".join(self._unscanned)
            self._unscanned = None
            feed = self._scanner.feed
            for i in range(0, len(text), SCAN_SLICE):
                feed(text[i : i + SCAN_SLICE])
            self._drain()

    def _room(self) -> int:
        """Characters that fit before the held text reaches a message (a fence close included)."""
        fence = self._scanner.fence
        limit = self.config.message_limit if fence is None else self.config.message_limit - len(fence.close)
        return limit - self._prefix - self._fed + self._base

    def _drain(self) -> None:
        """Take the scanner's new cut points; release at paragraph breaks (live).

        (The tables stay in the scanner: a release reads the ones complete by then.)
        """
        cuts = self._scanner.cuts
        if not cuts:
            return
        # Only the latest cut of each level is kept: read the arrays and build a Cut only
        # for those (a long delta records a cut per word).
        ends, starts, levels, fences = cuts.ends, cuts.starts, cuts.levels, cuts.fences
        latest: dict[int, int] = {}
        for k in range(len(ends)):
            start = starts[k]
            if start <= self._base:
                continue
            if k in fences:
                self._best_fenced = cuts[k]
                continue
            level = levels[k]
            if level == _PARAGRAPH and self._live and self._long_enough(ends[k], start):
                self._keep_latest(cuts, latest)
                self._release(start, None)
            else:
                latest[level] = k
        self._keep_latest(cuts, latest)
        cuts.clear()

    def _keep_latest(self, cuts: CutList, latest: dict[int, int]) -> None:
        if not latest:
            return
        best = list(self._best)
        ends, starts = cuts.ends, cuts.starts
        for level, k in latest.items():
            at = 2 * level - 2
            best[at] = ends[k]
            best[at + 1] = starts[k]
        self._best = tuple(best)
        latest.clear()

    def _best_cuts(self) -> list[Cut]:
        """The latest cut point of each level outside a fenced block, past the text released."""
        best, base = self._best, self._base
        return [
            Cut(best[at], best[at + 1], Level(at // 2 + 1))
            for at in range(0, len(best), 2)
            if best[at] > base
        ]

    def _long_enough(self, end: int, start: int) -> bool:
        if end <= self._base:
            return False
        held = len(self._reopen) + start - self._base
        return held >= self.config.live_min_chars

    def _settle(self) -> None:
        """After live text: release paragraphs, then a message-sized piece while the text held is too long."""
        self._drain()
        while not self.capped and self._room() <= 0:
            candidates = self._best_cuts()
            fenced = self._best_fenced
            if fenced is not None and fenced.end > self._base and not self._blank_before(fenced.start):
                # (A cut after nothing but blank lines of code would send a message of fences alone.)
                candidates.append(fenced)
            if not candidates:
                return
            budget = self.config.message_limit - self._prefix
            ranked = sorted(
                ((c.end, rank(c.level, c.fence is not None), c) for c in candidates),
                key=_by_end,
                reverse=True,
            )
            cut = choose(ranked, half_full(self._base, budget))
            assert cut is not None
            self._release(cut.start, cut.fence)

    def _blank_before(self, upto: int) -> bool:
        """Whether the held text up to *upto* is whitespace only.

        Asked again after every delta while such a cut waits (blank code lines, then one
        long line): the answer for a place is kept, not re-read from the whole text held.
        """
        if self._blank_at != (self._base, upto):
            self._blank_at = (self._base, upto)
            self._blank = not self._pieces.getvalue()[: upto - self._base].strip()
        return self._blank

    def _release(self, upto: int, fence: Fence | None) -> None:
        """Release the held text up to *upto* as one TEXT segment (*fence*: the cut is inside it).

        A table sent as a picture cuts it: the text before it, a ``TABLE`` segment, the text after.
        """
        text = self._pieces.getvalue()
        cut = upto - self._base
        piece, rest = text[:cut], text[cut:]
        parts = self._render_tables(piece, upto)
        quoted, reopen = self._quoted, self._reopen
        self._pieces = TextBuffer(rest)
        self._base = upto
        self._reopen = fence.reopen(self.config.message_limit) if fence is not None else ""
        quote_from = self._scanner.quote_from
        self._quoted = quote_from is not None and quote_from < upto
        self._prefix = len(self._reopen) + (len(QUOTE) if self._quoted else 0)
        best = self._best
        for at in range(1, len(best), 2):
            if 0 <= best[at] <= upto:
                self._best = _forget(best, upto)
                break
        if self._best_fenced is not None and self._best_fenced.start <= upto:
            self._best_fenced = None
        close = fence.close if fence is not None else ""
        if len(parts) == 1:
            body = parts[0][1]
            self._emit(SegmentKind.TEXT, opening(quoted, body, reopen) + body + close)
            return
        for index, (at, part) in enumerate(parts):
            if index % 2:
                self._emit(SegmentKind.TABLE, part)
                continue
            last = index == len(parts) - 1
            if not part.strip() and not (last and close):
                continue  # nothing but the blank lines around a table
            if index:
                quoted, reopen = quote_from is not None and quote_from < at, ""
            self._emit(SegmentKind.TEXT, opening(quoted, part, reopen) + part + (close if last else ""))

    def _emit(self, kind: SegmentKind, text: str) -> None:
        """Hand on one released segment, counted against ``config.max_flushes``."""
        if self.capped:
            return
        self._texts += 1
        self._hand_on(Segment(kind=kind, text=text))
        _log.debug("released {chars} chars (segment {count})", chars=len(text), count=self._texts)
        if self._texts >= self.config.max_flushes:
            self.capped = True

    def _render_tables(self, piece: str, upto: int) -> list[tuple[int, str]]:
        """The released range with its complete tables rendered: ``(absolute start, text)`` parts.

        Parts alternate: text (even indices; a table kept inline is a monospace block in it),
        then a table sent as a picture (odd indices: its markdown), then text, ...
        """
        base = self._base
        scanner = self._scanner
        tables = scanner.tables
        if not tables:
            return [(base, piece)]
        parts: list[tuple[int, str]] = []
        text: list[str] = []
        last = run = 0
        keep: list[TableSpan] = []
        for table in tables:
            if table.end > upto:
                keep.append(table)
                continue
            if table.start < base:
                continue
            start, end = table.start - base, table.end - base
            rendered = render_table(piece[start:end])
            if rendered is None:
                continue
            text.append(piece[last:start])
            if self._pictured(rendered):
                parts.append((base + run, "".join(text)))
                parts.append((table.start, piece[start:end]))
                text, run = [], end
            else:
                text.append(rendered)
            last = end
        scanner.tables = keep
        if not parts and len(text) == 1:
            return [(base, piece)]  # no table here is complete yet: the piece as it is
        text.append(piece[last:])
        parts.append((base + run, "".join(text)))
        return parts

    def _pictured(self, rendered: str) -> bool:
        """Whether a table (its monospace *rendered* block) is sent as a picture (``StreamConfig.tables``)."""
        config = self.config
        # Every mode alike: edit mode commits the text before a picture and edits the text after.
        return config.tables is TableStyle.PICTURE and inline_width(rendered) > INLINE_WIDTH

    def _hand_on(self, segment: Segment) -> None:
        if self._out is None:
            self._out = [segment]
        else:
            self._out.append(segment)

    def _take(self) -> list[Segment]:
        out = self._out
        if out is None:
            return []
        self._out = None
        return out


def _forget(best: tuple[int, ...], upto: int) -> tuple[int, ...]:
    """``Flusher._best`` without the cut points whose text after them starts at or before *upto*."""
    kept = list(best)
    for at in range(1, len(kept), 2):
        if kept[at] <= upto:
            kept[at - 1] = kept[at] = -1
    # None left (a release usually passes them all): the shared tuple, not a new one per stream.
    return _NO_BEST if max(kept) < 0 else tuple(kept)


def _by_end(candidate: tuple[int, int, Cut]) -> tuple[int, int]:
    return candidate[0], candidate[1]


def _idle_key(cut: Cut) -> tuple[int, int]:
    return (int(cut.level), cut.start)
