"""The emulator's state: messages per channel, nonces, snowflakes and the clock.

Every change is published on the ``EventHub`` (``message_create``, ``message_update``,
``message_delete``), which is how the gateway and the event stream learn about it.
"""

from __future__ import annotations

__all__ = ("MessageStore", "Stored")

import asyncio
import collections
import datetime
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs

from rxcord.core.errors import ApiError
from rxcord.sinks.payload_rules import MENTION_TYPES, is_empty
from rxcord.sinks.rich_rules import components_response, embed_response
from rxcord.testing.emulator.config import DISCORD_EPOCH_MS, EmulatorConfig
from rxcord.testing.emulator.events import EventHub
from rxcord.testing.emulator.validation import form_error
from rxcord.testing.emulator.wire import unique, user_object

CREATE_FLAGS: Final = 4 | 4096 | 8192 | 32768
"""Flags settable on create: SUPPRESS_EMBEDS, SUPPRESS_NOTIFICATIONS, IS_VOICE_MESSAGE, IS_COMPONENTS_V2."""
EPHEMERAL: Final = 64
LOADING: Final = 128
_USER_MENTION = re.compile(r"<@!?(\d{15,21})>")
_ROLE_MENTION = re.compile(r"<@&(\d{15,21})>")


@attrs.define
class Stored:
    """One accepted message: its Discord object and the payload it was created (and edited) with."""

    id: str
    channel_id: str
    author_id: str
    message: dict[str, Any]
    payload: dict[str, Any]
    deleted: bool = False

    @property
    def ephemeral(self) -> bool:
        """Only its interaction's user sees it: never listed by REST nor dispatched."""
        return bool(self.message.get("flags", 0) & EPHEMERAL)

    def record(self) -> dict[str, Any]:
        """The payload as sent with the message object's fields on top."""
        return {**self.payload, **self.message}


