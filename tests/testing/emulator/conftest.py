"""Fixtures for the emulator tests: a running emulator, an HTTP session, a guild channel."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    async with DiscordEmulator(EmulatorConfig(heartbeat_interval_ms=41_250)) as emu:
        yield emu


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as http:
        yield http


@pytest.fixture
def channel(emulator: DiscordEmulator) -> str:
    """The guild's first text channel."""
    return emulator.config.channels[0].id
