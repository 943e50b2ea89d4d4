"""SSE parser: exactness and split invariance."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord.core.errors import RxcordError, SseLineTooLongError
from rxcord.providers.sse import SseEvent, SseParser


def _parse(pieces: list[bytes]) -> list[SseEvent]:
    parser = SseParser()
    events: list[SseEvent] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    events.extend(parser.close())
    return events


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces, start = [], 0
    for p in points:
        pieces.append(data[start:p])
        start = p
    pieces.append(data[start:])
    return pieces


def test_basic_events_and_comments() -> None:
    """data lines dispatch on a blank line; comments are counted, not emitted."""
    parser = SseParser()
    events = parser.feed(b': OPENROUTER PROCESSING\n\ndata: {"a":1}\n\ndata: [DONE]\n\n')
    assert events == [SseEvent(data='{"a":1}'), SseEvent(data="[DONE]")]
    assert parser.comments == 1


def test_event_names_and_multiline_data() -> None:
    """event: names attach to their event; several data: lines join with a newline."""
    events = _parse([b"event: message_start\ndata: a\ndata: b\n\nevent: ping\ndata: {}\n\n"])
    assert events == [SseEvent(data="a\nb", event="message_start"), SseEvent(data="{}", event="ping")]


def test_crlf_and_cr_line_ends() -> None:
    """CRLF, CR and LF line ends are all honoured."""
    assert _parse([b"data: x\r\n\r\ndata: y\r\rdata: z\n\n"]) == [
        SseEvent(data="x"),
        SseEvent(data="y"),
        SseEvent(data="z"),
    ]


def test_crlf_split_between_cr_and_lf() -> None:
    """A CRLF split across two pieces does not produce an extra blank line."""
    assert _parse([b"data: x\r", b"\ndata: y\r", b"\n\r", b"\n"]) == [SseEvent(data="x\ny")]


def test_utf8_split_inside_character() -> None:
    """A multi-byte character split across pieces decodes intact."""
    data = "data: héllo 👋\n\n".encode()
    idx = data.index("👋".encode()) + 2
    assert _parse([data[:idx], data[idx:]]) == [SseEvent(data="héllo 👋")]


def test_pending_event_dispatched_at_close() -> None:
    """A final event without its blank line is still delivered at end of body."""
    assert _parse([b"data: last"]) == [SseEvent(data="last")]


def test_bom_and_space_rules() -> None:
    """A leading BOM is dropped; one space after the colon is removed; a field with no colon is a name."""
    assert _parse([b"\xef\xbb", b"\xbfdata:  two\n\ndata\n\n"]) == [SseEvent(data=" two"), SseEvent(data="")]


def test_line_too_long_is_a_typed_error() -> None:
    """A line that never ends raises SseLineTooLongError instead of growing without bound."""
    parser = SseParser(max_line_bytes=100)
    try:
        parser.feed(b"data: " + b"x" * 200)
    except SseLineTooLongError as exc:
        assert isinstance(exc, RxcordError) and isinstance(exc, ValueError)
        return
    raise AssertionError("expected SseLineTooLongError")


def test_line_too_long_in_small_pieces() -> None:
    """The bound holds for a line delivered a few bytes at a time."""
    parser = SseParser(max_line_bytes=100)
    with pytest.raises(SseLineTooLongError):
        for _ in range(60):
            parser.feed(b"xy")


class _Counted(bytes):
    """A piece that counts the bytes every concatenation or slice involving it copies."""

    copied = 0

    def __add__(self, other: object) -> bytes:
        assert isinstance(other, bytes)
        _Counted.copied += len(self) + len(other)
        return bytes(self) + other

    def __radd__(self, other: object) -> bytes:
        assert isinstance(other, bytes)
        _Counted.copied += len(self) + len(other)
        return other + bytes(self)

    def __getitem__(self, index: Any) -> Any:
        part = bytes.__getitem__(self, index)
        if isinstance(part, bytes):
            _Counted.copied += len(part)
        return part


@pytest.mark.parametrize("piece", [1, 7, 64])
def test_a_long_line_in_small_writes_is_linear(piece: int) -> None:
    """A 3 MB line without a newline, fed in small writes: the bytes copied grow linearly, not quadratically.

    Counted work, not time: every concatenation or slice of a fed piece is counted.
    """
    payload = b"data: " + b"x" * (3 * 1024 * 1024 if piece > 1 else 256 * 1024)
    body = payload + b"\n\n"
    _Counted.copied = 0
    parser = SseParser()
    events = []
    for start in range(0, len(body), piece):
        events.extend(parser.feed_raw(_Counted(body[start : start + piece])))
    assert events == [(payload[6:], None, None)]
    assert _Counted.copied <= 2 * len(body)


_lines = st.lists(
    st.one_of(
        st.text(
            alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=20
        ).map(lambda t: "data: " + t),
        st.sampled_from([": keepalive", "event: delta", "", "id: 7", "data:"]),
    ),
    max_size=20,
)


@given(_lines, st.sampled_from(["\n", "\r\n", "\r"]), st.lists(st.integers(min_value=0), max_size=12))
def test_split_invariance(lines: list[str], eol: str, cuts: list[int]) -> None:
    """Any cutting of the same bytes (inside lines, characters or CRLF) gives the same events."""
    data = (eol.join(lines) + eol + eol).encode()
    assert _parse(_cut(data, cuts)) == _parse([data])
