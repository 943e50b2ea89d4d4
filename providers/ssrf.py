"""SSRF guard for custom endpoints (stage 02).

A custom endpoint URL comes from configuration that a bot's users may
control, so before every attempt its host is resolved and every address is
checked against the table below. The guard is on for every custom endpoint
by default; the one opt-out is ``TransportConfig(allow_private_network=True)``
(the CLI's ``--allow-loopback``), for local model servers (Ollama, llama.cpp,
vLLM on a LAN) and the test suite. It lets through the ranges marked *local*
in the table (loopback, private, shared address space); the others are never
allowed.

The host that is checked is the host that is connected to: ``endpoint_host``
normalises the URL once, as yarl (and so aiohttp) does (IDNA, so fullwidth
digits and ideographic dots such as ``127。0。0。1`` become ``127.0.0.1``), and
the connection then goes to the addresses that were checked (``PinnedResolver``:
no second lookup, so DNS rebinding cannot switch it). Redirects are never
followed.

The address table is explicit here, not taken from the ``ipaddress`` flags
(which change between Python versions). IPv6 forms that carry an IPv4 address
(IPv4-mapped ``::ffff:0:0/96``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``,
Teredo ``2001::/32``) are unwrapped and the embedded address is checked too.

The resolver is injected (``Resolver``), so tests prove refusals without any
real lookup and without ever opening a connection.
"""

from __future__ import annotations

__all__ = (
    "OPT_OUT",
    "PinnedResolver",
    "Resolver",
    "SsrfGuard",
    "endpoint_host",
    "forbidden",
    "system_resolver",
)

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import aiohttp
import attrs
from aiohttp.abc import AbstractResolver, ResolveResult
from rxcord.core.errors import SsrfRefusedError
from yarl import URL

Resolver = Callable[[str], Awaitable[Sequence[str]]]
"""Resolve a host name to IP address strings."""

OPT_OUT: Final = "TransportConfig(allow_private_network=True) (CLI: --allow-loopback)"
"""The opt-out, as named in every refusal that it would lift."""

_IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@attrs.frozen
class _Range:
    network: ipaddress.IPv4Network | ipaddress.IPv6Network
    why: str
    local: bool
    """The opt-out (``allow_private_network``) lets this range through."""


def _table(*rows: tuple[str, str, bool]) -> tuple[_Range, ...]:
    return tuple(_Range(ipaddress.ip_network(cidr), why, local) for cidr, why, local in rows)


_V4: Final = _table(
    ("0.0.0.0/8", "unspecified", False),
    ("10.0.0.0/8", "private", True),
    ("100.64.0.0/10", "shared address space (CGNAT)", True),
    ("127.0.0.0/8", "loopback", True),
    ("169.254.0.0/16", "link-local (cloud metadata)", False),
    ("172.16.0.0/12", "private", True),
    ("192.0.0.0/24", "reserved (IETF protocol assignments)", False),
    ("192.0.2.0/24", "reserved (documentation)", False),
    ("192.88.99.0/24", "reserved (6to4 relay anycast)", False),
    ("192.168.0.0/16", "private", True),
    ("198.18.0.0/15", "reserved (benchmarking)", False),
    ("198.51.100.0/24", "reserved (documentation)", False),
    ("203.0.113.0/24", "reserved (documentation)", False),
    ("224.0.0.0/4", "multicast", False),
    ("240.0.0.0/4", "reserved (future use, broadcast)", False),
)
"""Forbidden IPv4 ranges (IANA special-purpose registry, not globally reachable)."""

_V6: Final = _table(
    ("::/128", "unspecified", False),
    ("::1/128", "loopback", True),
    ("::/8", "reserved (IPv4-compatible and other IETF reserved addresses)", False),
    ("64:ff9b:1::/48", "private (local-use NAT64)", True),
    ("100::/64", "reserved (discard-only)", False),
    ("2001::/23", "reserved (IETF protocol assignments)", False),
    ("2001:db8::/32", "reserved (documentation)", False),
    ("3fff::/20", "reserved (documentation)", False),
    ("fd00:ec2::254/128", "cloud metadata", False),
    ("fc00::/7", "private (unique local)", True),
    ("fe80::/10", "link-local", False),
    ("fec0::/10", "private (site-local)", True),
    ("ff00::/8", "multicast", False),
)
"""Forbidden IPv6 ranges, checked after the IPv4-carrying forms were unwrapped."""

_MAPPED: Final = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR: Final = ipaddress.IPv6Network("2002::/16")
_TEREDO: Final = ipaddress.IPv6Network("2001::/32")


def _v4(value: int) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(value & 0xFFFFFFFF)


def _embedded(address: ipaddress.IPv6Address) -> tuple[str, tuple[ipaddress.IPv4Address, ...]] | None:
    """The IPv4 addresses an IPv6 address carries, and the form that carries them."""
    bits = int(address)
    if address in _MAPPED:
        return "IPv4-mapped", (_v4(bits),)
    if address in _NAT64:
        return "NAT64", (_v4(bits),)
    if address in _SIX_TO_FOUR:
        return "6to4", (_v4(bits >> 80),)
    if address in _TEREDO:
        # RFC 4380: the server's address in bits 32-63, the client's (inverted) in the last 32.
        return "Teredo", (_v4(bits >> 64), _v4(~bits))
    return None


