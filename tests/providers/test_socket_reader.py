"""The socket reader against loopback servers: the same chunks as aiohttp, however the bytes are cut."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import RawStreamChunk
from rxcord.operators.aio import drain
from rxcord.providers import transport
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.openai import OpenAIAdapter
from rxcord.providers.ssrf import SsrfGuard
from rxcord.providers.transport import TransportConfig, TransportStats, stream_source
from tests.providers.socket_server import PieceServer, cut, response

CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
BASE = TransportConfig(allow_private_network=True, backoff=0.01, transient_retries=0)


def _delta(text: str, *, crlf: bool = False) -> bytes:
    event = "data: " + json.dumps(
        {"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]}, ensure_ascii=False
    )
    end = "\r\n\r\n" if crlf else "\n\n"
    return (event + end).encode()


def _body(texts: Sequence[str], *, crlf: bool = False, done: bool = True) -> bytes:
    tail = (b"data: [DONE]\r\n\r\n" if crlf else b"data: [DONE]\n\n") if done else b""
    return b"".join(_delta(t, crlf=crlf) for t in texts) + tail


def _shape(chunks: Sequence[RawStreamChunk]) -> list[tuple[Any, ...]]:
    """What a chunk says (errors by code), without the exception objects inside them."""
    return [(c.data, c.event, c.error.code if c.error is not None else None) for c in chunks]


async def _read(
    scripts: list[list[bytes]], reader: str, config: TransportConfig = BASE, **server: Any
) -> tuple[list[RawStreamChunk], TransportStats, PieceServer]:
    adapter = OpenAIAdapter()
    stats = TransportStats()
    async with PieceServer(scripts, **server) as srv:
        http = adapter.build_request(CHAT, base_url=srv.base_url, api_key="k")
        cfg = attrs.evolve(config, reader=reader)
        chunks = await asyncio.wait_for(drain(stream_source(adapter, http, config=cfg, stats=stats)), 20)
    return chunks, stats, srv


async def _both(scripts: list[list[bytes]], config: TransportConfig = BASE) -> list[tuple[Any, ...]]:
    socket_chunks, socket_stats, _ = await _read(scripts, "socket", config)
    aiohttp_chunks, aiohttp_stats, _ = await _read(scripts, "aiohttp", config)
    assert socket_stats.readers and set(socket_stats.readers) == {"socket"}
    assert aiohttp_stats.readers and set(aiohttp_stats.readers) == {"aiohttp"}
    assert _shape(socket_chunks) == _shape(aiohttp_chunks)
    return _shape(socket_chunks)


TEXTS = st.lists(st.text(alphabet="aé€😀\n ", min_size=1, max_size=6), min_size=1, max_size=5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    texts=TEXTS,
    framing=st.sampled_from(["chunked", "length", "close"]),
    sizes=st.lists(st.integers(1, 40), min_size=1, max_size=4),
    cuts=st.lists(st.integers(0, 2000), max_size=12),
    crlf=st.booleans(),
    gzipped=st.booleans(),
)
async def test_split_anywhere_gives_the_events_aiohttp_gives(
    texts: list[str], framing: str, sizes: list[int], cuts: list[int], crlf: bool, gzipped: bool
) -> None:
    """Chunk boundaries and TCP writes anywhere (in UTF-8, CRLF, SSE lines, size lines): same events."""
    whole = response(_body(texts, crlf=crlf), framing=framing, sizes=sizes, gzipped=gzipped)
    shape = await _both([cut(whole, cuts)])
    assert [s[0]["choices"][0]["delta"]["content"] for s in shape] == texts


async def test_truncated_mid_chunk_is_truncated_stream_on_both() -> None:
    """A chunked body cut inside a chunk's data: the text before it, then ``truncated_stream``."""
    whole = response(_body(["one", "two"], done=False), sizes=[7])
    shape = await _both([[whole[: len(whole) - 20]]])
    assert shape[-1][2] == "truncated_stream" and shape[0][0]["choices"][0]["delta"]["content"] == "one"


async def test_close_delimited_body_without_end_marker_is_a_cut() -> None:
    shape = await _both([[response(_body(["a", "b"], done=False), framing="close")]])
    assert shape[-1][2] == "truncated_stream" and len(shape) == 3


