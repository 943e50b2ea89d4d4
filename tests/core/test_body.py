"""The one capped body reader: both overflow policies at the cap, multibyte cuts, bounded work."""

from __future__ import annotations

import asyncio
import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord.core.body import Body, Overflow, read_capped
from rxcord.core.errors import ResponseTooLargeError, RxcordError

CAP = 10


class Pieces:
    """A body served as given pieces; counts the reads (the work done)."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = list(pieces)
        self.reads = 0

    async def read(self) -> bytes:
        self.reads += 1
        return self.pieces.pop(0) if self.pieces else b""


def _read(pieces: Pieces, cap: int, overflow: Overflow) -> Body:
    return asyncio.run(read_capped(pieces.read, cap, overflow=overflow))


@pytest.mark.parametrize("overflow", list(Overflow))
@pytest.mark.parametrize("size", [CAP - 1, CAP])
def test_a_body_up_to_the_cap_is_read_whole(overflow: Overflow, size: int) -> None:
    """cap - 1 and cap bytes: the whole body, not truncated, whatever the policy."""
    data = bytes(range(65, 65 + size))
    body = _read(Pieces(data[:3], data[3:]), CAP, overflow)
    assert body == Body(data, truncated=False)


def test_one_byte_over_the_cap_raises_with_raise() -> None:
    """cap + 1 bytes with RAISE: the typed error, an RxcordError naming the cap."""
    with pytest.raises(ResponseTooLargeError, match=f"exceeds {CAP} bytes") as caught:
        _read(Pieces(b"x" * 4, b"x" * (CAP + 1 - 4)), CAP, Overflow.RAISE)
    assert isinstance(caught.value, RxcordError)


def test_one_byte_over_the_cap_is_cut_and_marked_with_truncate() -> None:
    """cap + 1 bytes with TRUNCATE: the first cap bytes, marked truncated."""
    data = bytes(range(65, 65 + CAP + 1))
    body = _read(Pieces(data), CAP, Overflow.TRUNCATE)
    assert body.data == data[:CAP]
    assert body.truncated is True


@pytest.mark.parametrize("overflow", list(Overflow))
def test_reading_stops_at_the_first_piece_past_the_cap(overflow: Overflow) -> None:
    """A huge body costs reads up to the cap, not to its end (the work is bounded by the cap)."""
    pieces = Pieces(*[b"y" * 4] * 1000)
    if overflow is Overflow.RAISE:
        with pytest.raises(ResponseTooLargeError):
            _read(pieces, CAP, overflow)
    else:
        assert _read(pieces, CAP, overflow).data == b"y" * CAP
    assert pieces.reads == 3  # 4 + 4 bytes kept, the third piece crosses the cap


def test_a_multibyte_character_cut_by_the_cap_is_dropped_not_replaced() -> None:
    """'é' is two bytes; a cap between them drops it: no U+FFFD the sender never sent."""
    data = ("a" * (CAP - 1) + "é").encode()
    body = _read(Pieces(data), CAP, Overflow.TRUNCATE)
    assert body.truncated is True
    assert body.text() == "a" * (CAP - 1)


def test_invalid_utf8_inside_the_body_is_still_replaced() -> None:
    """The drop is only for the cap's own cut: a bad byte the sender sent becomes U+FFFD."""
    body = _read(Pieces(b"ab\xffcd"), CAP, Overflow.RAISE)
    assert body.text() == "ab\ufffdcd"


def test_an_incomplete_character_at_the_real_end_is_replaced() -> None:
    """An untruncated body ending mid-character is the sender's fault: replaced, not hidden."""
    body = _read(Pieces("é".encode()[:1]), CAP, Overflow.TRUNCATE)
    assert body.truncated is False
    assert body.text() == "\ufffd"


@given(
    text=st.text(max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
    cap=st.integers(min_value=0, max_value=60),
)
def test_the_result_does_not_depend_on_how_the_body_is_cut(text: str, cuts: list[int], cap: int) -> None:
    """Split invariance: the same bytes in any pieces give the same body and text."""
    data = text.encode()
    bounds = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    whole = _read(Pieces(data), cap, Overflow.TRUNCATE)
    split = _read(Pieces(*pieces), cap, Overflow.TRUNCATE)
    assert split == whole
    assert split.text() == whole.text()
    assert whole.data == data[:cap]
    assert whole.truncated is (len(data) > cap)
    assert text.startswith(whole.text())
