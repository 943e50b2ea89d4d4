r"""Segment cleaning (stage 06): the last sweep before a segment text reaches Discord.

Stage 05 already routes ``<think>`` and ``<details>`` blocks into their own
segments; what reaches here can still carry debris: a stray reasoning tag
(a backend that dropped half a pair), a role prefix the model wrote before
its answer (``Assistant:``, ``**Name:**``), control characters and invisible
zero-width characters. ``clean_text`` removes them and nothing else.

What is kept, on purpose:

- code (fenced and inline, see ``rxcord.operators.render.split_code``), byte for
  byte: a ``<think>`` or a ``\u200b`` inside code is content;
- ``\n`` and ``\t``; a ``\r`` is dropped (so ``\r\n`` becomes ``\n``);
- a ZWJ or ZWNJ between two emoji (family and profession sequences) or
  between two non-ASCII letters (Persian, Indic scripts need them); flag tag
  sequences (``🏴`` + tag letters + cancel tag). Other zero-width, bidi
  override and tag characters are removed: they are invisible, and tag
  characters are a known way to smuggle hidden text.

How: code spans are replaced by private-use placeholders, the prose is
cleaned (invisible characters, then reasoning blocks to a fixpoint, then
leading prefixes), and the placeholders are restored; a code span inside a
reasoning block disappears with it. Two code spans left touching (the prose
between them is gone) get a space between them, or their backtick runs
would merge and change what is code. Stray literal backticks in prose can
still merge when what separated them is removed, so the sweep repeats until
the text no longer changes; that makes ``clean_text`` idempotent. A sweep
only removes characters, except that one space, which later sweeps keep, so
repeating ends (real text settles after one or two sweeps).

The ``clean`` operator applies it to ``TEXT`` segments, then the render
modifiers (``rxcord.operators.render.apply_render``).
"""

from __future__ import annotations

__all__ = ("ROLE_NAMES", "SegmentCleaner", "clean", "clean_text")

import functools
import random
import re
import unicodedata
from typing import Final

import attrs
from reactivex import Observable, abc

from rxcord.core.config import StreamConfig
from rxcord.core.state import Segment
from rxcord.core.types import DeliveryMode, Operator, SegmentKind
from rxcord.operators.light import LightOperator, Relay, relay
from rxcord.operators.reasoning.tags import TAG_START_RE, strip_think_tags
from rxcord.operators.render import apply_render, split_code

ROLE_NAMES: Final = ("assistant", "ai", "bot", "model")
"""Generic role labels removed (case-insensitively) when a reply starts with ``Label:``."""

_ZWJ: Final = "\u200d"
_ZWNJ: Final = "\u200c"
_VS16: Final = "\ufe0f"
_BLACK_FLAG: Final = "\U0001f3f4"

_SUSPECT: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u180e\u200b-\u200d\u202a-\u202e\u2060-\u2064\u2066-\u2069"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
"""Characters ``clean_text`` may remove: C0/C1 controls (``\\t`` and ``\\n`` excluded), zero-width and
bidi-control characters, soft hyphen, BOM, interlinear annotation and tag characters."""
_SUSPECT_BUT_JOINERS: Final = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u180e\u200b\u202a-\u202e\u2060-\u2064\u2066-\u2069"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
"""``_SUSPECT`` without ZWNJ and ZWJ, which are judged by their neighbours."""
_JOINERS: Final = re.compile("[\u200c\u200d]")
_FLAG_TAGS: Final = re.compile(_BLACK_FLAG + "[\U000e0020-\U000e007e]+\U000e007f")
"""A subdivision flag (England, Scotland, Wales): its tag characters are visible content."""

_EMPHASIS = r"\*\*\*|\*\*|\*|__|_|"

_NO_ROLLS: Final = random.Random(0)
"""Handed to ``apply_render`` when no modifier rolls (only punctuation splits draw from it)."""

_MAX_PASSES: Final = 16
"""A bound on re-sweeps; real text settles after one or two (see the module docstring)."""

_PRIVATE_RANGES: Final = ((0xE000, 0xF8FF), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD))


def _is_emoji_side(char: str) -> bool:
    """Whether *char* can sit next to a ZWJ inside an emoji sequence."""
    return char == _VS16 or "\U0001f3fb" <= char <= "\U0001f3ff" or unicodedata.category(char) == "So"


def _is_script_side(char: str) -> bool:
    """Whether *char* is a non-ASCII letter or mark, where ZWJ/ZWNJ shape the script."""
    return not char.isascii() and unicodedata.category(char)[0] in "LM"


