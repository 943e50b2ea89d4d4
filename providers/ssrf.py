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

Which endpoints are guarded is one rule, ``is_custom_endpoint``: any URL whose
origin (scheme, host, port) is not the adapter's own default origin, so a
built-in provider given a base-URL override is guarded exactly like the custom
adapter; an adapter without a default (the custom one, one a caller defines) is
always guarded. Cloud metadata addresses (169.254.169.254, fd00:ec2::254,
Alibaba's 100.100.100.200, Azure's WireServer 168.63.129.16 and the others in
the table) are never local: the opt-out does not lift them, in any form that
carries them.

A base URL is parsed once by ``endpoint_url``: a value aiohttp could not use, or
should not (no host, userinfo, a scheme other than http(s), a port out of range,
a backslash in the authority), is an ``InputError`` naming the setting, never a
raw ``ValueError``.

The resolver is injected (``Resolver``), so tests prove refusals without any
real lookup and without ever opening a connection.
"""

from __future__ import annotations

__all__ = (
    "OPT_OUT",
    "PinnedResolver",
    "Resolver",
    "SsrfGuard",
    "default_base_url",
    "endpoint_host",
    "endpoint_url",
    "forbidden",
    "is_custom_endpoint",
    "precheck",
    "same_origin",
    "system_resolver",
)

import asyncio
import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import aiohttp
import attrs
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from rxcord.core.errors import InputError, SsrfRefusedError

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
    # Metadata services first: first match wins, and these sit inside ranges the opt-out lifts
    # (Alibaba Cloud's in CGNAT) or in public space (Azure's WireServer).
    ("100.100.100.200/32", "cloud metadata (Alibaba Cloud)", False),
    ("168.63.129.16/32", "cloud metadata (Azure WireServer)", False),
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
    # Before ::/8, which contains it (first match wins); what it carries is checked first (forbidden).
    ("64:ff9b:1::/48", "private (local-use NAT64)", True),
    ("::/8", "reserved (IPv4-compatible and other IETF reserved addresses)", False),
    ("100::/64", "reserved (discard-only)", False),
    ("2001::/23", "reserved (IETF protocol assignments)", False),
    ("2001:db8::/32", "reserved (documentation)", False),
    ("3fff::/20", "reserved (documentation)", False),
    ("fd00:ec2::254/128", "cloud metadata (AWS)", False),
    ("fd20:ce::254/128", "cloud metadata (Google Cloud)", False),
    ("fd00:c1::a9fe:a9fe/128", "cloud metadata (Oracle Cloud)", False),
    ("fc00::/7", "private (unique local)", True),
    ("fe80::/10", "link-local", False),
    ("fec0::/10", "private (site-local)", True),
    ("ff00::/8", "multicast", False),
)
"""Forbidden IPv6 ranges, checked after the IPv4-carrying forms were unwrapped."""

_COMPATIBLE: Final = ipaddress.IPv6Network("::/96")
_MAPPED: Final = ipaddress.IPv6Network("::ffff:0:0/96")
_NAT64: Final = ipaddress.IPv6Network("64:ff9b::/96")
_SIX_TO_FOUR: Final = ipaddress.IPv6Network("2002::/16")
_TEREDO: Final = ipaddress.IPv6Network("2001::/32")
_LOCAL_NAT64: Final = ipaddress.IPv6Network("64:ff9b:1::/48")
_RFC6052_LAYOUTS: Final = (((48, 64), (72, 88)), ((56, 64), (72, 96)), ((72, 104),), ((96, 128),))
"""Where RFC 6052 puts the IPv4 address for prefixes of 48, 56, 64 and 96 bits (bit 0 first,
bits 64-71 skipped): a local-use NAT64 prefix may be any of them, so every layout is read."""


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


def _local_nat64_carried(address: ipaddress.IPv6Address) -> tuple[str, bool] | None:
    """A never-local address a local-use NAT64 address may carry (the opt-out lifts the prefix).

    The prefix length is the translator's configuration, unknown here: an address is refused
    when any layout reads as, say, 169.254.169.254 (a local translator would reach the metadata
    service through it).
    """
    bits = int(address)
    for layout in _RFC6052_LAYOUTS:
        value = 0
        for start, end in layout:
            width = end - start
            value = (value << width) | ((bits >> (128 - end)) & ((1 << width) - 1))
        if value >> 24 == 0:
            continue  # 0.0.0.0/8: bits another layout leaves zero, not a translation target
        hit = forbidden(_v4(value))
        if hit is not None and not hit[1]:
            return f"{hit[0]}, embedded in a local-use NAT64 address", False
    return None


def forbidden(address: _IPAddress) -> tuple[str, bool] | None:
    """Why *address* is refused and whether the opt-out lifts it; ``None`` for a public address."""
    if isinstance(address, ipaddress.IPv6Address):
        address = ipaddress.IPv6Address(int(address))  # without a zone index (fe80::1%eth0)
        if address in _LOCAL_NAT64:
            carried_hit = _local_nat64_carried(address)
            if carried_hit is not None:
                return carried_hit
        if address in _COMPATIBLE and int(address) > 1:
            # Deprecated IPv4-compatible (::a.b.c.d): never allowed (::/8 below); named by what it carries.
            hit = forbidden(_v4(int(address)))
            if hit is not None:
                return f"{hit[0]}, embedded in an IPv4-compatible address", False
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


_SCHEMES: Final = frozenset({"http", "https"})
_HOST_NAME: Final = re.compile(
    r"(?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.?"
)
"""A host name as it is connected to (yarl's IDNA-encoded, lower-case form): labels of letters,
digits, ``-`` and ``_`` (internal names use it), at most 63 characters each."""
_UNSAFE_CHARACTER: Final = re.compile(r"[\x00-\x20\x7f\\]")
"""Control characters, spaces and backslashes: yarl strips some and rejects others; a base URL
that needs either is refused whole, so what is checked is what was written."""


def _bad_url(setting: str, why: str) -> InputError:
    # The value itself is not echoed: a base URL may carry a key in its query.
    return InputError(f"{setting}: {why}")


def endpoint_url(url: str | URL, *, setting: str = "base_url") -> URL:
    """*url* parsed once, as aiohttp will use it; an ``InputError`` naming *setting* if unusable.

    A usable base URL is absolute ``http`` or ``https`` with a host name or an IP literal, an
    optional port from 1 to 65535, no userinfo (a key goes in its own setting, and
    ``https://api.openai.com@10.0.0.1`` is not OpenAI), no space, control character or
    backslash anywhere.

    Raises:
        InputError: *url* is not such a URL; the message names *setting*.
    """
    if isinstance(url, URL):
        parsed = url
    else:
        unsafe = _UNSAFE_CHARACTER.search(url)
        if unsafe is not None:
            what = "a backslash" if unsafe.group() == "\\" else "a space or control character"
            raise _bad_url(setting, f"contains {what} (not allowed anywhere in a base URL)")
        try:
            parsed = URL(url)  # yarl checks the port's range and the authority's characters here
        except ValueError as exc:
            raise _bad_url(setting, f"not a valid URL ({str(exc)[:200]})") from None
    if parsed.scheme not in _SCHEMES:
        shown = f"{parsed.scheme!r}"[:40] if parsed.scheme else "none (a relative URL)"
        raise _bad_url(setting, f"must be an http or https URL (scheme: {shown})")
    host = parsed.raw_host
    if not host:
        raise _bad_url(setting, "has no host")
    if parsed.raw_user is not None or parsed.raw_password is not None:
        raise _bad_url(setting, "must not carry a user name or password (userinfo before the host)")
    port = parsed.explicit_port
    if port is not None and not 1 <= port <= 65535:
        raise _bad_url(setting, f"port {port} is out of range (1-65535)")
    if ":" in host:
        if _literal(host) is None:
            raise _bad_url(setting, "has an invalid IPv6 address")
    elif len(host) > 253 or not _HOST_NAME.fullmatch(host):
        raise _bad_url(setting, "has an invalid host name")
    return parsed


def same_origin(url: URL, other: URL) -> bool:
    """Whether *url* and *other* have one origin: scheme, host and port (default ports filled in)."""
    return (url.scheme, url.raw_host, url.port) == (other.scheme, other.raw_host, other.port)


def default_base_url(adapter: object) -> str | None:
    """The adapter's built-in base URL (its ``default_base_url``); ``None`` when it has none."""
    default = getattr(adapter, "default_base_url", None)
    return default if isinstance(default, str) and default else None


def is_custom_endpoint(adapter: object, url: str | URL) -> bool:
    """Whether *url* is a custom endpoint for *adapter*: the one rule of what the guard checks.

    Custom is any URL whose origin is not the adapter's default origin: a built-in provider
    given a base-URL override (``http://127.0.0.1:8080/v1`` for OpenAI, say) is guarded exactly
    like the custom adapter. An adapter without a default (the custom adapter, one an
    application defines) is always guarded: a base URL is configuration that a bot's users
    may control, and only the provider's own public API is known not to be one.

    Raises:
        InputError: *url* is not a usable base URL (``endpoint_url``).
    """
    parsed = endpoint_url(url)
    default = default_base_url(adapter)
    return default is None or not same_origin(parsed, URL(default))


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


_INET_ATON: Final = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}\.?", re.IGNORECASE)
"""The numbers-and-dots forms the C library reads as an IPv4 address (``inet_aton``): one to
four parts, each decimal, octal (``0177``) or hex (``0x7f``), such as ``0xa9fea9fe``."""


def _looks_numeric(host: str) -> bool:
    """A host aiohttp or the system resolver would read as an IP address without a name lookup.

    aiohttp's own test (``aiohttp.helpers.is_ip_address``: a colon, or digits and dots) and the
    ``inet_aton`` forms, which a system resolver turns into an address of its own.
    """
    return ":" in host or host.replace(".", "").isdigit() or _INET_ATON.fullmatch(host) is not None


def _literal(host: str) -> _IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def precheck(host: str, *, allow_private_network: bool = False) -> tuple[str, ...] | None:
    """What the guard decides without a lookup: an IP literal's verdict; ``None`` for a name.

    Configuration checks use it too (the bot refuses a literal loopback base URL when it reads
    its file), so a literal is judged by the same table wherever it is judged.

    Raises:
        SsrfRefusedError: *host* is a forbidden literal, or a numeric host that is not one.
    """
    literal = _literal(host)
    if literal is not None:
        return _vetted(host, (str(literal),), allow_private_network=allow_private_network)
    if _looks_numeric(host):
        # aiohttp takes such a host for an IP address and connects without any lookup (the
        # system then reads "2130706433" or "127.1" as 127.0.0.1); a resolver turns "0x7f.1" into
        # one itself: no resolver may vouch for it.
        raise SsrfRefusedError(
            host=host, address="-", why="a numeric host that is not a canonical IP address", hint=_SPELL_IT
        )
    return None


def _vetted(host: str, addresses: Sequence[str], *, allow_private_network: bool) -> tuple[str, ...]:
    """*addresses* if every one passes the table (and the opt-out); else ``SsrfRefusedError``."""
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
        hint = f"a local or private server needs {OPT_OUT}" if local else f"not allowed even with {OPT_OUT}"
        raise SsrfRefusedError(host=host, address=text, why=why, hint=hint)
    return tuple(addresses)


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
        literal = precheck(host, allow_private_network=allow_private_network)
        if literal is not None:
            return literal
        try:
            addresses = await self.resolver(host)
        except OSError as exc:
            raise SsrfRefusedError(host=host, address="-", why=f"cannot resolve ({exc})") from None
        return _vetted(host, addresses, allow_private_network=allow_private_network)

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
