r"""Recover tool calls that a Custom endpoint's model wrote as prose (stage 03).

Some OpenAI-compatible endpoints serve models that never use the native
``tool_calls`` field: they narrate and then *write* the call into the visible
text, ``Fine. `generate_image({"prompt": "a cat"})` ``. With verbatim tool
calling enabled, the Custom adapter runs this parser over ``delta.content``
(after its other cleanup) and turns such text into ``function_call`` chunks
before the literal call text can reach Discord.

Theory
------
The parser is an incremental scanner with two modes.

*Scan mode.* Text is searched (one compiled regex, C speed) for an **anchor**:
an exposed tool name immediately followed by ``(`` and not preceded by an
identifier character (``[\w.-]``), so ``my_generate_image(`` and
``client.generate_image(`` never trigger, and neither does
``generate_image (`` (the anchor has no space). Everything before an anchor
is released at once. At the end of a chunk only a suffix that could still
grow into an anchor is held back: a partial or complete tool name at an
identifier boundary (``gen`` when ``generate_image`` is a tool), optionally
behind a call wrapper, or a partial wrapper opener (a short backtick run,
a fence with its info string, a fence line and its newline). That suffix is
at most about 80 characters plus the longest tool name, so prose costs
O(len) and the held text never grows.

*Call mode.* From the anchor on, the text is held while a small state machine
follows the argument list: optional whitespace, then either ``)`` (no
arguments, ``{}``) or one JSON object followed by optional whitespace and
``)``. Inside the object it tracks bracket depth and JSON strings with their
escapes (a ``)`` or ``(`` inside a string does not count). Each new chunk is
scanned only from where the previous one stopped, with regexes jumping to
the next interesting character: no rescans. The parse is the false-positive
guard, and it fails as early as it can:

- the first non-blank character after ``(`` is neither ``{`` nor ``)``
  (``generate_image(it makes art)``);
- outside strings, a character that cannot occur in JSON there (a letter
  other than those of ``true``/``false``/``null``/exponents, a quote ``'``,
  a backtick, a parenthesis);
- anything but ``)`` after the object closes (a second argument);
- at ``)``, the body is not a JSON object (``json.loads`` with
  ``strict=False``, so a literal newline inside a string is accepted).

On failure everything held is released as text unchanged and scanning resumes
at the failing character (so an anchor there is still found). Keyword style
(``name(prompt="x")``), Python dicts and other shapes are deliberately *not*
accepted.

*Wrappers.* A call may be bare, in an inline code span (one or two backticks
directly before the name) or in a fenced block (three to ten backticks, an
optional info string such as ``json``, a newline, optional indentation). A
wrapped call is recovered only when the wrapper holds nothing else: an inline
span must close right after ``)``; a fence may hold several calls separated by
whitespace and must then close. The wrapper is consumed with the calls, so no
stray backticks reach the user. A wrapper holding anything else is a code
example and is released as text, all of it.

*Bounds.* A candidate (wrapper, name and body) longer than ``MAX_CALL_CHARS``
fails at the first character past the bound and is released as text.

*Stream end* (``finish``). A call whose object is closed but whose ``)`` (or
closing wrapper) never came is recovered; anything else held is released as
text.

All decisions depend on the content only, never on where chunks split, so any
chunking of the same text gives the same text and calls (the tests check this
property). Recovered calls get deterministic ids, ``verbatim_0``,
``verbatim_1``, ... per parser (per stream).
"""

from __future__ import annotations

__all__ = ("MAX_CALL_CHARS", "VerbatimToolParser", "exposed_tool_names", "verbatim_tools")

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeAlias

import attrs
from reactivex import Observable

from rxcord.core.types import ChunkType, FunctionCall, Operator, ProcessedChunk
from rxcord.operators.thread_text import thread_text

MAX_CALL_CHARS: Final = 64 * 1024
"""Longest candidate call (wrapper + name + arguments) held before it is released as text."""

_NAME_OK: Final = re.compile(r"[\w.\-]{1,128}")
"""Tool names the scanner can anchor on; others are ignored (OpenAI allows ``[A-Za-z0-9_-]{1,64}``)."""
_NAME_TAIL: Final = re.compile(r"(?<![\w.\-])[\w.\-]+\Z")
_NAME_CHAR: Final = re.compile(r"[\w.\-]")
_NOT_NAME_CHAR: Final = re.compile(r"[^\w.\-]")

