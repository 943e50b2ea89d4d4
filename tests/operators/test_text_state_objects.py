"""Counted, not timed: the containers the text state of one live stream holds between deltas.

Every live stream keeps its flusher (with its markdown scanner, cut list and text buffer) for
as long as it runs, and each full collection walks what they hold (``bench/notes.md``). The
lists and arrays that are usually empty exist only while they hold something, so a stream in
the middle of prose holds the text it has not released and little else.
"""

from __future__ import annotations

import cProfile
import enum
import gc
import pstats
from collections import Counter

from rxcord.core.config import StreamConfig
from rxcord.core.types import DeliveryMode
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.cuts import CutList
from rxcord.operators.markdown.first_cut import FirstCut
from rxcord.operators.markdown.scan import MarkdownScanner

LIVE = StreamConfig(delivery=DeliveryMode.LIVE, max_messages=10_000, max_flushes=10_000)
AGG = StreamConfig(delivery=DeliveryMode.AGGREGATED, max_messages=10_000, max_flushes=10_000)
_OWN = ("Flusher", "MarkdownScanner", "CutList", "NullCuts", "TextBuffer")
"""The text state's own objects: counted apart (one each), not among what they hold."""

PROSE = ("word " * 30 + "end.\n\n") * 4
MARKDOWN = PROSE + "| a | b |\n|---|---|\n| 1 | 2 |\n\nafter ```py\nx = 1\n" + "y\n" * 5 + "```\nmore text "


def _held(root: object, *shared: object) -> Counter[str]:
    """The tracked objects reachable from *root*, by type.

    Not counted: types, enum members and the *shared* objects (one per process, not per
    stream), and tuples (the flusher's are of integers, which the collector stops tracking
    at its first pass over them).
    """
    empty = CutList()  # its arrays are the empties every cut list without cut points shares
    skip = {id(item) for item in (*shared, empty.ends, empty.starts, empty.levels)}
    seen: set[int] = set()
    stack = [root]
    counts: Counter[str] = Counter()
    while stack:
        for ref in gc.get_referents(stack.pop()):
            if id(ref) in seen or id(ref) in skip or not gc.is_tracked(ref):
                continue
            if isinstance(ref, type | enum.Enum | tuple):
                continue
            seen.add(id(ref))
            counts[type(ref).__name__] += 1
            stack.append(ref)
    return counts


def _containers(flusher: Flusher) -> int:
    counts = _held(flusher, flusher.config)
    return sum(count for name, count in counts.items() if name not in _OWN)


def _fed_in_threes(flusher: Flusher, text: str) -> list[int]:
    held = []
    for k in range(0, len(text), 3):
        flusher.push(text[k : k + 3])
        held.append(_containers(flusher))
    return held


def test_live_prose_holds_the_unscanned_texts_list_and_nothing_else() -> None:
    """Mid-prose the flusher holds at most the unscanned text's list: its text buffer, holding less
    than a message, holds it as one string.

    Before, every flusher held 13 lists and 3 arrays from the start, whatever it held
    (counted 17 at most and 16 on average over this text; then 2 and 1.96 with the buffer's list;
    now 1 and 0.96).
    """
    held = _fed_in_threes(Flusher(LIVE), PROSE)
    assert max(held) <= 1
    assert sum(held) < len(held)


def test_live_markdown_lists_exist_only_while_used() -> None:
    """A table and a fenced block add what records them when they come (before: 18 at most)."""
    flusher = Flusher(LIVE)
    held = _fed_in_threes(flusher, MARKDOWN)
    assert max(held) <= 1  # counted 1 (before the short buffer as one string: 2)
    flusher.push("\n\nlast paragraph")
    # The latest cut inside the block and the unscanned text (before: 3 with the buffer's list).
    assert _containers(flusher) <= 2


def test_code_blocks_passed_leave_nothing_behind() -> None:
    """The flusher reads only the open fence: a stream of many blocks holds what one does.

    Before, its scanner kept a span and a fence per block for as long as the stream lasted
    (82 containers after 40 blocks, live; then 1, now 0, the buffer's text one string).
    """
    for config in (LIVE, AGG):
        flusher = Flusher(config)
        after = []
        for k in range(40):
            flusher.push(f"Step {k}, then code:\n\n```py\nx = {k}\n```\n\nAnd prose after it. ")
            after.append(_containers(flusher))
        assert max(after) <= (0 if config is LIVE else 2), (config.delivery, after)


def test_aggregated_holds_one_list() -> None:
    """Aggregated text is held as text not scanned yet, nothing else.

    (Before: 16, then 2 with the buffer's list.)
    """
    held = _fed_in_threes(Flusher(AGG), PROSE)
    assert max(held) <= 1


def test_scanner_mid_line_and_cleared_cuts_hold_no_container() -> None:
    """A scanner reading prose holds no list, and a cleared cut list no array of its own (before: 8)."""
    scanner = MarkdownScanner()
    scanner.feed("# title\n\nsome words, then a sentence. And more")
    assert len(scanner.cuts) > 0
    scanner.cuts.clear()
    held = _held(scanner)
    assert sum(count for name, count in held.items() if name not in _OWN) == 0, held


def test_first_cut_lets_its_scanner_go_once_found() -> None:
    """Edit mode's first-message finder reads nothing after the boundary, so it keeps no scanner."""
    first = FirstCut(2000)
    assert first.feed("Hello there.") is None
    assert first.feed(" More words") == len("Hello there.")
    assert not _held(first)
    assert first.feed("and more") == len("Hello there.")


def _calls_per_delta(config: StreamConfig) -> float:
    deltas = [
        ("ends here. " if k % 5 == 4 else "word ") + ("\n\n" if k % 40 == 39 else "") for k in range(2000)
    ]
    flusher = Flusher(config)
    profiler = cProfile.Profile()
    profiler.enable()
    try:
        for delta in deltas:
            flusher.push(delta)
        flusher.flush(final=True)
    finally:
        profiler.disable()
    calls: int = pstats.Stats(profiler).total_calls  # type: ignore[attr-defined]
    return calls / len(deltas)


def test_calls_per_delta() -> None:
    """The lazy lists cost no call per delta; the held prefix is counted once per release.

    Counted with cProfile (calls, not time): live 30.2 -> 27.4, aggregated 16.1 -> 15.0.
    """
    assert _calls_per_delta(LIVE) <= 29
    assert _calls_per_delta(AGG) <= 15.5
