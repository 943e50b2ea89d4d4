"""Render modifiers of the humanizer (stage 06): lowercase, sentence and punctuation splits.

The delivery modes: *Force Lowercase* applies in both delivery modes;
*Sentence Splitting* and *Punctuation Splits* turn one segment into several
Discord messages and therefore only make sense while streaming live.

Every transform here works on *prose* only. ``split_code`` and
``protected_spans`` find what must never change: fenced and inline code,
URLs (bare and ``<...>``), Discord tokens (``<@id>``, ``<#id>``, ``<:name:id>``,
``<t:...>``, ``</cmd:id>``) and raw ``@name`` mentions, whose case a
caller-provided resolver may depend on.

Code is read the way CommonMark and Discord read it: a run of three or more
backticks opens a fenced block that the next run of three or more closes (an
unclosed fence runs to the end of the text); a run of one or two backticks
opens an inline span closed by the next run of exactly the same length, and
is a literal backtick when no such run follows.

All functions are pure; randomness comes only from the ``random.Random``
passed in (seeded from ``RenderModifiers.seed`` once per stream).
"""

from __future__ import annotations

__all__ = (
    "COMMA_SPLIT_P",
    "EMPHASIS_SPLIT_P",
    "SEMICOLON_SPLIT_P",
    "apply_render",
    "force_lowercase",
    "protected_spans",
    "punctuation_roll",
    "split_code",
    "split_sentences",
)

import bisect
import random
import re
from typing import Final

from rxcord.core.config import RenderModifiers

COMMA_SPLIT_P: Final = 0.35
"""Chance that a comma followed by whitespace ends the message (the comma is dropped, texting style)."""
SEMICOLON_SPLIT_P: Final = 0.35
"""Chance that a stripped clause semicolon ends the message instead of just disappearing."""
EMPHASIS_SPLIT_P: Final = 0.5
"""Chance that ``!`` or ``?`` followed by whitespace ends the message (the mark stays on the left)."""

_BACKTICKS: Final = re.compile(r"`+")

_DISCORD_TOKEN = r"<(?:@[!&]?\d+|#\d+|a?:\w+:\d+|t:-?\d+(?::[tTdDfFsSR])?|/[\w\- ]+:\d+|id:[\w\-]+(?::\d+)?)>"
_SCHEME = r"[A-Za-z][A-Za-z0-9+.\-]*://"
_ANGLE_URL = r"<" + _SCHEME + r"[^\s<>]+>"
# A bare URL keeps balanced parentheses (Wikipedia) but not trailing sentence punctuation or markdown.
_BARE_URL = (
    r"(?<![\w+.\-])"
    + _SCHEME
    + r"(?:[^\s<>()`]|\([^\s<>()`]*\))*(?:[^\s<>()`.,;:!?'\"*_~|\]]|\([^\s<>()`]*\))"
)
_AT_NAME = r"(?<![\w@])@[\w.\-]*\w"

_TOKEN_RE: Final = re.compile("|".join((_DISCORD_TOKEN, _ANGLE_URL, _BARE_URL)))
_TOKEN_OR_AT_RE: Final = re.compile("|".join((_DISCORD_TOKEN, _ANGLE_URL, _BARE_URL, _AT_NAME)))

_TERMINATORS: Final = ".!?…"
_CLOSERS: Final = "\"'”’»)]*_~|"
_OPENERS: Final = "\"'“‘«([*_~|"
_ABBREVIATIONS: Final = frozenset(
    {
        "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "ca", "mr", "mrs", "ms", "dr", "prof",
        "sr", "jr", "st", "inc", "ltd", "co", "dept", "esp", "viz",
    }
)  # fmt: skip
"""Words (without their final dot) after which a ``.`` does not end a sentence."""
_NUMBER_ABBREVIATIONS: Final = frozenset({"no", "nr", "vol", "p", "pp", "fig", "ch", "sec"})
"""Abbreviations only when a number follows (``No. 5``); otherwise ``no.`` ends a sentence."""
_DOTTED: Final = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]")
_WHITESPACE: Final = re.compile(r"\s+")