_OPENER: Final = re.compile(
    r"(?<!`)(?:(?P<fence>`{3,10})[\w+.\-]{0,32}[ \t]{0,16}\r?\n[ \t]{0,16}|(?P<tick>`{1,2}))\Z"
)
"""A complete wrapper opener ending right before a tool name."""
_PARTIAL_OPENER: Final = re.compile(r"(?<!`)`{1,10}[\w+.\-]{0,32}[ \t]{0,16}(?:\r|\r?\n[ \t]{0,16})?\Z")
"""A suffix that may still grow into a wrapper opener (held at a chunk end)."""
_MAX_OPENER: Final = 10 + 32 + 16 + 2 + 16

_NON_BLANK: Final = re.compile(r"[^ \t\r\n]")
_OBJ_EVENT: Final = re.compile(r"[^ \t\r\n:,0-9+\-.Eaeflnrstu]")
"""Outside strings: a quote, a bracket, or a character JSON cannot hold there."""
_STR_EVENT: Final = re.compile(r'["\\]')

# Call-mode states.
_OPEN: Final = 0  # after "(": blanks, then "{" or ")"
_OBJ: Final = 1  # inside the object, outside strings
_STR: Final = 2  # inside a JSON string
_AFTER: Final = 3  # object closed: blanks, then ")"
_CLOSE: Final = 4  # ")" seen in a wrapper: closing backticks (a fence also allows blanks, another call)
_NAME: Final = 5  # inside a fence: the next call's name

_PENDING: Final = 0
_DONE: Final = 1
_FAIL: Final = 2
_MOVED: Final = 3  # a step of the machine moved on: it runs on (never returned by _advance)

Item: TypeAlias = str | FunctionCall


@attrs.frozen
class _Vocab:
    """Compiled, immutable view of the exposed tool names (shared between streams)."""

    names: frozenset[str]
    anchor: re.Pattern[str] | None
    prefixes: frozenset[str]
    max_name: int
    name_chars: frozenset[str]
    """Every character of every name (a held name prefix must end with one)."""


def _longest_first(name: str) -> tuple[int, str]:
    return -len(name), name


@functools.lru_cache(maxsize=32)
def _compile(names: frozenset[str]) -> _Vocab:
    if not names:
        return _Vocab(names, None, frozenset(), 0, frozenset())
    # Longest first: at one position only one name can be followed by "(", but
    # this keeps the alternation from backtracking through short prefixes. The
    # identifier boundary is checked by the caller: a leading lookbehind makes
    # the search about three times slower (it defeats the first-character scan).
    ordered = sorted(names, key=_longest_first)
    anchor = re.compile("(?:" + "|".join(map(re.escape, ordered)) + r")\(")
    prefixes = frozenset(name[:end] for name in names for end in range(1, len(name) + 1))
    return _Vocab(names, anchor, prefixes, max(map(len, names)), frozenset("".join(names)))


def _vocab_of(tool_names: Iterable[str]) -> _Vocab:
    return _compile(frozenset(name for name in tool_names if _NAME_OK.fullmatch(name)))


def _parse_args(body: str) -> dict[str, Any] | None:
    try:
        value = json.loads(body, strict=False)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _push_text(out: list[Item], text: str) -> None:
    if text:
        if out and isinstance(out[-1], str):
            out[-1] += text
        else:
            out.append(text)


@attrs.define
class _Candidate:
    """A call being accumulated (call mode); its text is held until it resolves."""

    name: str
    fence: int
    """Closing fence length (0: not fenced)."""
    tick: int
    """Inline closing backtick run (0: not inline)."""
    body_from: int
    """Offset in the held region where the current call's arguments start."""
    seg: int
    """Index in the working string where this chunk's part of the region starts."""
    state: int = _OPEN
    held: list[str] = attrs.Factory(list)
    """Region text from earlier chunks (joined once, at resolution)."""
    held_len: int = 0
    depth: int = 0
    escape: bool = False
    run: int = 0
    """Closing backticks seen."""
    name_from: int = 0
    calls: list[tuple[str, dict[str, Any]]] = attrs.Factory(list)

    def offset(self, index: int) -> int:
        """Offset in the region of working-string *index*."""
        return self.held_len + index - self.seg

    def region(self, s: str, start: int, index: int) -> str:
        """Region text from offset *start* up to working-string *index*."""
        local = index - self.seg
        wanted = self.held_len + local - start
        if wanted <= local:
            return s[index - wanted : index]
        pieces = [s[self.seg : index]]
        need = wanted - local
        for piece in reversed(self.held):
            if need <= 0:
                break
            pieces.append(piece[-need:] if len(piece) > need else piece)
            need -= len(piece)
        return "".join(reversed(pieces))


