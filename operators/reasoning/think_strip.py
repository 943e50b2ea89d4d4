"""Reroute ``<think>`` blocks leaked into answer text into reasoning (stage 03).

The clean path is a provider that returns reasoning in its own field. Some
OpenAI-compatible backends instead leak it into ``delta.content`` wrapped in
think tags (``<think>``, ``<mm:think>``, ``</ns:think >``; the one definition
of the tag shape is ``rxcord.operators.reasoning.tags``). This module is the
*ThinkBlockContentStripper*: a per-stream transducer that splits content into
visible text and reasoning, plus the operator that threads it through a
``ProcessedChunk`` stream.

Theory
------
A tag counts only outside markdown code: a ``<think>`` inside an inline code span or a
fenced block is text (``rxcord.operators.markdown.code_spans.CodeTracker``, fed every character
once; visible text and each block have their own tracker, so the visible text's code is
what stage 05 sees). The stripper reads the stream in one of three modes:

``START``
    Nothing has been released yet and no tag has been seen. A stream that
    *begins* with reasoning and then closes it with a stray ``</think>`` (no
    opener: the chat template put the opener in the prompt, the DeepSeek-style
    leak) must have that first stretch rerouted, but that is only known once
    the closer arrives. So the start of the stream is held back, up to
    ``start_window`` characters: a closer starting within the window sends
    everything before it to reasoning (the stray-closer rule of
    ``rxcord.operators.reasoning.tags``); an opener starting within the window
    releases everything before it as visible. When no tag can start within
    the window any more, the held text is released as visible and the mode
    becomes ``VISIBLE``. This is the *only* text that can ever be
    reclassified, which keeps the hold bounded; ``WHOLE_REPLY`` declares that
    the chat template opened the block (hold until ``</think>``).
``VISIBLE``
    Text is released at once, except a trailing fragment that could still
    grow into a tag (``"<thi"``, ``"</ns:th"``: ``partial_tag_len``). An opener
    switches to ``INSIDE``; a stray closer is removed and nothing else changes,
    because the text before it is already on its way to Discord.
``INSIDE``
    A closer returns to ``VISIBLE``; another opener inside a block is dropped,
    blocks do not nest (a model reasoning about tags must not swallow its answer).
    A block that *starts* the stream's content (nothing but whitespace before its
    opener: the leak's shape) streams to reasoning as it comes. A block opened after
    text was shown is held until its closer: if the stream ends first, the opener was
    prose, not a block, and the held text is released as the answer (the unclosed-opener
    rule). So is the rest of a starting block after a closer written as code (a
    model quoting ``</think>`` with an odd backtick): held from that closer on, released
    as the answer if no real closer comes.

Tags themselves go nowhere: neither visible nor reasoning. Removing a block
can join two visible fragments into a new tag (``"<thi" + <block> + "nk>"``);
the fragment before a removed tag is held (``_seam``) and a tag formed across
the join is removed too, so the stripper never emits a tag as prose.
A join can also merge two backtick runs (``"`"`` + tag + ``"``"``: one run of three), so
whether a tag is code is asked without settling the run before it
(``CodeTracker.tag_in_code``): the visible text's code state is that of the text as released.

At a graceful stop (``held``, ``rxcord.operators.reasoning.held_at_stop``): what is held only
because it *might* be reasoning (the start window, a partial tag) is the answer; an
open block, and a start the template opened, are reasoning.

Everything is decided by positions in the stream, never by chunk edges: the
concatenated output is the same however the backend split its deltas.
Limits: a "tag" longer than the shared hold length (64 characters, long
attribute lists) is treated as text, because a split stream could not have
held it back; a dangling ``"<thi"`` at the end of the stream is text.
"""

from __future__ import annotations

__all__ = ("DEFAULT_START_WINDOW", "WHOLE_REPLY", "ThinkStripper", "think_strip")

import enum
import functools
from collections.abc import Callable, Sequence
from typing import Final

import attrs

from rxcord.core.types import Operator, ProcessedChunk
from rxcord.operators.markdown.code_spans import CodeTracker
from rxcord.operators.reasoning.guard import reasoning_guard
from rxcord.operators.reasoning.held_at_stop import NOTHING, Held, HeldText
from rxcord.operators.reasoning.tags import (
    MAX_TAG_LEN,
    TAG_RE,
    is_closer,
    partial_tag_len,
    stray_closer_reroutes,
)

DEFAULT_START_WINDOW: Final = 256
"""Characters at the start of a stream that a stray closer can still turn into reasoning."""
WHOLE_REPLY: Final = 1 << 40
"""A start window no reply reaches: the chat template opened the block, hold until ``</think>``."""


class _Mode(enum.Enum):
    START = enum.auto()
    VISIBLE = enum.auto()
    INSIDE = enum.auto()


