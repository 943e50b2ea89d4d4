"""The SSRF guard: on by default for custom endpoints, its address table, the host connected to."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections.abc import Sequence
from typing import Any

import pytest

from rxcord.compose.run import stream_to_discord
from rxcord.compose.turn import fallback_order, run_turn
from rxcord.core.errors import RxcordError, SsrfRefusedError
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import ErrorType, ProviderError, RawStreamChunk, StreamStatus
from rxcord.operators.aio import drain
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.ssrf import OPT_OUT, SsrfGuard, endpoint_host, forbidden
from rxcord.providers.transport import TransportConfig, TransportStats, stream_source
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

CHAT = ChatRequest(model="m", messages=(Message.user("hi"),))
JSON = "application/json"


def _stream(text: str) -> bytes:
    delta = {"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]}
    return ("data: " + json.dumps(delta) + "\n\ndata: [DONE]\n\n").encode()


def _errors(chunks: Sequence[RawStreamChunk]) -> list[ProviderError]:
    return [c.error for c in chunks if c.error is not None]


def _no_connections(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    attempts: list[Any] = []

    async def refuse(self: Any, *args: Any, **kwargs: Any) -> Any:
        attempts.append((args, kwargs))
        raise AssertionError("a connection was attempted")

    # aiohttp opens the socket with loop.sock_connect (aiohappyeyeballs) before create_connection.
    monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", refuse)
    monkeypatch.setattr(asyncio.selector_events.BaseSelectorEventLoop, "sock_connect", refuse)
    return attempts


def _resolver(*answers: Sequence[str], lookups: list[str] | None = None) -> Any:
    """A resolver giving *answers* in turn (the last one again once they run out)."""
    queue = list(answers)

    async def resolve(host: str) -> Sequence[str]:
        if lookups is not None:
            lookups.append(host)
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return resolve


# -- the address table ---------------------------------------------------------------------------

REFUSED = [
    # (address, words of the reason, the opt-out lifts it)
    ("127.0.0.1", "loopback", True),
    ("127.255.0.9", "loopback", True),
    ("::1", "loopback", True),
    ("10.0.0.5", "private", True),
    ("172.31.255.255", "private", True),
    ("192.168.1.20", "private", True),
    ("100.64.0.1", "CGNAT", True),
    ("100.127.255.254", "CGNAT", True),
    ("fd12:3456::1", "unique local", True),
    ("169.254.169.254", "link-local", False),
    ("fe80::1", "link-local", False),
    ("fe80::1%eth0", "link-local", False),
    ("fd00:ec2::254", "cloud metadata (AWS)", False),
    ("fd20:ce::254", "cloud metadata (Google Cloud)", False),
    ("fd00:c1::a9fe:a9fe", "cloud metadata (Oracle Cloud)", False),
    # Metadata services inside a range the opt-out lifts (CGNAT) or in public space: never local.
    ("100.100.100.200", "cloud metadata (Alibaba Cloud)", False),
    ("::ffff:100.100.100.200", "Alibaba Cloud), embedded in a IPv4-mapped", False),
    ("64:ff9b::6464:64c8", "Alibaba Cloud), embedded in a NAT64", False),
    ("2002:6464:64c8::", "Alibaba Cloud), embedded in a 6to4", False),
    ("168.63.129.16", "cloud metadata (Azure WireServer)", False),
    ("::ffff:168.63.129.16", "Azure WireServer), embedded in a IPv4-mapped", False),
    # Local-use NAT64 (64:ff9b:1::/48, lifted by the opt-out) carrying metadata, /96 and /48 layouts.
    ("64:ff9b:1::a9fe:a9fe", "embedded in a local-use NAT64", False),
    ("64:ff9b:1:a9fe:a9:fe00::", "embedded in a local-use NAT64", False),
    ("64:ff9b:1::a00:1", "local-use NAT64", True),  # 10.0.0.1 through it: local
    ("64:ff9b:1::808:808", "local-use NAT64", True),  # a local translator, whatever it reaches
    ("100.100.100.199", "CGNAT", True),  # beside Alibaba Cloud's metadata address
    ("0.0.0.0", "unspecified", False),
    ("::", "unspecified", False),
    ("224.0.0.1", "multicast", False),
    ("ff02::1", "multicast", False),
    ("255.255.255.255", "reserved", False),
    ("192.88.99.1", "6to4 relay", False),
    ("192.0.2.7", "documentation", False),
    ("2001:db8::1", "documentation", False),
    ("::7f00:1", "loopback, embedded in an IPv4-compatible", False),  # deprecated: never allowed
    ("::a9fe:a9fe", "cloud metadata), embedded in an IPv4-compatible", False),
    ("::808:808", "reserved (IPv4-compatible", False),  # public inside, refused all the same
    # IPv6 forms carrying an IPv4 address: the embedded one is checked
    ("::ffff:10.1.2.3", "private, embedded in a IPv4-mapped", True),
    ("::ffff:169.254.169.254", "link-local", False),
    ("64:ff9b::7f00:1", "loopback, embedded in a NAT64", True),
    ("64:ff9b::a9fe:a9fe", "link-local (cloud metadata), embedded in a NAT64", False),
    ("2002:7f00:1::1", "loopback, embedded in a 6to4", True),
    ("2002:a00:1::", "private, embedded in a 6to4", True),
    ("2002:6440:1::", "CGNAT", True),
    # Teredo: server 65.54.227.120, client 127.0.0.1 (stored inverted: 80ff:fffe)
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback, embedded in a Teredo", True),
    # Teredo: server 10.0.0.1, client public
    ("2001:0:a00:1:8000:63bf:f7f7:f7f7", "private, embedded in a Teredo", True),
]

ALLOWED = [
    "8.8.8.8",
    "1.1.1.1",
    "100.63.255.255",  # just below 100.64.0.0/10
    "100.128.0.0",  # just above it
    "172.32.0.1",
    "192.88.98.255",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::808:808",  # NAT64 of 8.8.8.8
    "2002:808:808::1",  # 6to4 of 8.8.8.8
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo, server and client public
    "168.63.129.15",  # beside Azure's WireServer
    "168.63.129.17",
]


@pytest.mark.parametrize(("address", "why", "local"), REFUSED)
def test_the_table_refuses(address: str, why: str, local: bool) -> None:
    """Every special-purpose range is refused, with its reason; only the local ones may be opted out of."""
    hit = forbidden(ipaddress.ip_address(address))
    assert hit is not None and why in hit[0] and hit[1] is local


@pytest.mark.parametrize("address", ALLOWED)
def test_the_table_lets_public_addresses_through(address: str) -> None:
    """Public addresses (also when carried in an IPv6 form) pass."""
    assert forbidden(ipaddress.ip_address(address)) is None


def test_the_table_does_not_read_the_ipaddress_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    """The table is the module's own: the ``ipaddress`` flags (which vary by Python version) are not read."""
    for name in ("is_private", "is_global", "is_reserved", "is_loopback", "is_link_local", "is_multicast"):
        for cls in (ipaddress.IPv4Address, ipaddress.IPv6Address):
            monkeypatch.setattr(cls, name, property(lambda self: pytest.fail("an ipaddress flag was read")))
    assert forbidden(ipaddress.ip_address("100.64.0.1")) is not None
    assert forbidden(ipaddress.ip_address("2002:7f00:1::1")) is not None
    assert forbidden(ipaddress.ip_address("8.8.8.8")) is None