# No on_setattr hooks: the converter would otherwise route every state update through them.
@attrs.define(on_setattr=attrs.setters.NO_OP)
class VerbatimToolParser:
    r"""Incremental, per-stream recovery of tool calls written as text.

    Finds ``<knownToolName>(`` anchors for the exposed tool names only (see the
    module docstring for the exact grammar and bounds).

    Args:
        tool_names: The tool names exposed to the model; names with characters
            outside ``[\w.-]`` or longer than 128 characters are ignored.

    Example:
        >>> parser = VerbatimToolParser(["generate_image"])
        >>> parser.feed('Fine. `generate_image({"prompt": "a ')
        ['Fine. ']
        >>> parser.feed('cat"})` Done.')  # doctest: +ELLIPSIS
        [FunctionCall(name='generate_image', args={'prompt': 'a cat'}, id='verbatim_0', ...), ' Done.']
    """

    _vocab: _Vocab = attrs.field(converter=_vocab_of, alias="tool_names")
    _prev: str = attrs.field(default="", init=False)
    """The last character released or consumed (the anchor boundary check looks at it)."""
    _tail: str = attrs.field(default="", init=False)
    """Scan mode: a held suffix that may still grow into a call."""
    _cand: _Candidate | None = attrs.field(default=None, init=False)
    _count: int = attrs.field(default=0, init=False)

    def feed(self, text: str) -> list[str | FunctionCall]:
        """Consume one text delta; return released text pieces and recovered calls, in order."""
        if not text:
            return []
        anchor = self._vocab.anchor
        if anchor is None:
            return [text]
        out: list[Item] = []
        s = self._prev + self._tail + text
        i = len(self._prev)
        self._tail = ""
        cand = self._cand
        if cand is not None:
            cand.seg = i
        while True:
            if cand is not None:
                end = min(len(s), cand.seg + MAX_CALL_CHARS - cand.held_len)
                status, j = self._advance(cand, s, i, end)
                if status == _PENDING:
                    if end == len(s):
                        cand.held.append(s[cand.seg :])
                        cand.held_len += len(s) - cand.seg
                        self._prev = s[-1]
                        return out
                    status = _FAIL  # over the bound: the character at `end` is one too many
                if status == _DONE:
                    self._emit_calls(out, cand)
                else:
                    _push_text(out, "".join(cand.held) + s[cand.seg : j])
                i = j
                cand = self._cand = None
            match = anchor.search(s, i)
            while match is not None and match.start() and _NAME_CHAR.match(s, match.start() - 1):
                match = anchor.search(s, match.start() + 1)  # the tail of a longer identifier
            if match is None:
                hold = self._hold_from(s, i)
                _push_text(out, s[i:hold])
                self._tail = s[hold:]
                self._prev = s[hold - 1 : hold] if hold else ""
                return out
            start = name_at = match.start()
            opener = _OPENER.search(s, max(i, name_at - _MAX_OPENER), name_at)
            fence = tick = 0
            if opener is not None:
                start = opener.start()
                fence = len(opener.group("fence") or "")
                tick = len(opener.group("tick") or "")
            _push_text(out, s[i:start])
            i = match.end()
            cand = self._cand = _Candidate(
                name=s[name_at : i - 1], fence=fence, tick=tick, body_from=i - start, seg=start
            )

    def finish(self) -> list[str | FunctionCall]:
        """The stream ended: recover a call that lacks only its closing, release the rest as text."""
        out: list[Item] = []
        cand = self._cand
        if cand is not None:
            self._cand = None
            region = "".join(cand.held)
            done = cand.state == _CLOSE
            if cand.state == _AFTER:
                args = _parse_args(region[cand.body_from :])
                if args is not None:
                    cand.calls.append((cand.name, args))
                    done = True
            if done:
                self._emit_calls(out, cand)
            else:
                _push_text(out, region)
        _push_text(out, self._tail)
        self._tail = ""
        return out

    def _emit_calls(self, out: list[Item], cand: _Candidate) -> None:
        for name, args in cand.calls:
            out.append(FunctionCall(name=name, args=args, id=f"verbatim_{self._count}"))
            self._count += 1

    def _hold_from(self, s: str, lo: int) -> int:
        """Start of the longest suffix of ``s[lo:]`` that could still grow into a call."""
        end = len(s)
        if end <= lo:
            return end
        hold = end
        vocab = self._vocab
        if s[-1] in vocab.name_chars:
            tail = _NAME_TAIL.search(s, max(lo, end - vocab.max_name))
            if tail is not None and s[tail.start() :] in vocab.prefixes:
                hold = tail.start()
                opener = _OPENER.search(s, max(lo, hold - _MAX_OPENER), hold)
                if opener is not None:
                    hold = opener.start()
        window = max(lo, end - _MAX_OPENER - 1)
        if "`" in s[window:]:
            partial = _PARTIAL_OPENER.search(s, window)
            if partial is not None:
                hold = min(hold, partial.start())
        return hold

    def _advance(self, c: _Candidate, s: str, i: int, end: int) -> tuple[int, int]:
        """Run the call-mode machine over ``s[i:end]``: (status, index where it stopped)."""
        while i < end:
            state = c.state
            if state == _STR:
                status, i = _string_step(c, s, i, end)
            elif state == _OBJ:
                status, i = _object_step(c, s, i, end)
            elif state in (_OPEN, _AFTER):
                status, i = _arguments_end_step(c, s, i, end)
            elif state == _CLOSE:
                status, i = _closing_step(c, s, i, end)
            else:
                status, i = self._name_step(c, s, i, end)
            if status != _MOVED:
                return status, i
        return _PENDING, end

    def _name_step(self, c: _Candidate, s: str, i: int, end: int) -> tuple[int, int]:
        """``_NAME``: the next call's name inside a fence, up to its ``(``."""
        # The name may have at most max_name characters: `room` more may still come.
        room = c.name_from + self._vocab.max_name - c.offset(i)
        m = _NOT_NAME_CHAR.search(s, i, min(end, i + room + 1))
        if m is None:
            if i + room < end:
                return _FAIL, i + room  # one name character too many
            return _PENDING, end
        j = m.start()
        name = c.region(s, c.name_from, j)
        if s[j] != "(" or name not in self._vocab.names:
            return _FAIL, j
        c.name = name
        c.body_from = c.offset(j + 1)
        c.state = _OPEN
        return _MOVED, j + 1


