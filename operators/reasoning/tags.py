"""The shape of an in-band reasoning tag and the stray-closer rule, defined once.

Backends that leak reasoning into visible text wrap it in ``<think>`` tags,
sometimes namespaced (``<mm:think>``, ``<ns:think>``). The stage 03 stripper
(``think_strip``), the stage 05 buffer manager (``flush``) and the stage 06
cleaning sweep (``clean``) all read the tag shape from here, so adding a
vendor spelling is a one-line change (``THINK_NAMES``).

Rules every consumer follows:

* A tag longer than ``MAX_TAG_LEN`` characters is text (``find_tag``,
  ``match_tag``): a consumer reading a split stream holds at most that much
  back to decide (``partial_tag_len``, ``partial_details_len``).
* **A tag written as code is text**: inside an inline code span (a backtick
  run up to the next run of the same length, or a blank line) or a fenced
  block (to its closing line, or the end). Stage 03 reads code with
  ``rxcord.operators.markdown.code_spans.CodeTracker``, stage 05 with the markdown
  scanner (same rules), stage 06 masks code before ``strip_think_tags``.
* Blocks do not nest: an opener inside a block is dropped.
* **The unclosed-opener rule** (stage 03): a block that starts the content
  (nothing but whitespace before its opener) is reasoning to the end, closed
  or not: that is how a leak looks. A block opened after text was shown is
  held until its closer; if the stream ends first, the opener was prose and
  the held text is the answer (without the tag). Past stage 03 (the flusher
  at its final flush, the cleaning sweep) an unclosed block runs to the end.
* **The stray-closer rule** (``stray_closer_reroutes``): a closing tag with no
  open block is always removed. When it is the first tag of the stream and
  starts within the start window (nothing has been shown yet), the text
  before it is reasoning: the chat template opened the block in the prompt.
  Anywhere else the text before it stays visible, since it may already be on
  its way to Discord. Every adapter that runs the stripper holds the same
  window (``think_strip.DEFAULT_START_WINDOW``); later stages only ever
  remove a stray closer.
* **At a graceful stop** (``rxcord.operators.reasoning.held_at_stop``): text held only
  because it might be reasoning (the start window, a partial tag) is the
  answer; a block seen open, or a start the chat template opened, is reasoning.

Note: API stop strings are matched literally by providers, so a namespaced
close tag used as a stop string must be listed per model, not derived from
this pattern.
"""

from __future__ import annotations

__all__ = (
    "CLOSE_RE",
    "DETAILS_CLOSE_RE",
    "DETAILS_OPEN_RE",
    "MAX_TAG_LEN",
    "OPEN_RE",
    "TAG_RE",
    "TAG_START_RE",
    "THINK_NAMES",
    "find_tag",
    "is_closer",
    "match_tag",
    "partial_details_len",
    "partial_tag_len",
    "split_think_blocks",
    "stray_closer_reroutes",
    "strip_think_tags",
)

import re
from typing import Final

THINK_NAMES: Final = ("think", "thinking", "reasoning")
"""Local names of reasoning tags; any ``prefix:`` namespace is accepted."""

_NAME = "(?:[A-Za-z][A-Za-z0-9_.-]*:)?(?:" + "|".join(THINK_NAMES) + ")"

OPEN_RE: Final = re.compile(r"<" + _NAME + r"(?:\s[^<>]*)?>", re.IGNORECASE)
"""An opening tag: ``<think>``, ``<mm:think>``, ``<think type="x">``."""
CLOSE_RE: Final = re.compile(r"</" + _NAME + r"\s*>", re.IGNORECASE)
"""A closing tag: ``</think>``, ``</ns:think >``."""
TAG_RE: Final = re.compile(OPEN_RE.pattern + "|" + CLOSE_RE.pattern, re.IGNORECASE)
"""Either tag."""
TAG_START_RE: Final = re.compile(r"</?" + _NAME, re.IGNORECASE)
"""Where either tag could start: text without a match holds no tag, whatever replaces its code spans."""

DETAILS_OPEN_RE: Final = re.compile(r"<details(?:\s[^<>]*)?>", re.IGNORECASE)
DETAILS_CLOSE_RE: Final = re.compile(r"</details\s*>", re.IGNORECASE)

MAX_TAG_LEN: Final = 64
"""Longest tag text we wait for before deciding a ``<`` is not a tag."""

_PREFIX_RE: Final = re.compile(r"</?(?:[A-Za-z][A-Za-z0-9_.-]*:?)?[A-Za-z]*(?:\s[^<>]*)?\Z")


