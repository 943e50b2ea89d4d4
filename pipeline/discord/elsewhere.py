"""``/stop`` and ``/kill`` for answers running in another process of the same bot.

A bot run as several processes (shards, or an interactions endpoint behind a load balancer)
may get a ``/stop`` in a process that is not running the answer. ``Answers`` then asks
``StopsElsewhere``: the question goes to every process over the library's Redis stop bus
(``rxcord.io.RedisStopBus``), each one decides with the same rule as a local ``/stop``
(``rxcord.discord.commands.decide``: which answer, whether the caller may), and the process
holding the answer stops it and sends back what the caller is told. The one rule stays in one
place: a remote process decides exactly as the local one would.

On the bus an entry's ``channel`` field is ``ask:<channel id>`` (a question, its details as JSON
in ``reason``) or ``ack:<request id>`` (an answer to one). The caller's roles and the
``Manage Messages`` flag travel with the question: the process holding the answer may not
have the member cached. Processes that have no answer in that channel stay silent; the asker
waits ``wait`` seconds for a reply, then says nothing is running (the interaction was
deferred first, so Discord's three seconds do not apply).
"""

from __future__ import annotations

__all__ = ("StopsElsewhere",)

import asyncio
import json
import os
import secrets
import socket
from typing import TYPE_CHECKING, Any, Final

import attrs
from loguru import logger

from rxcord.core.stops import StopRegistry
from rxcord.core.types import StopKind

if TYPE_CHECKING:
    from rxcord.discord.answers import Answers
    from rxcord.discord.commands import Decision
    from rxcord.io.stop_bus import RedisStopBus

_log = logger.bind(stage="bot-commands")

_ASK: Final = "ask:"
_ACK: Final = "ack:"


@attrs.frozen
class _Role:
    id: int


@attrs.frozen
class _Caller:
    """The caller as ``Permissions`` reads one: an id and roles."""

    id: int
    roles: tuple[_Role, ...]


@attrs.frozen
class _Channel:
    """The command's channel as ``Permissions`` reads one: ids only (no cache needed)."""

    id: int
    guild_id: int | None
    parent_id: int | None
    guild: None = None


class _Inbox(StopRegistry):
    """What the bus delivers (every process's entries, this one's too): questions and replies."""

    def __init__(self, owner: StopsElsewhere) -> None:
        super().__init__()
        self._owner = owner

    def stop(self, channel_id: str, kind: StopKind, reason: str = "") -> bool:
        try:
            body = json.loads(reason)
        except ValueError:
            return False
        if not isinstance(body, dict):
            return False
        if channel_id.startswith(_ASK):
            self._owner.asked(kind, body)
        elif channel_id.startswith(_ACK):
            self._owner.answered(channel_id.removeprefix(_ACK), body)
        return False


class StopsElsewhere:
    """Reach answers running in the bot's other processes (``Answers.elsewhere``).

    Example::

        elsewhere = StopsElsewhere(answers, "redis://127.0.0.1:6379/0", namespace="my-bot")
        await elsewhere.start()
        answers.elsewhere = elsewhere    # /stop and /kill now reach every process
        ...
        await elsewhere.close()

    Args:
        answers: This process's answers (the questions of other processes are decided on them).
        url: The Redis URL every process of the bot shares.
        namespace: Shared by every process of one bot (the bot uses its token's digest).
        wait: Seconds a ``/stop`` that found nothing here waits for another process's reply.
        process_id: Unique per process (default: host, pid and a random suffix).
    """

    def __init__(
        self,
        answers: Answers,
        url: str,
        *,
        namespace: str,
        wait: float = 5.0,
        process_id: str | None = None,
    ) -> None:
        from rxcord.io.stop_bus import RedisStopBus

        self.answers = answers
        self.wait = wait
        self.process_id = process_id or f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.bus: RedisStopBus = RedisStopBus(
            url, _Inbox(self), process_id=self.process_id, namespace=f"{namespace}:answers"
        )
        self._waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[bool]] = set()
        self.stopped_here = 0
        """Answers this process stopped for another process's ``/stop`` or ``/kill``."""

    def __repr__(self) -> str:
        return f"StopsElsewhere({self.process_id!r}, waiting={len(self._waiting)})"

    async def start(self) -> None:
        """Listen for other processes' questions (returns once positioned on the Redis stream)."""
        await self.bus.start()

    async def close(self) -> None:
        """Stop listening; replies still being sent are awaited."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.bus.close()

    async def stop(
        self, caller: Any, channel: Any, kind: StopKind, choice: str | None, *, manage_messages: bool
    ) -> Decision | None:
        """Ask every process; the decision of the one holding the answer, or ``None`` (none replied)."""
        from rxcord.discord.commands import Decision

        request = secrets.token_hex(8)
        parent = getattr(channel, "parent_id", None)
        guild = getattr(channel, "guild_id", None) or getattr(getattr(channel, "guild", None), "id", None)
        body = {
            "request": request,
            "caller": str(caller.id),
            "roles": [str(role.id) for role in getattr(caller, "roles", ()) or ()],
            "channel": str(channel.id),
            "guild": str(guild) if guild is not None else None,
            "parent": str(parent) if parent is not None else None,
            "manage": manage_messages,
            "choice": choice,
        }
        reply: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[request] = reply
        try:
            await self.bus.publish(f"{_ASK}{channel.id}", kind, json.dumps(body))
            got = await asyncio.wait_for(reply, self.wait)
        except TimeoutError:
            return None
        finally:
            self._waiting.pop(request, None)
        fields = {str(k): str(v) for k, v in dict(got.get("fields") or {}).items()}
        return Decision(None, str(got["outcome"]), str(got["key"]), str(got["default"]), fields)

    def asked(self, kind: StopKind, body: dict[str, Any]) -> None:
        """Another process's question: decide here; reply only when the answer is here."""
        from rxcord.discord.commands import decide

        try:
            caller = _Caller(id=int(body["caller"]), roles=tuple(_Role(int(r)) for r in body["roles"]))
            channel = _Channel(
                id=int(body["channel"]),
                guild_id=int(body["guild"]) if body.get("guild") else None,
                parent_id=int(body["parent"]) if body.get("parent") else None,
            )
            request = str(body["request"])
        except (KeyError, TypeError, ValueError):
            _log.warning("stop bus: ignoring a malformed /stop question")
            return
        choice = body.get("choice") if isinstance(body.get("choice"), str) else None
        manage = bool(body.get("manage"))
        decision = decide(self.answers, caller, channel, kind, choice, manage_messages=manage)
        if decision.answer is None:
            return  # not here: the process holding it replies
        if decision.outcome == "stopped":
            self.answers.stop(decision.answer, kind, by=str(caller.id))
            self.stopped_here += 1
        _log.info(
            "/{name} by user {caller} from another process on {answer}: {outcome}",
            name="kill" if kind is StopKind.KILL else "stop",
            caller=caller.id,
            answer=decision.answer.describe(),
            outcome=decision.outcome,
        )
        reply = {
            "outcome": decision.outcome,
            "key": decision.key,
            "default": decision.default,
            "fields": {**decision.fields, "answer": decision.answer.describe()},
        }
        task = asyncio.get_running_loop().create_task(
            self.bus.publish(f"{_ACK}{request}", kind, json.dumps(reply))
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def answered(self, request: str, body: dict[str, Any]) -> None:
        """A reply to one of this process's questions (others' replies are not waited for here)."""
        waiting = self._waiting.get(request)
        if waiting is not None and not waiting.done() and {"outcome", "key", "default"} <= body.keys():
            waiting.set_result(body)
