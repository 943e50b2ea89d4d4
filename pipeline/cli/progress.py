"""A one-line progress display for long replays and benchmarks (command line, not a stage).

A bar when the total is known (``bench 12/40 runs [#######.........] 30%``),
a live count when it is not (``replay: 981 chunks, 1.2 s``). It draws on a
terminal only: when the stream is not a TTY (a pipe, a file, CI, ``--json``
consumers reading stdout) it stays silent, so machine-readable output is never
mixed with it. It writes to stderr by default, redraws at most every
``interval`` seconds, and ends its line on ``close``.

Counting can come from code (``advance``), from an iterable (``iterate``) or
from inside a chain (``tap``, a pass-through operator counting items).
"""

from __future__ import annotations

__all__ = ("Progress", "iterate")

import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sized
from typing import TextIO, TypeVar

import attrs
from reactivex import Observable, abc

from rxcord.core.types import Operator

_T = TypeVar("_T")


def _stderr() -> TextIO:
    return sys.stderr


@attrs.define
class Progress:
    """A progress line on a terminal (silent elsewhere).

    Example::

        with Progress("bench", total=40, unit="runs") as progress:
            for _ in range(40):
                run_once()
                progress.advance()

    Args:
        label: What is progressing.
        total: The number of items expected (``None``: show a live count).
        unit: The items' name.
        stream: Where to draw (default ``sys.stderr``).
        enabled: Force on or off; ``None`` draws only when *stream* is a TTY.
        interval: Minimum seconds between redraws.
        clock: Monotonic seconds (elapsed time and redraw pacing; injectable for tests).
        width: Characters of the bar.
    """

    label: str
    total: int | None = None
    unit: str = "items"
    stream: TextIO = attrs.field(factory=_stderr)
    enabled: bool | None = None
    interval: float = 0.1
    clock: Callable[[], float] = time.monotonic
    width: int = 24
    count: int = attrs.field(default=0, init=False)
    """Items counted so far."""
    _start: float = attrs.field(default=0.0, init=False)
    _drawn_at: float = attrs.field(default=-math.inf, init=False)
    _drawn: int = attrs.field(default=0, init=False)
    """Length of the line on screen (0: nothing drawn yet)."""
    _closed: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        if self.enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            self.enabled = bool(isatty()) if callable(isatty) else False
        self._start = self.clock()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def advance(self, n: int = 1) -> None:
        """Count *n* more items (and redraw if the last redraw is old enough)."""
        self.count += n
        self._draw(force=False)

    def render(self) -> str:
        """The progress line as it would be drawn now."""
        elapsed = self.clock() - self._start
        if self.total:
            done = min(1.0, self.count / self.total)
            filled = round(done * self.width)
            bar = "#" * filled + "." * (self.width - filled)
            counted = f"{self.count}/{self.total} {self.unit}"
            return f"{self.label} {counted} [{bar}] {done * 100:3.0f}%, {elapsed:.1f} s"
        return f"{self.label}: {self.count} {self.unit}, {elapsed:.1f} s"

    def close(self) -> None:
        """Draw the final line and end it (nothing if the display is off or never drew)."""
        if self._closed:
            return
        self._closed = True
        if self.enabled:
            self._draw(force=True)
            self.stream.write("\n")
            self.stream.flush()

    def tap(self) -> Operator[_T, _T]:
        """A pass-through operator counting every item.

        .. marble::
            -a-b-c-|
            [ progress.tap() ]
            -a-b-c-|      count: 3
        """
        return _Counter(self)

    def _draw(self, *, force: bool) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if not force and now - self._drawn_at < self.interval:
            return
        self._drawn_at = now
        line = self.render()
        # Pad over a longer previous line instead of relying on terminal escape codes.
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)


@attrs.frozen
class _Counter:
    progress: Progress

    def __call__(self, source: Observable[_T]) -> Observable[_T]:
        progress = self.progress

        def subscribe(
            observer: abc.ObserverBase[_T], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            def on_next(item: _T) -> None:
                progress.advance()
                observer.on_next(item)

            return source.subscribe(on_next, observer.on_error, observer.on_completed, scheduler=scheduler)

        return Observable(subscribe)


def iterate(
    items: Iterable[_T],
    label: str,
    *,
    total: int | None = None,
    unit: str = "items",
    stream: TextIO | None = None,
    enabled: bool | None = None,
) -> Iterator[_T]:
    """Yield *items*, showing progress (the total defaults to ``len(items)`` when it has one).

    Example::

        for case in iterate(cases, "bench", unit="cases"):
            run(case)
    """
    if total is None and isinstance(items, Sized):
        total = len(items)
    progress = Progress(label, total=total, unit=unit, stream=stream or sys.stderr, enabled=enabled)
    with progress:
        for item in items:
            yield item
            progress.advance()