def partial_tag_len(text: str) -> int:
    """Length of the longest suffix of *text* that could still grow into a reasoning tag.

    Used by incremental consumers to hold back ``"<thi"`` until the next chunk
    decides it. Returns 0 when no suffix can be the start of a tag.
    """
    start = text.rfind("<", max(0, len(text) - MAX_TAG_LEN))
    if start < 0:
        return 0
    tail = text[start:]
    if ">" in tail or not _PREFIX_RE.match(tail):
        return 0
    words = tail.lstrip("</").split(None, 1)
    name = words[0] if words else ""
    local = name.rsplit(":", 1)[-1].lower()
    if " " in tail.strip() or "\t" in tail or "\n" in tail:
        # Attributes are only possible after a complete name.
        return len(tail) if local in THINK_NAMES else 0
    if any(candidate.startswith(local) for candidate in THINK_NAMES):
        return len(tail)
    # A namespace prefix still being written (``<mm`` could become ``<mm:think>``).
    return len(tail) if ":" not in name else 0


def partial_details_len(text: str) -> int:
    """``len(text)`` when *text* (starting at ``<``) could still grow into a details tag, else 0."""
    if len(text) >= MAX_TAG_LEN or ">" in text:
        return 0
    low = text.lower()
    if "<details".startswith(low) or "</details".startswith(low):
        return len(text)
    if low.startswith("<details") and low[8:9].isspace():
        return len(text) if "<" not in low[1:] else 0
    return len(text) if low.startswith("</details") and not low[9:].strip() else 0


def find_tag(text: str, pos: int = 0, pattern: re.Pattern[str] = TAG_RE) -> re.Match[str] | None:
    """The first match of *pattern* (default: either reasoning tag) at or after *pos* that is a tag.

    A match longer than ``MAX_TAG_LEN`` is text: a consumer of a split stream
    could not have held it back to decide.
    """
    for match in pattern.finditer(text, pos):
        if match.end() - match.start() <= MAX_TAG_LEN:
            return match
    return None


def match_tag(text: str, pos: int, *patterns: re.Pattern[str]) -> re.Match[str] | None:
    """The first of *patterns* that matches a tag starting exactly at *pos* (``MAX_TAG_LEN`` at most)."""
    for pattern in patterns:
        match = pattern.match(text, pos)
        if match is not None and match.end() - pos <= MAX_TAG_LEN:
            return match
    return None


def is_closer(tag: str) -> bool:
    """Whether *tag* (a ``TAG_RE`` or details match) is a closing tag."""
    return tag.startswith("</")


def stray_closer_reroutes(start: int, start_window: int | None) -> bool:
    """The stray-closer rule: whether the text before a stray closer is reasoning.

    *start* is where the closer starts in the stream, which must be the first
    tag of the stream with nothing shown before it; *start_window* is how much
    of the start of the stream may still be reclassified (``None``: all of it,
    for a complete text). Otherwise (a later stray closer, or one beyond the
    window) the caller only removes the closer.
    """
    return start_window is None or start <= start_window


def split_think_blocks(text: str, *, start_window: int | None = None) -> tuple[str, str]:
    """Split complete *text*, a whole stream's content, into (visible, reasoning): the stage 03 rule.

    Exactly what the streaming stripper (``rxcord.operators.reasoning.think_strip.ThinkStripper``, the one
    implementation of the rule) gives for *text* fed whole and finished: tags in code are text;
    closed blocks go to reasoning; a block that starts the content is reasoning to the end,
    one opened after shown text is held until its closer (unclosed: the answer, without its
    tag); a stray closer follows the stray-closer rule with *start_window* (default: the whole
    text may be reclassified, so a first tag that is a closer sends everything before it to
    reasoning).
    """
    # Imported here: the stripper reads the tag shape from this module.
    from rxcord.operators.reasoning.think_strip import WHOLE_REPLY, ThinkStripper

    stripper = ThinkStripper(start_window=WHOLE_REPLY if start_window is None else start_window)
    visible, reasoning = stripper.feed(text)
    rest_visible, rest_reasoning = stripper.finish()
    return visible + rest_visible, reasoning + rest_reasoning


def _remove_blocks(text: str) -> str:
    """*text* without reasoning blocks and stray closers, code blind (an unclosed block runs to the end)."""
    visible: list[str] = []
    pos = 0
    inside = False
    while (match := find_tag(text, pos)) is not None:
        if not inside:
            visible.append(text[pos : match.start()])
        inside = not is_closer(match.group(0))  # an opener inside a block is dropped, a closer ends it
        pos = match.end()
    if not inside:
        visible.append(text[pos:])
    return "".join(visible)


def strip_think_tags(text: str) -> str:
    """Remove complete reasoning blocks and any leftover tag (the final cleaning sweep, mid-stream).

    For text whose code its caller has masked (the stage 06 cleaner replaces code spans by
    placeholders first), so it is code blind. The text is not the start of a stream, so a
    stray closer is only removed (the stray-closer rule); an unclosed block runs to the end.
    Repeats until stable: removing a tag can join its neighbours into a new one
    (``<thi<think>nk>``).
    """
    while True:
        visible = _remove_blocks(text)
        while (match := find_tag(visible)) is not None:
            visible = visible[: match.start()] + visible[match.end() :]
        if visible == text:
            return visible
        text = visible
