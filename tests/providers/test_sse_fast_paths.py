"""The SSE parser's fast paths for bodies of nothing give the events of the line-by-line rules.

A run of blank lines is collapsed in one pass and a lone comment between events is skipped
undecoded, on LF-only input. CRLF input takes the line-by-line path, so the same lines ended
with CRLF are the reference: same events, same comment count, however the bytes are cut.
"""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from rxcord.providers.sse import SseParser

_line = st.one_of(
    st.sampled_from(["", "", "", ": keepalive", ":", "event: delta", "id: 7", "data:", "retry: 5"]),
    st.text(alphabet="ab:é ", max_size=6).map(lambda t: "data: " + t),
)


def _events(data: bytes, cuts: list[int]) -> tuple[list[tuple[bytes, str | None, str | None]], int]:
    parser = SseParser()
    out: list[tuple[bytes, str | None, str | None]] = []
    points = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for start, end in itertools.pairwise(points):
        out.extend(parser.feed_raw(data[start:end]))
    out.extend(parser.close_raw())
    return out, parser.comments


@given(st.lists(_line, max_size=40), st.lists(st.integers(min_value=0), max_size=8))
def test_blank_runs_and_comments_parse_as_the_line_rules_say(lines: list[str], cuts: list[int]) -> None:
    lf = "\n".join(lines).encode() + b"\n"
    crlf = "\r\n".join(lines).encode() + b"\r\n"
    assert _events(lf, cuts) == _events(crlf, [])


def test_a_body_of_blank_lines_is_one_pass() -> None:
    """4 MiB of blank lines, then an event: one event, and the parser holds nothing meanwhile."""
    parser = SseParser()
    out = []
    for _ in range(256):
        out.extend(parser.feed_raw(b"\n" * 16384))
    out.extend(parser.feed_raw(b"data: x\n\n"))
    assert out == [(b"x", None, None)]