@pytest.mark.parametrize(("address", "why", "local"), REFUSED)
async def test_the_guard_applies_the_table_and_the_opt_out(address: str, why: str, local: bool) -> None:
    """A refused address raises a typed error naming the opt-out; the opt-out lifts only the local ranges."""
    guard = SsrfGuard(resolver=_resolver([address]))
    with pytest.raises(SsrfRefusedError) as refused:
        await guard.check("models.internal.test")
    assert isinstance(refused.value, RxcordError)
    assert why in str(refused.value) and "allow_private_network" in str(refused.value)
    assert "--allow-loopback" in str(refused.value)
    if local:
        assert await guard.check("models.internal.test", allow_private_network=True) == (address,)
    else:
        assert "not allowed even with" in str(refused.value)
        with pytest.raises(SsrfRefusedError):
            await guard.check("models.internal.test", allow_private_network=True)


async def test_mixed_answers_are_refused() -> None:
    """A host resolving to one public and one private address is refused."""
    with pytest.raises(SsrfRefusedError):
        await SsrfGuard(resolver=_resolver(["8.8.8.8", "10.0.0.1"])).check("mixed.test")


async def test_a_host_without_addresses_is_refused() -> None:
    """No address (or a failed lookup) is a refusal, not a connection attempt."""

    async def failing(host: str) -> Sequence[str]:
        raise OSError("no such host")

    for guard in (SsrfGuard(resolver=_resolver([])), SsrfGuard(resolver=failing)):
        with pytest.raises(SsrfRefusedError):
            await guard.check("nowhere.test")