def _keep_joiner(text: str, index: int) -> bool:
    """Whether the ZWJ/ZWNJ at *index* joins two visible characters that need it."""
    if index == 0 or index + 1 >= len(text):
        return False
    before, after = text[index - 1], text[index + 1]
    if before in (_ZWJ, _ZWNJ) or after in (_ZWJ, _ZWNJ):
        return False
    if text[index] == _ZWJ and _is_emoji_side(before) and _is_emoji_side(after):
        return True
    return _is_script_side(before) and _is_script_side(after)


def _strip_invisible(text: str) -> str:
    """Remove control and stray invisible characters (see the module docstring for what stays)."""
    if not _SUSPECT.search(text):
        return text
    flags = {i for m in _FLAG_TAGS.finditer(text) for i in range(m.start() + 1, m.end())}
    if flags:
        first = "".join(
            char
            for i, char in enumerate(text)
            if char in (_ZWJ, _ZWNJ) or i in flags or not _SUSPECT.match(char)
        )
    else:
        first = _SUSPECT_BUT_JOINERS.sub("", text)
    if _ZWJ not in first and _ZWNJ not in first:
        return first

    # Joiners are judged against their neighbours after everything else is gone, so one pass is final.
    def judged(match: re.Match[str]) -> str:
        return match.group() if _keep_joiner(first, match.start()) else ""

    return _JOINERS.sub(judged, first)


@functools.lru_cache(maxsize=64)
def _prefix_re(persona_name: str | None) -> re.Pattern[str]:
    """A leading ``Label:`` prefix for the role labels and *persona_name*, markdown-emphasis aware.

    Anchored by ``match`` at the position it is given (so prefixes are read one after the other).
    """
    names = set(ROLE_NAMES)
    if persona_name and persona_name.strip():
        names.add(persona_name.strip())
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    name = r"\[?(?:" + alternatives + r")\]?"
    return re.compile(
        r"\s*(?:"
        rf"(?P<e1>{_EMPHASIS}){name}(?P=e1)[ \t]*:"  # **Name**:
        rf"|(?P<e2>{_EMPHASIS}){name}[ \t]*:(?P=e2)"  # **Name:**
        r")(?=\s|\Z)\s*",
        re.IGNORECASE,
    )


def _strip_prefixes(text: str, persona_name: str | None) -> str:
    """Remove leading role/persona prefixes (repeatedly: ``Assistant: Alice: hi`` -> ``hi``)."""
    prefix = _prefix_re(persona_name)
    # One slice at the end, not one per prefix (``Assistant: Assistant: …`` is quadratic that way).
    pos = 0
    while (match := prefix.match(text, pos)) and match.end() > pos:
        pos = match.end()
    return text[pos:] if pos else text


def _placeholders(text: str, count: int) -> list[str]:
    """*count* private-use characters that do not occur in *text*."""
    present = set(text)
    marks: list[str] = []
    for low, high in _PRIVATE_RANGES:
        for point in range(low, high + 1):
            if len(marks) == count:
                return marks
            if chr(point) not in present:
                marks.append(chr(point))
    return marks


def _clean_once(text: str, persona_name: str | None, at_start: bool) -> str:
    """One sweep of ``clean_text`` (code masked, prose cleaned, code restored)."""
    pieces = split_code(text)
    codes = [piece for piece, is_code in pieces if is_code]
    marks = _placeholders(text, len(codes))
    restore = dict(zip(marks, codes, strict=True))
    masked_pieces: list[str] = []
    code_index = 0
    for piece, is_code in pieces:
        if is_code:
            masked_pieces.append(marks[code_index])
            code_index += 1
        else:
            masked_pieces.append(piece)
    masked = strip_think_tags(_strip_invisible("".join(masked_pieces)))
    if at_start:
        masked = _strip_prefixes(masked, persona_name)
    if not restore:
        return masked
    # Code spans never touch in the input; touching now, their backtick runs would merge:
    # a space goes between two placeholders left side by side, then each becomes its code.
    held = "".join(marks)
    touching = re.compile(f"(?<=[{held}])(?=[{held}])")
    return touching.sub(" ", masked).translate({ord(mark): code for mark, code in restore.items()})


def _is_clean(text: str, persona_name: str | None, at_start: bool) -> bool:
    """Whether a sweep would leave *text* unchanged, judged without copying it.

    The common case for a long answer: a sweep masks the code, copies the text
    several times and finds nothing. Each test is on the unmasked text and is
    conservative: masking only turns code into placeholders, which no removal
    rule matches (a reasoning tag starts with ``<`` and a name, a prefix with
    a name, both made of prose), and a joiner whose neighbours keep it in the
    text keeps it once everything around it is judged.
    """
    if _SUSPECT_BUT_JOINERS.search(text) or TAG_START_RE.search(text):
        return False
    if at_start and _prefix_re(persona_name).match(text):
        return False
    if _ZWJ in text or _ZWNJ in text:
        return all(_keep_joiner(text, match.start()) for match in _JOINERS.finditer(text))
    return True