# Module constants: an enum member read through its class is slow on the per-chunk path.
_START: Final = _Mode.START
_VISIBLE: Final = _Mode.VISIBLE
_INSIDE: Final = _Mode.INSIDE


def _tag_at(text: str, at: int) -> str | None:
    """The reasoning tag starting at *at* (``MAX_TAG_LEN`` at most), if any."""
    match = TAG_RE.match(text, at, at + MAX_TAG_LEN)
    return None if match is None else match.group(0)


@attrs.define
class ThinkStripper:
    """Incremental, per-stream: reroutes ``<think>...</think>`` in ``delta.content`` into reasoning.

    Create one per stream. ``feed`` each content delta and ``finish`` at the
    end; both return the ``(visible, reasoning)`` text they release. The
    concatenation of all releases does not depend on how the content was cut
    into deltas.

    Examples:
        >>> stripper = ThinkStripper(start_window=0)
        >>> stripper.feed("Hi <thi")
        ('Hi ', '')
        >>> stripper.feed("nk>plan</think>there")
        ('there', 'plan')
        >>> ThinkStripper().feed("the user greets me</think>Hello!")
        ('Hello!', 'the user greets me')
        >>> ThinkStripper(start_window=0).feed("Use `<think>` tags.")
        ('Use `<think>` tags.', '')
    """

    start_window: int = DEFAULT_START_WINDOW
    """How many characters at the start of the stream are held for a possible stray closer."""
    _mode: _Mode = attrs.field(default=_Mode.START, init=False)
    _carry: str = attrs.field(default="", init=False)
    """A possible partial tag at the end of the text read, not yet classified (at most a tag's length)."""
    _start: list[str] | None = attrs.field(default=None, init=False)
    """The held start of the stream (``START``; made at its first piece, ``None`` once released: a
    snapshot may still refer to the old list, and a stream past its start holds none)."""
    _start_len: int = attrs.field(default=0, init=False)
    _block: list[str] | None = attrs.field(default=None, init=False)
    """A block's text held until its closer (a fresh list while ``_holding_block``, else ``None``)."""
    _holding_block: bool = attrs.field(default=False, init=False)
    _closer_first: bool = attrs.field(default=False, init=False)
    """The held block starts with a closer written as code (``_block[0]``): the answer starts after it."""
    _shown: bool = attrs.field(default=False, init=False)
    """Visible text other than whitespace was released: a later opener starts a held block."""
    _seam: str = attrs.field(default="", init=False)
    """The partial tag right before a removed tag: it may join the visible text after it."""
    _seam_cut: bool = attrs.field(default=False, init=False)
    """A tag was removed after the seam (else it waits for a partial tag to be decided)."""
    _code: CodeTracker = attrs.field(factory=CodeTracker, init=False)
    """Code state of the visible text."""
    _block_code: CodeTracker | None = attrs.field(default=None, init=False)
    """Code state of the open block's text (made when a block opens: most streams open none)."""

    def feed(self, text: str) -> tuple[str, str]:
        """Consume one content delta; return the ``(visible, reasoning)`` it releases."""
        if not text:
            return "", ""
        if "<" not in text and self._mode is _VISIBLE and not self._carry and not self._seam:
            # Nothing held and no tag can start here: what the loop below would release.
            self._code.feed(text)
            if not self._shown and not text.isspace():
                self._shown = True
            return text, ""
        return self._read(self._carry + text, final=False)

    def finish(self) -> tuple[str, str]:
        """The stream ended (or a non-text chunk arrived): release everything held back."""
        carry, self._carry = self._carry, ""
        visible, reasoning = self._read(carry, final=True) if carry else ("", "")
        out = [visible]
        if self._mode is _START:
            self._emit_all(self._start or (), out)
        elif self._mode is _INSIDE and self._holding_block:
            # The unclosed-opener rule: no closer came, so the held text is the answer (after a
            # closer written as code, that closer is the block's end after all).
            block = self._block or []
            if self._closer_first:
                reasoning += block[0]
                block = block[1:]
            self._release_as_answer("".join(block), out)
        self._start, self._start_len = None, 0
        self._block, self._holding_block, self._closer_first = None, False, False
        self._mode = _VISIBLE
        out.append(self._seam)
        self._seam = ""
        return "".join(out), reasoning

    def held(self) -> Held:
        """What is held now, as a graceful stop delivers it (``rxcord.operators.reasoning.held_at_stop``)."""
        mode = self._mode
        if mode is _VISIBLE:
            if not self._seam and not self._carry:
                return NOTHING  # the common case, after every chunk
            return Held(answer=self._seam + self._carry)
        if mode is _START:
            if self.start_window >= WHOLE_REPLY:
                return Held(reasoning=HeldText(self._start or [], self._carry))
            return Held(answer="".join(self._start or ()) + self._carry)
        block = self._block
        reasoning = HeldText(block, self._carry) if block is not None and self._holding_block else self._carry
        return Held(answer=self._seam, reasoning=reasoning)

    # -- reading -------------------------------------------------------------------------------------------

    def _read(self, buf: str, *, final: bool) -> tuple[str, str]:
        """Classify *buf* (the carry and the new text); keep a possible partial tag unless *final*."""
        self._carry = ""
        visible: list[str] = []
        reasoning: list[str] = []
        pos, size = 0, len(buf)
        while pos < size:
            at = buf.find("<", pos)
            end = size if at < 0 else at
            if end > pos:
                self._take(buf, pos, end, visible, reasoning)
            if at < 0:
                break
            if not final and size - at < MAX_TAG_LEN and partial_tag_len(buf[at:]) == size - at:
                self._carry = buf[at:]  # may still grow into a tag: decided by the next delta
                if self._mode is _VISIBLE:
                    self._junction(visible, cut=False)  # if it does, what comes before may join what follows
                break
            pos = self._angle(buf, at, visible, reasoning)
        return "".join(visible), "".join(reasoning)

    def _angle(self, buf: str, at: int, visible: list[str], reasoning: list[str]) -> int:
        """Read the ``<`` at *at* (a tag outside code changes the mode, else text); return where to go on."""
        tag = _tag_at(buf, at)
        tracker = self._block_code if self._mode is _INSIDE else self._code
        assert tracker is not None  # INSIDE only after _open_block, which makes it
        if tag is None or tracker.tag_in_code():
            if tag is not None and self._mode is _INSIDE and is_closer(tag) and not self._holding_block:
                # A closer written as code in a starting block: hold after it (see the module docstring).
                tracker.feed(tag)
                self._holding_block, self._closer_first = True, True
                self._block = [tag]
                return at + len(tag)
            self._take(buf, at, at + 1, visible, reasoning)
            return at + 1
        if self._mode is _INSIDE:
            if is_closer(tag):
                if self._holding_block:
                    reasoning.extend(self._block or ())
                    self._block, self._holding_block = None, False
                self._closer_first = False
                self._mode = _VISIBLE
            # else: an opener inside a block is dropped (blocks do not nest).
        elif not is_closer(tag):
            if self._mode is _START:
                self._release_start(visible)
            self._open_block(visible)
        elif self._mode is _START and stray_closer_reroutes(self._start_len, self.start_window):
            # The stray-closer rule: the held start was reasoning. Its code is not the answer's.
            reasoning.extend(self._start or ())
            self._start, self._start_len = None, 0
            self._code = CodeTracker()
            self._mode = _VISIBLE
        else:
            self._junction(visible)  # a stray closer after shown text is only removed
        return at + len(tag)

    def _take(self, buf: str, start: int, end: int, visible: list[str], reasoning: list[str]) -> None:
        """Text ``buf[start:end]`` (no tag in it) goes where the mode sends it."""
        piece = buf[start:end]
        mode = self._mode
        if mode is _INSIDE:
            block_code = self._block_code
            assert block_code is not None  # INSIDE only after _open_block, which makes it
            block_code.feed(piece)
            block = self._block
            # A held block always has its list (``_open_block``, a closer written as code).
            (block if block is not None and self._holding_block else reasoning).append(piece)
            return
        self._code.feed(piece)
        if mode is _START:
            held = self._start
            if held is None:
                self._start = [piece]
            else:
                held.append(piece)
            self._start_len += end - start
            if self._start_len > self.start_window:
                self._release_start(visible)  # no tag can start inside the window any more
            return
        self._emit(piece, visible)

    def _release_start(self, visible: list[str]) -> None:
        self._mode = _VISIBLE
        self._emit_all(self._start or (), visible)
        self._start, self._start_len = None, 0

    def _open_block(self, visible: list[str]) -> None:
        self._junction(visible)
        self._mode = _INSIDE
        self._holding_block, self._closer_first = self._shown, False
        self._block = [] if self._shown else None
        self._block_code = CodeTracker(line_start=self._code.at_line_start)

    # -- visible text and the seam ---------------------------------------------------------------------------

    def _emit_all(self, pieces: Sequence[str], out: list[str]) -> None:
        for piece in pieces:
            self._emit(piece, out)

    def _release_as_answer(self, text: str, out: list[str]) -> None:
        """Held block text becomes the answer: read on as visible text, its tags outside code dropped."""
        code = self._code
        pos = 0
        while (at := text.find("<", pos)) >= 0:
            piece = text[pos:at]
            code.feed(piece)
            self._emit(piece, out)
            tag = _tag_at(text, at)
            if tag is not None and not code.tag_in_code():
                self._junction(out)
                pos = at + len(tag)
                continue
            code.feed("<")
            self._emit("<", out)
            pos = at + 1
        piece = text[pos:]
        code.feed(piece)
        self._emit(piece, out)

    def _emit(self, piece: str, out: list[str]) -> None:
        """Release visible *piece*; right after a removed tag, first remove a tag the join forms."""
        if not piece:
            return
        if not self._shown and not piece.isspace():
            self._shown = True
        if not self._seam:
            out.append(piece)
            return
        if not self._seam_cut:
            # Held only in case a tag followed: none did, so the seam and *piece* were adjacent text.
            out.append(self._seam)
            out.append(piece)
            self._seam = ""
            return
        joined = self._seam + piece
        edge = len(self._seam)
        self._seam = ""
        while (found := self._joined_tag(joined, edge)) is not None:
            start, end = found
            joined = joined[:start] + joined[end:]
            edge = start
        undecided = _undecided_from(joined)
        if undecided < edge:
            self._seam = joined[undecided:]  # still a possible tag across the join
            joined = joined[:undecided]
        out.append(joined)

    @staticmethod
    def _joined_tag(text: str, edge: int) -> tuple[int, int] | None:
        """The last tag starting before *edge* (in the seam) and ending after it: one the join formed."""
        low = max(0, edge - MAX_TAG_LEN)
        at = text.rfind("<", low, edge)
        while at >= 0:
            tag = _tag_at(text, at)
            if tag is not None and at + len(tag) > edge:
                return at, at + len(tag)
            at = text.rfind("<", low, at)
        return None

    def _junction(self, visible: list[str], *, cut: bool = True) -> None:
        """A tag is removed from the visible text (*cut*), or may be: hold what could join what follows.

        Not *cut*: a partial tag follows, undecided; if it becomes a tag, the seam joins.
        """
        if self._seam:
            self._seam_cut = self._seam_cut or cut
            return  # the seam already ends the visible text
        self._seam_cut = cut
        tail: list[str] = []
        size = 0
        while visible and size < MAX_TAG_LEN:
            piece = visible.pop()
            tail.append(piece)
            size += len(piece)
        text = "".join(reversed(tail))
        start = _undecided_from(text)
        if start:
            visible.append(text[:start])
        self._seam = text[start:]


