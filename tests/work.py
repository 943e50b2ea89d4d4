"""Counting work instead of timing it: tests that assert "linear" hold on a loaded machine.

``count_opcodes(fn)`` is the number of Python bytecode instructions ``fn()`` executes: the same
on a fast idle machine and on a loaded 2-core one. ``assert_linear`` compares two input sizes:
linear code does about ``scale`` times the work for ``scale`` times the input, code that
rescans its buffer does ``scale ** 2`` times.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def count_opcodes(fn: Callable[[], object]) -> int:
    """Bytecode instructions executed while ``fn()`` runs (in every Python frame it calls)."""
    count = 0

    def trace(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        elif event == "opcode":
            count += 1
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count


def assert_linear(
    run: Callable[[int], object], small: int, scale: int = 4, slack: float = 1.5
) -> tuple[int, int]:
    """Assert ``run(small * scale)`` costs at most ``scale * slack`` times ``run(small)``; return both."""
    base = count_opcodes(lambda: run(small))
    big = count_opcodes(lambda: run(small * scale))
    assert base > 0
    assert big <= base * scale * slack, (
        f"work grew {big / base:.1f}x for {scale}x the input ({base} -> {big})"
    )
    return base, big
