r"""Secrets redacted by value: the one redactor built from the configured credentials.

``rxcord.providers.errors.scrub`` recognises key *shapes* (``sk-...``, ``Bearer``
tokens, ``key=`` parameters); a custom endpoint's key, a bot token or a webhook
token has no recognisable shape. A ``Redactor`` is built from the exact
configured values (``Redactor.of(api_key, bot_token, webhook_token)``, or
``credentials_in`` the request's headers and URL) and replaces each of them,
and its percent-encoded form, with ``[redacted]`` in text, bytes, decoded JSON
values, exceptions and ``ProviderError``s: wherever provider or Discord text
is kept or shown. The transport applies it to every byte it reads; the stream
runner to the result's error and the error embed.

A secret can also reach the decoded text stream in a form no byte scan sees: JSON
``\u`` escapes in the SSE data (``\u0073k-...``), or cut across two deltas. A
``SecretHoldback`` (``Redactor.holdback()``) redacts a stream of text pieces
incrementally: an Aho-Corasick automaton over the needles (built once per set of
needles), carried across pieces, so each character is stepped once; only text that
may still be the start of a secret is held (at most the longest needle's length,
plus an occurrence that a later overlapping one may still extend). Stage 03's
``redact_secrets`` guard runs one over the visible text and one over the reasoning.

Values shorter than ``MIN_SECRET_LENGTH`` characters are not redacted: a
placeholder such as vLLM's ``EMPTY`` protects nothing, and replacing every
occurrence of a short word would garble every message.
"""

from __future__ import annotations

__all__ = (
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "RedactedException",
    "Redactor",
    "SecretHoldback",
    "credentials_in",
)

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl, quote, urlsplit

import attrs

from rxcord.core.errors import RedactedError
from rxcord.core.types import ProviderError

REDACTED: Final = "[redacted]"
MIN_SECRET_LENGTH: Final = 8
_MAX_DEPTH: Final = 64
"""Deeper parts of a value are replaced whole (``_DEEP``): the walk never nears the recursion limit."""
_DEEP: Final = "[redacted: nested too deeply]"

_CREDENTIAL_HEADERS: Final = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})
_AUTH_SCHEMES: Final = ("bearer ", "bot ", "basic ", "token ")
_CREDENTIAL_PARAMS: Final = frozenset(
    {"key", "api_key", "api-key", "apikey", "access_token", "token", "auth"}
)


def credentials_in(headers: Mapping[str, str], url: str = "") -> tuple[str, ...]:
    """The credentials a request carries: auth header values (without their scheme) and key parameters."""
    found: list[str] = []
    for name, value in headers.items():
        if name.lower() in _CREDENTIAL_HEADERS and value:
            credential = value
            for scheme in _AUTH_SCHEMES:
                if value.lower().startswith(scheme):
                    credential = value[len(scheme) :].strip()
                    break
            found.append(credential)
    if "?" in url:
        for name, value in parse_qsl(urlsplit(url).query, keep_blank_values=False):
            if name.lower() in _CREDENTIAL_PARAMS:
                found.append(value)
    return tuple(found)


RedactedException = RedactedError
"""The name this error had before every exception name ended in ``Error``; kept for callers."""


