"""The emulated guild: its channels, roles and members as the gateway announces them.

One guild, its ``@everyone`` role (id = guild id, every permission a bot needs), the roles
created through ``POST /_emulator/roles`` or named by ``POST /_emulator/members`` (module
``members``), the text channels of ``EmulatorConfig.channels``, the bot's member and every user
the emulator has seen act (through the injection routes). A numeric channel id outside the
guild is a DM channel.

A member's permissions are computed as Discord's documentation describes ("Permissions",
base permissions): the guild owner has all of them; otherwise ``@everyone``'s permissions OR
those of each of the member's roles, and ``ADMINISTRATOR`` among them means all. Channels have
no permission overwrites here, so a member's permissions are the same in every guild channel.
"""

from __future__ import annotations

__all__ = ("ADMINISTRATOR", "ALL_PERMISSIONS", "EVERYONE_PERMISSIONS", "MANAGE_MESSAGES", "Guild")

from typing import Any, Final

from rxcord.testing.emulator.config import EmulatorConfig
from rxcord.testing.emulator.events import EventHub
from rxcord.testing.emulator.wire import user_object

EVERYONE_PERMISSIONS: Final = "1071698660929"
"""View, send, read history, embed, attach, mention, use application commands, ..."""
JOINED_AT: Final = "2024-01-01T00:00:00+00:00"
ADMINISTRATOR: Final = 1 << 3
MANAGE_MESSAGES: Final = 1 << 13
ALL_PERMISSIONS: Final = (1 << 53) - 1
"""Every permission bit Discord defines (up to 1 << 52): the owner's and an administrator's."""


