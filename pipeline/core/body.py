"""One capped body reader: every response body rxcord reads whole goes through ``read_capped``.

A provider's error body, a Decision answer, a Discord REST answer and an attachment's text are
all read to their end into memory, so each needs a cap, and what happens above the cap is a
choice of the caller, made per call as a parameter (``Overflow``): ``RAISE`` refuses the body
with ``ResponseTooLargeError``; ``TRUNCATE`` keeps the first *cap* bytes and marks the result
``truncated``. Either way at most *cap* bytes are held and reading stops at the first byte past
the cap, so the work is linear in the cap, never in what the server would send.

The reader takes the body as an injected ``read`` callable (aiohttp's ``content.readany``, or an
inflater's ``read``), so this module has no I/O of its own and every layer can use it.
"""

from __future__ import annotations

__all__ = ("Body", "Overflow", "Read", "read_capped")

import codecs
import enum
from collections.abc import Awaitable, Callable

import attrs

from rxcord.core.errors import ResponseTooLargeError

Read = Callable[[], Awaitable[bytes]]
"""One piece of the body (``b""`` at its end)."""


class Overflow(enum.Enum):
    """What ``read_capped`` does with a body longer than its cap."""

    RAISE = "raise"
    """Refuse it: ``ResponseTooLargeError`` (the caller reports the answer as unusable)."""
    TRUNCATE = "truncate"
    """Keep the first *cap* bytes and mark the ``Body`` as ``truncated``."""


@attrs.frozen
class Body:
    """A body read by ``read_capped``: at most *cap* bytes."""

    data: bytes = attrs.field(repr=False)
    truncated: bool = False
    """The body went on past the cap (only with ``Overflow.TRUNCATE``); ``data`` is its start."""

    def text(self) -> str:
        """The bytes as UTF-8 (invalid sequences replaced).

        A truncated body may end inside a multibyte character: that cut is the cap's, not the
        sender's, so the incomplete character is dropped instead of becoming a U+FFFD.
        """
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return decoder.decode(self.data, final=not self.truncated)


async def read_capped(read: Read, cap: int, *, overflow: Overflow) -> Body:
    """Read the whole body through *read*, holding at most *cap* bytes.

    Args:
        read: Returns the next piece of the body, ``b""`` at its end.
        cap: The most bytes kept (>= 0).
        overflow: What a body longer than *cap* gives (see ``Overflow``).

    Raises:
        ResponseTooLargeError: the body is longer than *cap* and *overflow* is ``RAISE``.
    """
    pieces: list[bytes] = []
    total = 0
    while piece := await read():
        if total + len(piece) > cap:
            if overflow is Overflow.RAISE:
                raise ResponseTooLargeError(f"response body exceeds {cap} bytes")
            pieces.append(piece[: cap - total])
            return Body(b"".join(pieces), truncated=True)
        pieces.append(piece)
        total += len(piece)
    return Body(b"".join(pieces))