# -- the host that is connected to ---------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://127。0。0。1:{port}/v1",
        "http://１２７．０．０．１:{port}/v1",
        "http://１２７。０。０。１:{port}/v1",
        "http://[::ffff:127.0.0.1]:{port}/v1",
        "http://LOCALHOST.:{port}/v1",
    ],
)
async def test_the_normalised_host_is_checked(url: str) -> None:
    """Spellings yarl (and so aiohttp) turns into loopback are refused, whatever the resolver says."""
    lookups: list[str] = []
    async with ReplayServer(body=_stream("leak")) as server:
        port = server.base_url.rsplit(":", 1)[1]
        resolver = _resolver(["93.184.216.34"] if "LOCALHOST" not in url else ["127.0.0.1"], lookups=lookups)
        adapter = CustomAdapter()
        http = adapter.build_request(CHAT, base_url=url.format(port=port), api_key="k")
        config = TransportConfig(ssrf_guard=SsrfGuard(resolver=resolver), transient_retries=0)
        chunks = await drain(stream_source(adapter, http, config=config))
    [error] = _errors(chunks)
    assert error.code == "ssrf_refused" and "loopback" in error.message
    assert server.requests == []
    assert lookups in ([], ["localhost."])  # a literal is never looked up; a name is, once


@pytest.mark.parametrize(
    "host",
    [
        "2130706433",
        "0",
        "127.1",
        "0177.0.0.1",
        "1.2.3",
        "0x7f000001",
        "0x7f.1",
        "0XA9.0XFE.0XA9.0XFE",
        "0x",
        "127.0.0.1.",
    ],
)
async def test_a_numeric_host_aiohttp_would_not_look_up_is_refused(host: str) -> None:
    """aiohttp connects to an all-numeric host without a lookup: no resolver may vouch for it."""
    lookups: list[str] = []
    guard = SsrfGuard(resolver=_resolver(["93.184.216.34"], lookups=lookups))
    with pytest.raises(SsrfRefusedError) as refused:
        await guard.connector(f"http://{host}:8080/v1", allow_private_network=True)
    assert "canonical" in str(refused.value) and lookups == []


def test_endpoint_host_is_yarls_host() -> None:
    """The guard's host is the IDNA-normalised host aiohttp connects to."""
    assert endpoint_host("http://１２７。０。０。１:8/v1") == "127.0.0.1"
    assert endpoint_host("http://пример.рф/v1") == "xn--e1afmkfd.xn--p1ai"
    with pytest.raises(SsrfRefusedError):
        endpoint_host("http:///v1")


