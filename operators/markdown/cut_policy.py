"""The message-cutting policy, written once (stages 05 and 07).

Two places cut text that is longer than a Discord message: the live flusher
(``rxcord.operators.flush``) cuts the text it holds into message-sized
segments while the answer streams, and the splitter
(``rxcord.sinks.split_message``) cuts a segment into messages. Both read the
cut points ``MarkdownScanner`` records and follow the rules below, which live
here and nowhere else.

Which cut
    ``Level`` orders the kinds of cut point: paragraph break, then line
    break, then sentence end, then space. At the same level a cut outside a
    fenced block beats one inside it (``rank``). Among the cut points that fit
    and keep the piece at least half full (``half_full``), the best rank wins,
    the latest of that rank; when none reaches the upper half, the latest cut
    point that fits (``choose``).

Repair at a cut
    A cut inside a fenced block ends the piece with ``Fence.close`` (a line
    break and the marker) and starts the next piece with ``Fence.reopen`` (the
    opening line, language kept, and a line break). A block holding a rendered
    table (``table_header``: a header row, then a rule of dashes with ``-+-``
    joints) repeats those two rows after the reopened fence. After a ``>>> ``
    line every later piece starts with ``>>> `` again unless it already starts
    with ``>>>`` (``opening``).

Joining
    Pieces cut apart by these rules and then sent as one message (live
    delivery coalesces segments queued behind a send in flight) are joined
    with ``join``, which removes the close and reopen that the cut added, so a
    block never shows a closing and a reopening fence on one line
    (```` ``````python ````).

Well-formed pieces
    A piece that is an empty block (whitespace and at most two fence lines) is
    not sent (``is_blank_piece``): an empty block says nothing.

The first message (edit mode)
    Edit-in-place delivery posts its first message at the first cut point
    that ends the first words (``first_message_cut``): a sentence end, a line
    break or a paragraph break outside a fenced block, or, once the text
    reaches ``FIRST_WORDS`` characters without one, a word boundary that
    leaves no emphasis, strikethrough or spoiler marker open. Text that holds
    no such place within ``message_limit`` characters (a long code block
    first) is shown as it is, its fence closed by the preview.
"""

from __future__ import annotations

__all__ = (
    "FIRST_WORDS",
    "QUOTE",
    "TOP_RANK",
    "Fence",
    "Level",
    "choose",
    "first_message_cut",
    "half_full",
    "is_blank_piece",
    "join",
    "opening",
    "rank",
    "table_header",
)

import enum
import re
from collections.abc import Iterable
from typing import Final, TypeVar

import attrs

_T = TypeVar("_T")

QUOTE: Final = ">>> "
"""The quote-to-the-end marker, repeated at the start of every piece after a ``>>> `` line."""


class Level(enum.IntEnum):
    """How natural a cut point is; higher is better."""

    WORD = 1
    SENTENCE = 2
    LINE = 3
    PARAGRAPH = 4


@attrs.frozen
class Fence:
    """An open fenced code block."""

    opener: str
    """The opening line as written (indentation and info string included, no line break)."""
    char: str
    """The fence character: ``"`"`` or ``"~"``."""
    length: int
    """How many fence characters opened the block; a closing line needs at least as many."""

    @property
    def marker(self) -> str:
        """The fence characters of the opening line (``"```"``)."""
        return self.char * self.length

    @property
    def close(self) -> str:
        """Text appended to a piece cut inside the block: a line break, then the marker.

        The line break is always added, so the close text can be removed
        unambiguously; Discord drops blank lines at the end of a block.
        """
        return "\n" + self.marker

    def reopen(self, limit: int, header: str = "") -> str:
        """Text that starts the piece after a cut: the opening line (language kept), a line break, *header*.

        A ``>>> `` before the marker is left out: quotes are reopened on their own.

        An opening line longer than a quarter of *limit* is replaced by the bare
        marker (or by three fence characters when even the marker is that long),
        so a piece always has room for content. *header* (``table_header``) is
        dropped when it would take more than a quarter of *limit*.
        """
        line = self.opener.strip()
        if line.startswith(">>>"):
            # The quote is reopened separately (it spans the whole message).
            line = line[3:].lstrip()
        if len(line) > limit // 4:
            line = self.marker if self.length <= limit // 4 else self.char * 3
        if len(header) > limit // 4:
            header = ""
        return line + "\n" + header


def rank(level: int, fenced: bool) -> int:
    """How good a cut point is: by level, and at one level outside a fenced block first."""
    return 2 * level + (0 if fenced else 1)


TOP_RANK: Final = rank(Level.PARAGRAPH, fenced=False)
"""No cut point is better: a search may stop at the first one."""


