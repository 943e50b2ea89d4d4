"""The shape of an in-band reasoning tag, defined once.

Backends that leak reasoning into visible text wrap it in ``<think>`` tags,
sometimes namespaced (``<mm:think>``, ``<ns:think>``). The stage 03 stripper,
the stage 05 buffer manager and the stage 06 cleaning sweep all read the tag
shape from here, so adding a vendor spelling is a one-line change
(``THINK_NAMES``).

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
    "partial_tag_len",
    "split_think_blocks",
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


def split_think_blocks(text: str) -> tuple[str, str]:
    """Split complete *text* into (visible, reasoning).

    Closed blocks go to reasoning; an unclosed opening tag sends the rest of
    the text to reasoning; a stray closing tag with no opener sends everything
    before it to reasoning (the backend dropped the opener).
    """
    visible: list[str] = []
    reasoning: list[str] = []
    pos = 0
    inside = False
    for match in TAG_RE.finditer(text):
        is_close = match.group(0).startswith("</")
        piece = text[pos : match.start()]
        if inside:
            reasoning.append(piece)
            inside = not is_close
        elif is_close:
            reasoning.append(piece)
        else:
            visible.append(piece)
            inside = True
        pos = match.end()
    (reasoning if inside else visible).append(text[pos:])
    return "".join(visible), "".join(reasoning)


def strip_think_tags(text: str) -> str:
    """Remove complete reasoning blocks and any leftover tag (the final cleaning sweep).

    Repeats until stable: removing a tag can join its neighbours into a new one
    (``<thi<think>nk>``).
    """
    while True:
        visible, _ = split_think_blocks(text)
        visible = TAG_RE.sub("", visible)
        if visible == text:
            return visible
        text = visible
