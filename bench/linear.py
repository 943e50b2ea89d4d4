"""Figure 6, linear scanning: one long line of each adversarial shape through the splitter and the flusher.

A scanner that re-reads the rest of a line after every word is quadratic on a
line of words that start like markdown (``0 1 2 3 …``, ``- x - x …``), and any
user can ask a model for such a line. Each shape here is one line of about
``size`` characters (1 MB in a full run); the splitter (``split_message``)
and the live flusher (fed 64-character deltas, then the final flush) are
timed on it, and on a plain-prose line of the same length in the same run.
The figures are ratios, so they mean the same on any machine: each shape's
time against prose (a linear path stays within a small constant of it, a
quadratic one grows with the size), and each shape's time on the full line
against a quarter of it (about 4 when linear, 16 when quadratic).

``SHAPES`` is also what the linearity tests count work on
(``tests/operators/test_linear_scanning.py``, ``tests/sinks/test_split_linear.py``).
"""

from __future__ import annotations

__all__ = ("PROSE", "SHAPES", "LinearResult", "ShapeTimes", "measure_linear", "shape")

import gc
import time
from collections.abc import Callable

import attrs

from rxcord.core.config import StreamConfig
from rxcord.core.types import DeliveryMode
from rxcord.operators.flusher import Flusher
from rxcord.sinks.split_message import split_message


def _repeat(unit: str) -> Callable[[int], str]:
    def make(n: int) -> str:
        return (unit * (n // len(unit) + 1))[:n]

    return make


def _digits(n: int) -> str:
    return _repeat("".join(f"{i % 10} " for i in range(10)))(n)


PROSE = "prose"
SHAPES: dict[str, Callable[[int], str]] = {
    PROSE: _repeat("The quick brown fox jumps over the lazy dog, then rests. "),
    "digits 0 1 2": _digits,
    "dashes - x - x": _repeat("- x "),
    "numbered 1. 1.": _repeat("1. "),
    "stars * * *": _repeat("* "),
    "emphasis *_*_": _repeat("*_"),
    "bold ** runs": _repeat("** x "),
    "backticks ` `": _repeat("` "),
    "backticks `` ``": _repeat("`` a "),
    "backticks odd": _repeat("``` a ` b `` "),
    "pipes | a | b |": _repeat("| a | b "),
    "table rows": _repeat("| a | b |\n"),
    "angles < <": _repeat("< "),
    "angle run <<<": _repeat("<"),
    "quotes > > >": _repeat("> "),
    "quote lines": _repeat("> a b\n"),
    "list lines": _repeat("1. a - b\n"),
    "backtick run": _repeat("`"),
    "quote >>> then spaces": lambda n: ">>> " + " " * (n - 5) + "x",
    "mentions @a <@1": _repeat("@a <@1 "),
    "one long word": _repeat("x"),
    "flags": _repeat("\U0001f1eb\U0001f1f7"),
    "code line in a block": lambda n: "```\n" + _repeat("x")(n - 4),
    "fence runs in a block": lambda n: "````\n" + _repeat("``` ")(n - 5),
}
"""Adversarial shapes: ``SHAPES[name](n)`` is a text of *n* characters (mostly one line)."""


def shape(name: str, n: int) -> str:
    """The text of shape *name*, *n* characters long."""
    return SHAPES[name](n)


@attrs.frozen
class ShapeTimes:
    """Seconds for one shape (the best of the runs)."""

    split: float
    flush: float


@attrs.frozen
class LinearResult:
    """Figure 6: per shape, the splitter's and the flusher's time on one line of ``size`` characters."""

    size: int
    times: dict[str, ShapeTimes]
    quarter: dict[str, ShapeTimes]
    """The same on a line of ``size // 4`` characters."""

    def growth(self, name: str) -> tuple[float, float]:
        """Time on the full line against a quarter of it: (splitter, flusher); 4 when linear."""
        t, q = self.times[name], self.quarter[name]
        return t.split / q.split, t.flush / q.flush

    def per_kb(self, name: str) -> tuple[float, float]:
        """Milliseconds per 1,000 characters: (splitter, flusher)."""
        t = self.times[name]
        kb = self.size / 1000
        return t.split * 1000 / kb, t.flush * 1000 / kb

    def ratio(self, name: str) -> tuple[float, float]:
        """Time against the prose line of the same run: (splitter, flusher)."""
        t, prose = self.times[name], self.times[PROSE]
        return t.split / prose.split, t.flush / prose.flush


_DELTA = 64
_CONFIG = StreamConfig(delivery=DeliveryMode.LIVE, max_flushes=1_000_000_000)


def _flush(text: str) -> int:
    flusher = Flusher(_CONFIG)
    out = 0
    for i in range(0, len(text), _DELTA):
        out += len(flusher.push(text[i : i + _DELTA]))
    return out + len(flusher.flush(final=True))


def _best(fn: Callable[[], object], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        gc.collect()
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return max(best, 1e-9)


def _time_shapes(size: int, runs: int) -> dict[str, ShapeTimes]:
    times: dict[str, ShapeTimes] = {}
    for name, make in SHAPES.items():
        text = make(size)
        times[name] = ShapeTimes(
            split=_best(lambda text=text: split_message(text), runs),
            flush=_best(lambda text=text: _flush(text), runs),
        )
    return times


def measure_linear(size: int, runs: int) -> LinearResult:
    """Time the splitter and the live flusher on one *size*-character line of each shape, and on a
    quarter of it (CPU time, the best of *runs*)."""
    return LinearResult(size, _time_shapes(size, runs), _time_shapes(size // 4, runs))