async def test_oversize_line_and_stream_and_error_body_are_the_same_typed_errors() -> None:
    line = await _both(
        [[response(b"data: " + b"x" * 5000, sizes=[100])]], attrs.evolve(BASE, max_line_bytes=64)
    )
    assert [s[2] for s in line] == ["sse_line_too_long"]
    # The cap is checked per piece read, and the readers' pieces differ (aiohttp may take the
    # whole body in one read): the same error, after a prefix of the events.
    capped = attrs.evolve(BASE, max_stream_bytes=2000, reader="socket")
    for reader in ("socket", "aiohttp"):
        chunks, _, _ = await _read([[response(_body(["y" * 400] * 20), sizes=[333])]], reader, capped)
        assert [c.error.code for c in chunks if c.error] == ["malformed_response"]
        assert len(chunks) < 20 and chunks[-1].error is not None
    error = response(b'{"error": {"message": "' + b"z" * 5000 + b'"}}', status=500, ctype="application/json")
    big = await _both([[error]], attrs.evolve(BASE, max_body_bytes=1000))
    assert big and all(s[2] is not None for s in big)


async def test_error_bodies_and_redirects_read_the_same_way() -> None:
    rejected = response(
        b'{"error": {"message": "bad model", "code": 400}}',
        status=400,
        ctype="application/json",
        framing="length",
    )
    assert (await _both([[rejected]]))[-1][2] is not None
    redirect = response(
        b"", status=307, ctype="text/html", framing="length", extra="Location: http://10.0.0.1/\r\n"
    )
    assert [s[2] for s in await _both([[redirect]])] == ["redirect_refused"]


async def test_a_gzip_bomb_is_inflated_in_bounded_steps() -> None:
    """A few KiB of gzip standing for 20 MB: refused at the stream cap, never inflated whole."""
    bomb = response(b"\n" * 20_000_000, gzipped=True, sizes=[4096])
    cfg = attrs.evolve(BASE, max_stream_bytes=1_000_000, max_held_bytes=10_000_000)
    chunks, stats, _ = await _read([[bomb]], "socket", cfg)
    assert [c.error.code for c in chunks if c.error] == ["malformed_response"]
    assert stats.peak_held_bytes <= 1_000_000 + transport.READ_SLICE


async def test_dispose_closes_the_socket() -> None:
    """Disposed after the first text: the socket is closing and the server sees the client go."""
    adapter = OpenAIAdapter()
    stats = TransportStats()
    first = asyncio.Event()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    event = _delta("hello")
    async with PieceServer([[head, f"{len(event):x}\r\n".encode() + event + b"\r\n"]], hold=True) as srv:
        http = adapter.build_request(CHAT, base_url=srv.base_url, api_key="k")
        source = stream_source(adapter, http, config=attrs.evolve(BASE, reader="socket"), stats=stats)
        subscription = source.subscribe(lambda _: first.set())
        await asyncio.wait_for(first.wait(), 10)
        [socket] = stats.sockets
        assert not socket.is_closing()
        subscription.dispose()
        await asyncio.wait_for(srv.client_closed.wait(), 10)
        assert socket.is_closing() and stats.closed


async def test_ssrf_refusal_before_any_connection() -> None:
    """A name resolving to a private address is refused; the server is never connected to."""
    looked_up: list[str] = []

    async def resolver(host: str) -> list[str]:
        looked_up.append(host)
        return ["10.1.2.3"]

    opened: list[Any] = []
    async with PieceServer([[response(_body(["x"]))]]) as srv:
        adapter = CustomAdapter()
        url = f"http://llm.example:{srv.port}/v1"
        http = adapter.build_request(CHAT, base_url=url, api_key="k")
        cfg = TransportConfig(reader="socket", ssrf_guard=SsrfGuard(resolver=resolver), transient_retries=0)
        stats = TransportStats()
        chunks = await drain(stream_source(adapter, http, config=cfg, stats=stats))
        opened = stats.sockets
    assert [c.error.code for c in chunks if c.error] == ["ssrf_refused"]
    assert looked_up == ["llm.example"] and srv.connections == 0 and not opened


