"""Shared fixtures: loguru stays quiet unless a test captures it; captures live in tests/fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

CAPTURES = Path(__file__).parent / "fixtures" / "captures"
DEMO_DATA = Path(__file__).parent.parent / "pipeline" / "data"


@pytest.fixture
def captures() -> Path:
    """The fixture capture folder (one subfolder per provider)."""
    return CAPTURES
