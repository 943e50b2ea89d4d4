"""Split a segment into Discord messages (stage 07, pure).

Discord refuses content longer than 2000 code points (``len(str)``), and a
message boundary ends every markdown construct open at it. ``split_message``
cuts where a reader would pause and repairs what a cut must break:

* Cut points come from ``rxcord.operators.markdown.scan.MarkdownScanner``; which
  one is taken, and how a cut is repaired, is the cut policy
  (``rxcord.operators.markdown.cut_policy``, shared with the live flusher): paragraph
  break, then line break, then sentence end, then space; never inside inline
  code, a mention, a channel or role, a slash command, a custom emoji, a
  timestamp, a URL (bare or ``<...>``), a masked link, a table, or a grapheme
  cluster. Among the cut points that keep a message at least half full, the
  best kind wins (the latest of that kind); if none does, the latest cut point
  that fits is taken. Only when there is none at all is the text hard-cut, at
  the last grapheme boundary that fits, moved back to the start of a token it
  would split unless that token starts the message (a single token longer
  than a message).
* A cut inside a fenced code block (````` ``` ````` or ``~~~``, language or not)
  ends the message with a line break and the fence marker, and starts the next
  one with the same opening line (language kept) and a line break
  (``Fence.close`` and ``Fence.reopen``). A text ending inside an unclosed
  block gets the same close at its end, so every message has balanced fences.
  A block holding a rendered table (header row, then a ``-+-`` rule) is cut
  between rows, never right under its header, and each later message repeats
  the header and the rule.
* An inline code span too long for one message is written as a fenced block
  (on lines of its own, without its backticks) and cut like one.
* After a ``>>> `` line (quote to the end of the message) every later message
  starts with ``>>> `` again, unless it already starts with ``>>>``.

What may be lost (and nothing else): whitespace at both ends of *text* and,
at each cut outside a fenced block, the whole whitespace run of the cut
(including the whitespace at the end of a hard-cut message and at the start of
the next); a message that would hold only fence lines and whitespace (an empty
block). Discord trims message content anyway. Cuts inside a fenced block
drop nothing, so code indentation survives. Removing each added close (at the
end of a message) and reopen/``>>> `` prefix (at the start of the next) and
joining the messages with the dropped whitespace gives back the stripped text
(for text without a code span longer than a message).

Known limits: emphasis spans (``**``, ``__``, ``~~``, ``||``) are not
reopened after a cut that falls inside them (cuts prefer line and paragraph
breaks, where they rarely span); a fence opening line longer than the whole
limit cannot be kept balanced.
"""

from __future__ import annotations

__all__ = ("MIN_LIMIT", "cut_pieces", "split_message")

import bisect
import re
from collections.abc import Iterator
from typing import Final

from rxcord.core.config import DISCORD_MESSAGE_LIMIT
from rxcord.operators.markdown.cut_policy import (
    QUOTE,
    Fence,
    choose,
    half_full,
    is_blank_piece,
    opening,
    rank,
    table_header,
)
from rxcord.operators.markdown.cuts import Cut, FenceSpan
from rxcord.operators.markdown.graphemes import is_grapheme_boundary
from rxcord.operators.markdown.scan import SCAN_SLICE, MarkdownScanner
from rxcord.operators.markdown.tokens import token_spans

_FENCE_RUN: Final = re.compile(r"`{3,}|~{3,}")

MIN_LIMIT: Final = 32
"""Smallest limit accepted: room for a fence close, a reopened fence, a ``>>> `` and some content."""


