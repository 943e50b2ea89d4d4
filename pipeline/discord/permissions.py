"""Who may ask the bot, and who may stop an answer (``rxcord.discord.Permissions``).

Blocks win over allows. An empty allow list allows everyone (or every channel). A thread is
served when its parent channel is. Stopping an answer is for its own asker and for moderators
(``admin_users``, ``moderator_roles``, or Discord's Manage Messages permission in that
channel), never for a blocked user and never in a channel the bot does not serve.

The checks read discord.py objects by attribute only (``id``, ``roles``, ``parent_id``, a
``DMChannel``'s missing guild), so this module imports without discord.py and tests can hand
it plain stand-ins.
"""

from __future__ import annotations

__all__ = ("Permissions", "channel_ids", "role_ids")

from collections.abc import Iterable
from typing import Any, Protocol

import attrs


class _HasAsker(Protocol):
    @property
    def user_id(self) -> str: ...


def _ids(value: Iterable[int | str]) -> frozenset[str]:
    if isinstance(value, str | int):
        raise TypeError("give a list of ids, not one id")  # "123" would become {"1", "2", "3"}
    return frozenset(str(item) for item in value)


def role_ids(member: Any) -> frozenset[str]:
    """The role ids of a guild member (empty for a ``discord.User``: DMs, or a member left)."""
    return frozenset(str(role.id) for role in getattr(member, "roles", ()) or ())


def channel_ids(channel: Any) -> frozenset[str]:
    """The channel's id and, for a thread, its parent's (a thread is served as its parent is)."""
    ids = {str(channel.id)}
    parent = getattr(channel, "parent_id", None)
    if parent is not None:
        ids.add(str(parent))
    return frozenset(ids)


def _is_dm(channel: Any) -> bool:
    # A DM (or group DM) has no guild; a guild channel, thread or partial one always has one.
    return getattr(channel, "guild", None) is None and getattr(channel, "guild_id", None) is None


@attrs.frozen(kw_only=True)
class Permissions:
    """Who may talk to the bot and where, and who may stop whose answer.

    Ids are Discord snowflakes, as ints or strings (kept as strings).
    """

    allow_dms: bool = False
    allowed_users: frozenset[str] = attrs.field(default=(), converter=_ids)
    """When not empty, only these users get answers."""
    blocked_users: frozenset[str] = attrs.field(default=(), converter=_ids)
    allowed_roles: frozenset[str] = attrs.field(default=(), converter=_ids)
    """When not empty, only members with one of these roles (or an allowed user) get answers."""
    blocked_roles: frozenset[str] = attrs.field(default=(), converter=_ids)
    allowed_channels: frozenset[str] = attrs.field(default=(), converter=_ids)
    """When not empty, the bot serves only these channels (and their threads)."""
    blocked_channels: frozenset[str] = attrs.field(default=(), converter=_ids)
    respond_channels: frozenset[str] = attrs.field(default=(), converter=_ids)
    """Channels where every message is addressed to the bot, without a mention."""
    admin_users: frozenset[str] = attrs.field(default=(), converter=_ids)
    """May stop any answer in a served channel."""
    moderator_roles: frozenset[str] = attrs.field(default=(), converter=_ids)
    """Members with one of these roles may stop any answer in a served channel."""

    def blocked(self, user: Any) -> bool:
        """Whether *user* (a ``discord.User`` or ``Member``) is blocked, by id or by role."""
        return str(user.id) in self.blocked_users or bool(role_ids(user) & self.blocked_roles)

    def serves(self, channel: Any) -> bool:
        """Whether the bot answers in *channel* at all (DMs only with ``allow_dms``)."""
        if _is_dm(channel):
            return self.allow_dms
        ids = channel_ids(channel)
        if ids & self.blocked_channels:
            return False
        return not self.allowed_channels or bool(ids & self.allowed_channels)

    def may_ask(self, message: Any) -> bool:
        """Whether *message*'s author may get an answer in its channel."""
        author = message.author
        if self.blocked(author) or not self.serves(message.channel):
            return False
        if not (self.allowed_users or self.allowed_roles):
            return True
        return str(author.id) in self.allowed_users or bool(role_ids(author) & self.allowed_roles)

    def is_moderator(self, caller: Any, *, manage_messages: bool = False) -> bool:
        """An admin user, a member with a moderator role, or one who may manage messages here."""
        if str(caller.id) in self.admin_users or role_ids(caller) & self.moderator_roles:
            return True
        return manage_messages

    def may_stop(
        self,
        caller: Any,
        answer: _HasAsker | None,
        channel: Any,
        *,
        manage_messages: bool | None = None,
    ) -> bool:
        """Whether *caller* may stop *answer* (``None``: any answer) in *channel*.

        Args:
            caller: Who ran the command (``interaction.user``).
            answer: The answer to stop; ``None`` asks whether *caller* may stop others' answers.
            channel: Where the command ran.
            manage_messages: Whether *caller* has Manage Messages in *channel* (the
                interaction's resolved ``permissions``); ``None`` reads ``caller`` 's
                ``guild_permissions`` if it has them.
        """
        if self.blocked(caller) or not self.serves(channel):
            return False
        if answer is not None and answer.user_id == str(caller.id):
            return True
        if manage_messages is None:
            manage_messages = bool(
                getattr(getattr(caller, "guild_permissions", None), "manage_messages", False)
            )
        return self.is_moderator(caller, manage_messages=manage_messages and not _is_dm(channel))
