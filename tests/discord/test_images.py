"""``ImageFetcher``: Discord's hosts only, the SSRF guard before any connection, a capped read."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence

import attrs
import pytest
from aiohttp import web

from rxcord.core.request import ImagePart
from rxcord.discord import Attachment, ChatLine, ContextLimits, ImageFetcher
from rxcord.discord.conversation import build_conversation, read_images
from rxcord.discord.images import sniff_image_type
from rxcord.providers import SsrfGuard

PNG = b"\x89PNG\r\n\x1a\n" + b"p" * 100


@attrs.define
class Files:
    """A loopback file server that counts the requests it gets."""

    hits: int = 0
    port: int = 0
    runner: web.AppRunner | None = None

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def serve(self, request: web.Request) -> web.Response:
        self.hits += 1
        if request.path.startswith("/moved"):
            raise web.HTTPFound(f"{self.origin}/cat.png")
        return web.Response(body=PNG, content_type="image/png")


@pytest.fixture
async def files() -> AsyncIterator[Files]:
    server = Files()
    app = web.Application()
    app.router.add_get("/{tail:.*}", server.serve)
    server.runner = web.AppRunner(app, access_log=None)
    await server.runner.setup()
    site = web.TCPSite(server.runner, "127.0.0.1", 0)
    await site.start()
    server.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield server
    await server.runner.cleanup()


def _resolver(address: str, asked: list[str]) -> Callable[[str], Awaitable[Sequence[str]]]:
    async def resolve(host: str) -> Sequence[str]:
        asked.append(host)
        return [address]

    return resolve


def _png(url: str, size: int = 0) -> Attachment:
    return Attachment(filename="cat.png", url=url, content_type="image/png", size=size)


@pytest.mark.parametrize("address", ["127.0.0.1", "10.1.2.3", "169.254.169.254"])
async def test_a_discord_host_resolving_to_a_private_address_is_refused_before_any_connection(
    files: Files, address: str
) -> None:
    asked: list[str] = []
    # The resolver points Discord's CDN at the live file server: a connection would be counted.
    fetcher = ImageFetcher(max_bytes=1000, guard=SsrfGuard(resolver=_resolver(address, asked)))
    got = await fetcher.image(_png(f"https://cdn.discordapp.com:{files.port}/a/cat.png"))
    assert got == "its address is not allowed"
    assert asked == ["cdn.discordapp.com"]
    assert files.hits == 0


async def test_the_api_origin_is_read_on_loopback_and_sent_as_base64(files: Files) -> None:
    fetcher = ImageFetcher.for_api(1000, f"{files.origin}/api/v10")
    got = await fetcher.image(_png(f"{files.origin}/attachments/1/cat.png"))
    assert got == ImagePart(mime_type="image/png", data_b64=base64.b64encode(PNG).decode())
    assert files.hits == 1


async def test_another_port_plain_http_and_redirects_are_refused(files: Files) -> None:
    fetcher = ImageFetcher.for_api(1000, f"{files.origin}/api/v10")
    other = await fetcher.image(_png(f"http://127.0.0.1:{files.port + 1}/cat.png"))
    plain = await fetcher.image(_png("http://cdn.discordapp.com/cat.png"))
    assert other == plain == "not on a Discord attachment host"
    assert files.hits == 0
    moved = await fetcher.image(_png(f"{files.origin}/moved.png"))
    assert moved == "Discord answered HTTP 302"
    assert files.hits == 1  # the redirect's target was never asked for


async def test_the_size_cap_refuses_before_and_while_reading(files: Files) -> None:
    fetcher = ImageFetcher.for_api(len(PNG) - 1, f"{files.origin}/api/v10")
    said = await fetcher.image(_png(f"{files.origin}/cat.png", size=len(PNG)))
    assert files.hits == 0  # declared too big: not downloaded
    read = await fetcher.image(_png(f"{files.origin}/cat.png"))
    assert said == read == f"larger than [context] max_image_bytes = {len(PNG) - 1}"
    assert files.hits == 1


def test_the_api_of_discord_itself_adds_no_origin() -> None:
    assert ImageFetcher.for_api(10, "https://discord.com/api/v10").extra_origins == ()
    assert ImageFetcher.for_api(10, "http://127.0.0.1:5/api/v10").extra_origins == ("http://127.0.0.1:5",)


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xdb..", "image/jpeg"),
        (b"GIF89a..", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"<svg/>", None),
        (b"", None),
    ],
)
def test_the_media_type_is_what_the_bytes_are(data: bytes, kind: str | None) -> None:
    assert sniff_image_type(data) == kind


@attrs.define
class CountingReader:
    asked: list[str] = attrs.field(factory=list)

    async def image(self, attachment: Attachment) -> ImagePart | str:
        self.asked.append(attachment.filename)
        return "refused for the test" if "bad" in attachment.filename else ImagePart(data_b64="AA==")


def _line(number: int, *names: str, author: str = "1") -> ChatLine:
    images = tuple(
        Attachment(filename=n, url=f"https://cdn.discordapp.com/{number}/{n}", content_type="image/png")
        for n in names
    )
    return ChatLine(
        id=str(number), channel_id="9", author_id=author, author_name="u", content="hi", attachments=images
    )


async def test_only_the_images_the_context_holds_are_downloaded() -> None:
    lines = [_line(1, "a", "b", "c"), _line(2, "x", author="bot"), _line(3, "bad", "e")]
    limits = ContextLimits(max_images=3)
    reader = CountingReader()
    read = await read_images(lines, reader, limits, assistant_ids=["bot"])
    assert reader.asked == ["bad", "e", "a"]  # newest message first; the bot's own skipped
    conversation = build_conversation(lines, assistant_ids=["bot"], limits=limits, vision=True, images=read)
    sent = [part for m in conversation.messages for part in m.content if isinstance(part, ImagePart)]
    assert len(sent) == 2
    assert "Image(s) not sent: bad (refused for the test)." in conversation.notes
    assert "2 image attachment(s) were left out (at most 3 images are sent)." in conversation.notes