def split_code(text: str) -> list[tuple[str, bool]]:
    """Split *text* into ``(piece, is_code)`` pieces whose concatenation is *text*.

    Code pieces include their backtick delimiters. Adjacent prose is merged,
    so prose and code alternate.
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text)]
    # next_close[k]: index of the first run after k that closes a span opened by run k (-1: none).
    next_close = [-1] * len(runs)
    seen: dict[int, int] = {}  # run length class (1, 2 or 3 for "three or more") -> nearest later run
    for k in range(len(runs) - 1, -1, -1):
        length = min(runs[k][1] - runs[k][0], 3)
        next_close[k] = seen.get(length, -1)
        seen[length] = k
    pieces: list[tuple[str, bool]] = []
    prose_from = 0
    k = 0
    while k < len(runs):
        start, end = runs[k]
        close = next_close[k]
        if close < 0 and end - start < 3:
            k += 1  # a literal backtick: stays in prose
            continue
        code_end = runs[close][1] if close >= 0 else len(text)
        if start > prose_from:
            pieces.append((text[prose_from:start], False))
        pieces.append((text[start:code_end], True))
        prose_from = code_end
        if close < 0:
            break
        k = close + 1
    if prose_from < len(text):
        pieces.append((text[prose_from:], False))
    return pieces


def protected_spans(text: str, *, at_names: bool = True) -> list[tuple[int, int]]:
    """Sorted, disjoint ``(start, end)`` spans of *text* that render modifiers never touch.

    Code, URLs and Discord tokens; with *at_names*, also raw ``@name`` mentions.
    """
    token_re = _TOKEN_OR_AT_RE if at_names else _TOKEN_RE
    spans: list[tuple[int, int]] = []
    pos = 0
    for piece, is_code in split_code(text):
        if is_code:
            spans.append((pos, pos + len(piece)))
        else:
            spans.extend((pos + m.start(), pos + m.end()) for m in token_re.finditer(piece))
        pos += len(piece)
    return spans


class _Protected:
    """Membership test for positions inside protected spans (binary search over the spans)."""

    __slots__ = ("_ends", "_starts")

    def __init__(self, spans: list[tuple[int, int]]) -> None:
        self._starts = [s for s, _ in spans]
        self._ends = [e for _, e in spans]

    def __contains__(self, pos: int) -> bool:
        i = bisect.bisect_right(self._starts, pos) - 1
        return i >= 0 and pos < self._ends[i]


def force_lowercase(text: str) -> str:
    """Lowercase the prose of *text*; code, URLs, mentions and custom emoji keep their case."""
    out: list[str] = []
    pos = 0
    for start, end in protected_spans(text):
        out.append(text[pos:start].lower())
        out.append(text[start:end])
        pos = end
    out.append(text[pos:].lower())
    return "".join(out)


def _word_before(text: str, end: int) -> tuple[str, int]:
    """The whitespace-delimited word ending at *end*, without opening punctuation, and its start."""
    start = end
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    word = text[start:end]
    stripped = word.lstrip(_OPENERS)
    return stripped, start + (len(word) - len(stripped))


def _terminator_before(text: str, end: int, protected: _Protected) -> tuple[int, int] | None:
    """The span of sentence-ending punctuation right before *end* (skipping closers), if any."""
    j = end
    while j > 0 and text[j - 1] in _CLOSERS and (j - 1) not in protected:
        j -= 1
    k = j
    while k > 0 and text[k - 1] in _TERMINATORS and (k - 1) not in protected:
        k -= 1
    return (k, j) if k < j else None


def _ends_sentence(text: str, ws_start: int, ws_end: int, protected: _Protected) -> bool:
    """Whether the prose before the whitespace run at *ws_start* ends a sentence."""
    found = _terminator_before(text, ws_start, protected)
    if found is None:
        return False
    mark_start, mark_end = found
    if text[mark_start:mark_end] != ".":
        return True  # "!", "?", "...", "?!" always end a sentence
    word, word_start = _word_before(text, mark_start)
    lowered = word.lower()
    if lowered in _ABBREVIATIONS or _DOTTED.fullmatch(word):
        return False
    if lowered in _NUMBER_ABBREVIATIONS and ws_end < len(text) and text[ws_end].isdigit():
        return False
    if len(word) == 1 and word.isalpha() and word.isupper() and word != "I":
        return False  # an initial: "J. Smith"
    # An ordered-list marker ("1. Step") does not end a sentence.
    return not (word.isdigit() and _at_line_start(text, word_start))


def _at_line_start(text: str, i: int) -> bool:
    """Whether only spaces and tabs stand between the start of its line and ``text[i]``.

    Read backwards only to the first other character: ``1. 1. 1. …`` on one line would
    otherwise re-read the line for every number.
    """
    j = i
    while j > 0 and text[j - 1] in " \t":
        j -= 1
    return j == 0 or text[j - 1] == "\n"


def split_sentences(text: str) -> list[str]:
    """Split *text* into sentence messages.

    A split happens at a whitespace run after sentence-ending punctuation
    (``.``, ``!``, ``?``, ``…``, optionally followed by closing quotes,
    brackets or markdown emphasis) and at paragraph breaks (a blank line).
    Never inside code, URLs or Discord tokens, never in decimals (``3.14``:
    no whitespace), after abbreviations (``e.g.``, ``Dr.``, dotted forms like
    ``U.S.``, ``No.`` before a number), single-capital initials, or
    ordered-list markers (``1.`` at a line start).

    Whitespace: the whitespace run at each split point, and whitespace at the
    start and end of *text*, is dropped; everything else is kept, so joining
    the pieces with the dropped whitespace gives back *text*. Returns no
    pieces for whitespace-only text.
    """
    protected = _Protected(protected_spans(text, at_names=False))
    pieces: list[str] = []
    pos = 0
    for match in _WHITESPACE.finditer(text):
        start, end = match.span()
        if start == 0 or end == len(text) or start in protected:
            continue
        if match.group().count("\n") >= 2 or _ends_sentence(text, start, end, protected):
            pieces.append(text[pos:start])
            pos = end
    pieces.append(text[pos:])
    return [piece for piece in (p.strip() for p in pieces) if piece]


def punctuation_roll(text: str, rng: random.Random) -> list[str]:
    """Apply *Punctuation Splits* to *text*, drawing rolls from *rng*.

    Rules, applied to prose only (never code, URLs or Discord tokens), in
    text order with exactly one ``rng.random()`` draw per candidate:

    - a clause semicolon (a run of ``;`` followed by whitespace or the end) is
      always stripped; with ``SEMICOLON_SPLIT_P`` the message also ends there;
      a winking ``;)`` is not a clause semicolon;
    - a comma (run) followed by whitespace ends the message with
      ``COMMA_SPLIT_P``, and the commas are then dropped;
    - ``!`` or ``?`` (with any closers) followed by whitespace ends the message
      with ``EMPHASIS_SPLIT_P``; the mark stays at the end of the left piece.

    The whitespace at a split is dropped; pieces are stripped and never empty.
    """
    protected = _Protected(protected_spans(text, at_names=False))
    out: list[str] = []
    current: list[str] = []
    pos = 0

    def cut(upto: int, resume: int) -> None:
        nonlocal pos
        current.append(text[pos:upto])
        out.append("".join(current))
        current.clear()
        pos = resume

    i = 0
    while i < len(text):
        char = text[i]
        if char not in ";,!?" or i in protected:
            i += 1
            continue
        mark_end = i + 1
        marks = ";" if char == ";" else "," if char == "," else "!?" + _CLOSERS
        while mark_end < len(text) and text[mark_end] in marks and mark_end not in protected:
            mark_end += 1
        ws = _WHITESPACE.match(text, mark_end)
        if char == ";" and (ws or mark_end == len(text)):
            resume = ws.end() if ws else mark_end
            if rng.random() < SEMICOLON_SPLIT_P:
                cut(i, resume)
            else:
                current.append(text[pos:i])
                pos = mark_end
            i = resume
        elif char == "," and ws:
            if rng.random() < COMMA_SPLIT_P:
                # Dropping the comma would leave a semicolon right before the cut: a clause one.
                start = i
                while start > pos and text[start - 1] == ";" and start - 1 not in protected:
                    start -= 1
                cut(start, ws.end())
            i = ws.end()
        elif char in "!?" and ws:
            if rng.random() < EMPHASIS_SPLIT_P:
                cut(mark_end, ws.end())
            i = ws.end()
        else:
            i = mark_end
    current.append(text[pos:])
    out.append("".join(current))
    return [piece for piece in (p.strip() for p in out) if piece]


def apply_render(text: str, modifiers: RenderModifiers, *, live: bool, rng: random.Random) -> list[str]:
    """Apply the render *modifiers* to one cleaned segment text; returns the messages to send.

    Force Lowercase applies in both delivery modes; Sentence Splitting and
    Punctuation Splits only when *live* (they need live delivery, as pacing
    does). Blank pieces are dropped, so a blank *text* gives ``[]``.
    """
    pieces = [text]
    if live and modifiers.sentence_splitting:
        pieces = [sentence for piece in pieces for sentence in split_sentences(piece)]
    if live and modifiers.punctuation_splits:
        pieces = [part for piece in pieces for part in punctuation_roll(piece, rng)]
    if modifiers.force_lowercase:
        pieces = [force_lowercase(piece) for piece in pieces]
    return [piece for piece in pieces if piece.strip()]
