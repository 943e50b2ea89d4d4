"""Grapheme clusters and display width: where text may be cut without breaking a character.

A compact form of the Unicode rules (UAX #29) that matter for chat text, and
the column count of text in a monospace font (for aligned tables). Used by
the markdown scanner, the message splitter and the table renderer.
"""

from __future__ import annotations

__all__ = ("ZWJ", "display_width", "is_extend", "is_grapheme_boundary")

import unicodedata
from typing import Final

ZWJ: Final = "\u200d"
"""Zero-width joiner."""


def is_extend(c: str) -> bool:
    """Whether *c* continues the grapheme cluster before it (combining mark, ZWJ, selector, modifier)."""
    o = ord(c)
    if o < 0x300:
        return False
    if c in "\u200c\u200d" or 0xFE00 <= o <= 0xFE0F or 0x1F3FB <= o <= 0x1F3FF or 0xE0020 <= o <= 0xE007F:
        return True
    return unicodedata.category(c) in ("Mn", "Me", "Mc")


def _is_ri(c: str) -> bool:
    return 0x1F1E6 <= ord(c) <= 0x1F1FF


def _hangul(c: str) -> str:
    o = ord(c)
    if 0x1100 <= o <= 0x115F or 0xA960 <= o <= 0xA97C:
        return "L"
    if 0x1160 <= o <= 0x11A7 or 0xD7B0 <= o <= 0xD7C6:
        return "V"
    if 0x11A8 <= o <= 0x11FF or 0xD7CB <= o <= 0xD7FB:
        return "T"
    if 0xAC00 <= o <= 0xD7A3:
        return "LV" if (o - 0xAC00) % 28 == 0 else "LVT"
    return ""


def is_grapheme_boundary(text: str, i: int, lo: int = 0) -> bool:
    """Whether a cut between ``text[i - 1]`` and ``text[i]`` keeps every grapheme cluster whole.

    A compact form of the Unicode rules (UAX #29) that matter for chat text:
    CR LF (a line break is always a cluster of its own), combining marks and
    other extenders, spacing marks, anything after a zero-width joiner (emoji
    ZWJ sequences; a space after one may still be cut), regional-indicator
    pairs (flags) and Hangul syllable sequences. The ends of the text are
    boundaries.

    Regional indicators pair up from the start of their run, or from *lo* when the
    run starts before it: a splitter passes the start of the message it cuts (itself
    a boundary), so a long run of flags is not re-read from its start for every
    message.
    """
    if i <= 0 or i >= len(text):
        return True
    a, b = text[i - 1], text[i]
    if a == "\r" and b == "\n":
        return False
    if a in "\r\n" or b in "\r\n":
        # Line breaks are clusters of their own, even before a combining mark.
        return True
    if is_extend(b):
        return False
    if a == ZWJ and not b.isspace():
        return False
    if _is_ri(a) and _is_ri(b):
        run = 0
        j = i - 1
        while j >= lo and _is_ri(text[j]):
            run += 1
            j -= 1
        return run % 2 == 0
    ha = _hangul(a)
    if ha:
        hb = _hangul(b)
        if ha == "L" and hb in ("L", "V", "LV", "LVT"):
            return False
        if ha in ("LV", "V") and hb in ("V", "T"):
            return False
        if ha in ("LVT", "T") and hb == "T":
            return False
    return True


def display_width(text: str) -> int:
    """Columns *text* takes in a monospace font: wide East Asian characters count 2, marks 0."""
    width = 0
    for c in text:
        if is_extend(c) or unicodedata.category(c) == "Cf":
            continue
        width += 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1
    return width
