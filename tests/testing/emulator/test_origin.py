"""The emulator answers loopback clients only: a foreign ``Origin`` or ``Host`` is a 403, before any handler.

The attacks: a web page posting a cross-site ``text/plain`` body (no CORS preflight) to the
emulator's injection route or the bot's REST route, and a DNS-rebinding page (its own domain
in ``Host``) reading the page's data routes. Each refusal is checked to have changed nothing.
"""

from __future__ import annotations

import json

import aiohttp
import pytest

from rxcord.testing.emulator import DiscordEmulator
from rxcord.testing.emulator.origin import foreign_request

USER = {"author_id": "200000000000000001", "username": "ada", "content": "hi"}


def _user_message(channel: str) -> str:
    return json.dumps({**USER, "channel_id": channel})


@pytest.mark.parametrize("origin", ["https://evil.example", "http://127.0.0.1.evil.example", "null"])
async def test_a_cross_site_text_plain_post_is_refused(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str, origin: str
) -> None:
    """A form-like cross-site POST (text/plain, foreign Origin): 403, and no message is stored."""
    headers = {"Content-Type": "text/plain", "Origin": origin}
    url = emulator.base_url + "/_emulator/messages"
    async with session.post(url, data=_user_message(channel), headers=headers) as response:
        assert response.status == 403
        body = await response.json()
    assert "Origin" in body["message"] and "local" in body["message"]
    assert emulator.messages(channel) == []


async def test_a_cross_site_post_to_the_bot_route_is_refused(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str
) -> None:
    headers = {
        "Content-Type": "text/plain",
        "Origin": "https://evil.example",
        "Authorization": f"Bot {emulator.config.token}",
    }
    url = f"{emulator.base_url}/channels/{channel}/messages"
    async with session.post(url, data=json.dumps({"content": "pwned"}), headers=headers) as response:
        assert response.status == 403
    assert emulator.messages(channel) == []


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.nip.io:{port}", "[::2]"])
@pytest.mark.parametrize("path", ["/", "/api/v10/_emulator/channels", "/api/v10/_emulator/guild"])
async def test_a_foreign_host_is_refused(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, host: str, path: str
) -> None:
    """DNS rebinding: the page and its data routes under another name are refused (nothing is read)."""
    url = f"http://127.0.0.1:{emulator.port}{path}"
    async with session.get(url, headers={"Host": host.format(port=emulator.port)}) as response:
        assert response.status == 403
        body = await response.json()
    assert "Host" in body["message"] and "channels" not in body


async def test_a_foreign_origin_cannot_open_the_gateway(
    emulator: DiscordEmulator, session: aiohttp.ClientSession
) -> None:
    """WebSockets are not covered by CORS: the gateway checks the Origin itself."""
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await session.ws_connect(emulator.gateway_url, origin="https://evil.example")
    assert refused.value.status == 403


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:{port}", None),
        ("localhost:{port}", "http://localhost:{port}"),
        ("[::1]:{port}", "http://[::1]:{port}"),
        ("127.0.0.1:{port}", "http://127.0.0.1:{port}"),
        ("127.0.0.1", "http://localhost:5173"),
    ],
)
async def test_loopback_clients_and_pages_are_served(
    emulator: DiscordEmulator, session: aiohttp.ClientSession, channel: str, host: str, origin: str | None
) -> None:
    """The emulator's own page (any loopback name), local tools and programs without Origin post as before."""
    headers = {"Host": host.format(port=emulator.port), "Content-Type": "application/json"}
    if origin is not None:
        headers["Origin"] = origin.format(port=emulator.port)
    url = emulator.base_url + "/_emulator/messages"
    async with session.post(url, data=_user_message(channel), headers=headers) as response:
        assert response.status == 200, await response.text()
    assert [m["content"] for m in emulator.messages(channel)] == ["hi"]


@pytest.mark.parametrize(
    ("host", "origin", "refused"),
    [
        (None, None, None),
        ("127.0.0.5:80", None, None),
        ("LOCALHOST", "HTTP://LOCALHOST:1", None),
        ("localhost:notaport", None, "Host"),
        ("user@localhost", None, "Host"),
        ("localhost/x", None, "Host"),
        ("", None, "Host"),
        ("localhost", "ftp://localhost", "Origin"),
        ("localhost", "http://localhost@evil.example", "Origin"),
        ("10.0.0.7:8080", None, None),  # the address the emulator was bound to
        ("10.0.0.8:8080", None, "Host"),
    ],
)
def test_the_header_rules(host: str | None, origin: str | None, refused: str | None) -> None:
    why = foreign_request(host, origin, own_host="10.0.0.7")
    assert (why.split(" ")[0] if why else None) == refused