async def test_pinned_addresses_are_connected_to_and_never_resolved_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The checked address is the one connected to; the loop's resolver is never asked."""
    looked_up: list[str] = []

    async def resolver(host: str) -> list[str]:
        looked_up.append(host)
        return ["127.0.0.1"]

    loop = asyncio.get_running_loop()

    async def no_lookup(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"a second lookup: {args[:1]}")

    monkeypatch.setattr(loop, "getaddrinfo", no_lookup)
    async with PieceServer([[response(_body(["pinned"]))]]) as srv:
        adapter = CustomAdapter()
        http = adapter.build_request(CHAT, base_url=f"http://llm.example:{srv.port}/v1", api_key="k")
        cfg = attrs.evolve(BASE, reader="socket", ssrf_guard=SsrfGuard(resolver=resolver))
        chunks = await drain(stream_source(adapter, http, config=cfg))
    assert [c.data["choices"][0]["delta"]["content"] for c in chunks] == ["pinned"]
    assert looked_up == ["llm.example"] and srv.connections == 1
    assert f"Host: llm.example:{srv.port}\r\n".encode() in srv.requests[0]


async def test_an_unusual_response_is_read_through_aiohttp() -> None:
    """A head the reader does not serve (a transfer coding it does not decode): aiohttp reads it."""
    unusual = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\nContent-Length: 2\r\n\r\nno"
    chunks, stats, srv = await _read([[unusual], [response(_body(["via aiohttp"]))]], "socket")
    assert stats.readers == ["aiohttp"] and srv.connections == 2 and stats.sockets[0].is_closing()
    assert [c.data["choices"][0]["delta"]["content"] for c in chunks] == ["via aiohttp"]


async def test_auto_keeps_a_callers_session_for_an_ip_literal() -> None:
    """``auto``: a caller's session serves what it would serve (an IP literal); else the socket."""
    import aiohttp

    async with aiohttp.ClientSession() as session:
        adapter = OpenAIAdapter()
        async with PieceServer([[response(_body(["s"]))]]) as srv:
            http = adapter.build_request(CHAT, base_url=srv.base_url, api_key="k")
            with_session, without = TransportStats(), TransportStats()
            await drain(stream_source(adapter, http, session=session, config=BASE, stats=with_session))
            await drain(stream_source(adapter, http, config=BASE, stats=without))
    assert with_session.readers == ["aiohttp"] and without.readers == ["socket"]


def _certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``localhost`` (openssl CLI)."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl CLI to make a certificate")
async def test_tls_with_the_requests_host_as_server_name(tmp_path: Path) -> None:
    """TLS to a pinned 127.0.0.1, the certificate checked for ``localhost``: same chunks on both readers."""
    cert, key = _certificate(tmp_path)
    server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_tls.load_cert_chain(cert, key)
    client_tls = ssl.create_default_context(cafile=str(cert))

    async def resolver(host: str) -> list[str]:
        return ["127.0.0.1"]

    shapes = []
    for reader in ("socket", "aiohttp"):
        async with PieceServer([[response(_body(["secure", "ü"]), sizes=[5])]], tls=server_tls) as srv:
            adapter = CustomAdapter()
            http = adapter.build_request(CHAT, base_url=f"https://localhost:{srv.port}/v1", api_key="k")
            cfg = attrs.evolve(BASE, reader=reader, tls=client_tls, ssrf_guard=SsrfGuard(resolver=resolver))
            stats = TransportStats()
            shapes.append(_shape(await drain(stream_source(adapter, http, config=cfg, stats=stats))))
            assert stats.readers == [reader]
    assert shapes[0] == shapes[1]
    assert [s[0]["choices"][0]["delta"]["content"] for s in shapes[0]] == ["secure", "ü"]
    # Untrusted (the system's store does not know the certificate): an error, never text.
    async with PieceServer([[response(_body(["no"]))]], tls=server_tls) as srv:
        adapter = CustomAdapter()
        http = adapter.build_request(CHAT, base_url=f"https://localhost:{srv.port}/v1", api_key="k")
        cfg = attrs.evolve(BASE, reader="socket", ssrf_guard=SsrfGuard(resolver=resolver))
        chunks = await drain(stream_source(adapter, http, config=cfg))
    assert chunks and all(c.error is not None for c in chunks)


