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
        out += framing.feed(data)
    assert framing is not None and framing.done and framing.ends_at_close()
    assert b"".join(out) == body


def test_a_cut_chunk_does_not_end_cleanly_and_a_length_body_stops_at_its_length() -> None:
    body = ChunkedBody()
    assert body.feed(b"a\r\n01234") == [b"01234"] and not body.ends_at_close()
    length = LengthBody(3)
    assert length.feed(b"abcdef") == [b"abc"] and length.done and length.feed(b"x") == []


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
