"""HTTP/1.1 framing for the socket reader: split invariance, bounds and what is not served."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord.providers.http1 import (
    MAX_HEAD_BYTES,
    MAX_SIZE_LINE,
    ChunkedBody,
    HeadReader,
    LengthBody,
    framing_for,
    is_unusual,
)
from tests.providers.socket_server import chunked, cut

HEAD = (
    b"HTTP/1.1 100 Continue\r\n\r\n"
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
)


@given(
    body=st.binary(max_size=300),
    sizes=st.lists(st.integers(1, 50), min_size=1, max_size=5),
    cuts=st.lists(st.integers(0, 800), max_size=20),
)
def test_head_and_chunked_body_cut_anywhere_give_the_same_bytes(
    body: bytes, sizes: list[int], cuts: list[int]
) -> None:
    wire = HEAD + chunked(body, sizes) + b"trailing bytes after the last chunk are not body"
    heads, framing, out = HeadReader(), None, []
    for piece in cut(wire, cuts):
        data = piece
        if framing is None:
            got = heads.feed(piece)
            if got is None:
                continue
            head, data = got
            assert head.status == 200  # the interim 100 was skipped
            framing = framing_for(head, method="POST")
        out.append(framing.feed(data))
    assert framing is not None and framing.done and framing.ends_at_close()
    assert b"".join(out) == body


def test_a_cut_chunk_does_not_end_cleanly_and_a_length_body_stops_at_its_length() -> None:
    body = ChunkedBody()
    assert body.feed(b"a\r\n01234") == b"01234" and not body.ends_at_close()
    length = LengthBody(3)
    assert length.feed(b"abcdef") == b"abc" and length.done and length.feed(b"x") == b""


def _unusual(feed: bytes) -> bool:
    try:
        got = HeadReader().feed(feed)
        if got is not None:
            framing_for(got[0], method="POST")
    except ValueError as exc:
        return is_unusual(exc)
    return False


def test_bounds_and_unusual_responses() -> None:
    assert _unusual(b"HTTP/1.1 200 OK\r\nX: " + b"y" * (MAX_HEAD_BYTES + 1))
    assert _unusual(b"\x00\x00\x12\x04\x00\x00\x00\x00\x00 an HTTP/2 frame")
    assert _unusual(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
    assert _unusual(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n")
    assert _unusual(b"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n")
    assert not _unusual(b"HTTP/1.0 200 OK\r\nX: a\r\n\r\n")
    with pytest.raises(ConnectionError):
        ChunkedBody().feed(b"f" * (MAX_SIZE_LINE + 1))
    with pytest.raises(ConnectionError):
        ChunkedBody().feed(b"zz\r\n")


SIZE_STYLES = st.sampled_from(["{:x}", "{:X}", "{:04x}", " {:x} ", "{:x};ext=1", "{:x} ; a=b;c", "{:x}\r"])
LINE_ENDS = st.sampled_from([b"\r\n", b"\n", b"\r\r\n"])


@given(
    chunks=st.lists(
        st.tuples(st.binary(min_size=1, max_size=40), SIZE_STYLES, LINE_ENDS, LINE_ENDS), max_size=6
    ),
    cuts=st.lists(st.integers(0, 600), max_size=25),
)
def test_any_valid_chunk_line_shape_cut_anywhere_gives_the_body(
    chunks: list[tuple[bytes, str, bytes, bytes]], cuts: list[int]
) -> None:
    """Size lines with extensions, spaces, upper-case or padded hex, and bare or doubled CRs."""
    wire = b"".join(
        style.format(len(data)).encode() + size_end + data + data_end
        for data, style, size_end, data_end in chunks
    )
    wire += b"0\r\n\r\nTrailer: not body\r\n\r\n"
    framing = ChunkedBody()
    out = [framing.feed(piece) for piece in cut(wire, cuts)]
    assert framing.done and b"".join(out) == b"".join(data for data, *_ in chunks)


@given(
    broken=st.sampled_from([b"zz\r\n", b"0x5\r\n", b"+5\r\n", b"5_0\r\n", b"\r\n", b"5\r\nhelloX\r\n"]),
    cuts=st.lists(st.integers(0, 40), max_size=8),
)
def test_broken_framing_cut_anywhere_is_a_cut_stream(broken: bytes, cuts: list[int]) -> None:
    """What ``int(x, 16)`` alone would take (a 0x prefix, a sign, an underscore) is not a size."""
    framing = ChunkedBody()
    wire = b"3\r\nabc\r\n" + broken + b"more"
    with pytest.raises(ConnectionError):
        for piece in cut(wire, cuts):
            framing.feed(piece)