def forbidden(address: _IPAddress) -> tuple[str, bool] | None:
    """Why *address* is refused and whether the opt-out lifts it; ``None`` for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        address = ipaddress.IPv6Address(int(address))  # without a zone index (fe80::1%eth0)
        carried = _embedded(address)
        if carried is not None:
            form, inner = carried
            for embedded in inner:
                hit = forbidden(embedded)
                if hit is not None:
                    return f"{hit[0]}, embedded in a {form} address", hit[1]
            return None  # it reaches the public IPv4 address it carries
    table = _V4 if address.version == 4 else _V6
    for row in table:
        if address in row.network:
            return row.why, row.local
    return None


def endpoint_host(url: str | URL) -> str:
    """The host aiohttp connects to for *url*: yarl's normalised (IDNA-encoded) host.

    Normalising once and using the result for both the check and the connection
    means a spelling the guard does not see through (fullwidth digits, ``。`` dots)
    cannot reach a host the guard did not check.

    Raises:
        SsrfRefusedError: *url* has no host.
    """
    parsed = url if isinstance(url, URL) else URL(url)
    host = parsed.raw_host
    if not host:
        raise SsrfRefusedError(host=str(url)[:100], address="-", why="no host in the URL")
    return host


async def system_resolver(host: str) -> Sequence[str]:
    """Resolve *host* with the operating system's resolver."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


_SPELL_IT: Final = "write the address in its usual dotted (IPv4) or colon (IPv6) form"


def _looks_numeric(host: str) -> bool:
    """aiohttp's test for an IP address host (``aiohttp.helpers.is_ip_address``)."""
    return ":" in host or host.replace(".", "").isdigit()


def _literal(host: str) -> _IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


@attrs.frozen(kw_only=True)
class SsrfGuard:
    """Checks that a host resolves only to addresses a custom endpoint may use."""

    resolver: Resolver = system_resolver
    """How names are resolved (inject one in tests: no real lookup)."""

    async def check(self, host: str, *, allow_private_network: bool = False) -> tuple[str, ...]:
        """Resolve *host* and return its addresses, or raise ``SsrfRefusedError``.

        *host* is an ``endpoint_host`` value. Every resolved address must pass: a
        host that resolves to one public and one private address is refused.
        With *allow_private_network*, the table's local ranges pass.
        """
        literal = _literal(host)
        if literal is not None:
            addresses: Sequence[str] = (str(literal),)
        elif _looks_numeric(host):
            # aiohttp takes such a host for an IP address and connects without any lookup (the
            # system then reads "2130706433" or "127.1" as 127.0.0.1): no resolver may vouch for it.
            raise SsrfRefusedError(
                host=host,
                address="-",
                why="a numeric host that is not a canonical IP address",
                hint=_SPELL_IT,
            )
        else:
            try:
                addresses = await self.resolver(host)
            except OSError as exc:
                raise SsrfRefusedError(host=host, address="-", why=f"cannot resolve ({exc})") from None
        if not addresses:
            raise SsrfRefusedError(host=host, address="-", why="no address")
        for text in addresses:
            address = _literal(text)
            if address is None:
                raise SsrfRefusedError(host=host, address=text[:100], why="not an IP address")
            hit = forbidden(address)
            if hit is None or (hit[1] and allow_private_network):
                continue
            why, local = hit
            hint = (
                f"a local or private server needs {OPT_OUT}" if local else f"not allowed even with {OPT_OUT}"
            )
            raise SsrfRefusedError(host=host, address=text, why=why, hint=hint)
        return tuple(addresses)

    async def connector(
        self, url: str | URL, *, allow_private_network: bool = False
    ) -> aiohttp.TCPConnector | None:
        """Check *url*'s host; a connector pinned to the checked addresses.

        ``None`` when the host is an IP literal: aiohttp connects to the literal
        without any lookup, so any session is safe for it.

        Raises:
            SsrfRefusedError: Before any connection exists.
        """
        host = endpoint_host(url)
        addresses = await self.check(host, allow_private_network=allow_private_network)
        if _literal(host) is not None:
            return None
        resolver = PinnedResolver()
        resolver.pin(host, addresses)
        return aiohttp.TCPConnector(resolver=resolver, use_dns_cache=False)


@attrs.define
class PinnedResolver(AbstractResolver):
    """An aiohttp resolver that answers only with addresses already checked.

    Any other host (a redirect target, say) is refused: there is no second,
    unchecked lookup.
    """

    pins: dict[str, tuple[str, ...]] = attrs.field(factory=dict)

    def pin(self, host: str, addresses: Sequence[str]) -> None:
        """Remember the checked *addresses* of *host*."""
        self.pins[host] = tuple(addresses)

    async def resolve(self, host: str, port: int = 0, family: Any = socket.AF_INET) -> list[ResolveResult]:
        """Return the pinned addresses of *host*."""
        addresses = self.pins.get(host)
        if addresses is None:
            raise OSError(f"host {host!r} was not checked by the SSRF guard")
        results: list[ResolveResult] = []
        for text in addresses:
            ip = ipaddress.ip_address(text)
            results.append(
                ResolveResult(
                    hostname=host,
                    host=text,
                    port=port,
                    family=socket.AF_INET6 if ip.version == 6 else socket.AF_INET,
                    proto=0,
                    flags=socket.AI_NUMERICHOST,
                )
            )
        return results

    async def close(self) -> None:
        """Nothing to release."""
