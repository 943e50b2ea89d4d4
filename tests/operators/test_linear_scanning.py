"""Every text scanner is linear on any input: work counted on adversarial text of n and 8n characters.

Work is counted, never timed (``tests.work.count_work``: bytecode instructions plus the
characters the module's compiled patterns read). Linear code does about 8 times the
work for 8 times the text; a scanner that re-runs a pattern to the end of the line
after every word (the markdown scanner did, on ``0 1 2 3 …``) about 64 times.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reactivex.subject import Subject
from reactivex.testing import TestScheduler

from bench.linear import SHAPES
from rxcord.core.config import StreamConfig
from rxcord.core.state import Segment, StreamState
from rxcord.core.types import DeliveryMode, SegmentKind, StreamStatus
from rxcord.operators import flusher as flusher_module
from rxcord.operators.clean import clean_text
from rxcord.operators.flush import flush
from rxcord.operators.flusher import YIELD_AT, Flusher
from rxcord.operators.markdown import cut_policy
from rxcord.operators.markdown import cuts as md_cuts
from rxcord.operators.markdown import scan as markdown_scan
from rxcord.operators.markdown import tables as md_tables
from rxcord.operators.markdown.cut_policy import Fence, join
from rxcord.operators.markdown.scan import SCAN_SLICE, MarkdownScanner
from rxcord.operators.mentions import resolve_mentions
from rxcord.operators.reasoning import tags as reasoning_tags
from rxcord.operators.render import force_lowercase, punctuation_roll, split_sentences
from tests.sinks.test_split_linear import ADVERSARIAL_TEXT
from tests.sinks.test_split_message import reconstruct
from tests.strategies import CUTS, cut
from tests.work import count_work

# The stage modules named like their operators: ``rxcord.operators.clean`` is the operator
# (the façade's name), so the modules whose work is counted are looked up by path.
clean = importlib.import_module("rxcord.operators.clean")
mentions = importlib.import_module("rxcord.operators.mentions")
render = importlib.import_module("rxcord.operators.render")

SIZE = 1000
SCALE = 8
SLACK = 1.5
NAMES = sorted(SHAPES)


def assert_linear_work(run: Callable[[str], object], name: str, *modules: ModuleType) -> None:
    """``run`` on 8 times the text of shape *name* costs at most 8 * 1.5 times the work."""
    make = SHAPES[name]
    small_text, big_text = make(SIZE), make(SIZE * SCALE)
    small = count_work(lambda: run(small_text), *modules)
    big = count_work(lambda: run(big_text), *modules)
    assert small > 0  # the work is counted
    assert big <= small * SCALE * SLACK, f"{name}: work grew {big / small:.1f}x for {SCALE}x the text"


# -- the markdown scanner ---------------------------------------------------------------------------------

SCANNER = (markdown_scan, md_cuts)


def _scan(text: str, step: int) -> MarkdownScanner:
    scanner = MarkdownScanner()
    for i in range(0, len(text), step):
        scanner.feed(text[i : i + step])
    scanner.finish()
    return scanner


@pytest.mark.parametrize("name", NAMES)
def test_the_scanner_is_linear_fed_whole(name: str) -> None:
    assert_linear_work(lambda text: _scan(text, len(text)), name, *SCANNER)


@pytest.mark.parametrize("name", NAMES)
def test_the_scanner_is_linear_fed_in_small_pieces(name: str) -> None:
    assert_linear_work(lambda text: _scan(text, 7), name, *SCANNER)


# -- the flusher ------------------------------------------------------------------------------------------

FLUSHER = (flusher_module, markdown_scan, md_cuts, md_tables, reasoning_tags, cut_policy)
LIVE = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=200, max_flushes=1_000_000)
AGGREGATED = StreamConfig(delivery=DeliveryMode.AGGREGATED)


def _flush(config: StreamConfig, text: str, step: int) -> list[str]:
    flusher = Flusher(config)
    out = []
    for i in range(0, len(text), step):
        out += flusher.push(text[i : i + step])
    out += flusher.flush(final=True)
    return [segment.text for segment in out if segment.kind is SegmentKind.TEXT]


@pytest.mark.parametrize("name", NAMES)
def test_the_live_flusher_is_linear(name: str) -> None:
    assert_linear_work(lambda text: _flush(LIVE, text, 16), name, *FLUSHER)


@pytest.mark.parametrize("name", NAMES)
def test_the_aggregated_flusher_is_linear(name: str) -> None:
    assert_linear_work(lambda text: _flush(AGGREGATED, text, 16), name, *FLUSHER)


@pytest.mark.parametrize("unit", ["<t <thi ", "<details><d </d <x "], ids=["tags", "details"])
def test_tag_like_runs_are_linear_in_the_flusher(unit: str) -> None:
    """``<`` that may open a tag (``<t <thi``), and inside a details block."""

    def run(size: int) -> object:
        return _flush(LIVE, (unit * (size // len(unit) + 1))[:size], 16)

    small = count_work(lambda: run(SIZE), *FLUSHER)
    big = count_work(lambda: run(SIZE * SCALE), *FLUSHER)
    assert big <= small * SCALE * SLACK, f"{unit!r}: work grew {big / small:.1f}x"


class _Feeds:
    """Records the length of every text a ``MarkdownScanner`` is fed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[int] = []
        feed = MarkdownScanner.feed

        def counted(scanner: MarkdownScanner, text: str) -> None:
            self.sizes.append(len(text))
            feed(scanner, text)

        monkeypatch.setattr(MarkdownScanner, "feed", counted)