class MessageStore:
    """Messages, nonces, snowflakes and time of one emulator.

    Args:
        config: Read for the bot's identity and the nonce window.
        hub: Where changes are published.
        clock: Monotonic seconds; defaults to the running loop's ``time``.
    """

    def __init__(
        self, config: EmulatorConfig, hub: EventHub, clock: Callable[[], float] | None = None
    ) -> None:
        self.config = config
        self.hub = hub
        self._clock = clock
        self._wall_offset: float | None = None
        self._last_snowflake = 0
        self.messages: dict[str, Stored] = {}
        self.order: list[str] = []
        self.channels: dict[str, list[str]] = collections.defaultdict(list)
        self.nonces: dict[tuple[str, str, str], tuple[str, float]] = {}
        self.users: dict[str, dict[str, Any]] = {}
        """Known users by id (the guild's members), so mentions carry their real names."""

    # -- time ------------------------------------------------------------------

    def now(self) -> float:
        """Monotonic seconds (rate limits)."""
        return self._clock() if self._clock is not None else asyncio.get_running_loop().time()

    def wall(self, now: float) -> float:
        """``now`` as epoch seconds: the clock shifted by one reading of the wall clock."""
        if self._wall_offset is None:
            self._wall_offset = time.time() - now
        return now + self._wall_offset

    def iso(self, now: float) -> str:
        """``now`` as an ISO-8601 timestamp (Discord's ``timestamp`` fields)."""
        return datetime.datetime.fromtimestamp(self.wall(now), tz=datetime.UTC).isoformat(
            timespec="microseconds"
        )

    def snowflake(self, now: float | None = None) -> str:
        """A new, strictly increasing snowflake whose timestamp is ``now``."""
        millis = int(self.wall(self.now() if now is None else now) * 1000) - DISCORD_EPOCH_MS
        value = max((millis << 22) | (1 << 17), self._last_snowflake + 1)
        self._last_snowflake = value
        return str(value)

    # -- reading ---------------------------------------------------------------

    def bot_user(self) -> dict[str, Any]:
        """The bot's user object."""
        return user_object(self.config.bot_id, self.config.bot_username, bot=True)

    def user(self, user_id: str) -> dict[str, Any]:
        """The user object of ``user_id``: the bot, a known user, or a placeholder named after the id."""
        if user_id == self.config.bot_id:
            return self.bot_user()
        return self.users.get(user_id) or user_object(user_id, f"user-{user_id[-4:]}")

    def live(self, channel_id: str, *, ephemeral: bool = False) -> list[Stored]:
        """Undeleted messages of a channel in acceptance order (ephemeral ones only if asked)."""
        found = (self.messages[mid] for mid in self.channels.get(channel_id, ()))
        return [s for s in found if not s.deleted and (ephemeral or not s.ephemeral)]

    def get_in(self, channel_id: str, message_id: str) -> Stored:
        """The live message ``message_id`` of ``channel_id``, else 404 / 10008."""
        stored = self.messages.get(message_id)
        if stored is None or stored.deleted or stored.channel_id != channel_id:
            raise ApiError(404, 10008, "Unknown Message")
        return stored

    def reference(self, channel_id: str, reference: Any) -> Stored | None:
        """The message a ``message_reference`` points at (``fail_if_not_exists`` honoured)."""
        if not isinstance(reference, dict):
            return None
        target_channel = str(reference.get("channel_id") or channel_id)
        target = self.messages.get(str(reference.get("message_id")))
        if target is not None and not target.deleted and target.channel_id == target_channel:
            return target
        if reference.get("fail_if_not_exists", True) is False:
            return None
        problem = (("message_reference",), "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message")
        raise form_error([problem])

    # -- writing ---------------------------------------------------------------

    def mentions(
        self, payload: Mapping[str, Any], *, webhook: bool, replied_author: Mapping[str, Any] | None
    ) -> tuple[list[dict[str, Any]], list[str], bool]:
        """Who a message pings: users, roles, everyone (``allowed_mentions`` and Discord's defaults)."""
        content = payload.get("content") or ""
        allowed = payload.get("allowed_mentions")
        if isinstance(allowed, dict):
            parse = list(allowed.get("parse") or [])
            users_allowed = {str(x) for x in allowed.get("users") or []}
            roles_allowed = {str(x) for x in allowed.get("roles") or []}
            ping_replied = allowed.get("replied_user") is True
        else:
            # Defaults: bots parse everything, webhooks only users; a reply pings its author.
            parse = ["users"] if webhook else list(MENTION_TYPES)
            users_allowed, roles_allowed, ping_replied = set(), set(), True
        user_ids = [
            u for u in unique(_USER_MENTION.findall(content)) if "users" in parse or u in users_allowed
        ]
        mentions = [self.user(uid) for uid in user_ids]
        if replied_author is not None and ping_replied and replied_author["id"] not in user_ids:
            mentions.append(dict(replied_author))
        roles = [r for r in unique(_ROLE_MENTION.findall(content)) if "roles" in parse or r in roles_allowed]
        everyone = "everyone" in parse and ("@everyone" in content or "@here" in content)
        return mentions, roles, everyone

    def create(
        self,
        channel_id: str,
        payload: Mapping[str, Any],
        *,
        author: dict[str, Any],
        webhook_id: str | None = None,
        reference: Stored | None = None,
        extra: Mapping[str, Any] | None = None,
        flags_mask: int = CREATE_FLAGS,
    ) -> dict[str, Any]:
        """Store a message and publish ``message_create``; returns the message object.

        Args:
            channel_id: Where it is posted.
            payload: The create body (content, embeds, components, nonce, ...).
            author: The author's user object.
            webhook_id: Set for webhook (and interaction) messages: their default mention rules apply.
            reference: The message it replies to.
            extra: Fields set on the message object last (``type``, ``interaction_metadata``, ...).
            flags_mask: The payload ``flags`` bits that are kept.
        """
        now = self.now()
        message_id = self.snowflake(now)
        replied_author = reference.message["author"] if reference is not None else None
        mentions, roles, everyone = self.mentions(
            payload, webhook=webhook_id is not None, replied_author=replied_author
        )
        embeds = payload.get("embeds") or []
        flags = payload.get("flags") or 0
        message: dict[str, Any] = {
            "id": message_id,
            "type": 19 if reference is not None else 0,
            "channel_id": channel_id,
            "author": author,
            "content": payload.get("content") or "",
            "timestamp": self.iso(now),
            "edited_timestamp": None,
            "tts": bool(payload.get("tts", False)),
            "mention_everyone": everyone,
            "mentions": mentions,
            "mention_roles": roles,
            "attachments": [],
            "embeds": [embed_response(embed) for embed in embeds],
            "components": components_response(payload.get("components")),
            "pinned": False,
            "flags": flags & flags_mask,
        }
        if payload.get("nonce") is not None and webhook_id is None:
            message["nonce"] = payload["nonce"]
        if webhook_id is not None:
            message["webhook_id"] = webhook_id
        if reference is not None:
            message["message_reference"] = {
                "type": 0,
                "message_id": reference.id,
                "channel_id": reference.channel_id,
            }
            message["referenced_message"] = {
                key: value for key, value in reference.message.items() if key != "referenced_message"
            }
        message.update(extra or {})
        stored = Stored(message_id, channel_id, str(author["id"]), message, dict(payload))
        self.messages[message_id] = stored
        self.order.append(message_id)
        self.channels[channel_id].append(message_id)
        self.hub.publish("message_create", {"message": message, "ephemeral": stored.ephemeral})
        return message

    def edit(self, stored: Stored, payload: Mapping[str, Any], *, webhook: bool) -> dict[str, Any]:
        """Apply an edit body (content, embeds, components, flags) and publish ``message_update``."""
        message = stored.message
        merged = {
            "content": message["content"],
            "embeds": message["embeds"],
            "components": message["components"],
        }
        merged.update({key: payload[key] for key in ("content", "embeds", "components") if key in payload})
        if is_empty(merged):
            raise ApiError(400, 50006, "Cannot send an empty message")
        mentions, roles, everyone = self.mentions(
            {**merged, "allowed_mentions": payload.get("allowed_mentions")},
            webhook=webhook,
            replied_author=None,
        )
        message.update(
            content=merged["content"] or "",
            embeds=[embed_response(embed) for embed in merged["embeds"] or []],
            components=components_response(merged["components"]),
            mentions=mentions,
            mention_roles=roles,
            mention_everyone=everyone,
            edited_timestamp=self.iso(self.now()),
        )
        if isinstance(payload.get("flags"), int):
            # Only SUPPRESS_EMBEDS can be toggled on edit; other bits keep their value.
            message["flags"] = (message["flags"] & ~4) | (payload["flags"] & 4)
        message["flags"] = message["flags"] & ~LOADING
        stored.payload.update(payload)
        self.hub.publish("message_update", {"message": message, "ephemeral": stored.ephemeral})
        return message

    def delete(self, stored: Stored) -> None:
        """Mark a message deleted (replies to it then fail) and publish ``message_delete``."""
        if stored.deleted:
            return
        stored.deleted = True
        data = {"id": stored.id, "channel_id": stored.channel_id, "ephemeral": stored.ephemeral}
        self.hub.publish("message_delete", data)

    def forget_nonces(self, now: float) -> None:
        """Drop nonces older than the window (keeps long benchmark runs bounded)."""
        horizon = now - self.config.nonce_window
        self.nonces = {key: seen for key, seen in self.nonces.items() if seen[1] >= horizon}