class Guild:
    """The one guild of an emulator.

    Args:
        config: Guild id and name, channels and the bot's identity.
    """

    def __init__(self, config: EmulatorConfig, hub: EventHub, users: dict[str, dict[str, Any]]) -> None:
        self.config = config
        self.hub = hub
        self.users = users
        """Users who acted through the injection routes, by id (shared with the store)."""
        self.threads: dict[str, dict[str, Any]] = {}
        """Threads started in the guild's channels, by id (thread channel objects)."""
        self.roles: dict[str, dict[str, Any]] = {
            config.guild_id: _role(config.guild_id, "@everyone", EVERYONE_PERMISSIONS, 0)
        }
        """The guild's roles by id, ``@everyone`` (id = the guild's) first, in creation order."""
        self.member_roles: dict[str, list[str]] = {}
        """Role ids per member (user id), ``@everyone`` left out as Discord leaves it out."""

    @property
    def id(self) -> str:
        """The guild's id."""
        return self.config.guild_id

    def has_channel(self, channel_id: str) -> bool:
        """Whether ``channel_id`` is one of the guild's text channels or threads."""
        return channel_id in self.threads or any(channel.id == channel_id for channel in self.config.channels)

    def add_thread(
        self, thread_id: str, parent_id: str, name: str, owner_id: str, created: str
    ) -> dict[str, Any]:
        """Record a public thread (type 11) of a guild text channel; returns its channel object."""
        thread: dict[str, Any] = {
            "id": thread_id,
            "type": 11,
            "guild_id": self.id,
            "parent_id": parent_id,
            "owner_id": owner_id,
            "name": name,
            "last_message_id": None,
            "rate_limit_per_user": 0,
            "message_count": 0,
            "member_count": 1,
            "total_message_sent": 0,
            "flags": 0,
            "thread_metadata": {
                "archived": False,
                "auto_archive_duration": 1440,
                "archive_timestamp": created,
                "locked": False,
                "create_timestamp": created,
            },
        }
        self.threads[thread_id] = thread
        return thread

    def guild_id_of(self, channel_id: str) -> str | None:
        """The guild of a channel, ``None`` for a DM channel."""
        return self.id if self.has_channel(channel_id) else None

    def channel_objects(self) -> list[dict[str, Any]]:
        """The guild's text channels as Discord channel objects."""
        return [
            {
                "id": channel.id,
                "type": 0,
                "guild_id": self.id,
                "name": channel.name,
                "position": position,
                "permission_overwrites": [],
                "nsfw": False,
                "parent_id": None,
                "topic": channel.topic,
                "rate_limit_per_user": 0,
                "last_message_id": None,
                "flags": 0,
            }
            for position, channel in enumerate(self.config.channels)
        ]

    def channel_object(self, channel_id: str) -> dict[str, Any]:
        """A guild channel's or thread's object, or a DM channel's."""
        if channel_id in self.threads:
            return self.threads[channel_id]
        for channel in self.channel_objects():
            if channel["id"] == channel_id:
                return channel
        return {"id": channel_id, "type": 1, "last_message_id": None, "flags": 0, "recipients": []}

    def remember(self, user_id: str, username: str) -> dict[str, Any]:
        """Record (or rename) a user who acts in the emulator; returns their user object."""
        user = user_object(user_id, username)
        known = self.users.get(user_id)
        self.users[user_id] = user
        if known is None:
            self.hub.publish("member_add", {"member": self.member(user)})
        elif known != user:
            self.hub.publish("member_update", {"member": self.member(user)})
        return user

    def upsert_role(self, role_id: str, name: str | None, permissions: int | None) -> dict[str, Any]:
        """Create a role or change its name or permissions (``None``: kept); publishes the change."""
        known = self.roles.get(role_id)
        if known is None:
            role = _role(role_id, name or f"role-{role_id[-4:]}", str(permissions or 0), len(self.roles))
            self.roles[role_id] = role
            self.hub.publish("role_create", {"role": role})
            return role
        changed = {**known}
        if name is not None and role_id != self.id:  # @everyone keeps its name, as on Discord
            changed["name"] = name
        if permissions is not None:
            changed["permissions"] = str(permissions)
        if changed != known:
            self.roles[role_id] = changed
            self.hub.publish("role_update", {"role": changed})
        return changed

    def set_member(self, user: dict[str, Any], roles: list[str]) -> dict[str, Any]:
        """Give a member exactly ``roles`` (an unknown id becomes a role without permissions)."""
        for role_id in roles:
            if role_id not in self.roles:
                self.upsert_role(role_id, None, None)
        user_id = str(user["id"])
        known = self.users.get(user_id)
        before = self.member_roles.get(user_id)
        self.member_roles[user_id] = list(roles)
        if user_id != self.config.bot_id:
            self.users[user_id] = user
        member = self.member(user)
        if known is None and user_id != self.config.bot_id:
            self.hub.publish("member_add", {"member": member})
        elif before != roles or (known is not None and known != user):
            self.hub.publish("member_update", {"member": member})
        return member

    def permissions(self, user_id: str) -> int:
        """The member's permissions in any guild channel (owner: all; administrator: all)."""
        if user_id == self.config.owner_id:
            return ALL_PERMISSIONS
        value = int(self.roles[self.id]["permissions"])
        for role_id in self.member_roles.get(user_id, ()):
            role = self.roles.get(role_id)
            if role is not None:
                value |= int(role["permissions"])
        return ALL_PERMISSIONS if value & ADMINISTRATOR else value

    def member(self, user: dict[str, Any], *, with_user: bool = True) -> dict[str, Any]:
        """A guild member object for ``user`` (``with_user=False``: the partial member of messages)."""
        member: dict[str, Any] = {
            "roles": list(self.member_roles.get(str(user["id"]), ())),
            "joined_at": JOINED_AT,
            "deaf": False,
            "mute": False,
            "flags": 0,
            "nick": None,
            "avatar": None,
            "pending": False,
            "communication_disabled_until": None,
        }
        if with_user:
            member["user"] = user
        return member

    def members(self) -> list[dict[str, Any]]:
        """The bot's member and every known user's."""
        bot = user_object(self.config.bot_id, self.config.bot_username, bot=True)
        return [self.member(bot), *(self.member(user) for user in self.users.values())]

    def guild_object(self) -> dict[str, Any]:
        """The full guild of ``GUILD_CREATE`` (fields discord.py and hikari both read)."""
        cfg = self.config
        members = self.members()
        return {
            "id": self.id,
            "name": cfg.guild_name,
            "unavailable": False,
            "member_count": len(members),
            "large": False,
            "joined_at": JOINED_AT,
            "owner_id": cfg.owner_id,
            "afk_channel_id": None,
            "afk_timeout": 300,
            "application_id": None,
            "banner": None,
            "default_message_notifications": 0,
            "description": None,
            "explicit_content_filter": 0,
            "icon": None,
            "mfa_level": 0,
            "nsfw_level": 0,
            "preferred_locale": "en-US",
            "premium_tier": 0,
            "public_updates_channel_id": None,
            "rules_channel_id": None,
            "splash": None,
            "system_channel_flags": 0,
            "system_channel_id": None,
            "vanity_url_code": None,
            "verification_level": 0,
            "features": [],
            "emojis": [],
            "stickers": [],
            "threads": list(self.threads.values()),
            "presences": [],
            "voice_states": [],
            "stage_instances": [],
            "guild_scheduled_events": [],
            "soundboard_sounds": [],
            "roles": list(self.roles.values()),
            "channels": self.channel_objects(),
            "members": members,
        }


def _role(role_id: str, name: str, permissions: str, position: int) -> dict[str, Any]:
    """A role object with the fields Discord sends (and discord.py reads)."""
    return {
        "id": role_id,
        "name": name,
        "permissions": permissions,
        "position": position,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "icon": None,
        "unicode_emoji": None,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }
