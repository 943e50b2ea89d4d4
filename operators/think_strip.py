"""Reroute ``<think>`` blocks leaked into answer text into reasoning (stage 03).

The clean path is a provider that returns reasoning in its own field. Some
OpenAI-compatible backends instead leak it into ``delta.content`` wrapped in
think tags (``<think>``, ``<mm:think>``, ``</ns:think >``; the one definition
of the tag shape is ``rxcord.operators.reasoning_tags``). This module is the seed's
*ThinkBlockContentStripper*: a per-stream transducer that splits content into
visible text and reasoning, plus the operator that threads it through a
``ProcessedChunk`` stream.

Theory
------
The stripper reads the stream in one of three modes:

``START``
    Nothing has been released yet and no tag has been seen. A stream that
    *begins* with reasoning and then closes it with a stray ``</think>`` (no
    opener: the chat template put the opener in the prompt, the DeepSeek-style
    leak) must have that first stretch rerouted, but that is only known once
    the closer arrives. So the start of the stream is held back, up to
    ``start_window`` characters: a closer starting within the window sends
    everything before it to reasoning (the stray-closer rule of
    ``rxcord.operators.reasoning_tags``); an opener starting within the window
    releases everything before it as visible. When no tag can start within
    the window any more, the held text is released as visible and the mode
    becomes ``VISIBLE``. This is the *only* text that can ever be
    reclassified, which keeps the hold bounded; the window is a per-model
    knob (``0`` disables the hold, a large value catches long leaks at the
    cost of first-text latency).
``VISIBLE``
    Text is released at once, except a trailing fragment that could still
    grow into a tag (``"<thi"``, ``"</ns:th"``: ``partial_tag_len``). An opener
    switches to ``INSIDE``; a stray closer is removed and nothing else changes,
    because the text before it is already on its way to Discord.
``INSIDE``
    Text goes to reasoning (same partial-tag hold). A closer returns to
    ``VISIBLE``; another opener inside a block is dropped, blocks do not nest
    (as in ``split_think_blocks``: a model reasoning about tags must not
    swallow its answer).

Tags themselves go nowhere: neither visible nor reasoning. Removing a block
can join two visible fragments into a new tag (``"<thi" + <block> + "nk>"``);
a final sweep removes any tag that forms in the visible text this way (the
same sweep ``strip_think_tags`` applies to complete text), so the stripper
never emits a tag as visible text.

Everything is decided by positions in the stream, never by chunk edges: the
concatenated output is the same however the backend split its deltas.
Limits: a "tag" longer than the shared hold length (64 characters, long
attribute lists) is treated as text, because a split stream could not have
held it back; an unclosed block at the end of the stream is reasoning; a
dangling ``"<thi"`` at the end of the stream is text.
"""

from __future__ import annotations

__all__ = ("DEFAULT_START_WINDOW", "ThinkStripper", "think_strip")

import enum
from typing import Final

import attrs
from rxcord.core.types import Operator, ProcessedChunk
from rxcord.operators.reasoning_guard import reasoning_guard
from rxcord.operators.reasoning_tags import (
    MAX_TAG_LEN,
    find_tag,
    is_closer,
    partial_tag_len,
    stray_closer_reroutes,
)

DEFAULT_START_WINDOW: Final = 256
"""Characters at the start of a stream that a stray closer can still turn into reasoning."""