# One step of the call-mode machine in one state: (status, index). ``_MOVED``: the step
# consumed input or changed state, so the machine runs on from the index.


def _string_step(c: _Candidate, s: str, i: int, end: int) -> tuple[int, int]:
    """``_STR``: inside a JSON string, up to its closing quote (escapes skipped)."""
    if c.escape:
        c.escape = False
        return _MOVED, i + 1
    m = _STR_EVENT.search(s, i, end)
    if m is None:
        return _PENDING, end
    if m.group() == '"':
        c.state = _OBJ
    else:
        c.escape = True
    return _MOVED, m.end()


def _object_step(c: _Candidate, s: str, i: int, end: int) -> tuple[int, int]:
    """``_OBJ``: inside the arguments object, outside strings: nesting and its end."""
    m = _OBJ_EVENT.search(s, i, end)
    if m is None:
        return _PENDING, end
    j = m.start()
    ch = s[j]
    if ch == '"':
        c.state = _STR
    elif ch in "{[":
        c.depth += 1
    elif ch in "}]":
        c.depth -= 1
        if c.depth == 0:
            c.state = _AFTER
    else:
        return _FAIL, j
    return _MOVED, j + 1


def _arguments_end_step(c: _Candidate, s: str, i: int, end: int) -> tuple[int, int]:
    """``_OPEN`` / ``_AFTER``: blanks, then the object's ``{`` (after ``(`` only) or ``)``."""
    state = c.state
    m = _NON_BLANK.search(s, i, end)
    if m is None:
        return _PENDING, end
    j = m.start()
    ch = s[j]
    if ch == "{" and state == _OPEN:
        c.state = _OBJ
        c.depth = 1
        return _MOVED, j + 1
    if ch != ")":
        return _FAIL, j
    args = {} if state == _OPEN else _parse_args(c.region(s, c.body_from, j))
    if args is None:
        return _FAIL, j
    c.calls.append((c.name, args))
    if not (c.fence or c.tick):
        return _DONE, j + 1
    c.state = _CLOSE
    c.run = 0
    return _MOVED, j + 1