def _undecided_from(text: str) -> int:
    """Where the suffix of *text* starts that removing a tag right after it could turn into a tag.

    A partial tag (``"<thi"``), extended left over earlier ``<`` runs without ``>`` or a
    backtick (``"<th<thi"``: removing one joined tag can form another), within ``MAX_TAG_LEN``.
    """
    size = len(text)
    held = partial_tag_len(text)
    if not held:
        return size
    start = size - held
    low = max(0, size - MAX_TAG_LEN)
    # The first ``<`` after the last ``>`` or backtick before the partial tag (C-speed searches).
    barrier = max(text.rfind(">", low, start), text.rfind("`", low, start))
    first = text.find("<", max(low, barrier + 1), start)
    return start if first < 0 else first


def think_strip(
    *, start_window: int = DEFAULT_START_WINDOW, note_held: bool = False
) -> Operator[ProcessedChunk, ProcessedChunk]:
    """Reroute think blocks in ``text`` chunks' content into their ``thoughts``.

    Each text chunk leaves with ``content`` set to its visible part and the
    reasoning part appended to ``thoughts`` as a ``RAW`` entry; every other
    field is kept, and a chunk whose content is entirely held back still
    passes (with empty content). Anything held back is released as an extra
    text chunk just *before* a non-text chunk (which then passes unchanged)
    and at completion. Errors pass through; held text is then dropped.

    .. marble::
        -a-----b-----d-|      a="Hi <thi"  b="nk>plan</thi"  d=done   (start_window=0)
        [   think_strip()   ]
        -A-----B-----(X,d)-|  A="Hi "  B=""  X="plan</thi"   (an opener after "Hi ", never closed)

    Args:
        start_window: Characters at the start of each stream held back in case
            a stray closer turns them into reasoning (see the module docstring).
        note_held: Note what is held on each chunk, so a graceful stop delivers it
            (``rxcord.operators.reasoning.held_at_stop``; the pipeline turns it on).

    Returns:
        An operator; a fresh ``ThinkStripper`` is created for every subscription.
    """
    return reasoning_guard(_stripper_factory(start_window), name="think_strip", note_held=note_held)


@functools.lru_cache(maxsize=16)
def _stripper_factory(start_window: int) -> Callable[[], ThinkStripper]:
    """One factory per start window, so the guard's value is shared by every stream (``reasoning_guard``)."""
    if start_window == DEFAULT_START_WINDOW:
        return ThinkStripper
    return functools.partial(ThinkStripper, start_window=start_window)
