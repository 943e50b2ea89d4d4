r"""Speaker guard: stop the stream when the model starts writing another speaker's turn.

Chat models continuing a transcript sometimes go on past their own reply and
write the next line for someone else (``\nUser: thanks!``). A guard in
each adapter (stage 02) would hold back text that could begin another
speaker's turn, with state per stream; ``speaker_guard`` is one of the
internal stops. In rxcord it is one operator on
``ProcessedChunk``s, right after normalization, so it works for every
provider.

A *turn* is, at a line start (the start of the stream counts as one)::

    [ \t]{0,4}  emphasis?  [?  NAME  ]?  emphasis?  [ \t]{0,3}  :

with ``NAME`` any configured speaker name, case-insensitively, and emphasis
one of ``*``, ``**``, ``***``, ``_``, ``__``. So ``User:``, ``**Alice**:``,
``**Alice:**``, ``[Bob]:`` all count; ``Alice's turn`` and ``> Alice: hi``
(a quote) do not.

Theory. Text arrives in arbitrary chunks, so the guard keeps the last
*partial line* while it could still grow into a turn (``"\nAl"``,
``"\n**"``), and releases everything before it. Each line start is decided
exactly once: a complete turn trips the guard; a line that can no longer
become one is released. The prefix test is a regular expression built from
the turn grammar (the union, over each part, of "all earlier parts, then a
prefix of this part"), so it is exact, not a length heuristic. Because the
decision for a line start depends only on that line's text, any chunking of
the same text releases the same text and trips at the same place (split
invariance, property-tested). The held tail is bounded by the grammar's
longest turn.
"""

from __future__ import annotations

__all__ = ("SpeakerGuard", "speaker_guard")

import re
from collections.abc import Iterable

import attrs
from reactivex import Observable, abc
from reactivex.disposable import SingleAssignmentDisposable

from rxcord.core.types import ChunkType, Operator, ProcessedChunk, StopKind, StopSignal

_EMPHASIS = ("***", "**", "*", "__", "_")
_BARE_TEXT = ProcessedChunk.text("")


def _literal_alternatives(options: Iterable[str]) -> str:
    return "(?:" + "|".join(re.escape(option) for option in options) + ")"


def _prefix_of_literal(literal: str) -> str:
    """A regex matching every prefix of *literal*, the empty one included: ``(?:a(?:b)?)?``."""
    pattern = ""
    for char in reversed(literal):
        pattern = "(?:" + re.escape(char) + pattern + ")?"
    return pattern


def _turn_parts(names: tuple[str, ...]) -> list[tuple[str, str]]:
    """The turn grammar as ``(full, prefix)`` regex pairs, one per part, in order."""

    def choice(options: Iterable[str], optional: bool) -> tuple[str, str]:
        ordered = sorted(options, key=len, reverse=True)  # longest first: "**" before "*"
        full = _literal_alternatives(ordered) + ("?" if optional else "")
        prefix = "(?:" + "|".join(_prefix_of_literal(option) for option in ordered) + ")"
        return full, prefix

    indent = r"[ \t]{0,4}"
    gap = r"[ \t]{0,3}"
    return [
        (indent, indent),
        choice(_EMPHASIS, optional=True),
        choice(("[",), optional=True),
        choice(names, optional=False),
        choice(("]",), optional=True),
        choice(_EMPHASIS, optional=True),
        (gap, gap),
        (":", _prefix_of_literal(":")),
    ]


