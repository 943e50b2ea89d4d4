"""Which messages a conversation holds: the reply chain, whole answers, a thread's start.

The walk starts at the message being answered and goes back, newest first, so the lines come
out in time order once reversed, without sorting:

* **reply chain**: each message's ``reply_to`` is fetched, until a message replies to
  nothing, is gone, or was seen already (a seen set: a cycle cannot loop);
* **whole answers**: the sinks reply to the question with an answer's *first* part only, so
  a reply to any part of a multi-message answer brings the assistant's consecutive messages
  around it: later parts up to the first message that is not the assistant's or that replies
  (the start of another answer), earlier parts back to the first part (the one that replies)
  -- then the chain goes on from the first part to the question;
* **threads**: the thread's starter message (a thread started from a message has that
  message's id, in the parent channel) is the oldest line; a message that replies to
  nothing also gets the thread's earlier messages;
* **direct messages**: a DM that replies to nothing gets the DM's earlier messages (a DM is
  one conversation with the bot, as a thread is);
* **back-to-back messages**: a user's message that replies to nothing is chained to the
  message just before it when that one is the same user's and was sent at most
  ``ContextLimits.back_to_back_seconds`` earlier (snowflake timestamps; no one else between,
  since it is the channel's previous message), so "look at this:" then "@bot what is it?" is
  one turn; the chain goes on from there (that message's reply, or its own predecessor).

Every step is bounded by the room left (``ContextLimits.max_messages``), and the pages read
around an answer grow from two messages, doubling: the messages read and the requests made
are linear in the lines kept, whatever the chain's or the channel's shape.
"""

from __future__ import annotations

__all__ = ("collect",)

from collections.abc import Set

import attrs

from rxcord.discord.conversation import ChatLine, ContextLimits, MessageSource

_FIRST_PAGE = 2
"""Messages asked for first around an answer's part (most answers have one to three parts)."""


@attrs.define
class _Walk:
    """The lines found so far, newest first, and the ids already taken."""

    limit: int
    mine: Set[str]
    lines: list[ChatLine] = attrs.field(factory=list)
    seen: set[str] = attrs.field(factory=set)
    more: bool = False
    """Older messages exist that were not read."""

    @property
    def room(self) -> int:
        return self.limit - len(self.lines)

    def take(self, line: ChatLine) -> bool:
        """Add *line* unless it was seen or there is no room (then ``more``); whether it was added."""
        if line.id in self.seen:
            return False
        if self.room <= 0:
            self.more = True
            return False
        self.seen.add(line.id)
        self.lines.append(line)
        return True


def _continues(walk: _Walk, line: ChatLine) -> bool:
    """Whether *line* is a later part of the answer being read (the assistant's, replying to nothing)."""
    return line.author_id in walk.mine and line.reply_to is None and line.id not in walk.seen


async def _later_parts(walk: _Walk, part: ChatLine, source: MessageSource) -> None:
    """Take the answer's parts after *part* (one place is kept for *part* itself).

    Pages grow from two messages, doubling: what is read past the answer's end is at most
    about twice the parts found, so the walk stays linear however the channel goes on.
    """
    wanted = walk.room - 1
    parts: list[ChatLine] = []
    anchor, size = part.id, _FIRST_PAGE
    while len(parts) < wanted:
        asked = min(100, size, wanted - len(parts))
        page = await source.after(part.channel_id, anchor, asked)
        ended = len(page) < asked
        for line in page:
            if not _continues(walk, line):
                ended = True
                break
            parts.append(line)
        if ended or not page:
            break
        anchor, size = page[-1].id, size * 2
    for line in reversed(parts):  # the walk holds lines newest first
        walk.take(line)


async def _first_part(walk: _Walk, part: ChatLine, source: MessageSource) -> ChatLine:
    """Take the answer's parts before *part*, back to its first part (the one that replies).

    Returns:
        The earliest part taken: the chain goes on from its ``reply_to``.
    """
    first, size = part, _FIRST_PAGE
    while first.reply_to is None:
        if walk.room <= 0:
            walk.more = True  # a part that replies to nothing follows the answer's earlier parts
            return first
        asked = min(100, size, walk.room + 1)
        page = await source.before(part.channel_id, first.id, asked)
        for line in reversed(page):
            if line.author_id not in walk.mine or line.id in walk.seen or not walk.take(line):
                return first  # not the assistant's, seen, or no room (``take`` set ``more``)
            first = line
            if first.reply_to is not None:
                return first
        if len(page) < asked:
            return first  # the channel's first message
        size *= 2
    return first