async def test_a_checked_name_connects_to_the_checked_address_only() -> None:
    """With the opt-out, an unresolvable name connects to the checked address: one lookup per attempt."""
    lookups: list[str] = []
    async with ReplayServer(body=_stream("pinned")) as server:
        port = server.base_url.rsplit(":", 1)[1]
        adapter = CustomAdapter()
        http = adapter.build_request(CHAT, base_url=f"http://llm.rebind.test:{port}/v1", api_key="k")
        config = TransportConfig(
            ssrf_guard=SsrfGuard(resolver=_resolver(["127.0.0.1"], lookups=lookups)),
            allow_private_network=True,
        )
        chunks = await drain(stream_source(adapter, http, config=config))
    assert not _errors(chunks) and len(server.requests) == 1
    assert lookups == ["llm.rebind.test"]


# -- on by default, on every path and every retry ------------------------------------------------


async def test_stream_source_guards_a_custom_endpoint_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """A default TransportConfig refuses a custom endpoint on loopback before any connection."""
    attempts = _no_connections(monkeypatch)
    adapter = CustomAdapter()
    http = adapter.build_request(CHAT, base_url="http://127.0.0.1:9/v1", api_key="k")
    chunks = await drain(stream_source(adapter, http))
    [error] = _errors(chunks)
    assert error.type is ErrorType.API_ERROR and not error.retryable
    assert error.code == "ssrf_refused" and OPT_OUT in error.message
    assert isinstance(error.original_error, SsrfRefusedError)
    assert attempts == []


async def test_stream_to_discord_guards_by_default_and_the_opt_out_lifts_it() -> None:
    """``stream_to_discord`` with CustomAdapter on 127.0.0.1: refused by default, served with the opt-out."""
    async with ReplayServer(body=_stream("local answer")) as server:
        refused = await stream_to_discord(
            CustomAdapter(), CHAT, sink=MemorySink(), base_url=server.base_url, api_key="k"
        )
        assert server.requests == []
        sink = MemorySink()
        served = await stream_to_discord(
            CustomAdapter(),
            CHAT,
            sink=sink,
            base_url=server.base_url,
            api_key="k",
            transport=TransportConfig(allow_private_network=True),
        )
    assert refused.status is StreamStatus.ERROR and refused.error is not None
    assert refused.error.code == "ssrf_refused"
    assert served.status is StreamStatus.COMPLETED and sink.contents == ["local answer"]
    assert len(server.requests) == 1


async def test_run_turn_guards_every_candidate_by_default() -> None:
    """``run_turn`` over ``fallback_order`` with CustomAdapter: no candidate reaches loopback."""
    async with ReplayServer(body=_stream("x")) as server:
        candidates = fallback_order(CustomAdapter(), ["a", "b"], ["k1", "k2"], base_url=server.base_url)
        turn = await run_turn(candidates, CHAT, sink=MemorySink())
    assert turn.result.status is StreamStatus.ERROR
    assert turn.result.error is not None and turn.result.error.code == "ssrf_refused"
    assert server.requests == []


async def test_every_retry_is_checked_again() -> None:
    """A transient failure is retried only after the host passed the guard again (a rebinding name)."""
    lookups: list[str] = []
    busy = (503, JSON, json.dumps({"error": {"message": "busy"}}).encode())
    async with ReplayServer(body=b"", responses=[busy, (200, "text/event-stream", _stream("x"))]) as server:
        port = server.base_url.rsplit(":", 1)[1]
        adapter = CustomAdapter()
        http = adapter.build_request(CHAT, base_url=f"http://rebind.test:{port}/v1", api_key="k")
        guard = SsrfGuard(resolver=_resolver(["127.0.0.1"], ["169.254.169.254"], lookups=lookups))
        config = TransportConfig(ssrf_guard=guard, allow_private_network=True, backoff=0.0)
        stats = TransportStats()
        chunks = await drain(stream_source(adapter, http, config=config, stats=stats))
    [error] = _errors(chunks)
    assert error.code == "ssrf_refused" and "169.254.169.254" in error.message
    assert stats.attempts == 2 and lookups == ["rebind.test", "rebind.test"]
    assert len(server.requests) == 1
