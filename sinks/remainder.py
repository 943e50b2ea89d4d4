"""What of a text some messages already show (edit mode's committed messages, pure).

When edit-in-place delivery cannot edit a message any more (Discord's answer to its create
was ambiguous and the message could not be found), that message and the ones before it are
committed: they keep what they show, and the rest of the text goes into new messages. The
committed messages are pieces of ``split_message`` of an earlier snapshot of the text, so
they are matched against the text the way the splitter cuts: whitespace is not compared
(the splitter drops it at cuts, Discord trims it), a fence close at the end of a piece and
the reopened fence or ``>>> `` at the start of the next one are the splitter's repairs, not
text. Where a piece stops matching (the snapshot showed something the final text does not),
the rest starts at the last character that matched: nothing of the text is left out, at
worst a few characters the committed piece showed appear twice.

Linear: one pass over the text and the pieces, one pass over the matched text for its
fences.
"""

from __future__ import annotations

__all__ = ("remainder",)

import re
from collections.abc import Sequence
from typing import Final

from rxcord.operators.markdown.cut_policy import QUOTE, opening

_FENCE_LINE: Final = re.compile(r"[ ]{0,3}(`{3,}|~{3,})([^\n]*)")
_CLOSER: Final = re.compile(r"\s*(`{3,}|~{3,})\s*")
_QUOTE_LINE: Final = re.compile(r"[ ]{0,3}>>>(?: |$)")


def remainder(text: str, shown: Sequence[str]) -> str:
    """The part of *text* after what the messages *shown* show (their order is the text's).

    An open code block at the cut point is reopened (its opening line starts the rest), and
    after a ``>>> `` line the rest starts with ``>>> `` again, as the splitter would start the
    next message (``rxcord.operators.markdown.cut_policy.opening``).
    """
    position = 0
    for piece in shown:
        position, matched = _match_piece(text, position, piece)
        if not matched:
            break
    rest = text[position:].lstrip()
    if not rest:
        return ""
    opener, quoted = _state_at(text, position)
    reopen = f"{opener}\n" if opener is not None and not _CLOSER.fullmatch(rest) else ""
    return opening(quoted, rest[:3], reopen) + rest


def _match_piece(text: str, start: int, piece: str) -> tuple[int, bool]:
    """How far *piece* matches *text* from *start*, and whether it matched to its end."""
    i = _skip_space(text, start)
    j = _skip_space(piece, 0)
    j = _skip_repairs(text, i, piece, j)
    n, m = len(text), len(piece)
    while j < m:
        if piece[j].isspace():
            j += 1
            continue
        i = _skip_space(text, i)
        if i < n and text[i] == piece[j]:
            i += 1
            j += 1
            continue
        # The splitter's close of a block cut inside it ends the piece: it is not text.
        return i, _CLOSER.fullmatch(piece, j) is not None
    return i, True


def _skip_repairs(text: str, i: int, piece: str, j: int) -> int:
    """Skip a ``>>> `` and a reopened fence line the splitter put at the start of *piece*."""
    if piece.startswith(QUOTE, j) and not text.startswith(QUOTE.strip(), i):
        j = _skip_space(piece, j + len(QUOTE))
    line = _FENCE_LINE.match(piece, j)
    if line is not None:
        end = line.end()
        if not text.startswith(piece[j:end].strip(), i):
            j = _skip_space(piece, end)
    return j


def _skip_space(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


def _state_at(text: str, end: int) -> tuple[str | None, bool]:
    """The state of *text* at *end*: the open fenced block's opening line, and a quote.

    The opening line is ``None`` outside a block; the flag says whether a ``>>> `` line (a
    quote to the end of the message) came before.
    """
    opener: str | None = None
    quoted = False
    marker = ""
    start = 0
    while start < end:
        stop = text.find("\n", start)
        line_end = len(text) if stop < 0 else stop
        line = _FENCE_LINE.fullmatch(text, start, line_end)
        # Only a whole line shown opens a block: a cut inside the opening line leaves the
        # rest of that line (and the block) to the rest of the text.
        if line is not None and line_end <= end:
            run, info = line.group(1), line.group(2)
            if opener is None:
                if not (run[0] == "`" and "`" in info):
                    opener, marker = text[start:line_end].strip(), run
            elif run[0] == marker[0] and len(run) >= len(marker) and not info.strip():
                opener = None
        elif opener is None and _QUOTE_LINE.match(text, start, line_end) is not None:
            quoted = True
        start = line_end + 1
    return opener, quoted