def clean_text(text: str, *, persona_name: str | None = None, at_start: bool = True) -> str:
    """Remove reasoning debris, a leading role prefix and stray invisible characters from *text*.

    Args:
        text: A segment text.
        persona_name: The bot persona's name; a leading ``Name:`` (``**Name:**``,
            ``**Name**:``, ``[Name]:``) is removed like ``Assistant:``.
        at_start: Whether *text* starts the reply; prefixes are only removed there.

    Returns:
        The cleaned text. Code spans are unchanged (two spans whose separating
        prose was removed are kept apart by one space); the function is idempotent.
    """
    if _is_clean(text, persona_name, at_start):
        return text
    for _ in range(_MAX_PASSES):
        cleaned = _clean_once(text, persona_name, at_start)
        if cleaned == text:
            break
        text = cleaned
    return text


@attrs.define
class SegmentCleaner:
    """Stage 06 for one stream: cleans and renders segments (the ``clean`` operator's state).

    Create one per stream: it carries the random source of the render
    modifiers and whether the reply has started.
    """

    config: StreamConfig
    """The stream's configuration (persona name, delivery mode, render modifiers)."""
    rng: random.Random | None = attrs.field(init=False, default=None)
    """Render-modifier rolls, seeded from ``config.render.seed``; made for the first roll (only
    punctuation splits roll), so a stream without them holds none."""
    at_start: bool = attrs.field(init=False, default=True)
    """No visible text has been produced yet: a leading role prefix is still removed."""

    def _rolls(self) -> random.Random:
        if self.rng is None:
            self.rng = random.Random(self.config.render.seed)
        return self.rng

    def feed(self, segment: Segment) -> list[Segment]:
        """Clean one segment; returns zero (blank text), one or several (splits) segments.

        Non-``TEXT`` segments pass through unchanged. Prefix removal stays on
        until a ``TEXT`` segment survives cleaning, so a prefix flushed alone
        (``"Assistant:"``) does not shield the next segment. ``final`` goes to
        the last piece; a blank final segment is dropped with its flag (the
        stream's completion still marks the end).
        """
        if segment.kind is not SegmentKind.TEXT:
            return [segment]
        cleaned = clean_text(segment.text, persona_name=self.config.persona_name, at_start=self.at_start)
        live = self.config.delivery is DeliveryMode.LIVE
        rolls = self._rolls() if self.config.render.punctuation_splits else _NO_ROLLS
        pieces = apply_render(cleaned, self.config.render, live=live, rng=rolls)
        if not pieces:
            return []
        self.at_start = False
        last = len(pieces) - 1
        return [
            attrs.evolve(segment, text=piece, final=segment.final and i == last)
            for i, piece in enumerate(pieces)
        ]


def clean(config: StreamConfig) -> Operator[Segment, Segment]:
    r"""Clean ``TEXT`` segments and apply the render modifiers.

    .. marble::
        -a-----b-----c-----|     a=THOUGHT  b=TEXT "Assistant: Hi. Bye."  c=TEXT "\u200b"
        [ clean(live, sentence_splitting) ]
        -a-----(xy)--------|     x=TEXT "Hi."  y=TEXT "Bye."   (c became blank: dropped)

    Args:
        config: The stream's configuration; a fresh ``SegmentCleaner`` (and
            ``random.Random(config.render.seed)``) is created per subscription.

    Returns:
        An operator from segments to cleaned segments, order preserved.
    """
    return _Clean(config)


class _Clean(LightOperator[Segment, Segment]):
    """The ``clean`` operator: its configuration (one slots object, not a closure per stream)."""

    __slots__ = ("config",)

    def __init__(self, config: StreamConfig) -> None:
        self.config = config

    def subscribe_to(
        self,
        source: Observable[Segment],
        observer: abc.ObserverBase[Segment],
        scheduler: abc.SchedulerBase | None,
    ) -> abc.DisposableBase:
        return relay(source, _Cleaning(observer, SegmentCleaner(self.config)), scheduler)


class _Cleaning(Relay):
    """One subscription of ``clean``: its cleaner."""

    __slots__ = ("cleaner",)

    def __init__(self, observer: abc.ObserverBase[Segment], cleaner: SegmentCleaner) -> None:
        super().__init__(observer)
        self.cleaner = cleaner

    def on_next(self, segment: Segment) -> None:
        if self.stopped:
            return
        try:
            out = self.cleaner.feed(segment)
        except Exception as exc:  # a cleaning bug becomes on_error, like ops.map
            self.on_error(exc)
            return
        for cleaned in out:
            self.observer.on_next(cleaned)
