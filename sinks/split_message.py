"""Split a segment into Discord messages (stage 07, pure).

Discord refuses content longer than 2000 code points (``len(str)``), and a
message boundary ends every markdown construct open at it. ``split_message``
cuts where a reader would pause and repairs what a cut must break:

* Cut points come from ``rxcord.operators.markdown_scan.MarkdownScanner``: paragraph
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
* After a ``>>> `` line (quote to the end of the message) every later message
  starts with ``>>> `` again, unless it already starts with ``>>>``.

What may be lost (and nothing else): whitespace at both ends of *text* and,
at each cut outside a fenced block, the whole whitespace run of the cut
(including the whitespace at the end of a hard-cut message and at the start of
the next). Discord trims message content anyway. Cuts inside a fenced block
drop nothing, so code indentation survives. Removing each added close (at the
end of a message) and reopen/``>>> `` prefix (at the start of the next) and
joining the messages with the dropped whitespace gives back the stripped text.

Known limits: emphasis spans (``**``, ``__``, ``~~``, ``||``) are not
reopened after a cut that falls inside them (cuts prefer line and paragraph
breaks, where they rarely span); a fence opening line longer than the whole
limit cannot be kept balanced.
"""

from __future__ import annotations

__all__ = ("MIN_LIMIT", "split_message")

import bisect
import re
from typing import Final

from rxcord.core.config import DISCORD_MESSAGE_LIMIT
from rxcord.operators.markdown_scan import (
    Cut,
    Fence,
    FenceSpan,
    Level,
    MarkdownScanner,
    is_grapheme_boundary,
    token_spans,
)

_FENCE_RUN: Final = re.compile(r"`{3,}|~{3,}")

_PARAGRAPH: Final = int(Level.PARAGRAPH)

MIN_LIMIT: Final = 32
"""Smallest limit accepted: room for a fence close, a reopened fence, a ``>>> `` and some content."""


def split_message(text: str, limit: int = DISCORD_MESSAGE_LIMIT) -> list[str]:
    """Split *text* into Discord messages of at most *limit* code points.

    Messages are never empty and never whitespace-only; see the module
    docstring for where cuts go, how fences and ``>>> `` quotes are repaired,
    and exactly which whitespace is dropped.

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
    scanner = MarkdownScanner()
    scanner.feed(body)
    scanner.finish()
    return _Splitter(body, limit, scanner).split()


_MAY_NEED_REPAIR: Final = re.compile(r"```|~~~|>>>")


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


class _Splitter:
    """One run of the greedy splitter over a scanned text."""

    __slots__ = ("_body", "_cuts", "_fence_starts", "_fences", "_limit", "_scanner", "_spans")

    def __init__(self, body: str, limit: int, scanner: MarkdownScanner) -> None:
        self._body = body
        self._limit = limit
        self._scanner = scanner
        self._cuts = scanner.cuts
        self._fences = scanner.fences
        self._fence_starts = [span.start for span in scanner.fences]
        self._spans = token_spans(body, scanner.fences)

    def split(self) -> list[str]:
        body, limit = self._body, self._limit
        tail_close = self._scanner.fence.close if self._scanner.fence is not None else ""
        quote_from = self._scanner.quote_from
        messages: list[str] = []
        start = 0
        prefix = ""
        while True:
            if len(prefix) + len(body) - start + len(tail_close) <= limit:
                messages.append(prefix + body[start:] + tail_close)
                return messages
            budget = limit - len(prefix)
            cut = self._choose(start, budget)
            if cut is not None:
                end, following, fence = cut.end, cut.start, cut.fence
            else:
                end, fence = self._hard_cut(start, budget)
                following = end
            piece = body[start:end]
            if fence is None:
                piece = piece.rstrip()
                following = _skip_space(body, following)
            messages.append(prefix + piece + (fence.close if fence is not None else ""))
            quoted = (
                quote_from is not None and quote_from < following and not body.startswith(">>>", following)
            )
            prefix = (">>> " if quoted else "") + (fence.reopen(limit) if fence is not None else "")
            start = following

    def _choose(self, start: int, budget: int) -> Cut | None:
        """The best cut point for a message whose text starts at *start*, or ``None``."""
        cuts = self._cuts
        ends, starts, levels, fences = cuts.ends, cuts.starts, cuts.levels, cuts.fences
        half = start + budget // 2
        best = -1
        best_key = (0, False)
        j = bisect.bisect_right(ends, start + budget) - 1
        while j >= 0 and ends[j] > start:
            k = j
            j -= 1
            end, following = ends[k], starts[k]
            fence = fences.get(k) if fences else None
            cost = end - start + (len(fence.close) if fence is not None else 0)
            if cost > budget or following <= start or self._inside_token(end, following):
                continue
            if end < half:
                # Nothing good enough in the upper half: the latest cut that fits.
                return cuts[best if best >= 0 else k]
            key = (levels[k], fence is None)
            if best < 0 or key > best_key:
                best, best_key = k, key
                if key == (_PARAGRAPH, True):
                    break
        return cuts[best] if best >= 0 else None

    def _inside_token(self, end: int, start: int) -> bool:
        """Whether the text between *end* and *start* lies inside a token span."""
        spans = self._spans
        k = bisect.bisect_left(spans, (start, -1)) - 1
        return k >= 0 and spans[k][0] < start and spans[k][1] > end

    def _fence_at(self, i: int) -> FenceSpan | None:
        k = bisect.bisect_right(self._fence_starts, i) - 1
        if k < 0:
            return None
        span = self._fences[k]
        if span.end is None:
            return span
        close_end = self._body.find("\n", span.end)
        return span if i < (len(self._body) if close_end < 0 else close_end) else None

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
        while True:
            while cut > floor and not is_grapheme_boundary(body, cut):
                cut -= 1
            if fence is None:
                spans = self._spans
                k = bisect.bisect_left(spans, (cut, -1)) - 1
                if k >= 0 and spans[k][0] < cut < spans[k][1] and spans[k][0] > start:
                    cut = spans[k][0]
            # A fence run from the middle of a line would open a block in the next message.
            following = _skip_space(body, cut)
            if fence is not None or cut <= floor or body[following - 1] == "\n":
                break
            if not _FENCE_RUN.match(body, following):
                break
            cut -= 1
        return cut, fence
