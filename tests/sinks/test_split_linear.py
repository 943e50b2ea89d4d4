"""The splitter is linear on any input: work counted on adversarial lines of n and 8n characters.

Work is counted, never timed (``tests.work.count_work``: bytecode instructions plus the
characters the splitter's patterns read), so the tests hold on a loaded machine. A
splitter that re-reads the rest of a line after every word (``0 1 2 3 …`` did) does
about 64 times the work for 8 times the text; a linear one about 8 times.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.linear import SHAPES
from rxcord.core.config import StreamConfig, StreamContext
from rxcord.core.state import Segment
from rxcord.core.types import DeliveryMode, SegmentKind
from rxcord.operators.markdown import cut_policy, graphemes
from rxcord.operators.markdown import cuts as md_cuts
from rxcord.operators.markdown import scan as markdown_scan
from rxcord.operators.markdown import tokens as md_tokens
from rxcord.operators.markdown.cut_policy import is_blank_piece
from rxcord.operators.markdown.scan import SCAN_SLICE, MarkdownScanner
from rxcord.sinks import split_message as split_module
from rxcord.sinks.delivery import MERGE_MESSAGES, DiscordDelivery
from rxcord.sinks.memory import MemorySink
from rxcord.sinks.split_message import cut_pieces, split_message
from tests.sinks.test_split_message import fences_balanced, reconstruct
from tests.work import count_work

SIZE = 1000
SCALE = 8
SLACK = 1.5
LIMIT = 200
"""A small limit: many messages per line, so the per-message paths are counted too."""
MODULES = (split_module, markdown_scan, md_tokens, md_cuts, cut_policy, graphemes)


def _work(text: str) -> int:
    messages: list[str] = []
    work = count_work(lambda: messages.extend(split_message(text, LIMIT)), *MODULES)
    # A table is held whole (one message); a run of backticks alone is fence lines only (none).
    assert len(messages) > 1 or "|" in text or not text.strip("`")
    return work


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_splitter_is_linear_on_every_shape(name: str) -> None:
    """8 times the line costs at most 8 * 1.5 times the work, whatever the line is made of."""
    small = _work(SHAPES[name](SIZE))
    big = _work(SHAPES[name](SIZE * SCALE))
    assert big <= small * SCALE * SLACK, f"{name}: work grew {big / small:.1f}x for {SCALE}x the text"


def test_the_splitter_hands_the_scanner_bounded_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100,000-character segment reaches the scanner in slices of at most ``SCAN_SLICE``."""
    sizes: list[int] = []
    feed = MarkdownScanner.feed

    def counted(self: MarkdownScanner, text: str) -> None:
        sizes.append(len(text))
        feed(self, text)

    monkeypatch.setattr(MarkdownScanner, "feed", counted)
    messages = split_message(SHAPES["digits 0 1 2"](100_000))
    assert len(messages) >= 50
    assert sum(sizes) >= 100_000 - 1 and max(sizes) <= SCAN_SLICE


# -- properties over adversarial text --------------------------------------------------------------------

ADVERSARIAL = [
    "0 1 2 3 ",
    "- x - x ",
    "1. 1. 1. ",
    "* * * ",
    "*_*_*_",
    "** ** ",
    "`",
    "``",
    "```",
    "` a `` b ``` ",
    "| a | b |",
    "| a | b |\n",
    "|---|---|\n",
    "<<<< ",
    "< ",
    "> > ",
    ">>> ",
    "   ",
    "@a <@1 <@12> ",
    "xxxxxxxxxxxxxxxxxxxx",
    "\U0001f1eb\U0001f1f7\U0001f1eb",
    "```py\n",
    "````\n",
    "\n",
    "\n\n",
    ". ",
]
ADVERSARIAL_TEXT = st.lists(
    st.one_of(st.sampled_from(ADVERSARIAL), st.text(alphabet="ab -*`|<>\n", max_size=10)), max_size=60
).map("".join)


