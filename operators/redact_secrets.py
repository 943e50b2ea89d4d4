r"""Redact the stream's secrets in the text of stage 03, however the deltas cut them.

The transport redacts the configured secrets in the bytes it reads (``rxcord.core.redact``),
event by event. A secret echoed by the model can still reach the decoded text: written with
JSON ``\u`` escapes (``\u0073k-...`` decodes to ``sk-...``), or cut across two deltas (two
events, each clean on its own). This guard comes right after the normalizer, before the
other text guards, so they classify redacted text (none can cut a secret into a visible and a
reasoning half, as a spill boundary inside a bot token would) and nothing leaves stage 03
with a secret in it:

- the visible text and the reasoning text (raw and summary thoughts, read as one text, the
  way ``StreamResult.reasoning`` joins them) each go through a ``SecretHoldback``: text that
  may still be the start of a secret is held until the next delta decides it, every
  occurrence is replaced by ``[redacted]``;
- a tool call's arguments and replayed fields, an error chunk's error and a non-text chunk's
  thoughts are complete values: redacted whole (``Redactor.value``, ``Redactor.error``); the
  verbatim parser reads its calls from text redacted already.

A thought entry whose text is all held stays, empty (a chunk carrying reasoning arms the
spill guard, whatever the cut). Held text is released just before a non-text chunk (a call,
an error or ``done`` ends the stream at the orchestrator) and at completion. At a graceful
stop the stop gate releases it (``tail_at_stop``), following ``rxcord.operators.reasoning.held_at_stop``:
each chunk this guard lets pass notes what it still holds after it (``TAIL``, only while it
holds something, already redacted), and the stop gate emits it as reasoning after what the
later guards hold. It was never classified (it may be inside a think block the later guards
have not seen yet) and it is at most a possible start of a secret, rarely more than a few
characters: a stop in the middle of a key must not post its first characters, so it is kept
as reasoning, never shown and never lost.

The stage is in the pipeline whenever the stream knows a secret (``StageContext.redactor``);
it costs one C-speed search per delta when no secret can start in it.

.. marble::
    -a------b---------|      a="key sk-live-1"  b="2345678 ok"   (secret "sk-live-12345678")
    [ redact_secrets(Redactor.of("sk-live-12345678")) ]
    -A------B---------|      A="key "  B="[redacted] ok"
"""

from __future__ import annotations

__all__ = ("NAME", "TAIL", "redact_secrets", "tail_at_stop")

import functools
from collections.abc import Sequence
from typing import Final

import attrs

from rxcord.core.redact import Redactor, SecretHoldback
from rxcord.core.types import ChunkType, ProcessedChunk, ThoughtKind, ThoughtLogEntry
from rxcord.operators.fused import Fusable

NAME: Final = "redact_secrets"
"""The stage's name in the pipeline (removing it is the opt-out: ``rxcord.compose.pipeline``)."""

TAIL: Final = "rxcord.secret_tail"
"""Metadata key: ``(visible, reasoning)`` this guard holds after the chunk, redacted."""

_TEXT_THOUGHTS: Final = frozenset({ThoughtKind.RAW, ThoughtKind.SUMMARY})
_TEXT: Final = ChunkType.TEXT


def redact_secrets(redactor: Redactor) -> Fusable:
    """Replace *redactor*'s secrets in every chunk of stage 03 (see the module docstring).

    Returns:
        A fusable operator on processed chunks; fresh holdbacks per subscription (the
        reasoning's at its first reasoning text). The same value for equal redactors: it holds
        no stream's state, and the chain, built per stream, would otherwise hold one per stream.
    """
    return _shared(redactor)


@functools.lru_cache(maxsize=32)
def _shared(redactor: Redactor) -> Fusable:
    # As many as ``rxcord.core.redact`` keeps automatons: a bot streams with the same key all day.
    return Fusable(_RedactingStage(redactor), NAME)


class _RedactingStage:
    """The stage's factory: the redactor (one object, not a closure over it)."""

    __slots__ = ("redactor",)

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor

    def __call__(self) -> _Redacting:
        return _Redacting(self.redactor)


def tail_at_stop(chunk: ProcessedChunk | None) -> ProcessedChunk | None:
    """The reasoning chunk a graceful stop releases for what this guard held after *chunk*.

    ``None``: nothing held. The reasoning's tail first, then the text's (the text's follows
    what the later guards hold, which the stop gate emits just before).
    """
    if chunk is None:
        return None
    tail = chunk.metadata.get(TAIL)
    if not tail:
        return None
    visible, reasoning = tail
    return ProcessedChunk.text("", thoughts=(*_reasoning_entry(reasoning), *_reasoning_entry(visible)))