def _closing_step(c: _Candidate, s: str, i: int, end: int) -> tuple[int, int]:
    """``_CLOSE``: the wrapper's closing backticks (a fence also allows blanks, another call)."""
    ch = s[i]
    if ch == "`":
        c.run += 1
        if c.run == (c.fence or c.tick):
            return _DONE, i + 1
        return _MOVED, i + 1
    if c.run or c.tick:
        return _FAIL, i
    if ch in " \t\r\n":
        m = _NON_BLANK.search(s, i, end)
        if m is None:
            return _PENDING, end
        return _MOVED, m.start()
    if _NOT_NAME_CHAR.match(ch) is None:
        # Another call in the same fenced block.
        c.state = _NAME
        c.name_from = c.offset(i)
        return _MOVED, i
    return _FAIL, i


def _has_extras(chunk: ProcessedChunk) -> bool:
    return bool(chunk.thoughts or chunk.metadata) or chunk.usage is not None


def _derive(chunk: ProcessedChunk, items: list[Item]) -> list[ProcessedChunk]:
    """Chunks for what one text chunk released; the first keeps the input's thoughts and metadata."""
    if not items:
        return [attrs.evolve(chunk, content="")] if _has_extras(chunk) else []
    first = items[0]
    if isinstance(first, str):
        head = attrs.evolve(chunk, content=first)
    else:
        head = attrs.evolve(chunk, type=ChunkType.FUNCTION_CALL, content="", function_call=first)
    return [head, *_plain(items[1:], chunk.serving_provider)]


def _plain(items: list[Item], serving_provider: str | None) -> list[ProcessedChunk]:
    return [
        ProcessedChunk.text(item, serving_provider=serving_provider)
        if isinstance(item, str)
        else ProcessedChunk.call(item, serving_provider=serving_provider)
        for item in items
    ]


def _on_text(parser: VerbatimToolParser, chunk: ProcessedChunk) -> list[ProcessedChunk]:
    return _derive(chunk, parser.feed(chunk.content))


def _release(parser: VerbatimToolParser, before: ProcessedChunk | None) -> list[ProcessedChunk]:
    return _plain(parser.finish(), before.serving_provider if before is not None else None)


def _identity(source: Observable[ProcessedChunk]) -> Observable[ProcessedChunk]:
    return source


def exposed_tool_names(body: Mapping[str, Any]) -> frozenset[str]:
    """The tool names a Chat Completions request *body* exposes (``tools[].function.name``).

    The verbatim parser recognises only these: a name the adapter knows but the request
    did not offer is never a call, and a request without tools never gets the parser.
    """
    tools = body.get("tools")
    names: set[str] = set()
    if isinstance(tools, list):
        for tool in tools:
            function = tool.get("function") if isinstance(tool, Mapping) else None
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str) and name:
                names.add(name)
    return frozenset(names)


def verbatim_tools(tool_names: Iterable[str]) -> Operator[ProcessedChunk, ProcessedChunk]:
    r"""Turn tool calls written as text into ``function_call`` chunks.

    Text chunks go through a per-subscription ``VerbatimToolParser``: released
    prose becomes text chunks and recovered calls ``ProcessedChunk.call``
    chunks, in order. The thoughts, metadata and usage of an input chunk stay
    on the first chunk derived from it (an empty text chunk if everything was
    held). ``function_call``, ``error`` and ``done`` chunks pass through, after
    whatever the parser's ``finish()`` gives: each of them ends the stream at
    the orchestrator. Completion also emits what ``finish()`` gives. An
    upstream error is forwarded as is (held text is dropped).

    .. marble::
        -a------b------|        a = 'Fine. `generate_image({"prompt":'   b = '"cat"})` ok'
        [ verbatim_tools(["generate_image"]) ]
        -A------(C,T)--|        A = text "Fine. "   C = call {"prompt": "cat"}   T = text " ok"

    Args:
        tool_names: The tool names exposed to the model. With none, the
            operator is the identity.

    Returns:
        An operator from ``ProcessedChunk`` to ``ProcessedChunk``, fusable with its
        stage 03 neighbours (``rxcord.operators.fused``).
    """
    names = tuple(sorted(set(tool_names)))
    if _vocab_of(names).anchor is None:
        return _identity
    return thread_text(lambda: VerbatimToolParser(names), _on_text, _release, f"verbatim_tools{names}")
