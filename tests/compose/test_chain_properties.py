"""Properties of the whole chain (stages 03-07 planning) under virtual time, for any text and chunking.

The source is the same visible text cut at arbitrary points; delivery plans real Discord
payloads (mentions, the 2000-code-point split, fences) without I/O.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rxcord.core.config import StreamConfig
from rxcord.core.state import StreamResult
from rxcord.core.types import DeliveryMode
from tests.chain_harness import run_planned
from tests.strategies import cut

PIECES = [
    "Hello world. ",
    "This is a sentence! ",
    "\n\n",
    "\n",
    "word ",
    "é👋 ",
    "`inline code` ",
    "\n```python\nprint('x')\n    indented = 1\n```\n",
    "\n```\n" + "code line that is long enough to matter\n" * 60 + "```\n",
    "\n~~~\nraw ``` text\n~~~\n",
    "- item one\n",
    "> quoted\n",
    "<@123456789012345678> ",
    "https://example.com/a_b?c=d ",
    "x" * 300,
    "lorem ipsum dolor sit amet " * 12,
]
# Fenced blocks come whole and start on their own line, as models write them. (A fence line
# inside an open block, or ``` in the middle of a line, is content in CommonMark, which the
# flusher follows, while Discord's renderer treats it as a fence: an ambiguity left out here.)
TEXT = st.lists(st.sampled_from(PIECES), min_size=1, max_size=40).map("".join)


def _run(text: str, cuts: list[int], mode: DeliveryMode) -> tuple[StreamResult, list[str]]:
    config = StreamConfig(
        delivery=mode, typing_interval=0, live_idle_flush=1.0, max_messages=10_000, max_flushes=10_000
    )
    return run_planned(cut(text, cuts), config)


def _fences_balanced(message: str) -> bool:
    opened: str | None = None
    for line in message.split("\n"):
        stripped = line.lstrip(" >")
        for marker in ("```", "~~~"):
            if stripped.startswith(marker) and (opened is None or opened == marker):
                opened = None if opened else marker
                break
    return opened is None


def _squash(text: str) -> str:
    return "".join(text.replace("```python", "").replace("```", "").replace("~~~", "").split())


@settings(max_examples=80, deadline=None)
@given(TEXT, st.lists(st.integers(min_value=0), max_size=25), st.lists(st.integers(min_value=0), max_size=25))
def test_aggregated_messages_identical_for_any_chunking(
    text: str, cuts_a: list[int], cuts_b: list[int]
) -> None:
    """Aggregated delivery gives the same Discord messages however the provider split the text."""
    _, first = _run(text, cuts_a, DeliveryMode.AGGREGATED)
    _, second = _run(text, cuts_b, DeliveryMode.AGGREGATED)
    assert first == second


@settings(max_examples=80, deadline=None)
@given(TEXT, st.lists(st.integers(min_value=0), max_size=25), st.sampled_from(list(DeliveryMode)))
def test_messages_bounded_balanced_and_lossless(text: str, cuts: list[int], mode: DeliveryMode) -> None:
    """Every message is 1-2000 code points with balanced fences; together they carry all the visible text."""
    result, messages = _run(text, cuts, mode)
    assert result.visible_text == text
    assert all(0 < len(m) <= 2000 and m.strip() for m in messages)
    assert all(_fences_balanced(m) for m in messages)
    assert _squash("".join(messages)) == _squash(text)


def test_property_harness_sees_failures() -> None:
    """The harness itself is honest: a message-dropping sink is caught by the lossless check."""
    result, messages = _run("One.\n\nTwo.", [3], DeliveryMode.LIVE)
    assert _squash("".join(messages[:-1])) != _squash(result.visible_text)
