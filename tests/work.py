"""Counting work instead of timing it: tests that assert "linear" hold on a loaded machine.

``count_opcodes(fn)`` is the number of Python bytecode instructions ``fn()`` executes: the same
on a fast idle machine and on a loaded 2-core one. ``assert_linear`` compares two input sizes:
linear code does about ``scale`` times the work for ``scale`` times the input, code that
rescans its buffer does ``scale ** 2`` times.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType, ModuleType
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


class _CountingPattern:
    """A compiled pattern that adds what each call reads to ``counter[0]`` (stand-in for ``re.Pattern``).

    What a call reads, as the regex engine (C code, invisible to ``count_opcodes``) does:
    a match from ``pos`` to its end, a search up to its match or to ``endpos`` when it
    finds none, ``finditer`` up to each match and to ``endpos`` at its end, ``sub`` /
    ``split`` / ``findall`` the whole string. A failed anchored match counts 1 (the
    patterns of the scanners fail on their first characters). A pattern re-run from
    a position to the end of the line after every word counts the line each time.
    """

    __slots__ = ("_counter", "_pattern")

    def __init__(self, pattern: re.Pattern[str], counter: list[int]) -> None:
        self._pattern = pattern
        self._counter = counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pattern, name)

    def _anchored(self, found: re.Match[str] | None, pos: int) -> re.Match[str] | None:
        self._counter[0] += found.end() - pos + 1 if found is not None else 1
        return found

    def match(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._anchored(self._pattern.match(string, pos, endpos), pos)

    def fullmatch(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self._anchored(self._pattern.fullmatch(string, pos, endpos), pos)

    def search(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        found = self._pattern.search(string, pos, endpos)
        self._counter[0] += (found.end() if found is not None else min(endpos, len(string))) - pos + 1
        return found

    def finditer(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        last = pos
        for found in self._pattern.finditer(string, pos, endpos):
            self._counter[0] += found.end() - last + 1
            last = found.end()
            yield found
        self._counter[0] += max(0, min(endpos, len(string)) - last)

    def _whole(self, string: str) -> None:
        self._counter[0] += len(string) + 1

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        self._whole(string)
        return self._pattern.sub(repl, string, count)

    def split(self, string: str, maxsplit: int = 0) -> list[str | Any]:
        self._whole(string)
        return self._pattern.split(string, maxsplit)

    def findall(self, string: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        self._whole(string)
        return self._pattern.findall(string, pos, endpos)


@contextmanager
def counting_patterns(*modules: ModuleType) -> Iterator[list[int]]:
    """Replace every compiled pattern held by *modules* with a counting one; yield the counter.

    ``counter[0]`` is the characters the patterns read (see ``_CountingPattern``) while
    the block runs; the modules get their patterns back at its end.
    """
    counter = [0]
    saved: list[tuple[ModuleType, str, re.Pattern[str]]] = []
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                saved.append((module, name, value))
    try:
        for module, name, pattern in saved:
            setattr(module, name, _CountingPattern(pattern, counter))
        yield counter
    finally:
        for module, name, pattern in saved:
            setattr(module, name, pattern)


def count_work(fn: Callable[[], object], *modules: ModuleType) -> int:
    """The work ``fn()`` does: bytecode instructions, plus the characters the patterns of *modules* read."""
    with counting_patterns(*modules) as counter:
        opcodes = count_opcodes(fn)
    return opcodes + counter[0]