async def _answer(walk: _Walk, part: ChatLine, source: MessageSource) -> ChatLine:
    """Take the whole answer *part* belongs to; return its first part (where the chain goes on)."""
    await _later_parts(walk, part, source)
    walk.take(part)
    return await _first_part(walk, part, source)


def _sent_ms(message_id: str) -> int | None:
    """Milliseconds since Discord's epoch at which *message_id* was created (its snowflake)."""
    return int(message_id) >> 22 if message_id.isdigit() else None


async def _back_to_back(walk: _Walk, line: ChatLine, source: MessageSource, gap_ms: int) -> ChatLine | None:
    """Take the channel's message before *line* if it is the same user's, at most *gap_ms* older.

    One request of one message per line taken (and one for the line that ends the chain): the
    work stays linear in the lines kept.
    """
    later = _sent_ms(line.id)
    if later is None:
        return None
    page = await source.before(line.channel_id, line.id, 1)
    if not page:
        return None
    previous = page[-1]
    earlier = _sent_ms(previous.id)
    if previous.author_id != line.author_id or earlier is None or later - earlier > gap_ms:
        return None
    return previous if walk.take(previous) else None  # seen, or no room (``take`` set ``more``)


async def _chain(walk: _Walk, trigger: ChatLine, source: MessageSource, gap_ms: int) -> None:
    current = trigger
    while True:
        if current.reply_to is None:
            if gap_ms <= 0 or current.author_id in walk.mine:
                return  # an answer's first part that replies to nothing starts the conversation
            previous = await _back_to_back(walk, current, source, gap_ms)
            if previous is None:
                return
            current = previous
            continue
        if current.reply_to in walk.seen:  # a cycle
            return
        if walk.room <= 0:
            walk.more = True
            return
        parent = await source.message(current.channel_id, current.reply_to)
        if parent is None or parent.id in walk.seen:
            return
        if parent.author_id in walk.mine:
            current = await _answer(walk, parent, source)
        elif walk.take(parent):
            current = parent
        else:
            return


async def collect(
    trigger: ChatLine,
    source: MessageSource,
    limits: ContextLimits,
    *,
    assistant_ids: Set[str],
    thread: tuple[str, str] | None = None,
    dm: bool = False,
) -> tuple[list[ChatLine], bool]:
    """The conversation that ends with *trigger*, oldest first, and whether older messages exist.

    Args:
        trigger: The message being answered.
        source: Where the earlier messages are read.
        limits: ``max_messages`` bounds the lines (the trigger included).
        assistant_ids: Authors whose messages are the assistant's (their answers are whole).
        thread: ``(parent channel id, thread id)`` when *trigger* is in a thread.
        dm: *trigger* is a direct message: one that replies to nothing continues the DM.

    Returns:
        The lines, oldest first, and whether older ones were left unread.
    """
    walk = _Walk(limit=limits.max_messages, mine=assistant_ids)
    walk.take(trigger)
    starter = await source.message(*thread) if thread is not None and limits.max_messages > 1 else None
    if starter is not None:
        walk.limit -= 1  # its place is kept: the thread's topic outranks its oldest replies
        walk.seen.add(starter.id)
    # A thread's or a DM's history holds the user's back-to-back messages already.
    history = (thread is not None or dm) and trigger.reply_to is None
    await _chain(walk, trigger, source, 0 if history else limits.back_to_back_seconds * 1000)
    if history and walk.room > 0:
        wanted = walk.room
        earlier = await source.before(trigger.channel_id, trigger.id, min(100, wanted + 1))
        if len(earlier) > wanted:
            walk.more = True
            earlier = earlier[-wanted:]
        for line in reversed(earlier):
            walk.take(line)
    if starter is not None:
        walk.limit += 1
        walk.lines.append(starter)
    walk.lines.reverse()
    return walk.lines, walk.more