@pytest.mark.parametrize("config", [LIVE, AGGREGATED], ids=["live", "aggregated"])
@pytest.mark.parametrize("name", ["digits 0 1 2", "one long word", "code line in a block", "table rows"])
def test_a_huge_delta_reaches_the_scanner_in_bounded_slices(
    monkeypatch: pytest.MonkeyPatch, config: StreamConfig, name: str
) -> None:
    """One 200,000-character delta is scanned ``SCAN_SLICE`` characters at a time at most (aggregated
    text that cannot hold a table is not scanned at all)."""
    feeds = _Feeds(monkeypatch)
    text = SHAPES[name](200_000)
    out = _flush(config, text, len(text))
    assert out
    if config is LIVE or "|" in text:
        assert sum(feeds.sizes) >= 200_000 - 10
    assert max(feeds.sizes, default=0) <= SCAN_SLICE


# -- stage 06: cleaning, render modifiers, mentions ------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_render_modifiers_are_linear(name: str) -> None:
    def run(text: str) -> object:
        return split_sentences(text), punctuation_roll(text, random.Random(1)), force_lowercase(text)

    assert_linear_work(run, name, render)


@pytest.mark.parametrize("name", NAMES)
def test_cleaning_is_linear(name: str) -> None:
    assert_linear_work(lambda text: clean_text("Assistant: " + text + "\u200b"), name, clean, render)


def test_repeated_prefixes_are_stripped_in_linear_work() -> None:
    def run(count: int) -> object:
        return clean_text("Assistant: " * count + "hi")

    small = count_work(lambda: run(100), clean)
    big = count_work(lambda: run(100 * SCALE), clean)
    assert run(3) == "hi"
    assert big <= small * SCALE * SLACK, f"work grew {big / small:.1f}x"


def _resolver(name: str) -> str | None:
    return "42" if name == "a" else None


@pytest.mark.parametrize("name", NAMES)
def test_mention_resolution_is_linear(name: str) -> None:
    assert_linear_work(lambda text: resolve_mentions("@a " + text, _resolver), name, mentions, render)


def test_mention_resolution_between_many_protected_spans_is_linear() -> None:
    """``<@1> @a`` repeated: each ``@a`` is checked against the protected spans once, not all of them."""

    def run(count: int) -> object:
        return resolve_mentions("<@1> @a " * count, _resolver)

    small = count_work(lambda: run(200), mentions, render)
    big = count_work(lambda: run(200 * SCALE), mentions, render)
    assert run(2)[1] == ("42",)
    assert big <= small * SCALE * SLACK, f"work grew {big / small:.1f}x"