async def test_a_read_holding_many_chunks_is_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """60 chunks written at once reach the SSE parser as a few pieces (one per read), not 60."""
    from rxcord.providers import sse

    fed: list[int] = []
    real = sse.SseParser.feed_raw

    def counting(self: sse.SseParser, chunk: bytes) -> list[Any]:
        fed.append(len(chunk))
        return real(self, chunk)

    monkeypatch.setattr(sse.SseParser, "feed_raw", counting)
    texts = [f"w{i}" for i in range(60)]
    whole = response(_body(texts), sizes=[len(_delta("w10"))])
    chunks, stats, _ = await _read([[whole]], "socket")
    assert [c.data["choices"][0]["delta"]["content"] for c in chunks] == texts
    assert stats.readers == ["socket"] and 1 <= len(fed) <= 10


# -- counted: the reader's own work per read, and what a pushed stream keeps ---------------------------

HEAD_CHUNKED = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def _frame(event: bytes) -> bytes:
    return f"{len(event):x}\r\n".encode() + event + b"\r\n"


def _calls_in_reads(response: Any, reads: Sequence[bytes], on_piece_name: str) -> int:
    """Python and C calls made inside ``data_received`` for *reads*, the pushed-to callable's left out."""
    import sys

    calls, depth, inside_push = 0, 0, 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls, depth, inside_push
        name = frame.f_code.co_name
        if event == "call" and name == on_piece_name:
            inside_push += 1
        elif event == "return" and name == on_piece_name:
            inside_push -= 1
        elif event == "call" and name == "data_received":
            depth += 1
        elif event == "return" and name == "data_received":
            depth -= 1
        if event in ("call", "c_call") and depth and not inside_push:
            calls += 1

    sys.setprofile(profile)
    try:
        for read in reads:
            response.data_received(read)
    finally:
        sys.setprofile(None)
    return calls


async def test_a_pushed_read_costs_a_few_calls_and_a_stream_keeps_a_few_objects() -> None:
    """Counted, not timed: one chunk per read is framed with a handful of calls, nothing is queued.

    A pushed read costs ``data_received``, the framing's ``feed`` and its ``len``, one ``find``, one
    regex match for the size line, and the cancellation check (the CRLF after the data is compared,
    not searched). A response being pushed keeps itself, its framing, its headers and the one future
    the reading task awaits: no head future, no piece queue, no second response object.
    """
    import gc

    from yarl import URL

    from rxcord.providers.socket_reader import SocketResponse

    got: list[bytes] = []

    def on_piece(piece: bytes) -> bool:
        got.append(piece)
        return False

    events = [_delta(f"w{i}") for i in range(200)]
    url = URL("http://127.0.0.1:1/v1")
    futures: list[asyncio.Future[bool]] = []
    warm = SocketResponse("POST", url)  # what the first response makes once (caches) is not counted
    warm.data_received(HEAD_CHUNKED + _frame(events[0]))
    gc.collect()
    before = len(gc.get_objects())
    responses = [SocketResponse("POST", url) for _ in range(20)]
    for one in responses:
        one.data_received(HEAD_CHUNKED)
        futures.append(one.stream(on_piece))
        one.data_received(_frame(events[0]))
    gc.collect()
    kept = (len(gc.get_objects()) - before - 1) / len(responses)  # 1: the list of responses
    assert kept < 5, kept  # the response, its framing, its headers, the stream's future

    calls = _calls_in_reads(responses[0], [_frame(event) for event in events[1:]], "on_piece")
    assert b"".join(got[19:]) == b"".join(events), "every event's bytes pushed once, in order"
    assert calls <= 6 * len(events[1:]), calls / len(events[1:])
    # A read holding many chunks (a client behind) is still linear: a few calls per chunk, one join.
    calls = _calls_in_reads(responses[1], [b"".join(_frame(event) for event in events)], "on_piece")
    assert calls <= 3 * len(events) + 10, calls
    assert not any(future.done() for future in futures)
