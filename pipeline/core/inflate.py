"""A compressed response body, decompressed in bounded steps (a provider's, Discord's).

aiohttp's automatic decompression turns each network read into all the bytes it
inflates to at once: a few KiB of gzip can stand for hundreds of MiB of blank lines,
held in memory before the transport sees the first of them. The transport therefore
asks for ``gzip`` or ``deflate`` itself, turns aiohttp's decompression off, and reads
an encoded body through ``Inflater``: each ``read`` returns at most ``step`` bytes of
output, so the stream cap and the bound on what is held before commitment are checked
after every step, never after an unbounded one. The REST sink reads Discord's compressed
answers through the same rule. The module is pure (zlib and a read function), so both
stages' I/O rooms can import it from the vocabulary.
"""

from __future__ import annotations

__all__ = ("ACCEPT_ENCODING", "Inflater", "body_inflater", "body_reader")

import zlib
from collections.abc import Iterator
from typing import Final

from rxcord.core.body import Read
from rxcord.core.errors import UndecodableBodyError

ACCEPT_ENCODING: Final = "gzip, deflate"
"""The encodings asked for: the ones ``Inflater`` decodes."""


class Inflater:
    """``read()`` gives the decompressed body, at most *step* bytes at a time (``b""``: the end)."""

    __slots__ = ("_decoder", "_encoding", "_read", "_step", "_tail")

    def __init__(self, read: Read | None, encoding: str, step: int) -> None:
        self._read = read
        self._encoding = encoding
        self._step = step
        self._decoder: zlib._Decompress | None = None
        """Made at the first byte (deflate's framing is known only then)."""
        self._tail = b""
        """Compressed input not consumed yet (the last step stopped at *step* bytes of output)."""

    async def read(self) -> bytes:
        """The next decompressed piece, at most *step* bytes; ``b""`` once the body ended."""
        assert self._read is not None, "an Inflater fed with feed() has no read"
        while True:
            if self._tail:
                out = self._inflate(self._tail)
                if out:
                    return out
                continue
            piece = await self._read()
            if not piece:
                return self._finish()
            out = self._inflate(piece)
            if out:
                return out

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decompressed pieces of *data* (pushed by the socket reader), *step* bytes at most each.

        A generator: the next step is inflated only when asked for, so a caller checks its
        bounds after every step and may stop; the rest of *data* is then never inflated.
        """
        out = self._inflate(data)
        while True:
            if out:
                yield out
            if not self._tail:
                return
            out = self._inflate(self._tail)

    def finish(self) -> bytes:
        """What zlib still holds once the body ended (pushed bodies; ``read`` does it itself)."""
        return self._finish()

    def _inflate(self, data: bytes) -> bytes:
        decoder = self._decoder
        if decoder is None:
            decoder = self._decoder = zlib.decompressobj(_wbits(self._encoding, data))
        if decoder.eof:
            self._tail = b""  # data after the end of the compressed stream is not part of the body
            return b""
        try:
            out = decoder.decompress(data, self._step)
        except zlib.error as exc:
            raise UndecodableBodyError(f"the {self._encoding} body is corrupt ({exc})") from exc
        self._tail = decoder.unconsumed_tail
        return out

    def _finish(self) -> bytes:
        decoder = self._decoder
        if decoder is None or decoder.eof:
            return b""
        try:
            # All input was consumed in bounded steps: what flush returns is zlib's small remainder.
            return decoder.flush()
        except zlib.error as exc:
            raise UndecodableBodyError(f"the {self._encoding} body is corrupt ({exc})") from exc


def body_reader(read: Read, content_encoding: str, step: int) -> Read:
    """The read of the decoded body: *read* itself for an unencoded one.

    Raises:
        UndecodableBodyError: An encoding other than ``gzip`` or ``deflate`` (never asked for).
    """
    encoding = _encoding(content_encoding)
    return read if encoding is None else Inflater(read, encoding, step).read


def body_inflater(content_encoding: str, step: int) -> Inflater | None:
    """An ``Inflater`` for a pushed body (``feed``); ``None`` for an unencoded one.

    Raises:
        UndecodableBodyError: An encoding other than ``gzip`` or ``deflate`` (never asked for).
    """
    encoding = _encoding(content_encoding)
    return None if encoding is None else Inflater(None, encoding, step)


def _encoding(content_encoding: str) -> str | None:
    """The one rule of what is decoded: ``None`` for an unencoded body."""
    encoding = content_encoding.strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding in ("gzip", "x-gzip", "deflate"):
        return encoding
    raise UndecodableBodyError(
        f"the provider sent a body in an encoding that was not asked for: {encoding!r}"
    )


def _wbits(encoding: str, first: bytes) -> int:
    if encoding != "deflate":
        return 16 + zlib.MAX_WBITS
    # "deflate" should be zlib-wrapped (RFC 9110), but some servers send raw deflate: a zlib
    # stream's first byte names the deflate method (8) in its low four bits, and its first two
    # bytes, read as one number, are a multiple of 31.
    wrapped = len(first) >= 2 and first[0] & 0x0F == 8 and (first[0] << 8 | first[1]) % 31 == 0
    return zlib.MAX_WBITS if wrapped else -zlib.MAX_WBITS
