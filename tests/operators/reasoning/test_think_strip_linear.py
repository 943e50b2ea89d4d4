"""The think-tag stripper and its code tracker are linear on any input (work counted, never timed).

Work is bytecode instructions plus the characters the modules' compiled patterns read
(``tests.work.count_work``), for 8 times the input: at most 8 * 1.5 times the work. Each shape
is fed whole and one character at a time (the worst chunking: a carry and a note per chunk),
and what a graceful stop would read (``held``) is taken after every chunk, as the pipeline does.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rxcord.operators.markdown import code_spans
from rxcord.operators.reasoning import tags as reasoning_tags
from rxcord.operators.reasoning import think_strip
from rxcord.operators.reasoning.think_strip import DEFAULT_START_WINDOW, WHOLE_REPLY, ThinkStripper
from tests.work import count_work

SIZE = 1000
SCALE = 8
SLACK = 1.5
MODULES = (think_strip, code_spans, reasoning_tags)


def _repeat(unit: str) -> Callable[[int], str]:
    return lambda n: unit * (n // len(unit) + 1)


def _growing_runs(n: int) -> str:
    """Backtick runs of ever new lengths: no span ever closes (CommonMark would backtrack)."""
    out: list[str] = []
    size = 0
    length = 1
    while size < n:
        piece = "a" + "`" * length + "<think>"
        out.append(piece)
        size += len(piece)
        length = length % 8 + 1
    return "".join(out)


SHAPES: dict[str, Callable[[int], str]] = {
    "prose": _repeat("Hello there, friend. "),
    "partial tags": _repeat("<thi"),
    "angles": _repeat("<"),
    "closers": _repeat("</think>"),
    "blocks": _repeat("<think>a</think>b "),
    "seam chains": _repeat("<th<thi<think>a</think>nk>ink>"),
    "backtick runs": _growing_runs,
    "tags in spans": _repeat("`<think>` "),
    "fences": _repeat("\n```\n<think>\n```\n"),
    "tilde fences": _repeat("\n~~~x\n</think>\n"),
    "held block": lambda n: "Shown. <think>" + "word `<` " * (n // 9 + 1),
    "code closers": lambda n: "<think>`</think>" + "x </think` " * (n // 11 + 1),
    "blank lines": _repeat("`a\n\n<think>b</think>\n"),
}
WINDOWS = {"no window": 0, "window": DEFAULT_START_WINDOW, "whole reply": WHOLE_REPLY}


def _run(text: str, window: int, step: int) -> None:
    stripper = ThinkStripper(start_window=window)
    for i in range(0, len(text), step):
        stripper.feed(text[i : i + step])
        stripper.held()
    stripper.finish()


@pytest.mark.parametrize("window", list(WINDOWS.values()), ids=list(WINDOWS))
@pytest.mark.parametrize("step", [1, 0], ids=["per character", "whole"])
@pytest.mark.parametrize("name", sorted(SHAPES))
def test_the_stripper_is_linear(name: str, step: int, window: int) -> None:
    make = SHAPES[name]
    small_text, big_text = make(SIZE), make(SIZE * SCALE)
    small = count_work(lambda: _run(small_text, window, step or len(small_text)), *MODULES)
    big = count_work(lambda: _run(big_text, window, step or len(big_text)), *MODULES)
    assert small > 0  # the work is counted (prose fed whole is never even read: no tag can start)
    assert big <= small * SCALE * SLACK, f"{name}: work grew {big / small:.1f}x for {SCALE}x the text"


def test_the_work_count_sees_a_rescan() -> None:
    """The measure can fail: re-feeding the text read so far on every chunk is caught."""

    def rescanning(text: str) -> None:
        for i in range(1, len(text) + 1, 25):
            tracker = code_spans.CodeTracker()
            tracker.feed(text[:i])
            tracker.in_code()

    small = count_work(lambda: rescanning(_growing_runs(SIZE // 5)), *MODULES)
    big = count_work(lambda: rescanning(_growing_runs(SIZE // 5 * SCALE)), *MODULES)
    assert big > small * SCALE * SLACK