def test_joining_coalesced_pieces_is_linear() -> None:
    """Pieces of one block joined one after another (live coalescing) read only the lines they join."""
    fence = Fence("```py", "`", 3)

    def run(count: int) -> str:
        text = ""
        for k in range(count):
            piece = ("" if k == 0 else fence.reopen(2000)) + f"line {k}" + fence.close
            text = join(text, piece) if text else piece
        return text

    small = count_work(lambda: run(100), cut_policy)
    big = count_work(lambda: run(100 * SCALE), cut_policy)
    assert run(2) == "line 0line 1" + fence.close
    assert big <= small * SCALE * SLACK, f"work grew {big / small:.1f}x"


# -- split invariance ------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(ADVERSARIAL_TEXT, CUTS)
def test_the_scanner_gives_the_same_cuts_however_adversarial_text_is_fed(
    text: str, points: list[int]
) -> None:
    whole = _scan(text, max(1, len(text)))
    pieces = MarkdownScanner()
    for chunk in cut(text, points):
        pieces.feed(chunk)
    pieces.finish()
    assert list(pieces.cuts) == list(whole.cuts)
    assert pieces.fences == whole.fences and pieces.tables == whole.tables
    assert pieces.quote_from == whole.quote_from


_NO_TABLES = ADVERSARIAL_TEXT.map(lambda text: text.replace("|", "/"))


@settings(max_examples=200, deadline=None)
@given(_NO_TABLES, CUTS, st.booleans())
def test_live_segments_rebuild_adversarial_text_however_it_is_fed(
    text: str, points: list[int], one_delta: bool
) -> None:
    """Live TEXT segments, without the fence close/reopen and ``>>> `` the flusher adds, are the text
    exactly, fed in pieces or as one delta (tables, which are re-rendered, are left out)."""
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=64, max_flushes=1_000_000)
    flusher = Flusher(config)
    segments = []
    for chunk in [text] if one_delta else cut(text, points):
        segments += flusher.push(chunk)
    segments += flusher.flush(final=True)
    pieces = [segment.text for segment in segments if segment.kind is SegmentKind.TEXT]
    assert reconstruct(text, pieces, drop_whitespace=False) is not None, pieces


def test_a_huge_live_delta_is_pushed_a_slice_per_scheduler_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100,000-character delta is not scanned in the ``on_next`` that brings it: the flush operator
    pushes it ``YIELD_AT`` characters per scheduler step (the loop runs in between), and what it
    releases is what the flusher releases for those slices."""
    pushed: list[int] = []
    push = Flusher.push

    def counted(flusher: Flusher, text: str) -> list[Segment]:
        pushed.append(len(text))
        return push(flusher, text)

    monkeypatch.setattr(Flusher, "push", counted)
    scheduler = TestScheduler()
    subject: Subject[StreamState] = Subject()
    out: list[Segment] = []
    done: list[bool] = []
    flush(LIVE)(subject).subscribe(out.append, on_completed=lambda: done.append(True), scheduler=scheduler)
    text = SHAPES["digits 0 1 2"](100_000)
    subject.on_next(StreamState(delta=text))
    subject.on_next(StreamState(delta=" tail", status=StreamStatus.COMPLETED))
    subject.on_completed()
    assert pushed == [] and out == [] and not done  # handed to the scheduler, not done in on_next
    scheduler.start()
    assert done and len(pushed) >= len(text) // YIELD_AT and max(pushed) <= YIELD_AT
    expected = Flusher(LIVE)
    segments: list[Segment] = []
    for i in range(0, len(text), YIELD_AT):
        segments += expected.push(text[i : i + YIELD_AT])
    segments += expected.push(" tail") + expected.flush(final=True)
    assert [s.text for s in out] == [s.text for s in segments] and len(out) > 10