def split_message(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """Split *text* into Discord messages of at most *limit* code points.

    Messages are never empty, never whitespace-only and never only fence lines
    and whitespace; see the module docstring for where cuts go, how fences,
    tables and ``>>> `` quotes are repaired, and exactly what is dropped.

    Args:
        text: The text of one segment.
        limit: Maximum ``len()`` of one message (Discord: 2000 for bots).

    Returns:
        The messages, in order (``[]`` for empty or whitespace-only text).

    Raises:
        ValueError: *limit* is below ``MIN_LIMIT``.
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"limit must be at least {MIN_LIMIT}, got {limit}")
    body = text.strip()
    if not body:
        return []
    if len(body) <= limit and not _MAY_NEED_REPAIR.search(body):
        # Fits, and holds no fence or block quote that could need closing: nothing to cut
        # (the common case of a live segment; skips scanning the whole text).
        return [body]
    _, messages = cut_pieces(body, limit)
    return [message for message in messages if not is_blank_piece(message)]


def cut_pieces(body: str, limit: int) -> tuple[str, list[str]]:
    """The text *body* is cut as (long code spans written as blocks) and every piece, blank ones too.

    ``split_message`` without its first and last steps (stripping the text,
    dropping pieces that hold only fence lines and whitespace); for tests and
    tools that rebuild the text from its pieces.
    """
    scanner = _scan(body)
    if len(body) > limit:
        blocks = _code_spans_as_blocks(body, scanner.fences, limit)
        if blocks != body:
            body = blocks
            scanner = _scan(body)
    return body, _Splitter(body, limit, scanner).split()


_MAY_NEED_REPAIR: Final = re.compile(r"```|~~~|>>>")
_CODE_SPAN: Final = re.compile(r"(?<!`)(`{1,2})(?!`)((?:[^`\n]|\n(?![ \t]*\n))+?)(?<!`)\1(?!`)")
"""Inline code as the scanner reads it: a run of one or two backticks up to the next run of the same
length, not across a blank line (spans holding other backtick runs are left alone)."""


def _scan(body: str) -> MarkdownScanner:
    scanner = MarkdownScanner()
    for i in range(0, len(body), SCAN_SLICE):
        scanner.feed(body[i : i + SCAN_SLICE])
    scanner.finish()
    return scanner


def _code_spans_as_blocks(body: str, fences: list[FenceSpan], limit: int) -> str:
    """*body* with every inline code span too long for one message written as a fenced block.

    A span that cannot fit a message (with a ``>>> `` prefix) can only be cut;
    cut as inline code it would break in two (or leave the text before it as a
    tiny message). As a block on lines of its own it is cut at line starts or,
    for one long line, anywhere, each piece closed and reopened.
    """
    blocks = [(f.start, len(body) if f.end is None else f.end) for f in fences]
    parts: list[str] = []
    last = 0
    k = 0  # spans come in text order: one pointer walks the (sorted) blocks
    for match in _CODE_SPAN.finditer(body):
        start, end = match.span()
        if end - start + len(QUOTE) <= limit:
            continue
        while k < len(blocks) and blocks[k][1] <= start:
            k += 1
        if k < len(blocks) and blocks[k][0] <= start:
            continue
        text_before = body[last:start]
        before = "" if start == 0 or body[start - 1] == "\n" else "\n"
        if before:
            text_before = text_before.rstrip(" \t")
        after = "" if end == len(body) or body[end] == "\n" else "\n"
        parts += [text_before, before, "```\n", match.group(2).strip("\n"), "\n```", after]
        last = end
        if after:
            while last < len(body) and body[last] in " \t":
                last += 1
    if not parts:
        return body
    parts.append(body[last:])
    return "".join(parts)


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


class _Splitter:
    """One run of the greedy splitter over a scanned text."""

    __slots__ = (
        "_body",
        "_close_ends",
        "_cuts",
        "_fence_starts",
        "_fences",
        "_headers",
        "_limit",
        "_scanner",
        "_spans",
    )

    def __init__(self, body: str, limit: int, scanner: MarkdownScanner) -> None:
        self._body = body
        self._limit = limit
        self._scanner = scanner
        self._cuts = scanner.cuts
        self._fences = scanner.fences
        self._fence_starts = [span.start for span in scanner.fences]
        self._spans = token_spans(body, scanner.fences)
        # Per fenced block (by index), read once: a long line must not be re-read for every
        # message or every cut point (that would be quadratic in the line).
        self._close_ends: dict[int, int] = {}
        self._headers: dict[int, str] = {}

    def split(self) -> list[str]:
        body, limit = self._body, self._limit
        tail_close = self._scanner.fence.close if self._scanner.fence is not None else ""
        quote_from = self._scanner.quote_from
        messages: list[str] = []
        start = 0
        reopen = ""
        while start < len(body):
            quoted = quote_from is not None and quote_from < start
            prefix = opening(quoted, body[start : start + 3], reopen)
            if len(prefix) + len(body) - start + len(tail_close) <= limit:
                messages.append(prefix + body[start:] + tail_close)
                return messages
            budget = limit - len(prefix)
            cut = self._choose(start, budget)
            if cut is not None and not self._block_beats(cut, start, budget):
                end, following, fence = cut.end, cut.start, cut.fence
            else:
                end, fence = self._hard_cut(start, budget)
                following = end
            if following <= start:
                # No cut moves on (a fence marker longer than a message, so its close cannot
                # fit): cut the text as it is, or the loop would never end.
                end = following = self._plain_cut(start, budget)
                fence = None
            piece = body[start:end]
            if fence is None:
                piece = piece.rstrip()
                following = _skip_space(body, following)
            messages.append(prefix + piece + (fence.close if fence is not None else ""))
            reopen = fence.reopen(limit, self._header(following, fence)) if fence is not None else ""
            start = following
        # Only a text whose unclosed fence has a close longer than a message ends here: its
        # last message could not hold the close (a documented limit), the text is all sent.
        return messages

    def _plain_cut(self, start: int, budget: int) -> int:
        """The latest grapheme boundary that fits, ignoring markdown (at least one character on)."""
        body = self._body
        cut = min(start + max(budget, 1), len(body))
        while cut > start + 1 and not is_grapheme_boundary(body, cut, start):
            cut -= 1
        return cut

    def _block_beats(self, cut: Cut, start: int, budget: int) -> bool:
        """Whether a hard cut inside the fenced block that fills the message beats *cut*.

        Only when *cut* leaves the message less than half full: the text before a
        block whose next line does not fit (one long line of code, an inline code
        span written as a block) then goes with the start of the block instead of
        being sent alone.
        """
        half = half_full(start, budget)
        if cut.end >= half:
            return False
        span = self._fence_at(start + budget)
        if span is None or span.content_start >= half or cut.start > span.start:
            return False
        # Only when the block's first line cannot fit a message of its own either (looked
        # for only as far as such a message reaches).
        body = self._body
        reach = span.start + budget - len(span.fence.close)
        return body.find("\n", span.content_start, reach + 1) < 0 and reach < len(body)

    def _header(self, at: int, fence: Fence) -> str:
        """The table header a reopened block repeats (``table_header``), for a cut at *at*."""
        k = self._span_index(at)
        return self._header_of(k, fence) if k >= 0 else ""

    def _header_of(self, k: int, fence: Fence) -> str:
        """``table_header`` of the block at index *k*, read once."""
        header = self._headers.get(k)
        if header is None:
            header = self._headers[k] = table_header(self._body, self._fences[k].content_start, fence)
        return header

    def _span_index(self, i: int) -> int:
        return bisect.bisect_right(self._fence_starts, i) - 1

    def _choose(self, start: int, budget: int) -> Cut | None:
        """The best cut point for a message whose text starts at *start*, or ``None``."""
        cuts = self._cuts
        k = choose(self._candidates(start, budget), half_full(start, budget))
        return cuts[k] if k is not None else None

    def _candidates(self, start: int, budget: int) -> Iterator[tuple[int, int, int]]:
        """The cut points that fit a message starting at *start*, latest first, for ``choose``."""
        cuts = self._cuts
        ends, starts, levels, fences = cuts.ends, cuts.starts, cuts.levels, cuts.fences
        j = bisect.bisect_right(ends, start + budget) - 1
        while j >= 0 and ends[j] > start:
            k = j
            j -= 1
            end, following = ends[k], starts[k]
            fence = fences.get(k) if fences else None
            cost = end - start + (len(fence.close) if fence is not None else 0)
            if cost > budget or following <= start or self._inside_token(end, following):
                continue
            if fence is not None and self._in_header(end, start, fence):
                continue
            yield end, rank(levels[k], fence is not None), k

    def _in_header(self, end: int, start: int, fence: Fence) -> bool:
        """Whether a cut at *end* would leave a table block's piece with nothing under its header."""
        k = self._span_index(end)
        if k < 0 or self._fences[k].start < start:
            return False
        header = self._header_of(k, fence)
        return bool(header) and end <= self._fences[k].content_start + len(header)

    def _inside_token(self, end: int, start: int) -> bool:
        """Whether the text between *end* and *start* lies inside a token span."""
        spans = self._spans
        k = bisect.bisect_left(spans, (start, -1)) - 1
        return k >= 0 and spans[k][0] < start and spans[k][1] > end

    def _fence_at(self, i: int) -> FenceSpan | None:
        k = self._span_index(i)
        if k < 0:
            return None
        span = self._fences[k]
        if span.end is None:
            return span
        close_end = self._close_ends.get(k)
        if close_end is None:
            found = self._body.find("\n", span.end)
            close_end = self._close_ends[k] = len(self._body) if found < 0 else found
        return span if i < close_end else None

    def _hard_cut(self, start: int, budget: int) -> tuple[int, Fence | None]:
        """Where to cut when no cut point fits: as late as possible, on a grapheme boundary."""
        body = self._body
        cut = min(start + budget, len(body))
        fence: Fence | None = None
        span = self._fence_at(cut)
        if span is not None and cut > span.start:
            content_end = len(body) if span.end is None else span.end
            cut = min(cut, content_end)
            room = start + budget - len(span.fence.close)
            if cut > span.content_start and room > max(start, span.content_start):
                cut = min(cut, room)
                fence = span.fence
            elif span.start > start:
                cut = span.start
        floor = start + 1
        # The whitespace run after the cut, skipped once: moving the cut back inside it keeps
        # its end (re-skipping a long run at every step would be quadratic).
        space_from = space_to = -1
        # The first cut that only a fence run after it moved back: taken when every earlier one
        # is refused too (a run of fence characters longer than a message), not a 1-character
        # message per step through the run (a message per character is quadratic work).
        first = -1
        refused = 0
        while True:
            while cut > floor and not is_grapheme_boundary(body, cut, start):
                cut -= 1
            if fence is None:
                spans = self._spans
                k = bisect.bisect_left(spans, (cut, -1)) - 1
                if k >= 0 and spans[k][0] < cut < spans[k][1] and spans[k][0] > start:
                    cut = spans[k][0]
            if cut <= floor:
                break
            if fence is not None:
                # Inside a block, the line cut in two must not read as its closing line in either piece.
                if not _closes(body, cut, fence, start, start + budget + self._limit):
                    break
                # A line that is a fence run for longer than CLOSE_STEPS characters: every cut
                # in it reads as a closing line, and stepping back through it one character a
                # step (and a message per character) is quadratic. Take the latest cut instead:
                # nothing is lost, only that run may render as a fence line.
                if first < 0:
                    first = cut
                refused += 1
                if refused > CLOSE_STEPS:
                    cut = first
                    break
            else:
                # A fence run from the middle of a line would open a block in the next message.
                if space_from < cut or not _all_space(body, cut, space_from):
                    space_to = _skip_space(body, cut)
                space_from = cut
                following = space_to
                # (Three characters decide it: matching the whole run each step is quadratic.)
                if body[following - 1] == "\n" or not _FENCE_RUN.match(body, following, following + 3):
                    break
                if first < 0:
                    first = cut
            cut -= 1
        if cut <= floor < first:
            cut = first
        return cut, fence


# How many cuts inside a block may be refused for leaving a closing fence line before the
# latest one is taken anyway (a fence run longer than this inside a block line).
CLOSE_STEPS = 64


def _all_space(body: str, a: int, b: int) -> bool:
    """Whether ``body[a:b]`` is whitespace (the cut moved back by ``b - a`` characters)."""
    return all(body[i].isspace() for i in range(a, b))


def _closes(body: str, cut: int, fence: Fence, lo: int, hi: int) -> bool:
    """Whether cutting the line at *cut* (inside *fence*) leaves a closing fence line on either side.

    The piece before the cut starts at *lo* (on a line of its own, after the reopened fence)
    and the one after it reaches *hi* at most: only the line parts inside them are read.
    """
    line_start = body.rfind("\n", lo, cut) + 1 or lo
    line_end = body.find("\n", cut, hi)
    for part in (body[line_start:cut], body[cut : min(len(body), hi) if line_end < 0 else line_end]):
        run = part.strip()
        if len(run) >= fence.length and not run.strip(fence.char):
            return True
    return False