class _Mode(enum.Enum):
    START = enum.auto()
    VISIBLE = enum.auto()
    INSIDE = enum.auto()


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
    """

    start_window: int = DEFAULT_START_WINDOW
    """How many characters at the start of the stream are held for a possible stray closer."""
    _mode: _Mode = attrs.field(default=_Mode.START, init=False)
    _pending: str = attrs.field(default="", init=False)
    """Content not yet classified: the start-of-stream hold or a partial tag."""
    _seam: str = attrs.field(default="", init=False)
    """Visible text held because it could join the next visible text into a tag."""

    def feed(self, text: str) -> tuple[str, str]:
        """Consume one content delta; return the ``(visible, reasoning)`` it releases."""
        if not text:
            return "", ""
        if "<" not in text and self._mode is _Mode.VISIBLE and not self._pending and not self._seam:
            # Nothing held and no tag can start here: what the loop below would release.
            return text, ""
        buf = self._pending + text
        visible: list[str] = []
        reasoning: list[str] = []
        mode = self._mode
        pos = 0
        # The held start of the stream has no tag yet: only one ending in the new text can be found.
        first_search = max(0, len(self._pending) - MAX_TAG_LEN) if mode is _Mode.START else 0
        while True:
            match = find_tag(buf, max(pos, first_search))
            first_search = 0
            if mode is _Mode.START:
                # START holds the whole stream so far, so pos == 0 and buffer offsets are stream offsets.
                if match is not None and match.start() <= self.start_window:
                    # The first tag, inside the window: an opener shows what came before it; a stray
                    # closer makes it reasoning (the stray-closer rule).
                    is_close = is_closer(match.group(0))
                    reroute = is_close and stray_closer_reroutes(match.start(), self.start_window)
                    (reasoning if reroute else visible).append(buf[: match.start()])
                    mode = _Mode.VISIBLE if is_close else _Mode.INSIDE
                    pos = match.end()
                    continue
                if match is None:
                    held = partial_tag_len(buf)
                    if len(buf) <= self.start_window or (held and len(buf) - held <= self.start_window):
                        break  # a tag may still start inside the window
                mode = _Mode.VISIBLE
                continue
            out = visible if mode is _Mode.VISIBLE else reasoning
            if match is None:
                cut = len(buf) - partial_tag_len(buf[pos:])
                out.append(buf[pos:cut])
                pos = cut
                break
            out.append(buf[pos : match.start()])
            is_close = is_closer(match.group(0))
            if mode is _Mode.VISIBLE:
                if not is_close:
                    mode = _Mode.INSIDE
                # else: a stray closer after released text is only removed (the stray-closer rule).
            elif is_close:
                mode = _Mode.VISIBLE
            pos = match.end()
        self._mode = mode
        self._pending = buf[pos:]
        return self._sweep("".join(visible), final=False), "".join(reasoning)

    def finish(self) -> tuple[str, str]:
        """The stream ended (or a non-text chunk arrived): release everything held back."""
        held, self._pending = self._pending, ""
        if self._mode is _Mode.INSIDE:
            return self._sweep("", final=True), held
        self._mode = _Mode.VISIBLE
        return self._sweep(held, final=True), ""

    def holding(self) -> str:
        """The unclassified hold: the start window, a partial tag or an open think block.

        (The seam, a partial tag of visible text, is not counted: at most a tag's length.)
        """
        return self._pending

    def _sweep(self, text: str, *, final: bool) -> str:
        """Remove tags formed by joining visible fragments; hold a trailing partial tag unless final."""
        seam = self._seam + text
        if "<" not in seam:
            self._seam = ""
            return seam
        while (match := find_tag(seam, 0)) is not None:
            seam = seam[: match.start()] + seam[match.end() :]
        cut = len(seam) if final else len(seam) - partial_tag_len(seam)
        self._seam = seam[cut:]
        return seam[:cut]


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
        -A-----B-----(X,d)-|  A="Hi "  B="" + RAW "plan"  X="" + RAW "</thi"

    Args:
        start_window: Characters at the start of each stream held back in case
            a stray closer turns them into reasoning (see the module docstring).
        note_held: Note what is held on each chunk, so a graceful stop keeps it as
            reasoning (``rxcord.operators.held_at_stop``; the pipeline turns it on).

    Returns:
        An operator; a fresh ``ThinkStripper`` is created for every subscription.
    """

    def factory() -> ThinkStripper:
        return ThinkStripper(start_window=start_window)

    return reasoning_guard(factory, name="think_strip", note_held=note_held)
