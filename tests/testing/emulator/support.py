"""Helpers for the emulator tests: JSON posts, waiting for a condition, running a client."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp

USER_ID = "300000000000000001"
WAIT = 20.0
"""Seconds to wait for something that happens in milliseconds (a loaded machine is slow, never this slow)."""


async def post(session: aiohttp.ClientSession, url: str, body: Any) -> tuple[int, Any]:
    async with session.post(url, json=body) as resp:
        data = await resp.json() if resp.content_type == "application/json" else None
        return resp.status, data


async def eventually(check: Callable[[], bool], what: str) -> None:
    """Wait until ``check()`` holds (polling the loop), or fail naming ``what``."""
    async with asyncio.timeout(WAIT):
        while not check():
            await asyncio.sleep(0.01)
    assert check(), what


async def next_item(queue: asyncio.Queue[Any]) -> Any:
    return await asyncio.wait_for(queue.get(), WAIT)


@contextlib.asynccontextmanager
async def running(
    start: Callable[[], Awaitable[None]], close: Callable[[], Awaitable[None]]
) -> AsyncIterator[None]:
    """Run a client's ``start`` in a task for the block, then close it and wait for the task."""
    task = asyncio.create_task(start())
    try:
        yield
    finally:
        await close()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, WAIT)
