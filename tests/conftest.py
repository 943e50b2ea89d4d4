"""Shared fixtures: loguru stays quiet unless a test captures it; captures live in tests/fixtures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from loguru import logger

# No test may depend on wall-clock speed: hypothesis's per-example deadline (200 ms) and its
# too-slow health check are timings, so they are off for the whole suite (a loaded 2-core
# machine must pass it); the examples themselves are unchanged.
settings.register_profile("rxcord", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rxcord")

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
DEMO_DATA = Path(__file__).parent.parent / "pipeline" / "data"


@pytest.fixture(autouse=True)
def _library_log_off() -> Iterator[None]:
    """Each test ends with loguru's switches as a process starts: rxcord's lines off, the rest on.

    Commands run in-process (``rxcord -v``, ``rxcord bot``) switch the namespace on for the
    process, as they should; in a test process that would leak into whichever test runs next
    (random order), so the switch is put back here rather than in every caller.
    """
    yield
    logger.enable("")  # every module's lines on, as loguru starts (a test may have switched "" off)
    logger.disable("rxcord")


@pytest.fixture
def captures() -> Path:
    """The fixture capture folder (one subfolder per provider)."""
    return CAPTURES