@settings(max_examples=200, deadline=None)
@given(ADVERSARIAL_TEXT, st.integers(48, 160))
def test_adversarial_splits_rebuild_the_text(text: str, limit: int) -> None:
    """Messages fit and balance their fences; without the added fence close/reopen and ``>>> `` they
    join back to the text, minus whitespace at the cuts (the splitter's documented losses)."""
    messages = split_message(text, limit)
    if not text.strip():
        assert messages == []
        return
    body, pieces = cut_pieces(text.strip(), limit)
    assert messages == [piece for piece in pieces if not is_blank_piece(piece)]
    # A documented limit: a fence opening line too long for a message cannot be kept balanced.
    long_opener = any(
        len(line) > limit // 4 and line.lstrip(" \t>").startswith(("```", "~~~")) for line in text.split("\n")
    )
    for message in messages:
        assert 0 < len(message) <= limit
        assert long_opener or fences_balanced(message), message
    assert reconstruct(body, pieces, drop_whitespace=True) is not None, pieces


def test_coalescing_a_long_queue_merges_bounded_texts() -> None:
    """Text queued behind a slow send is merged only up to ``MERGE_MESSAGES`` messages' worth: each
    merge copies a bounded text and each split is of a bounded text, however long the queue."""
    limit = 200
    config = StreamConfig(delivery=DeliveryMode.LIVE, message_limit=limit)
    delivery = DiscordDelivery(sink=MemorySink(), context=StreamContext(), config=config)
    queue = [
        Segment(kind=SegmentKind.TEXT, text=f"Paragraph {k}, a few words long.\n\n") for k in range(2000)
    ]
    merged = [queue[0]]
    for segment in queue[1:]:
        item = delivery.merge(merged[-1], segment)
        if item is None:
            merged.append(segment)
        else:
            assert isinstance(item, Segment)
            merged[-1] = item
    longest = max(len(s.text) for s in queue)
    assert 1 < len(merged) < len(queue) // 8
    assert all(len(s.text) < MERGE_MESSAGES * limit + longest for s in merged)
    assert "".join(s.text for s in merged) == "".join(s.text for s in queue)


@pytest.mark.parametrize(
    "text",
    ["`" * 5000, "intro " + "`" * 5000 + " outro", "`" * 3000 + "\ncode\n" + "`" * 3000 + "\nafter"],
    ids=["run", "run-in-prose", "long-open-and-close"],
)
def test_a_fence_marker_longer_than_a_message_ends(text: str) -> None:
    """A fence marker whose close cannot fit a message (the old splitter looped forever on it): the
    split ends, every message fits, and the text other than fence lines is sent."""
    messages = split_message(text, LIMIT)
    assert all(0 < len(message) <= LIMIT for message in messages)
    words = [word for word in ("intro", "outro", "code", "after") if word in text]
    sent = "".join(messages)
    assert all(word in sent for word in words)


@pytest.mark.parametrize(
    "make",
    [
        lambda n: "```\nx" + "`" * n + "\n```",
        lambda n: "```\n" + "x" * 10 + "`" * n + "\ny\n```",
        lambda n: "```\nx" + "`" * n,
    ],
    ids=["run-line", "run-line-then-code", "unclosed"],
)
@pytest.mark.parametrize("limit", [LIMIT, 2000])
def test_a_fence_run_inside_a_block_is_cut_at_the_limit(make: object, limit: int) -> None:
    """A block line that is a fence run longer than a message: every cut in it reads as a closing
    line, so the cut is taken at the limit anyway (the old splitter sent one backtick per message:
    4,000 backticks at Discord's limit were 2,009 messages and quadratic work). Nothing is lost:
    every backtick of the text is in a message, messages are few, and work grows linearly."""
    assert callable(make)
    text: str = make(4 * limit)
    messages = split_message(text, limit)
    assert all(0 < len(message) <= limit for message in messages)
    assert len(messages) <= 2 * len(text) // limit + 2
    sent = "".join(messages)
    assert sent.count("`") >= text.count("`") and all(w in sent for w in ("x", "y") if w in text)
    small = count_work(lambda: split_message(make(4 * limit), limit), *MODULES)
    big = count_work(lambda: split_message(make(32 * limit), limit), *MODULES)
    assert big <= small * SCALE * SLACK
