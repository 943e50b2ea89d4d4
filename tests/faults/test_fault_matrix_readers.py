"""The fault matrix with each reader forced: every row keeps its promise on both."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from rxcord.providers import transport
from tests.faults import test_fault_matrix as matrix

pytestmark = pytest.mark.faults


@pytest.mark.parametrize("reader", ["socket", "aiohttp"])
async def test_fault_matrix_with_the_reader_forced(
    reader: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole matrix, its table's promises and assertions, read by *reader* only."""
    opened: list[Any] = []
    real = transport.open_request

    async def counting(*args: Any, **kwargs: Any) -> Any:
        opened.append(args[1])
        return await real(*args, **kwargs)

    monkeypatch.setattr(transport, "open_request", counting)
    monkeypatch.setattr(matrix, "TRANSPORT", attrs.evolve(matrix.TRANSPORT, reader=reader))
    await matrix.test_fault_matrix(capsys)
    # The forced reader is the one that read: the socket reader opened every request, or none.
    assert (len(opened) > len(matrix.SCENARIOS)) if reader == "socket" else not opened