@attrs.frozen(repr=False)
class Redactor:
    """Replaces the exact configured secrets; an empty redactor changes nothing (and is falsy)."""

    needles: tuple[str, ...] = ()
    """The values replaced, longest first (each secret and its percent-encoded form)."""
    _needles_bytes: tuple[bytes, ...] = attrs.field(init=False)

    @_needles_bytes.default
    def _encode(self) -> tuple[bytes, ...]:
        return tuple(needle.encode() for needle in self.needles)

    @classmethod
    def of(cls, *secrets: str | None) -> Redactor:
        """A redactor for *secrets* (``None``, empty and short values are skipped)."""
        return cls(_needles(secrets))

    def __or__(self, other: Redactor) -> Redactor:
        return Redactor(_needles((*self.needles, *other.needles)))

    def __bool__(self) -> bool:
        return bool(self.needles)

    def __repr__(self) -> str:
        return f"Redactor(<{len(self.needles)} values>)"

    def text(self, text: str) -> str:
        """*text* with every secret replaced."""
        for needle in self.needles:
            if needle in text:
                text = text.replace(needle, REDACTED)
        return text

    def data(self, data: bytes) -> bytes:
        """*data* (UTF-8 bytes) with every secret replaced."""
        for needle in self._needles_bytes:
            if needle in data:
                data = data.replace(needle, b"[redacted]")
        return data

    def contains(self, text: str) -> bool:
        """Whether *text* holds a secret."""
        return any(needle in text for needle in self.needles)

    def holdback(self) -> SecretHoldback:
        """A fresh incremental redactor for one stream of text pieces (see ``SecretHoldback``)."""
        return SecretHoldback(_automaton(self.needles))

    def value(self, value: object) -> Any:
        """*value* with every secret replaced.

        Strings, bytes, mappings and sequences are walked; an exception whose text holds a
        secret becomes a ``RedactedError``; anything else is kept when its repr is clean.
        """
        if not self.needles:
            return value
        return self._value(value, 0)

    def _value(self, value: object, depth: int) -> Any:
        if value is None or isinstance(value, (bool, int, float)):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, (bytes, bytearray)):
            return self.data(bytes(value))
        if depth >= _MAX_DEPTH:
            return _DEEP
        if isinstance(value, Mapping):
            return {self._value(key, depth + 1): self._value(item, depth + 1) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            items = [self._value(item, depth + 1) for item in value]
            return items if isinstance(value, list) else tuple(items)
        if isinstance(value, BaseException):
            text = f"{type(value).__name__}: {value}"
            if self.contains(text) or self.contains(repr(value)):
                return RedactedError(type(value).__name__, self.text(str(value)))
            return value
        if self.contains(repr(value)):
            return self.text(repr(value))
        return value

    def error(self, error: ProviderError) -> ProviderError:
        """*error* with its message and ``original_error`` redacted (itself when nothing changes)."""
        if not self.needles:
            return error
        message = self.text(error.message)
        code = self.text(error.code) if isinstance(error.code, str) else error.code
        original = self._value(error.original_error, 0)
        if message == error.message and code == error.code and original is error.original_error:
            return error
        return attrs.evolve(error, message=message, code=code, original_error=original)


def _needles(secrets: Iterable[str | None]) -> tuple[str, ...]:
    found: set[str] = set()
    for secret in secrets:
        value = (secret or "").strip()
        if len(value) < MIN_SECRET_LENGTH:
            continue
        found.add(value)
        found.add(quote(value, safe=""))
        # As a JSON string writes it (a quote, a backslash, a control or non-ASCII character),
        # and with ``\/`` for ``/`` as some servers write it: forms a byte scan meets.
        escaped = json.dumps(value)[1:-1]
        found.update((escaped, escaped.replace("/", "\\/")))
    return tuple(sorted(found, key=lambda needle: (-len(needle), needle)))


class _Automaton:
    """The Aho-Corasick automaton of a set of needles (shared by every stream redacting them).

    ``goto[state]`` maps a character to the next state (the trie), ``fail[state]`` is the
    state of the longest proper suffix that is also a trie path, ``found[state]`` the length
    of the longest needle ending there (``0``: none) and ``hold[state]`` how much of the text
    may still start an occurrence: the path length of the first state on the failure chain
    (itself included) that can still grow (a complete needle that is no other needle's
    prefix holds nothing). ``starts`` finds, at C speed, the next place a needle can start (its
    first characters, or a start of them at the end of the text), where the scan leaves the
    root state; ``heads`` maps each of those starts to its state (empty if a needle is not
    longer than them: one could then end inside a start).
    """

    __slots__ = ("fail", "found", "goto", "heads", "hold", "starts")

    def __init__(self, needles: tuple[str, ...]) -> None:
        self.goto: list[dict[str, int]] = [{}]
        self.found = [0]
        depth = [0]
        for needle in needles:
            self._add(needle, depth)
        self.fail, self.hold = self._links(depth)
        self.starts = _starts_pattern(needles)
        self.heads = self._heads(needles)

    def _add(self, needle: str, depth: list[int]) -> None:
        state = 0
        for char in needle:
            nxt = self.goto[state].get(char)
            if nxt is None:
                nxt = len(self.goto)
                self.goto[state][char] = nxt
                self.goto.append({})
                depth.append(depth[state] + 1)
                self.found.append(0)
            state = nxt
        self.found[state] = len(needle)

    def _heads(self, needles: tuple[str, ...]) -> dict[str, int]:
        if not needles or min(map(len, needles)) <= _START_CHARS:
            return {}
        heads: dict[str, int] = {}
        for needle in needles:
            state = 0
            for size, char in enumerate(needle[:_START_CHARS], start=1):
                state = self.goto[state][char]
                heads[needle[:size]] = state
        return heads

    def _links(self, depth: list[int]) -> tuple[list[int], list[int]]:
        """Failure links and holds, breadth first (a link is shallower: computed before)."""
        goto, found = self.goto, self.found
        fail = [0] * len(goto)
        hold = [depth[state] if goto[state] else 0 for state in range(len(goto))]
        queue = list(goto[0].values())
        for state in queue:  # grows while it is walked: breadth first
            for char, nxt in goto[state].items():
                link = fail[state]
                while link and char not in goto[link]:
                    link = fail[link]
                fail[nxt] = goto[link].get(char, 0)
                if not found[nxt]:
                    found[nxt] = found[fail[nxt]]
                if not goto[nxt]:
                    hold[nxt] = hold[fail[nxt]]
                queue.append(nxt)
        return fail, hold


_START_CHARS: Final = 4
"""How many first characters of a needle the C-speed skip compares before the automaton steps."""


def _starts_pattern(needles: tuple[str, ...]) -> re.Pattern[str]:
    heads = {needle[:_START_CHARS] for needle in needles}
    partial = {head[:size] for head in heads for size in range(1, len(head))}
    alternatives = [re.escape(head) for head in sorted(heads)]
    alternatives += [re.escape(head) + r"\Z" for head in sorted(partial)]
    return re.compile("|".join(alternatives) or r"(?!)")


@functools.lru_cache(maxsize=32)
def _automaton(needles: tuple[str, ...]) -> _Automaton:
    # One automaton per set of secrets, not per stream: a bot streams with the same key all day.
    return _Automaton(needles)


class SecretHoldback:
    """Redacts secrets in a stream of text pieces, however the pieces cut them.

    ``feed`` each piece and ``finish`` at the end; both return the text they release, with
    every occurrence of a secret replaced by ``[redacted]`` (occurrences that overlap are
    replaced together, once). The concatenated releases are the same however the text was
    cut. Linear: the automaton steps each character once (its state is carried from one
    piece to the next; a held start shorter than the skip's four characters is read again with
    the next piece), and the text held back is bounded: what may still be the start of a
    secret (shorter than the longest needle) and an occurrence a later overlapping one could
    still extend.

    Examples:
        >>> holdback = Redactor.of("sk-live-12345678").holdback()
        >>> holdback.feed("my key is sk-live-1")
        'my key is '
        >>> holdback.feed("2345678, ok")
        '[redacted], ok'
        >>> holdback.feed("sk-li"), holdback.finish()
        ('', 'sk-li')
    """

    __slots__ = ("_auto", "_held", "_spans", "_state")

    def __init__(self, automaton: _Automaton) -> None:
        self._auto = automaton
        self._state = 0
        self._held = ""
        """Text not released yet (its first character is the start of ``_spans`` offsets)."""
        self._spans: list[tuple[int, int]] | None = None
        """Occurrences found in ``_held``: sorted, disjoint ``[start, end)`` offsets (``None``: none,
        the common case, so a stream holds no list until a secret is met)."""

    def feed(self, text: str) -> str:
        """Consume *text*; return what can be released (*text* itself when nothing changes)."""
        held = self._held
        if held:
            if self._spans or len(held) >= _START_CHARS:
                return self._feed(held + text, len(held))
            # A start of a needle shorter than the skip compares: read again from the root, with
            # the new text (at most that many characters examined twice).
            text, self._held, self._state = held + text, "", 0
        found = self._auto.starts.search(text)
        if found is None:
            return text  # no secret can start here, and nothing is held: the common case
        start = found.start()
        if found.end() == len(text):
            state = self._auto.heads.get(found.group())
            if state is not None:
                # Only a start of a needle, at the end (the first one: the search is leftmost).
                self._state, self._held = state, text[start:]
                return text[:start]
        return self._feed(text, start)

    def _feed(self, buf: str, at: int) -> str:
        """Scan ``buf[at:]`` (the automaton's state is that of ``buf[:at]``); release what is decided."""
        self._scan(buf, at)
        keep = len(buf) - self._auto.hold[self._state]
        spans = self._spans
        if not spans:  # no occurrence: release all but a possible start of one
            if keep == len(buf):
                self._state = 0  # nothing can grow any more: as good as the root (and cheaper)
            self._held = buf[keep:]
            return buf[:keep]
        for start, end in spans:
            if end > keep:
                keep = min(keep, start)  # a later occurrence may overlap this one: hold it whole
                break
        released = _render(buf, spans, keep)
        self._spans = [(start - keep, end - keep) for start, end in spans if start >= keep] or None
        self._held = buf[keep:]
        return released

    def _scan(self, buf: str, at: int) -> None:
        """Run the automaton over ``buf[at:]``, recording the occurrences that end there."""
        auto = self._auto
        goto, fail, found, starts = auto.goto, auto.fail, auto.found, auto.starts
        spans = self._spans
        state = self._state
        size = len(buf)
        while at < size:
            if not state:
                # At the root no occurrence is under way: jump to where one can start.
                match = starts.search(buf, at)
                if match is None:
                    break
                at = match.start()
            char = buf[at]
            nxt = goto[state].get(char)
            while nxt is None and state:
                state = fail[state]
                nxt = goto[state].get(char)
            state = nxt or 0
            at += 1
            length = found[state]
            if length:
                if spans is None:
                    spans = self._spans = []  # the first occurrence held: a list from now on
                _cover(spans, at - length, at)
        self._state = state

    def holding(self) -> str:
        """What ``finish`` would release now (redacted), without releasing it."""
        held = self._held
        return _render(held, self._spans, len(held)) if self._spans else held

    def finish(self) -> str:
        """The text ended: release everything held, redacted."""
        released = self.holding()
        self._state, self._held, self._spans = 0, "", None
        return released


def _cover(spans: list[tuple[int, int]], start: int, end: int) -> None:
    """Add the occurrence ``[start, end)``, merged with those it overlaps (they all end before *end*)."""
    while spans and spans[-1][1] > start:
        previous, _ = spans.pop()
        start = min(start, previous)
    spans.append((start, end))


def _render(buf: str, spans: list[tuple[int, int]], upto: int) -> str:
    """``buf[:upto]`` with the occurrences that end by *upto* replaced."""
    if not spans or spans[0][1] > upto:
        return buf[:upto]
    pieces: list[str] = []
    at = 0
    for start, end in spans:
        if end > upto:
            break
        pieces += (buf[at:start], REDACTED)
        at = end
    pieces.append(buf[at:upto])
    return "".join(pieces)
