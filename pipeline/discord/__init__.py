"""``rxcord.discord``: the ready bot's building blocks, for any discord.py bot.

* the conversation a message ends (reply chains, threads, attachments): ``read_conversation``;
* the answer manager: ``Answers`` (one answer at a time per asker per channel, addressed
  follow-ups interrupt, a stop key per answer, an ``Admission`` hook for limits);
* who may ask and who may stop: ``Permissions``;
* ``/stop`` and ``/kill``: ``answers.install(tree)``; across processes: ``StopsElsewhere``;
* what an answer shows of its state: ``Markers``, ``writing_reaction``, ``end_lines``, ``show_end``.

Names load lazily: ``import rxcord.discord`` works without discord.py, and a name that needs
it raises ``rxcord.MissingExtraError`` naming ``rxcord[discord]`` when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rxcord.core.facade import lazy_exports

_EXPORTS = {
    "Admission": "rxcord.discord.answers",
    "Answer": "rxcord.discord.answers",
    "AnswerStops": "rxcord.discord.answers",
    "Answers": "rxcord.discord.answers",
    "Attachment": "rxcord.discord.conversation",
    "ChatLine": "rxcord.discord.conversation",
    "ContextLimits": "rxcord.discord.conversation",
    "Conversation": "rxcord.discord.conversation",
    "DiscordPySource": "rxcord.discord.discordpy",
    "DiscordUnreachableError": "rxcord.core.errors",
    "ImageFetcher": "rxcord.discord.images",
    "ImageReader": "rxcord.discord.conversation",
    "Interrupt": "rxcord.discord.answers",
    "Markers": "rxcord.discord.visible",
    "MessageSource": "rxcord.discord.conversation",
    "Permissions": "rxcord.discord.permissions",
    "RestSource": "rxcord.discord.sources",
    "StopsElsewhere": "rxcord.discord.elsewhere",
    "build_conversation": "rxcord.discord.conversation",
    "end_lines": "rxcord.discord.visible",
    "read_conversation": "rxcord.discord.conversation",
    "show_end": "rxcord.discord.visible",
    "writing_reaction": "rxcord.discord.visible",
}
__all__ = tuple(sorted(_EXPORTS))
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from rxcord.core.errors import DiscordUnreachableError as DiscordUnreachableError
    from rxcord.discord.answers import Admission as Admission
    from rxcord.discord.answers import Answer as Answer
    from rxcord.discord.answers import Answers as Answers
    from rxcord.discord.answers import AnswerStops as AnswerStops
    from rxcord.discord.answers import Interrupt as Interrupt
    from rxcord.discord.conversation import Attachment as Attachment
    from rxcord.discord.conversation import ChatLine as ChatLine
    from rxcord.discord.conversation import ContextLimits as ContextLimits
    from rxcord.discord.conversation import Conversation as Conversation
    from rxcord.discord.conversation import ImageReader as ImageReader
    from rxcord.discord.conversation import MessageSource as MessageSource
    from rxcord.discord.conversation import build_conversation as build_conversation
    from rxcord.discord.conversation import read_conversation as read_conversation
    from rxcord.discord.discordpy import DiscordPySource as DiscordPySource
    from rxcord.discord.elsewhere import StopsElsewhere as StopsElsewhere
    from rxcord.discord.images import ImageFetcher as ImageFetcher
    from rxcord.discord.permissions import Permissions as Permissions
    from rxcord.discord.sources import RestSource as RestSource
    from rxcord.discord.visible import Markers as Markers
    from rxcord.discord.visible import end_lines as end_lines
    from rxcord.discord.visible import show_end as show_end
    from rxcord.discord.visible import writing_reaction as writing_reaction
