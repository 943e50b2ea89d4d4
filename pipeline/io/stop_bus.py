"""Stop signals across processes through Redis (stage 04's stop subjects, shared).

A bot that runs several processes cannot tell in which one a channel's stream
runs: the /stop or /kill command, or the follow-up message that interrupts,
may land in any of them. ``RedisStopBus`` connects the processes' stop
registries: ``publish(channel_id, kind)`` stops the stream at once when it
runs in this process and puts the stop on Redis; every other process's bus
reads it and calls ``registry.stop(channel_id, kind, reason)`` on its own
``StopRegistry``, which feeds the very stop subject the chain's stop gate
already consumes. A stop for a channel that streams nowhere changes nothing
(``StopRegistry.stop`` returns ``False`` in every process).

Pub/sub or streams?
-------------------
Redis Streams (``XADD`` / ``XREAD BLOCK``), not pub/sub. Pub/sub is at most
once: a message published while a subscriber's connection is down, or being
re-established, is gone, and the stream it was meant for keeps talking after
the user pressed stop. A stream keeps entries; each bus reads from the last
id it saw, so after a connection drop or a Redis failover it catches up on the
stops it missed. Every process must see every stop (the bus does not know
where a channel streams), so there are no consumer groups: each bus reads the
whole stream, and ``MAXLEN ~ maxlen`` trims it. Replaying old stops would be
wrong in its own way (an old stop could hit a *new* stream in the same
channel), so after a reconnect the bus skips entries older than ``max_age``
seconds (Redis's clock). Cost: one blocked connection per process, one entry
per stop; stops are rare.

Failure behaviour: ``publish`` applies the stop locally first, so a stop for a
local stream works with Redis down; the remote part is logged and dropped
when Redis does not answer within ``timeout`` (a user can press stop again;
queueing it would deliver it late, to whatever streams then). The reader
retries with capped backoff and logs the outage once and the recovery once.
"""

from __future__ import annotations

__all__ = ("RedisStopBus",)

import asyncio
import math
from collections.abc import Mapping
from typing import Any, Final

from loguru import logger

from rxcord.core.errors import MissingExtraError
from rxcord.core.stops import StopRegistry
from rxcord.core.types import StopKind

try:
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff
    from redis.exceptions import RedisError
    from redis.typing import EncodableT, FieldT
except ImportError as exc:  # the name says what to install, not a bare ModuleNotFoundError
    raise MissingExtraError("redis", "redis", "rxcord.io.RedisStopBus") from exc

_log = logger.bind(stage="04-stop-bus")

_MAX_BACKOFF: Final = 2.0


def _entries(reply: Any) -> list[tuple[str, dict[str, str]]]:
    """The (id, fields) entries of an ``XREAD`` reply on one stream (RESP2 list or RESP3 map form)."""
    if not reply:
        return []
    per_stream = reply.values() if isinstance(reply, Mapping) else (item[1] for item in reply)
    return [
        (str(entry_id), {str(k): str(v) for k, v in (fields or {}).items()})
        for entries in per_stream
        for entry_id, fields in entries
    ]


def _parse_id(entry_id: str) -> tuple[int, int]:
    milliseconds, _, sequence = entry_id.partition("-")
    return int(milliseconds), int(sequence or 0)


