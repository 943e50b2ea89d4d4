"""Image attachments downloaded for a vision model and sent inline (``ImageFetcher``).

Inline, never by URL: Discord's attachment URLs are signed and expire, the emulator's are on
127.0.0.1, Gemini and local model servers cannot fetch a URL at all, and only a download lets
the bot hold the size cap. Each image passes, in this order (each refusal is a short reason
that ends up in the conversation's notes, naming the setting when one decides):

1. an ``https`` URL on Discord's attachment hosts (``cdn.discordapp.com``,
   ``media.discordapp.net``), or one of the caller's extra origins (the bot adds its
   ``[discord] base_url`` origin when it is not Discord's: the emulator serves attachments
   there); a scheme, host *and* port must match, so another server on 127.0.0.1 is refused;
2. the attachment's declared size within *max_bytes* (nothing known too big is downloaded);
3. the SSRF guard (``rxcord.providers.ssrf``): the host's addresses are checked and the
   connection goes to them only (pinned, no second lookup); private and loopback addresses
   only for the extra origins, cloud metadata addresses never;
4. HTTP 200, redirects not followed;
5. at most *max_bytes* read, through the one capped body reader (refused past the cap);
6. the bytes begin with a PNG, JPEG, GIF or WebP signature: the media type sent is what the
   bytes are, whatever the upload claimed (a provider refuses a mismatch).
"""

from __future__ import annotations

__all__ = ("DISCORD_ATTACHMENT_HOSTS", "ImageFetcher", "sniff_image_type")

import base64
from typing import Final

import aiohttp
import attrs
import yarl
from loguru import logger

from rxcord.core.body import Overflow, read_capped
from rxcord.core.errors import ResponseTooLargeError, SsrfRefusedError
from rxcord.core.request import ImagePart
from rxcord.discord.conversation import Attachment
from rxcord.providers.ssrf import SsrfGuard

_log = logger.bind(stage="conversation")

DISCORD_ATTACHMENT_HOSTS: Final = frozenset({"cdn.discordapp.com", "media.discordapp.net"})
"""The hosts Discord serves attachments from (over https)."""

_SIGNATURES: Final = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def sniff_image_type(data: bytes) -> str | None:
    """The media type *data* begins with (PNG, JPEG, GIF, WebP), or ``None``."""
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return next((kind for magic, kind in _SIGNATURES if data.startswith(magic)), None)


def _origin(url: yarl.URL) -> tuple[str, str, int | None]:
    return url.scheme, (url.host or "").lower(), url.port


@attrs.frozen(kw_only=True)
class ImageFetcher:
    """Downloads image attachments, bounded and guarded, as inline ``ImagePart`` s.

    Args:
        max_bytes: The most bytes one image may have (``[context] max_image_bytes``).
        extra_origins: More origins attachments may come from (``http://127.0.0.1:PORT`` of
            the emulator); loopback and private addresses are allowed for these only.
        guard: The SSRF guard (inject its resolver in tests: no real lookup).
        timeout: Seconds for one image's whole download.
    """

    max_bytes: int
    extra_origins: tuple[str, ...] = ()
    guard: SsrfGuard = SsrfGuard()
    timeout: float = 15.0

    @classmethod
    def for_api(cls, max_bytes: int, api_base: str, *, guard: SsrfGuard | None = None) -> ImageFetcher:
        """Discord's hosts, and the API's own origin when it is not Discord's (the emulator)."""
        url = yarl.URL(api_base)
        extra = () if (url.host or "").lower().endswith("discord.com") else (str(url.origin()),)
        return cls(max_bytes=max_bytes, extra_origins=extra, guard=guard or SsrfGuard())

    async def image(self, attachment: Attachment) -> ImagePart | str:
        """The attachment as an inline image, or why it was not sent (a short reason)."""
        try:
            url = yarl.URL(attachment.url)
        except ValueError:
            return "not a URL"
        private = _origin(url) in {_origin(yarl.URL(o)) for o in self.extra_origins}
        if not private and not (
            url.scheme == "https" and (url.host or "").lower() in DISCORD_ATTACHMENT_HOSTS
        ):
            return "not on a Discord attachment host"
        if attachment.size > self.max_bytes:
            return self._too_big()
        try:
            connector = await self.guard.connector(url, allow_private_network=private)
        except SsrfRefusedError as exc:
            _log.warning("image {name} refused by the SSRF guard: {why}", name=attachment.filename, why=exc)
            return "its address is not allowed"
        return await self._download(url, attachment, connector)

    async def _download(
        self, url: yarl.URL, attachment: Attachment, connector: aiohttp.TCPConnector | None
    ) -> ImagePart | str:
        timeout = aiohttp.ClientTimeout(total=self.timeout)
        # A session per image: its connector is pinned to the addresses the guard checked.
        session = aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False)
        try:
            async with session, session.get(url, allow_redirects=False) as response:
                if response.status != 200:
                    return f"Discord answered HTTP {response.status}"
                body = await read_capped(response.content.readany, self.max_bytes, overflow=Overflow.RAISE)
        except ResponseTooLargeError:
            return self._too_big()
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            _log.warning(
                "image {name} unreadable: {error}", name=attachment.filename, error=type(exc).__name__
            )
            return "it could not be downloaded"
        kind = sniff_image_type(body.data)
        if kind is None:
            return "not a PNG, JPEG, GIF or WebP image"
        return ImagePart(mime_type=kind, data_b64=base64.b64encode(body.data).decode("ascii"))

    def _too_big(self) -> str:
        return f"larger than [context] max_image_bytes = {self.max_bytes}"
