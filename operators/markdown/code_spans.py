"""Where markdown code is, read incrementally: a ``<think>`` written as code is text (stage 03).

Answers about reasoning models show the tags themselves (``Use `<think>` tags``, a fenced
example of a transcript). The think-tag stripper must read those as text, and decide so
from the characters before the tag alone, whatever the chunking: ``CodeTracker`` is fed
the text once, left to right, in pieces of any size, and says whether the next character
is inside code. It holds no text back: a backtick run's length is settled by the first
character after it, so a ``<`` (never a backtick) always finds it settled.

The rules are the markdown scanner's (``rxcord.operators.markdown.scan``, which stage 05
cuts by), so stage 03 and stage 05 agree on what is code:

* **Inline code**: a backtick run of any length opens a span; the span closes at the next
  run of exactly that length (CommonMark). A blank line ends a span never closed (spans do
  not cross paragraphs): the text up to it counts as code, since a stream cannot wait for
  the paragraph's end to learn that the run was a literal backtick.
* **Fenced blocks**: a line starting (after any indentation) with three or more backticks
  or tildes opens a block; for backticks, only when no backtick follows on that line (else
  it was an inline run, as CommonMark reads it). The block closes at a line holding a run
  of the same character at least as long and nothing else; an unclosed block runs to the
  end. A fence line closes an inline span left open (a block starts a new paragraph).

Work is a regular-expression jump to the next backtick run, tilde run or line break, plus
constant work there: linear in the text, with no rescan. Text fed is kept as one string (at
most ``BATCH`` characters, then read) and read when the state is asked for, so a chunk costs
a short copy, and a stream between chunks holds no list.
"""

from __future__ import annotations

__all__ = ("BATCH", "CodeTracker")

import re
from typing import Final

_MARKS: Final = re.compile(r"\n|`+|~+")
"""What changes the code state: a line break, a backtick or tilde run (other text only ends a run)."""
_FENCE_MIN: Final = 3
BATCH: Final = 256
"""Characters kept before they are read: bounded memory and copying, and the per-call cost paid
once per batch (about as often as per 64 pieces of a few characters)."""


class CodeTracker:
    """Incremental code state of one text (see the module docstring). Create one per text."""

    __slots__ = (
        "_candidate",
        "_closing",
        "_fence_char",
        "_fence_len",
        "_line_start",
        "_pieces",
        "_run",
        "_run_at_start",
        "_run_char",
        "_span",
    )

    def __init__(self, *, line_start: bool = True) -> None:
        self._pieces: str | None = None
        """Text fed and not read yet, joined (under ``BATCH`` characters; ``None``: none)."""
        self._span = 0
        """Length of the open inline span's backtick run (0: none)."""
        self._fence_char = ""
        """The open fenced block's character ("": none)."""
        self._fence_len = 0
        self._line_start = line_start
        """Only whitespace so far on the current line."""
        self._run = 0
        """Length of the backtick or tilde run being read (settled by the next other character)."""
        self._run_char = ""
        self._run_at_start = False
        self._candidate = False
        """The open span was opened by a fence-length run at a line start: a block if the line ends clean."""
        self._closing = False
        """Inside a block: this line so far is a closing fence line."""

    @property
    def at_line_start(self) -> bool:
        """Whether only whitespace was read since the last line break (or the start)."""
        self._catch_up()
        return self._line_start and not self._run

    def in_code(self) -> bool:
        """Whether a character read next, other than a backtick, tilde or line break, is inside code."""
        self._catch_up()
        if self._run:
            self._settle()
        return bool(self._span or self._fence_char)

    def tag_in_code(self) -> bool:
        """Whether a tag read next is inside code, leaving a backtick or tilde run before it unsettled.

        ``in_code`` settles the run (the next character ends it); a tag the caller then removes
        never reaches the text, so the run goes on with what follows it (``"`"`` + tag + ``"``"``
        is one run of three as stage 05 reads it). The answer is the settled state's; the state
        stays as it was, and the next character fed settles or extends the run.
        """
        self._catch_up()
        if not self._run:
            return bool(self._span or self._fence_char)
        kept = (self._run, self._line_start, self._span, self._candidate, self._fence_char, self._fence_len)
        closing = self._closing
        self._settle()
        inside = bool(self._span or self._fence_char)
        self._run, self._line_start, self._span, self._candidate, self._fence_char, self._fence_len = kept
        self._closing = closing
        return inside

    def feed(self, text: str) -> None:
        """Read *text*: kept, and read with the text before it when the state is asked for.

        Also once ``BATCH`` characters are kept: per chunk, the cost is a copy of fewer than
        ``BATCH`` characters and *text*.
        """
        pieces = self._pieces
        if pieces is not None:
            text = pieces + text
        if len(text) >= BATCH:
            self._pieces = None
            self._read(text)
        else:
            self._pieces = text

    def _catch_up(self) -> None:
        pieces = self._pieces
        if pieces:
            self._pieces = None
            self._read(pieces)

    def _read(self, text: str) -> None:
        stop = len(text)
        search = _MARKS.search
        pos = 0
        while True:
            match = search(text, pos, stop)
            mark = stop if match is None else match.start()
            if mark > pos and (self._run or self._line_start or self._closing):
                self._plain(text, pos, mark)  # else plain text changes nothing
            if match is None:
                return
            pos = match.end()
            char = text[mark]
            if char == "\n":
                if self._run or self._span or self._fence_char:
                    self._newline()
                else:
                    self._line_start = True  # in prose a line break only starts a line
                continue
            if self._run and self._run_char != char:
                self._settle()
            if not self._run:
                self._run_char = char
                self._run_at_start = self._line_start
            self._run += pos - mark

    def _plain(self, text: str, start: int, end: int) -> None:
        """Characters that are not marks: they settle a run; anything but whitespace ends the line start."""
        if self._run:
            self._settle()
        if self._line_start or self._closing:
            piece = text[start:end]
            if not piece.isspace():
                self._line_start = False
                self._closing = False

    def _settle(self) -> None:
        """The run being read has ended: apply it."""
        char, length, at_start = self._run_char, self._run, self._run_at_start
        self._run = 0
        self._line_start = False
        if self._fence_char:
            self._closing = at_start and char == self._fence_char and length >= self._fence_len
            return
        if at_start and length >= _FENCE_MIN:
            # A fence line starts a new block: an inline span left open ends here.
            if char == "~":
                self._span = 0
                self._fence_char, self._fence_len = "~", length
            else:
                self._span, self._candidate = length, True
            return
        if char != "`":
            return
        if not self._span:
            self._span = length
        elif self._span == length:
            self._span, self._candidate = 0, False
        else:
            self._candidate = False  # a backtick in the info string: not a fence line

    def _newline(self) -> None:
        if self._run:
            self._settle()
        if self._fence_char:
            if self._closing:
                self._fence_char, self._fence_len = "", 0
        elif self._span:
            if self._candidate:
                self._fence_char, self._fence_len = "`", self._span
                self._span = 0
            elif self._line_start:
                self._span = 0  # a blank line: the paragraph ends, and a span never closed with it
        self._candidate = self._closing = False
        self._line_start = True