class RedisStopBus:
    """Delivers stop signals published in any process to the local ``StopRegistry``.

    Example::

        bus = RedisStopBus("redis://127.0.0.1:6379/0", registry, process_id="shard-3")
        await bus.start()
        await bus.publish(channel_id, StopKind.KILL)   # from a /kill handler, in any process
        await bus.close()

    Args:
        url: Redis URL shared by the bot's processes; ignored when ``client`` is given.
        registry: This process's stop registry; remote stops are delivered into it.
        process_id: Unique per process; the bus skips its own entries (applied locally at publish).
        namespace: Shared by every process of one bot (e.g. ``rxcord.sinks.ratelimit.redis.token_namespace``).
        client: A ``redis.asyncio.Redis`` with ``decode_responses=True`` and a socket timeout above
            ``block`` (not closed by ``close``); one is created from ``url`` if ``None``.
        timeout: Deadline of ``publish``'s Redis call and of connects.
        block: Seconds one ``XREAD`` blocks waiting for entries.
        max_age: After a reconnect, entries older than this (seconds) are skipped.
        maxlen: Approximate number of entries kept in the Redis stream.
    """

    __slots__ = (
        "_block_ms",
        "_client",
        "_closed",
        "_connected",
        "_cursor",
        "_down",
        "_key",
        "_max_age",
        "_maxlen",
        "_owns_client",
        "_process_id",
        "_reader",
        "_registry",
        "_timeout",
        "delivered",
    )

    def __init__(
        self,
        url: str | None,
        registry: StopRegistry,
        *,
        process_id: str,
        namespace: str = "default",
        client: aioredis.Redis | None = None,
        timeout: float = 1.0,
        block: float = 1.0,
        max_age: float = 10.0,
        maxlen: int = 1000,
    ) -> None:
        if client is None:
            if not url:
                raise ValueError("RedisStopBus needs a Redis url or a client")
            client = aioredis.Redis.from_url(
                url,
                decode_responses=True,
                socket_timeout=block + timeout,
                socket_connect_timeout=timeout,
                # One immediate retry replaces a connection the server closed; outages beyond
                # that are the reader loop's business (it logs them and repositions the cursor).
                retry=Retry(NoBackoff(), 1),
            )
            self._owns_client = True
        else:
            self._owns_client = False
        self._client = client
        self._registry = registry
        self._process_id = process_id
        self._key = f"rxcord:{{{namespace}}}:stops"
        self._timeout = timeout
        self._block_ms = max(1, round(block * 1000))
        self._max_age = max_age
        self._maxlen = maxlen
        self._cursor: str | None = None
        """The last entry id read; ``None`` until the first connect."""
        self._down = False
        self._closed = False
        self._connected = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None
        self.delivered = 0
        """Remote stops handed to the registry (whether or not a stream was running there)."""

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("down" if self._down else "up")
        return f"<RedisStopBus {self._key} {self._process_id} {state}>"

    @property
    def connected(self) -> bool:
        """Whether the reader is currently positioned on the Redis stream."""
        return self._connected.is_set()

    async def start(self) -> None:
        """Start reading; returns once positioned on the stream (or after the first failed attempt).

        When Redis is down at start, the bus logs it and keeps trying in the background.
        """
        if self._reader is not None:
            return
        first_attempt = asyncio.Event()
        self._reader = asyncio.get_running_loop().create_task(self._read(first_attempt))
        await first_attempt.wait()

    async def wait_connected(self, timeout: float | None = None) -> None:
        """Wait until the reader is positioned on the stream (after a start or a reconnect)."""
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def publish(self, channel_id: str, kind: StopKind, reason: str = "") -> bool:
        """Stop the stream of ``channel_id`` wherever it runs.

        Returns:
            Whether a stream was running in *this* process (remote processes answer nothing:
            a stop for a channel streaming nowhere is a no-op everywhere).
        """
        local = self._registry.stop(channel_id, kind, reason)
        fields: dict[FieldT, EncodableT] = {
            "origin": self._process_id,
            "channel": channel_id,
            "kind": kind.value,
            "reason": reason,
        }
        try:
            await asyncio.wait_for(
                self._client.xadd(self._key, fields, maxlen=self._maxlen, approximate=True), self._timeout
            )
        except (RedisError, OSError, TimeoutError) as exc:
            _log.warning(
                "stop {kind} for channel {channel} not published (Redis: {error}); applied locally only",
                kind=kind.value,
                channel=channel_id,
                error=type(exc).__name__,
            )
        return local

    async def close(self) -> None:
        """Stop reading and close the Redis client if the bus created it."""
        self._closed = True
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        if self._owns_client:
            await self._client.aclose()

    # -- the reader -----------------------------------------------------------

    async def _read(self, first_attempt: asyncio.Event) -> None:
        failures = 0
        while not self._closed:
            try:
                if not self._connected.is_set():
                    await self._position()
                    self._connected.set()
                    first_attempt.set()
                    if self._down:
                        self._down = False
                        _log.info("stop bus: Redis reachable again, listening")
                    failures = 0
                cursor = self._cursor or "0-0"
                reply = await self._client.xread({self._key: cursor}, count=100, block=self._block_ms)
                for entry_id, fields in _entries(reply):
                    self._cursor = entry_id
                    self._deliver(fields)
            except (RedisError, OSError, TimeoutError) as exc:
                self._connected.clear()
                first_attempt.set()
                failures += 1
                if not self._down:
                    self._down = True
                    _log.warning(
                        "stop bus: Redis unreachable ({error}); remote stops wait for the reconnect",
                        error=type(exc).__name__,
                    )
                await asyncio.sleep(min(_MAX_BACKOFF, 0.05 * 2 ** min(failures, 10)))

    async def _position(self) -> None:
        """Set the cursor: the stream's tail on first connect; after a reconnect, skip stale entries."""
        seconds, micros = await asyncio.wait_for(self._client.time(), self._timeout)
        horizon = (int(seconds) * 1000 + int(micros) // 1000 - math.ceil(self._max_age * 1000), 0)
        if self._cursor is None:
            tail = await asyncio.wait_for(self._client.xrevrange(self._key, count=1), self._timeout)
            self._cursor = str(tail[0][0]) if tail else "0-0"
        if _parse_id(self._cursor) < horizon:
            self._cursor = f"{horizon[0]}-{horizon[1]}"

    def _deliver(self, fields: dict[str, str]) -> None:
        if fields.get("origin") == self._process_id:
            return  # applied locally when published
        channel = fields.get("channel")
        try:
            kind = StopKind(fields.get("kind", ""))
        except ValueError:
            _log.warning("stop bus: ignoring an entry with unknown kind {kind!r}", kind=fields.get("kind"))
            return
        if channel is None:
            return
        self.delivered += 1
        self._registry.stop(channel, kind, fields.get("reason", ""))
