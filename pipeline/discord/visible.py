"""What an answer shows of its state in Discord (``rxcord.discord``; the bot's ``[delivery]`` keys).

* **writing**: while an answer streams, the asker's message carries a reaction (✍️), added
  when the provider is called and removed when the answer ended, however it ended. A
  reaction, in every delivery mode: it costs no edit of the answer (edit mode's budget stays
  the text's), never lands in the answer's text (so never in the context read back later),
  and is where the asker looks. Best effort: a reaction that fails is logged, the answer goes on.
* **how it ended**: a stopped, aborted or interrupted answer ends with a short line
  (``-# ⏹ stopped``, ``-# ✂ aborted``, ``-# ↩ interrupted``: the locale catalog's
  ``answer.stopped`` / ``answer.killed`` / ``answer.interrupted``, or the configured text);
  a completed or failed one gets none (a failure has its own notice).
* **what the context left out**: ``Conversation.notes`` (older messages, images, files) as
  ``-# ⚠ ...`` lines under the answer, as llmcord's warnings.

Those lines are appended to the answer's last message in one edit when they fit in it
(2000 characters), else sent as one more message. An answer that left nothing in Discord
gets none: there is nothing to annotate, and whoever stopped it was told (``/stop`` and
``/kill`` answer; an interrupt's follow-up is answered next). The turn's
``StreamResult.messages`` (and ``accumulated_text``) then say what Discord holds, the lines
included. The lines stay in the answer, so a later reply to it gives the model the same view
the users had (that the answer was cut, what it did not see).
"""

from __future__ import annotations

__all__ = ("Markers", "end_lines", "show_end", "writing_reaction")

import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, Final

import attrs
from loguru import logger

from rxcord.core.types import StreamStatus
from rxcord.io.locales import default_catalog

if TYPE_CHECKING:
    from rxcord.compose.turn import TurnResult
    from rxcord.core.config import StreamContext
    from rxcord.sinks.base import EditableSink

_log = logger.bind(stage="visible-state")

_DISCORD_MAX: Final = 2000
_NOTE_MAX: Final = 300
"""A note's shown length (a note naming many files is cut, with an ellipsis)."""
_ENDINGS: Final = {
    StreamStatus.STOPPED_BY_USER: ("stopped", "answer.stopped", "⏹ stopped"),
    StreamStatus.KILLED: ("killed", "answer.killed", "✂ aborted"),
    StreamStatus.FOLLOW_UP_INTERRUPT: ("interrupted", "answer.interrupted", "↩ interrupted"),
}
"""Status -> (the ``Markers`` field, the catalog key, the built-in text)."""


@attrs.frozen(kw_only=True)
class Markers:
    """What answers show of their state (``""`` turns one off; ``None``: the locale catalog's text)."""

    writing: str = "✍️"
    """The reaction on the asker's message while the answer streams."""
    stopped: str | None = None
    """The last line of an answer stopped with ``/stop`` (or by a shutdown): ``⏹ stopped``."""
    killed: str | None = None
    """The last line of an answer aborted with ``/kill``: ``✂ aborted``."""
    interrupted: str | None = None
    """The last line of an answer a follow-up interrupted: ``↩ interrupted``."""
    notes: bool = True
    """Show what the context left out (``Conversation.notes``) under the answer."""

    def ending(self, status: StreamStatus, locale: str | None = None) -> str:
        """The marker for an answer that ended with *status* (``""``: none)."""
        if status not in _ENDINGS:
            return ""
        field, key, built_in = _ENDINGS[status]
        configured: str | None = getattr(self, field)
        if configured is not None:
            return configured
        return default_catalog().for_locale(locale).text(key, built_in)


def end_lines(status: StreamStatus, notes: Iterable[str], markers: Markers, locale: str | None = None) -> str:
    """The ``-#`` lines shown under an answer: the notes (when shown), then how it ended."""
    lines = [f"-# ⚠ {_short(note)}" for note in notes] if markers.notes else []
    ending = markers.ending(status, locale)
    if ending:
        lines.append(f"-# {ending}")
    return "\n".join(lines)


def _short(note: str) -> str:
    note = " ".join(note.split())  # one line each, whatever a file name held
    return note if len(note) <= _NOTE_MAX else note[: _NOTE_MAX - 1] + "…"


@contextlib.asynccontextmanager
async def writing_reaction(message: Any, emoji: str, me: Any) -> AsyncIterator[None]:
    """The *emoji* reaction on a discord.py *message* for the block's duration (best effort).

    Args:
        message: The asker's ``discord.Message``.
        emoji: The reaction (``""``: none).
        me: The bot's user (whose reaction is removed).
    """
    added = bool(emoji) and await _react(message.add_reaction(emoji), "added")
    try:
        yield
    finally:
        if added:
            await _react(message.remove_reaction(emoji, me), "removed")


async def _react(call: Any, what: str) -> bool:
    try:
        await call
    except Exception as exc:  # a marker is a courtesy: it never ends or fails the answer
        _log.warning("the writing reaction was not {what}: {error}", what=what, error=type(exc).__name__)
        return False
    return True


async def show_end(sink: EditableSink, context: StreamContext, turn: TurnResult, text: str) -> TurnResult:
    """Show *text* (``end_lines``) under the answer; return the turn with what Discord now holds.

    Appended to the last message in one edit when it fits, else sent as one more message;
    nothing when the answer left nothing. A failure is logged and the turn returned as it was.
    """
    result = turn.result
    messages = list(result.messages)
    if not text or not messages:
        return turn
    last = messages[-1]
    content = last.payload.get("content")
    try:
        if (
            last.message_id is not None
            and isinstance(content, str)
            and content
            and len(content) + 1 + len(text) <= _DISCORD_MAX
        ):
            shown = f"{content}\n{text}"
            await sink.edit_message(
                context, last.message_id, {"content": shown, "allowed_mentions": {"parse": []}}
            )
            messages[-1] = attrs.evolve(last, payload={**last.payload, "content": shown})
        else:
            payload = {"content": text, "allowed_mentions": {"parse": []}}
            messages.append(await sink.create_message(context, payload))
    except Exception as exc:  # the answer is over either way; its end line is a courtesy
        _log.warning("the answer's end line was not shown: {error}", error=type(exc).__name__)
        return turn
    joined = f"{result.accumulated_text}\n{text}" if result.accumulated_text else text
    shown_result = attrs.evolve(result, messages=tuple(messages), accumulated_text=joined)
    results = tuple(shown_result if r is result else r for r in turn.results)
    return attrs.evolve(turn, result=shown_result, results=results)