def _reasoning_entry(text: str) -> tuple[ThoughtLogEntry, ...]:
    return (ThoughtLogEntry(kind=ThoughtKind.RAW, text=text),) if text else ()


class _Redacting:
    """One stream's transducer: the two holdbacks and the provider released text is attributed to."""

    __slots__ = ("_may_hold", "_reasoning", "_redactor", "_serving", "_visible")

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._visible: SecretHoldback = redactor.holdback()
        self._reasoning: SecretHoldback | None = None
        """Made at the first reasoning text (most streams carry none)."""
        self._serving: str | None = None
        self._may_hold = False
        """A holdback held text after the last chunk (the tail is noted on every chunk until it does not)."""

    def feed(self, chunk: ProcessedChunk) -> Sequence[ProcessedChunk]:
        if chunk.type is _TEXT:
            return (self._text(chunk),)
        return (*self._release(), self._whole(chunk))

    def finish(self) -> Sequence[ProcessedChunk]:
        return self._release()

    def _text(self, chunk: ProcessedChunk) -> ProcessedChunk:
        serving, fed, entries = chunk.serving_provider, chunk.content, chunk.thoughts
        if serving is not None:
            self._serving = serving
        content = self._visible.feed(fed) if fed else fed
        thoughts = self._thoughts(entries) if entries else entries
        if content is fed and thoughts is entries and not self._may_hold:
            # A holdback gives back what it was fed only when it holds nothing after it: the
            # common case costs no tail to render and no new chunk.
            return chunk
        return self._changed(chunk, content, thoughts)

    def _changed(
        self, chunk: ProcessedChunk, content: str, thoughts: tuple[ThoughtLogEntry, ...]
    ) -> ProcessedChunk:
        holding = self._reasoning
        visible, reasoning = self._visible.holding(), holding.holding() if holding is not None else ""
        self._may_hold = bool(visible or reasoning)
        metadata = {**chunk.metadata, TAIL: (visible, reasoning)} if self._may_hold else chunk.metadata
        # The constructor, not attrs.evolve (several times its cost): a third of prose deltas come here.
        return ProcessedChunk(
            type=_TEXT,
            content=content,
            thoughts=thoughts,
            metadata=metadata,
            serving_provider=chunk.serving_provider,
            usage=chunk.usage,
        )

    def _thoughts(self, entries: tuple[ThoughtLogEntry, ...]) -> tuple[ThoughtLogEntry, ...]:
        kept: list[ThoughtLogEntry] = []
        changed = False
        holdback = self._reasoning
        for entry in entries:
            if entry.kind in _TEXT_THOUGHTS and entry.text:
                if holdback is None:
                    holdback = self._reasoning = self._redactor.holdback()
                text = holdback.feed(entry.text)
                if text is not entry.text:
                    changed = True
                    entry = attrs.evolve(entry, text=text)  # noqa: PLW2901 - the entry, redacted
            kept.append(entry)
        return tuple(kept) if changed else entries

    def _whole(self, chunk: ProcessedChunk) -> ProcessedChunk:
        """A non-text chunk, its complete values redacted (itself when they hold no secret)."""
        redactor = self._redactor
        if chunk.thoughts and any(redactor.contains(entry.text) for entry in chunk.thoughts):
            thoughts = tuple(attrs.evolve(entry, text=redactor.text(entry.text)) for entry in chunk.thoughts)
            chunk = attrs.evolve(chunk, thoughts=thoughts)
        if chunk.error is not None:
            error = redactor.error(chunk.error)
            if error is not chunk.error:
                chunk = attrs.evolve(chunk, error=error)
        call = chunk.function_call
        if call is not None:
            # The replayed fields too (``reasoning_content``): the result keeps them.
            args, replay = redactor.value(call.args), redactor.value(call.replay)
            if args != call.args or replay != call.replay:
                chunk = attrs.evolve(chunk, function_call=attrs.evolve(call, args=args, replay=replay))
        return chunk

    def _release(self) -> tuple[ProcessedChunk, ...]:
        if not self._may_hold:
            return ()  # the last text chunk left nothing held
        self._may_hold = False
        holding = self._reasoning
        visible, reasoning = self._visible.finish(), holding.finish() if holding is not None else ""
        if not visible and not reasoning:
            return ()
        thoughts = _reasoning_entry(reasoning)
        return (ProcessedChunk.text(visible, thoughts=thoughts, serving_provider=self._serving),)
