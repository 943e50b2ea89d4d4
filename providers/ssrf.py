"""SSRF guard for custom endpoints (stage 02).

A custom endpoint URL comes from configuration that a bot's users may
control, so before every attempt the host is resolved and every address is
checked: loopback, private, link-local, multicast, reserved and unspecified
addresses are refused unless the configuration allows them explicitly. The
connection then goes to the address that was checked (a pinned resolver:
no second lookup, so DNS rebinding cannot switch it), and redirects are
never followed.

The resolver is injected (``Resolver``), so tests prove refusals without any
real lookup and without ever opening a connection.
"""

from __future__ import annotations

__all__ = ("PinnedResolver", "Resolver", "SsrfGuard", "system_resolver")

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs
from aiohttp.abc import AbstractResolver, ResolveResult
from rxcord.core.errors import SsrfRefusedError

Resolver = Callable[[str], Awaitable[Sequence[str]]]
"""Resolve a host name to IP address strings."""


async def system_resolver(host: str) -> Sequence[str]:
    """Resolve *host* with the operating system's resolver."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return sorted({str(info[4][0]) for info in infos})


def _forbidden_reason(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return _forbidden_reason(address.ipv4_mapped)
    checks = (
        ("loopback", address.is_loopback),
        ("link-local", address.is_link_local),
        ("multicast", address.is_multicast),
        ("unspecified", address.is_unspecified),
        ("reserved", address.is_reserved),
        ("private", address.is_private),
    )
    for name, hit in checks:
        if hit:
            return name
    return None


@attrs.frozen(kw_only=True)
class SsrfGuard:
    """Checks that a host resolves only to addresses a custom endpoint may use."""

    resolver: Resolver = system_resolver
    allow_loopback: bool = False
    """Allow 127.0.0.0/8 and ::1 (local model servers; the test suite)."""
    allow_private: bool = False
    """Allow private, link-local and other non-public ranges (a LAN model server)."""

    async def check(self, host: str) -> tuple[str, ...]:
        """Resolve *host* and return its addresses, or raise ``SsrfRefusedError``.

        Every resolved address must pass: a host that resolves to one public
        and one private address is refused.
        """
        try:
            literal = ipaddress.ip_address(host.strip("[]"))
            addresses: Sequence[str] = (str(literal),)
        except ValueError:
            addresses = await self.resolver(host)
        if not addresses:
            raise SsrfRefusedError(host=host, address="-", why="no address")
        for text in addresses:
            reason = _forbidden_reason(ipaddress.ip_address(text))
            if reason is None:
                continue
            if reason == "loopback" and (self.allow_loopback or self.allow_private):
                continue
            if reason != "loopback" and self.allow_private:
                continue
            raise SsrfRefusedError(host=host, address=text, why=reason)
        return tuple(addresses)


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