FIRST_WORDS: Final = 40
"""Characters after which edit mode's first message may end at a word boundary (about 8 words).

At one event of 1-6 code points per 20 ms this is about 240 ms of text; the first sentence end
of the benchmark's texts comes after 60-90 characters (370 ms at the median)."""


def first_message_cut(level: int, fenced: bool, end: int) -> bool:
    """Whether a cut point of *level* ending at *end* may end edit mode's first message.

    Never inside a fenced block; a sentence end or better at once; a word boundary once the
    text before it has ``FIRST_WORDS`` characters (the caller checks that no inline marker is
    left open there).
    """
    if fenced:
        return False
    return level >= Level.SENTENCE or end >= FIRST_WORDS


def half_full(start: int, budget: int) -> int:
    """Where a piece starting at *start*, with room for *budget* characters, is half full."""
    return start + budget // 2


def choose(candidates: Iterable[tuple[int, int, _T]], half: int) -> _T | None:
    """The cut to take among *candidates*: ``(end, rank, cut)``, each one fitting, latest end first.

    The best rank among those ending at *half* or later (the latest of that
    rank), else the latest candidate; ``None`` when there is none. Reads the
    candidates only until the first one below *half*, or a ``TOP_RANK`` one.
    """
    best: _T | None = None
    best_rank = -1
    for end, cut_rank, cut in candidates:
        if end < half:
            return best if best is not None else cut
        if cut_rank > best_rank:
            best, best_rank = cut, cut_rank
            if cut_rank == TOP_RANK:
                break
    return best


def opening(quoted: bool, head: str, reopen: str) -> str:
    """The text a piece starts with (after a cut).

    ``>>> `` when *quoted* (a ``>>> `` line came before the piece) and the
    piece's own text (*head*) does not start with ``>>>``, then *reopen* (a
    ``Fence.reopen``, or ``""``).
    """
    return (QUOTE if quoted and not head.startswith(">>>") else "") + reopen


_CLOSE_LINE: Final = re.compile(r"\n(`{3,}|~{3,})")
_RUN: Final = {"`": re.compile("`*"), "~": re.compile("~*")}


def join(first: str, second: str) -> str:
    """*first* and *second* as one text, without the fence close and reopen a cut added between them.

    A fence close that ends *first* and the reopen (after an added ``>>> ``)
    that starts *second* are removed, the rest is concatenated.
    For pieces cut by these rules, the result is the text they were cut from
    (apart from the opening of *first*). A close is recognised by its shape: a
    line break and a fence run at the very end of *first*, and *second* starting
    with a fence line of the same character.
    """
    # Only the last line of *first* and the first line of *second* are read: coalescing
    # joins pieces one after another, so reading (or copying) either whole would be quadratic.
    if not first.endswith(("```", "~~~")):
        return first + second
    last_line = first.rfind("\n")
    close = _CLOSE_LINE.fullmatch(first, last_line) if last_line >= 0 else None
    if close is None:
        return first + second
    marker = close.group(1)
    at = len(QUOTE) if second.startswith(QUOTE) else 0
    found = _RUN[marker[0]].match(second, at)
    run = found.end() - at if found is not None else 0
    line_end = second.find("\n", at)
    if (run == len(marker) or run == 3) and line_end > at and marker[0] not in second[at + run : line_end]:
        return first[: close.start()] + second[line_end + 1 :]
    return first + second


_FENCE_LINE: Final = re.compile(r"[ \t]*(?:>>>[ \t]+)?(?:`{3,}|~{3,})[^\s`]*[ \t]*")


def is_blank_piece(text: str) -> bool:
    """Whether *text* is an empty block: whitespace and at most two fence lines (not worth a message).

    A third fence line is the block's content (a fence run longer than a message, cut into
    pieces inside its block), which is kept: dropping it would lose text.
    """
    if "`" not in text and "~" not in text:
        return not text.strip()
    fences = 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        if not _FENCE_LINE.fullmatch(line):
            return False
        fences += 1
    return fences <= 2


_TABLE_RULE: Final = re.compile(r"-+(?:-\+-+)*")


def table_header(text: str, content_start: int, fence: Fence) -> str:
    """The header a cut inside this block repeats: its first two lines when they are a table header.

    A block opened without an info string whose second line is a rule of
    dashes (``-+-`` between columns, as ``render_table`` writes it) under a
    non-blank first line is a table: both lines, each with its line break.
    Otherwise ``""``.
    """
    if fence.opener.strip().lstrip(">").strip(" \t") != fence.marker:
        return ""
    first = text.find("\n", content_start)
    if first < 0:
        return ""
    second = text.find("\n", first + 1)
    if second < 0 or not text[content_start:first].strip():
        return ""
    if not _TABLE_RULE.fullmatch(text, first + 1, second):
        return ""
    return text[content_start : second + 1]
