"""RedisStopBus on a real Redis server: stops published anywhere reach the registry where the stream runs."""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from loguru import logger

from rxcord.core.stops import StopHandle, StopRegistry
from rxcord.core.types import StopKind, StopSignal
from rxcord.io.stop_bus import RedisStopBus
from tests.redis_server import RedisProxy, Restartable, redis_url, restartable_redis

__all__ = ("redis_url", "restartable_redis")  # fixtures imported for pytest

ROOT = Path(__file__).resolve().parents[2]
Factory = Callable[..., Awaitable[RedisStopBus]]


@pytest.fixture
async def bus_factory() -> AsyncIterator[Factory]:
    """Starts buses (one per simulated process) and closes them afterwards."""
    made: list[RedisStopBus] = []

    async def build(url: str, registry: StopRegistry, namespace: str, process_id: str) -> RedisStopBus:
        bus = RedisStopBus(url, registry, process_id=process_id, namespace=namespace, block=0.2, timeout=0.3)
        await bus.start()
        made.append(bus)
        return bus

    yield build
    for bus in made:
        await bus.close()


def _record(handle: StopHandle) -> list[StopSignal]:
    seen: list[StopSignal] = []
    handle.signals.subscribe(seen.append)
    return seen


async def _until(condition: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.01)


async def test_redis_stop_bus_delivers_to_another_process_registry(
    redis_url: str, bus_factory: Factory
) -> None:
    """A kill published in process A reaches the stream's stop subject in process B."""
    namespace = uuid.uuid4().hex
    here, there = StopRegistry(), StopRegistry()
    sender = await bus_factory(redis_url, here, namespace, "A")
    await bus_factory(redis_url, there, namespace, "B")
    seen = _record(there.open("42"))
    assert await sender.publish("42", StopKind.KILL, "/kill by a user") is False  # not streaming in A
    await _until(lambda: bool(seen))
    assert seen == [StopSignal(StopKind.KILL, "/kill by a user")]


async def test_redis_stop_for_a_channel_streaming_nowhere_is_a_noop(
    redis_url: str, bus_factory: Factory
) -> None:
    """A stop for an unknown channel changes nothing anywhere; the next real stop still arrives."""
    namespace = uuid.uuid4().hex
    here, there = StopRegistry(), StopRegistry()
    sender = await bus_factory(redis_url, here, namespace, "A")
    receiver = await bus_factory(redis_url, there, namespace, "B")
    seen = _record(there.open("42"))
    assert await sender.publish("999", StopKind.USER) is False
    await _until(lambda: receiver.delivered == 1)
    assert seen == [] and there.active() == ("42",) and here.active() == ()
    await sender.publish("42", StopKind.INTERRUPT)
    await _until(lambda: bool(seen))
    assert seen == [StopSignal(StopKind.INTERRUPT)]


async def test_redis_stop_bus_applies_a_local_stop_once(redis_url: str, bus_factory: Factory) -> None:
    """A stop for a stream in the publishing process is applied at once, and its echo is not applied again."""
    namespace = uuid.uuid4().hex
    here = StopRegistry()
    sender = await bus_factory(redis_url, here, namespace, "A")
    witness = await bus_factory(redis_url, StopRegistry(), namespace, "B")
    seen = _record(here.open("42"))
    assert await sender.publish("42", StopKind.USER) is True
    assert seen == [StopSignal(StopKind.USER)]
    await _until(lambda: witness.delivered == 1)
    await sender.publish("7", StopKind.USER)  # the sender's reader has passed its own first entry once
    await _until(lambda: witness.delivered == 2)
    await asyncio.sleep(0.05)
    assert seen == [StopSignal(StopKind.USER)] and sender.delivered == 0


async def test_redis_stop_bus_catches_up_after_a_dropped_connection(
    redis_url: str, bus_factory: Factory
) -> None:
    """A stop published while the receiver's connection is down arrives after it reconnects (streams)."""
    namespace = uuid.uuid4().hex
    proxy = RedisProxy(redis_url)
    await proxy.start()
    try:
        there = StopRegistry()
        sender = await bus_factory(redis_url, StopRegistry(), namespace, "A")
        receiver = await bus_factory(proxy.url, there, namespace, "B")
        seen = _record(there.open("42"))
        await proxy.kill()
        await _until(lambda: not receiver.connected)
        await sender.publish("42", StopKind.KILL)
        await asyncio.sleep(0.2)
        assert seen == []
        await proxy.start()
        await _until(lambda: bool(seen))
        assert seen == [StopSignal(StopKind.KILL)]
    finally:
        await proxy.kill()


async def test_redis_stop_bus_survives_a_redis_restart(
    restartable_redis: Restartable, bus_factory: Factory
) -> None:
    """Redis killed: publish still stops local streams (logged); after a restart remote stops flow again."""
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lines.append, level="INFO", format="{message}")
    try:
        namespace = uuid.uuid4().hex
        here, there = StopRegistry(), StopRegistry()
        sender = await bus_factory(restartable_redis.url, here, namespace, "A")
        receiver = await bus_factory(restartable_redis.url, there, namespace, "B")
        local = _record(here.open("1"))
        remote = _record(there.open("2"))
        await restartable_redis.kill()
        assert await sender.publish("1", StopKind.KILL) is True
        assert local == [StopSignal(StopKind.KILL)]
        await _until(lambda: not receiver.connected)
        await restartable_redis.restart()
        await receiver.wait_connected(5.0)
        await sender.publish("2", StopKind.USER)
        await _until(lambda: bool(remote))
        assert remote == [StopSignal(StopKind.USER)]
    finally:
        logger.remove(handler)
        logger.disable("rxcord")
    assert any("not published" in line for line in lines)
    assert any("reachable again" in line for line in lines)


async def test_redis_stop_bus_between_real_processes(redis_url: str, bus_factory: Factory) -> None:
    """A stop published by another OS process reaches this process's stream."""
    namespace = uuid.uuid4().hex
    registry = StopRegistry()
    await bus_factory(redis_url, registry, namespace, "parent")
    seen = _record(registry.open("42"))
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.io.test_stop_bus",
        redis_url,
        namespace,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert await asyncio.wait_for(child.wait(), 30) == 0
    await _until(lambda: bool(seen))
    assert seen == [StopSignal(StopKind.KILL, "from a child")]


async def _publish_from_child(url: str, namespace: str) -> None:
    """The child process: a bus with no streams publishes one kill for channel 42."""
    bus = RedisStopBus(url, StopRegistry(), process_id="child", namespace=namespace)
    await bus.start()
    assert await bus.publish("42", StopKind.KILL, "from a child") is False
    await bus.close()


if __name__ == "__main__":
    asyncio.run(_publish_from_child(sys.argv[1], sys.argv[2]))