def _compile(names: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(complete turn, could still become a turn) patterns for *names*."""
    parts = _turn_parts(names)
    full = "".join(f for f, _ in parts)
    prefixes = ("".join(f for f, _ in parts[:k]) + parts[k][1] for k in range(len(parts)))
    return re.compile(full, re.IGNORECASE), re.compile("(?:" + "|".join(prefixes) + ")", re.IGNORECASE)


def _usable_names(names: Iterable[str]) -> tuple[str, ...]:
    """Distinct, stripped, non-empty single-line names."""
    out: list[str] = []
    for name in names:
        stripped = name.strip()
        if stripped and "\n" not in stripped and stripped not in out:
            out.append(stripped)
    return tuple(out)


@attrs.define(init=False)
class SpeakerGuard:
    """Incremental speaker-turn detector for one stream (pure: no Rx, no I/O).

    ``feed`` returns the text that is safe to release and whether a turn was
    found; after a trip it returns ``("", True)`` forever. ``finish`` releases
    a held tail at the end of the stream.
    """

    names: tuple[str, ...]
    """The speaker names watched; empty disables the guard."""
    turn: str | None
    """The text that tripped the guard (``"User:"``), for logs; ``None`` until it trips."""
    _full: re.Pattern[str] | None
    _partial: re.Pattern[str] | None
    _pending: str
    """A held partial line (starts at a line start; never contains a newline)."""
    _line_start: bool
    """Whether the released text so far ends at a line start (true at the start of the stream)."""

    def __init__(self, names: Iterable[str]) -> None:
        """Watch for turns of *names* (``("User", "Alice")``); an empty set disables the guard."""
        usable = _usable_names(names)
        full, partial = _compile(usable) if usable else (None, None)
        self.__attrs_init__(usable, None, full, partial, "", True)

    @property
    def tripped(self) -> bool:
        """Whether a turn was found."""
        return self.turn is not None

    def feed(self, text: str) -> tuple[str, bool]:
        """Consume *text*; return ``(safe text to release, tripped)``."""
        if self.turn is not None:
            return "", True
        if self._full is None or self._partial is None:
            return text, False
        buffer = self._pending + text
        starts = [0] if self._line_start else []
        newline = buffer.find("\n")
        while newline >= 0:
            starts.append(newline + 1)
            newline = buffer.find("\n", newline + 1)
        for start in starts:
            match = self._full.match(buffer, start)
            if match:
                self.turn = match.group().strip()
                self._pending = ""
                return buffer[:start], True
        last = starts[-1] if starts else -1
        if last >= 0 and self._partial.fullmatch(buffer, last):
            released, self._pending = buffer[:last], buffer[last:]
        else:
            released, self._pending = buffer, ""
        if released:
            self._line_start = released.endswith("\n")
        return released, False

    def finish(self) -> str:
        """The stream ended (or stopped being text): release a held tail that never became a turn."""
        tail, self._pending = self._pending, ""
        if tail:
            self._line_start = False
        return tail


def speaker_guard(
    names: Iterable[str], stops: abc.ObserverBase[StopSignal] | None = None
) -> Operator[ProcessedChunk, ProcessedChunk]:
    r"""Hold back text that could begin another speaker's turn; stop the stream when one begins.

    .. marble::
        -a------b--------|        a="Hi\nAl"   b="ice is here"
        [ speaker_guard(("Alice",)) ]
        -A------B--------|        A="Hi\n"     B="Alice is here"

        -a------b--------|        a="Hi\nUs"   b="er: hello"
        [ speaker_guard(("User",), stops) ]
        -A------|                 A="Hi\n"     stops gets StopSignal(SPEAKER_GUARD)

    Text chunks carry only their released part (a chunk left with nothing
    to carry is dropped); a held tail is released, as its own text chunk,
    before any non-text chunk, at completion and before an error. On a trip:
    the text before the turn is emitted, ``stops.on_next(StopSignal(
    StopKind.SPEAKER_GUARD))`` is called when *stops* is given, the stream
    completes, and the source is disposed (closing the HTTP response).

    Args:
        names: Other speakers' names (``StreamConfig.speaker_names``); empty disables the guard.
        stops: The stream's stop observer, told before completion so the
            orchestrator records a ``speaker_guard`` stop, not a normal end.

    Returns:
        An operator on processed chunks; a fresh ``SpeakerGuard`` per subscription.
    """
    watched = tuple(names)

    def operator(source: Observable[ProcessedChunk]) -> Observable[ProcessedChunk]:
        def subscribe(
            observer: abc.ObserverBase[ProcessedChunk], scheduler: abc.SchedulerBase | None = None
        ) -> abc.DisposableBase:
            guard = SpeakerGuard(watched)
            upstream = SingleAssignmentDisposable()
            done = False

            def release_tail() -> None:
                tail = guard.finish()
                if tail:
                    observer.on_next(ProcessedChunk.text(tail))

            def on_next(chunk: ProcessedChunk) -> None:
                nonlocal done
                if done:
                    return
                if chunk.type is not ChunkType.TEXT:
                    release_tail()
                    observer.on_next(chunk)
                    return
                if not chunk.content:
                    observer.on_next(chunk)
                    return
                safe, tripped = guard.feed(chunk.content)
                released = attrs.evolve(chunk, content=safe)
                if safe or released != _BARE_TEXT:
                    observer.on_next(released)
                if tripped:
                    done = True
                    if stops is not None:
                        stops.on_next(
                            StopSignal(StopKind.SPEAKER_GUARD, reason=f"speaker turn {guard.turn!r}")
                        )
                    observer.on_completed()
                    upstream.dispose()

            def on_error(error: Exception) -> None:
                nonlocal done
                if not done:
                    done = True
                    release_tail()
                    observer.on_error(error)

            def on_completed() -> None:
                nonlocal done
                if not done:
                    done = True
                    release_tail()
                    observer.on_completed()

            upstream.disposable = source.subscribe(on_next, on_error, on_completed, scheduler=scheduler)
            return upstream

        return Observable(subscribe)

    return operator
