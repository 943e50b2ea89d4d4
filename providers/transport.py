"""The shared HTTP transport: one provider request as a cold observable (stage 02).

``stream_source`` opens the request with aiohttp inside one asyncio task per
subscription and emits ``RawStreamChunk``s. Disposing the subscription
cancels the task; because the body was not fully read, aiohttp closes the
connection instead of pooling it, so the provider sees the client go away.

Commitment and retries. A transparent retry is allowed only before the
stream is *committed*: before any meaningful output (text, reasoning, a
tool-call delta, usage: ``adapter.is_meaningful``) was emitted. Until then,
chunks that do not commit (keepalives, role-only deltas) are held back, so a
failed attempt leaves no trace downstream and no per-attempt state needs to
be reset there. Before commitment:

* a rejected payload (``adapter.rejection`` on an HTTP error or an SSE error
  event after a 200) is retried with a degraded body from
  ``rxcord.providers.degrade.Degrader`` when the adapter's policy allows;
* a transient failure (connection reset, timeout, a 5xx ``api_error``) is
  retried with the same body, a bounded number of times.

Rate limits and overload are *not* retried here: the turn runner owns key
and model fallback. After commitment every error passes through as an error
chunk, and the stream ends.

Holds before commitment are bounded: once ``max_held_events`` chunks are held or
``max_held_bytes`` of the body were read without commitment (blank lines, comments
and keepalives count: they are bytes read), the attempt commits: what is held passes
on and is no longer held, so nothing grows and nothing is lost; the attempt is then
no longer retried transparently. A compressed body is decompressed here, in steps of
at most ``READ_SLICE`` bytes (``rxcord.core.inflate``), so every bound is checked
after a bounded step.

How a stream ends. Only the wire format's end marker ends it cleanly: ``data: [DONE]``
(read here) or what ``adapter.ends_stream`` recognises (Anthropic's ``message_stop``,
Gemini's ``finishReason``). A body that ends, or a connection that closes or resets,
before it is a retryable ``truncated_stream`` error, between two events as well as in
the middle of one (retried before commitment, passed on after it).

Limits: connect, first-byte and idle-between-chunks timeouts (a stall
becomes a retryable ``timeout`` error, never a hang), a cap on a non-streamed
body (1 MiB) and on a streamed body (both after decompression), and a bound on
one SSE line.

Custom endpoints (``is_custom_endpoint``: any origin other than the adapter's
default, so a built-in provider's base-URL override too) pass the SSRF guard
(``rxcord.providers.ssrf``) before every attempt, retries included, on every
path that reaches this transport; ``TransportConfig.allow_private_network`` is
the one opt-out. A malformed request URL is an ``InputError`` naming ``base_url``.

Secrets by value (``rxcord.core.redact``): the configured secrets (by default the
request's own credentials) are replaced in every SSE event's bytes before they
are decoded, in every body read and in every exception text, so no chunk, and
no error built from one later, carries them.
"""

from __future__ import annotations

__all__ = ("TransportConfig", "TransportStats", "is_custom_endpoint", "stream_source")

import asyncio
import contextvars
import ipaddress
import ssl
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final, Literal, overload

import aiohttp
import attrs
import reactivex
from loguru import logger
from reactivex import abc
from yarl import URL

from rxcord.core import safe_json
from rxcord.core.body import Overflow, Read, read_capped
from rxcord.core.errors import (
    MalformedJsonError,
    ResponseTooLargeError,
    SseLineTooLongError,
    SsrfRefusedError,
    UndecodableBodyError,
)
from rxcord.core.inflate import ACCEPT_ENCODING, Inflater, body_inflater, body_reader
from rxcord.core.redact import Redactor, credentials_in
from rxcord.core.stream_scheduler import context_of
from rxcord.core.types import Batch, ErrorType, ProviderError, RawStreamChunk, raw_chunk
from rxcord.operators.light import LightObservable
from rxcord.providers.base import HttpRequest, ProviderAdapter
from rxcord.providers.degrade import Degrader, encode_body
from rxcord.providers.errors import classify_exception, classify_http_error
from rxcord.providers.idle_watch import IdleWatch
from rxcord.providers.socket_reader import SocketResponse, open_request
from rxcord.providers.sse import SseParser
from rxcord.providers.ssrf import SsrfGuard, endpoint_host, endpoint_url, is_custom_endpoint

_log = logger.bind(stage="02-transport")

_TRANSIENT = (ErrorType.API_ERROR, ErrorType.TIMEOUT)
_FAILURES = (
    SsrfRefusedError,
    SseLineTooLongError,
    UndecodableBodyError,
    aiohttp.ClientError,
    TimeoutError,
    OSError,
)
"""What an attempt may raise that is the attempt's failure (offered as its error chunk), not a bug."""

BATCH_EVENTS: Final = 64
"""The most SSE events decoded and emitted as one batch (a network read may hold more)."""
READ_SLICE: Final = 16 * 1024
"""A larger network read (aiohttp hands over up to 256 KB) is parsed this many bytes at a time."""
TRUNCATED: Final = "truncated_stream"
"""``ProviderError.code`` of a stream that ended before its end marker (in or between events)."""

_NO_METADATA: Mapping[str, Any] = MappingProxyType({})
"""The metadata of every SSE event chunk (shared: it is read-only)."""

_DIGIT_MAP: Final = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x78 for byte in range(256))
"""``bytes.translate`` table: every digit becomes ``0``, every other byte ``x``."""
_LONG_NUMBER: Final = b"0" * 19
"""19 digits in a row: possibly an integer beyond 64 bits.

SSE data is decoded with orjson when it is installed, falling back to the
standard library for anything orjson rejects (NaN, infinities, invalid UTF-8,
which the standard library then reads with replacement characters). orjson
silently turns an integer beyond 64 bits into a float, so data with 19 digits in
a row (rare: ids and timestamps are shorter) goes to the standard library
directly. Either way the value is the one ``json.loads`` gives."""


def _find_orjson() -> Callable[[bytes], Any] | None:
    try:  # an optional accelerator (the ``test`` and ``bench`` extras install it)
        import orjson
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    return orjson.loads


_orjson_loads = _find_orjson()


@attrs.frozen(kw_only=True)
class TransportConfig:
    """Transport limits and retry bounds."""

    connect_timeout: float = 10.0
    first_byte_timeout: float = 60.0
    """Seconds until the response headers arrive."""
    idle_timeout: float = 60.0
    """Seconds allowed between two pieces of the body."""
    max_body_bytes: int = 1024 * 1024
    """Cap on a non-streamed (JSON) body."""
    max_stream_bytes: int = 64 * 1024 * 1024
    """Cap on a streamed body."""
    max_line_bytes: int = 8 * 1024 * 1024
    """Cap on one SSE line."""
    max_held_events: int = 1024
    """Chunks held before commitment (keepalives, role-only or empty deltas); then the attempt commits."""
    max_held_bytes: int = 1024 * 1024
    """Body bytes read before commitment (blank lines and comments too); then the attempt commits."""
    transient_retries: int = 2
    """Retries of a transient failure before commitment."""
    backoff: float = 0.25
    """First backoff delay in seconds (doubled each retry)."""
    allow_private_network: bool = False
    """The SSRF guard's one opt-out: let a custom endpoint reach loopback, private and shared
    (CGNAT) addresses, for a local model server (Ollama, llama.cpp, vLLM on a LAN) or the test
    suite. Link-local (cloud metadata), multicast and reserved addresses stay refused. The CLI's
    ``--allow-loopback``."""
    ssrf_guard: SsrfGuard = SsrfGuard()
    """Checks a custom endpoint's host before every attempt (always on; inject a resolver in tests)."""
    reader: Literal["auto", "socket", "aiohttp"] = "auto"
    """Who reads the response: ``"socket"`` (``rxcord.providers.socket_reader``: the body handled
    in ``data_received``), ``"aiohttp"``, or ``"auto"``: the socket reader where aiohttp would open
    a session of its own for the attempt (no caller's session, or an SSRF-pinned one: nothing
    pooled, no proxy settings to honour), the caller's aiohttp session where it would be used.
    A response the socket reader does not serve (not plain HTTP/1.x) is read through aiohttp."""
    tls: ssl.SSLContext | None = None
    """The trust for ``https`` endpoints, on either reader; ``None``: the system's trust store."""


@attrs.define
class TransportStats:
    """Counters of one subscription, for tests and logs."""

    attempts: int = 0
    bodies_sent: list[bytes] = attrs.field(factory=list, repr=False)
    closed: bool = False
    """The attempt's response was released (normally or by cancellation)."""
    peak_held_events: int = 0
    """The most chunks one attempt held before commitment."""
    peak_held_bytes: int = 0
    """The most body bytes one attempt read before commitment (after decompression)."""
    readers: list[str] = attrs.field(factory=list)
    """Who read each attempt's response: ``"socket"`` or ``"aiohttp"``."""
    sockets: list[asyncio.Transport] = attrs.field(factory=list, repr=False)
    """The socket reader's connections (each is closing once its attempt is over)."""


class _Attempt:
    """One attempt: its commitment bookkeeping and, once its events are read, their feed.

    One slots object per attempt holds what a bookkeeping object and a feeding closure
    (nine cells, a second closure for the end) held before. Called with each body piece
    (an ``OnPiece``: ``True`` stops reading), from the read loop or pushed from the socket
    reader's ``data_received``; a piece larger than ``READ_SLICE`` is parsed a slice at a
    time, so its events' bytes are not all copied at once.
    """

    __slots__ = (
        "committed",
        "cut",
        "failed",
        "held",
        "held_bytes",
        "in_events",
        "last_event",
        "last_raw",
        "loop",
        "parser",
        "pump",
        "seen",
        "terminal",
        "total",
        "watch",
    )

    def __init__(self, pump: _Pump) -> None:
        self.pump = pump
        self.committed = False
        self.seen = 0
        """Event chunks read in this attempt (none at the end: an empty stream)."""
        self.held: list[RawStreamChunk] | None = None
        """Chunks held before commitment (``None`` until the first: a live attempt usually holds none)."""
        self.held_bytes = 0
        """Body bytes read while not committed (the bound's measure)."""
        self.in_events = False
        """The event stream's body is being read (a failure now cuts the stream)."""
        self.terminal = False
        """The wire format's end marker was read: the stream ended cleanly."""
        self.cut = False
        """A cut was reported already (an event left unfinished at the end of the body)."""
        self.last_raw = b""
        """The latest event's bytes (as read, before redaction) and its SSE event name: whether
        it was an error (a stream's last word) is asked only if the body ends before the end
        marker. Bytes and a string, not the chunk: its decoded JSON would stay alive (tracked
        objects) while every next read is awaited, and judging every event as it is read
        would cost the rejection check per read."""
        self.last_event: str | None = None
        self.failed: tuple[ProviderError, RawStreamChunk] | None = None
        """The rejection that ended the attempt before commitment (and its chunk)."""
        self.parser: SseParser | None = None
        """The event stream's parser (from ``begin_events``)."""
        self.total = 0
        """Body bytes of the event stream so far (after decompression)."""
        self.watch: IdleWatch | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The loop whose clock the watch reads (``touch`` written out: one call less per read)."""

    def take_held(self) -> list[RawStreamChunk]:
        """What is held, no longer held."""
        held, self.held = self.held, None
        return held if held is not None else []

    def connected(self, transport: asyncio.Transport) -> None:
        """The socket reader connected: its socket counted, the connect bound gives way.

        The first-byte bound follows, from the attempt's start (``_Pump._fetch_socket``).
        """
        pump, watch = self.pump, self.watch
        assert watch is not None
        pump.stats.sockets.append(transport)
        watch.rebound(pump.cfg.first_byte_timeout, since=watch.last)

    def begin_events(self, watch: IdleWatch) -> None:
        """The body is an event stream: parse what comes, every piece progress for *watch*."""
        self.parser = SseParser(max_line_bytes=self.pump.cfg.max_line_bytes)
        self.watch = watch
        self.loop = asyncio.get_running_loop()
        self.in_events = True

    def __call__(self, piece: bytes) -> bool:
        """Take one piece of the event stream's body; ``True``: stop reading."""
        pump, parser, watch, loop = self.pump, self.parser, self.watch, self.loop
        assert parser is not None and watch is not None and loop is not None  # begin_events came first
        watch.last = loop.time()  # IdleWatch.touch
        size = len(piece)
        total = self.total = self.total + size
        cfg = pump.cfg
        if total > cfg.max_stream_bytes:
            pump.offer(
                [_malformed(pump.adapter.name, f"stream exceeded {cfg.max_stream_bytes} bytes", "")], self
            )
            return True
        if not self.committed:
            self.held_bytes = total
            if total > cfg.max_held_bytes:
                pump.commit_past_bound(self)
        feed = parser.feed_raw
        if size <= READ_SLICE:
            return pump.events(feed(piece), self)
        return any(
            pump.events(feed(piece[start : start + READ_SLICE]), self) for start in range(0, size, READ_SLICE)
        )

    def end(self) -> None:
        """The body ended: an event still pending was cut off (see the SSE parser)."""
        assert self.parser is not None
        if not self.pump.events(self.parser.close_raw(), self, at_end=True):
            self.pump.end_of_events(self)


class _Inflating:
    """A pushed compressed body: each piece inflated in bounded steps into the attempt.

    An object, not a closure: a closure's variables would be cells of the coroutine that
    makes it, held for the stream's life even when the body is not compressed.
    """

    __slots__ = ("attempt", "inflater")

    def __init__(self, attempt: _Attempt, inflater: Inflater) -> None:
        self.attempt, self.inflater = attempt, inflater

    def __call__(self, piece: bytes) -> bool:
        # Every bounded step is checked before the next one is inflated.
        return any(self.attempt(out) for out in self.inflater.feed(piece))

    def end(self) -> None:
        """The body ended: what the inflater still holds, then the attempt's end."""
        rest = self.inflater.finish()
        if not (rest and self.attempt(rest)):
            self.attempt.end()


@attrs.frozen
class _Answer:
    """A response as ``_Pump._read`` takes it, from either reader."""

    status: int
    headers: Mapping[str, str]
    url: URL
    read: Read
    """The (still encoded) body, piece by piece."""
    pushed: SocketResponse | None = None
    """The socket reader's response: an event stream is pushed from it (``_Pump._read``)."""


class _DownstreamError(Exception):
    """An exception raised downstream of the read loop: not a transport failure (``_Pump.run``)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


@overload
def stream_source(
    adapter: ProviderAdapter,
    request: HttpRequest,
    *,
    session: aiohttp.ClientSession | None = None,
    config: TransportConfig | None = None,
    stats: TransportStats | None = None,
    on_closed: Callable[[], None] | None = None,
    redactor: Redactor | None = None,
    batched: Literal[False] = False,
) -> reactivex.Observable[RawStreamChunk]: ...


@overload
def stream_source(
    adapter: ProviderAdapter,
    request: HttpRequest,
    *,
    session: aiohttp.ClientSession | None = None,
    config: TransportConfig | None = None,
    stats: TransportStats | None = None,
    on_closed: Callable[[], None] | None = None,
    redactor: Redactor | None = None,
    batched: Literal[True],
) -> reactivex.Observable[RawStreamChunk | Batch[RawStreamChunk]]: ...


def stream_source(
    adapter: ProviderAdapter,
    request: HttpRequest,
    *,
    session: aiohttp.ClientSession | None = None,
    config: TransportConfig | None = None,
    stats: TransportStats | None = None,
    on_closed: Callable[[], None] | None = None,
    redactor: Redactor | None = None,
    batched: bool = False,
) -> reactivex.Observable[Any]:
    """A cold observable that performs *request* and emits its raw chunks.

    Args:
        adapter: The provider's wire format (commitment, rejection, degradation policy).
        request: The first attempt's request.
        session: A shared aiohttp session; one is created per subscription when omitted
            (always so for SSRF-guarded endpoints, whose connections use a pinned resolver).
        config: Limits and retry bounds.
        stats: Optional counters filled while the subscription runs.
        on_closed: Called once the pump task has finished (after a dispose too).
        redactor: Replaces the configured secrets in everything read (SSE data, bodies, error
            texts); by default the credentials of *request* itself (``credentials_in``).
        batched: Emit one ``Batch`` of chunks per network read (a read's lone chunk as
            itself) instead of one item per chunk: the chain's unit of flow
            (``rxcord.compose.chain.build_chain(batched=True)``). The chunks, their order
            and the commitment rules are the same.

    Returns:
        An observable of ``RawStreamChunk`` (and ``Batch[RawStreamChunk]`` when *batched*);
        each subscription makes its own HTTP request.
    """
    cfg = config or TransportConfig()
    redact = redactor if redactor is not None else Redactor.of(*credentials_in(request.headers, request.url))
    return _Source(
        adapter,
        request,
        session=session,
        cfg=cfg,
        stats=stats,
        on_closed=on_closed,
        redact=redact,
        batched=batched,
    )


class _Source(LightObservable[Any]):
    """``stream_source``'s observable: one object holding what each subscription starts from.

    ``reactivex.create`` would hold a subscribe closure (eight cells) and the ``Observable``'s
    ``RLock`` for as long as the stream lives (``rxcord.operators.light.LightObservable``).
    """

    __slots__ = ("adapter", "batched", "cfg", "on_closed", "redact", "request", "session", "stats")

    def __init__(
        self,
        adapter: ProviderAdapter,
        request: HttpRequest,
        *,
        session: aiohttp.ClientSession | None,
        cfg: TransportConfig,
        stats: TransportStats | None,
        on_closed: Callable[[], None] | None,
        redact: Redactor,
        batched: bool,
    ) -> None:
        super().__init__()
        self.adapter, self.request, self.session, self.cfg = adapter, request, session, cfg
        self.stats, self.on_closed, self.redact, self.batched = stats, on_closed, redact, batched

    def _subscribe_core(
        self, observer: abc.ObserverBase[Any], scheduler: abc.SchedulerBase | None = None
    ) -> abc.DisposableBase:
        return _Pump(self, observer, context_of(scheduler))


class _Pump(abc.DisposableBase):
    """One subscription: its task performs the attempts; disposing it cancels the task.

    The pump is the subscription's disposable (no ``Disposable`` with its lock, no closure),
    and its task runs in one context, which the idle bound's timer shares: the stream's
    (*context*, a ``StreamScheduler``'s: the one its other timers run in), else one copied here.
    """

    __slots__ = (
        "adapter",
        "batched",
        "cfg",
        "context",
        "name",
        "observer",
        "on_closed",
        "redact",
        "redacts",
        "request",
        "session",
        "stats",
        "task",
    )

    def __init__(
        self, source: _Source, observer: abc.ObserverBase[Any], context: contextvars.Context | None = None
    ) -> None:
        self.adapter, self.request, self.session = source.adapter, source.request, source.session
        self.cfg, self.redact, self.batched = source.cfg, source.redact, source.batched
        self.redacts = bool(self.redact)
        self.name = self.adapter.name
        """The provider's name, read once (an adapter may compute it: the chunks carry it)."""
        self.stats = source.stats or TransportStats()
        self.observer = observer
        self.on_closed = source.on_closed
        self.context = contextvars.copy_context() if context is None else context
        loop = asyncio.get_running_loop()
        self.task = loop.create_task(self.run(), name=f"rxcord:{self.adapter.name}", context=self.context)
        if self.on_closed is not None:
            self.task.add_done_callback(self._closed)

    def dispose(self) -> None:
        self.task.cancel()

    def _closed(self, _: asyncio.Task[None]) -> None:
        assert self.on_closed is not None
        self.on_closed()

    def _send(self, chunks: list[RawStreamChunk]) -> None:
        """Emit *chunks*: one ``Batch`` (batched; a lone chunk as itself), or one item each."""
        if self.batched:
            self.observer.on_next(chunks[0] if len(chunks) == 1 else Batch(chunks))
            return
        on_next = self.observer.on_next
        for raw in chunks:
            on_next(raw)

    async def run(self) -> None:
        """The task: the attempts and their retries, then the observer's end.

        Each attempt is performed here (through the socket reader, or aiohttp: the caller's
        session or one of its own, an SSRF-pinned connector), then read by ``_read``: each
        coroutine between the task and the socket's read is an object a waiting stream holds,
        and a frame resumed on every read (so no ``_fetch`` layer between the two).
        """
        try:
            degrader: Degrader | None = None
            body: Mapping[str, Any] = self.request.body
            transient_left, delay = self.cfg.transient_retries, self.cfg.backoff
            while True:
                attempt = _Attempt(self)
                self.stats.attempts += 1
                try:
                    url, custom, data, headers = self._prepared(body)
                    # The socket reader gives up only on a response it does not serve (then aiohttp reads it).
                    if not (
                        self._uses_socket(custom)
                        and await self._fetch_socket(url, custom, data, headers, attempt)
                    ):
                        await self._fetch_aiohttp(url, custom, data, headers, attempt)
                except _FAILURES as exc:
                    self._failed(exc, attempt)
                self._ended(attempt)
                if attempt.failed is None:
                    break
                rejection, failed_raw = attempt.failed
                if degrader is None and self.adapter.policy.enabled:
                    # Made on the first rejection: most streams never need one.
                    degrader = Degrader(self.request.body, self.adapter.policy)
                retry_body = self._degraded(rejection, degrader)
                if retry_body is not None:
                    body = retry_body
                    continue
                if not self._transient(rejection, transient_left, delay):
                    self._send([*attempt.take_held(), failed_raw])
                    break
                transient_left -= 1
                await asyncio.sleep(delay)
                delay *= 2
        except asyncio.CancelledError:
            raise
        except _DownstreamError as wrapped:  # an observer raising: never lost silently
            self.observer.on_error(wrapped.error)
            return
        except Exception as exc:  # a bug: never lost silently
            self.observer.on_error(exc)
            return
        self.observer.on_completed()

    def _degraded(self, rejection: ProviderError, degrader: Degrader | None) -> Mapping[str, Any] | None:
        """The degraded body to retry a rejected payload with, if the policy allows one."""
        retry_body = degrader.next_body(rejection) if degrader is not None else None
        if retry_body is None or self.stats.attempts >= self.adapter.policy.max_attempts:
            return None
        _log.warning(
            "{provider}: payload rejected ({kind}); retrying with a degraded body",
            provider=self.adapter.name,
            kind=rejection.type.value,
        )
        return retry_body

    def _transient(self, rejection: ProviderError, left: int, delay: float) -> bool:
        """Whether a transient failure before output is retried (after *delay*)."""
        if not (rejection.retryable and rejection.type in _TRANSIENT and left > 0):
            return False
        _log.warning(
            "{provider}: transient failure before output ({kind}); retry in {delay:.2f}s",
            provider=self.adapter.name,
            kind=rejection.type.value,
            delay=delay,
        )
        return True

    def offer(self, batch: list[RawStreamChunk], state: _Attempt) -> bool:
        """Take one read's chunks; ``True`` when the attempt failed before commitment (stop reading).

        Called from inside the read loop, so an exception from downstream is wrapped
        (``_DownstreamError``) instead of passing for a transport failure.
        """
        try:
            if state.committed:
                if self.batched:  # the live path: ``_send`` inlined (one call less per read)
                    self.observer.on_next(batch[0] if len(batch) == 1 else Batch(batch))
                else:
                    self._send(batch)
                return False
            adapter, bound = self.adapter, self.cfg.max_held_events
            for index, raw in enumerate(batch):
                rejection = adapter.rejection(raw)
                if rejection is not None:
                    # Returning stops the read: the failed response is released before any retry.
                    state.failed = (rejection, raw)
                    return True
                if adapter.is_meaningful(raw):
                    # Committed: what was held, this chunk and the rest of the read, unchecked.
                    self._commit(state, batch[index:])
                    return False
                held = state.held
                if held is None:
                    held = state.held = []
                held.append(raw)
                if len(held) >= bound:
                    # Past the bound (an event that carries nothing counts): commit, never grow.
                    self._commit(state, batch[index + 1 :])
                    return False
            return False
        except Exception as exc:
            raise _DownstreamError(exc) from exc

    def _commit(self, state: _Attempt, rest: list[RawStreamChunk]) -> None:
        """Commit the attempt: what is held passes on, then *rest* (unchecked, as all that follows)."""
        state.committed = True
        self._note_held(state)
        held = state.take_held()
        chunks = [*held, *rest] if held else rest
        if chunks:
            self._send(chunks)

    def _note_held(self, state: _Attempt) -> None:
        stats = self.stats
        stats.peak_held_events = max(stats.peak_held_events, len(state.held or ()))
        stats.peak_held_bytes = max(stats.peak_held_bytes, state.held_bytes)

    def _prepared(self, body: Mapping[str, Any]) -> tuple[URL, bool, bytes, dict[str, str]]:
        """The attempt's URL (parsed once: the host checked is the host connected to), body and headers."""
        url = endpoint_url(self.request.url)  # an InputError if unusable
        custom = is_custom_endpoint(self.adapter, url)
        data = encode_body(body)
        self.stats.bodies_sent.append(data)
        headers = {"Content-Type": "application/json", **self.request.headers}
        if self.request.stream:
            headers.setdefault("Accept", "text/event-stream")
        # Decompressed here, in bounded steps (rxcord.core.inflate), not by aiohttp.
        headers["Accept-Encoding"] = ACCEPT_ENCODING
        return url, custom, data, headers

    def _refused(self, exc: Exception, state: _Attempt) -> None:
        """A refusal raised before or while reading (SSRF, an SSE line too long, an unknown encoding)."""
        name = self.adapter.name
        if isinstance(exc, SsrfRefusedError):
            error = _error(self.redact.text(str(exc)), retryable=False, code="ssrf_refused", original=exc)
            self.offer([RawStreamChunk(provider=name, error=self.redact.error(error))], state)
        elif isinstance(exc, SseLineTooLongError):
            error = _error(str(exc), retryable=False, code="sse_line_too_long", original=exc)
            self.offer([RawStreamChunk(provider=name, error=error)], state)
        else:
            self.offer([_malformed(name, self.redact.text(str(exc)), "")], state)

    async def _fetch_aiohttp(
        self, url: URL, custom: bool, data: bytes, headers: dict[str, str], state: _Attempt
    ) -> None:
        """The attempt through aiohttp, its chunks offered: a batch per piece read from the network.

        ``BATCH_EVENTS`` events at most per batch; errors come as one-chunk batches.
        """
        session = await self._session(url, custom)
        # The first-byte bound, then the idle bound between pieces, on one timer (IdleWatch).
        watch = IdleWatch(self.cfg.first_byte_timeout, context=self.context).start()
        response: aiohttp.ClientResponse | None = None
        try:
            response = await session.request(
                self.request.method,
                url,
                data=data,
                headers=headers,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=self.cfg.connect_timeout),
                allow_redirects=False,
                auto_decompress=False,
                ssl=self.cfg.tls if self.cfg.tls is not None else True,
            )
            self.stats.readers.append("aiohttp")
            watch.rebound(self.cfg.idle_timeout)
            answer = _Answer(response.status, response.headers, response.url, response.content.readany)
            await self._read(answer, state, watch)
        except asyncio.CancelledError as exc:
            if watch.stop(asyncio.CancelledError):
                raise TimeoutError from exc
            raise
        finally:
            watch.stop(None)
            await self._release(response, session)

    async def _release(self, response: aiohttp.ClientResponse | None, session: aiohttp.ClientSession) -> None:
        """The end of an aiohttp attempt: its response released, its own session closed."""
        if response is not None:
            # A body not read to its end closes the connection instead of pooling it.
            response.release()
            self._mark_closed()
            await response.wait_for_close()
        if session is not self.session:
            await session.close()

    def _ended(self, state: _Attempt) -> None:
        """The attempt is over: what it held passes on, unless it failed before commitment."""
        self._note_held(state)
        if state.failed is None:
            held = state.take_held()
            if held:
                self._send(held)

    def _failed(self, exc: Exception, state: _Attempt) -> None:
        """The attempt raised a transport failure: offered as its error chunk."""
        if isinstance(exc, SsrfRefusedError | SseLineTooLongError | UndecodableBodyError):
            self._refused(exc, state)
        else:
            self._read_failed(exc, state)

    def _read_failed(self, exc: Exception, state: _Attempt) -> None:
        """A failed connection; while the events are read (not a stall), it cut the stream."""
        name = self.adapter.name
        if state.in_events and not isinstance(exc, TimeoutError):
            if state.terminal:
                return  # the end marker was read: closing the connection after it cuts nothing
            detail = self.redact.text(f"{type(exc).__name__}: {exc}")[:500]
            chunk = _cut(name, f"the connection failed before the stream's end marker ({detail})", exc)
            self.offer([chunk], state)
            return
        error = self.redact.error(classify_exception(exc, provider=name))
        self.offer([RawStreamChunk(provider=name, error=error)], state)

    def _mark_closed(self) -> None:
        self.stats.closed = True

    def _uses_socket(self, custom: bool) -> bool:
        """The reader of this attempt (``TransportConfig.reader``)."""
        choice = self.cfg.reader
        if choice != "auto":
            return choice == "socket"
        if self.session is None:
            return True
        # The caller's session serves what it would serve on the aiohttp path (its pooled
        # connections, its proxy settings): a provider's origin, or a custom IP literal.
        return custom and not _literal_host(endpoint_host(self.request.url))

    async def _fetch_socket(
        self, url: URL, custom: bool, data: bytes, headers: dict[str, str], state: _Attempt
    ) -> bool:
        """The attempt through the socket reader: the SSRF guard's addresses, never a second lookup.

        ``False``: the response is one the reader does not serve (nothing of it was read).
        """
        addresses = None
        if custom:
            # Raises before any connection exists; the connection goes to these addresses only.
            addresses = await self.cfg.ssrf_guard.check(
                endpoint_host(url), allow_private_network=self.cfg.allow_private_network
            )
        # The connect bound, the first-byte bound (both from now), then the idle bound between
        # pieces, on one timer (IdleWatch): no cancelled timer of the connect bound left behind.
        cfg = self.cfg
        watch = IdleWatch(min(cfg.connect_timeout, cfg.first_byte_timeout), context=self.context).start()
        state.watch = watch
        response: SocketResponse | None = None
        try:
            response = await open_request(
                self.request.method,
                url,
                headers,
                data,
                addresses=addresses,
                tls=cfg.tls,
                connect_timeout=None,
                on_transport=state.connected,
            )
            if response is None:
                return False
            self.stats.readers.append("socket")
            watch.rebound(self.cfg.idle_timeout)
            answer = _Answer(response.status, response.headers, response.url, response.read, response)
            await self._read(answer, state, watch)
        except asyncio.CancelledError as exc:
            if watch.stop(asyncio.CancelledError):
                raise TimeoutError from exc
            raise
        finally:
            watch.stop(None)
            if response is not None:
                response.close()
                self._mark_closed()
        return True

    async def _session(self, url: URL, custom: bool) -> aiohttp.ClientSession:
        """The caller's session, or one of the attempt's own (closed by ``_fetch_aiohttp``)."""
        connector: aiohttp.TCPConnector | None = None
        if custom:
            # Raises before any connection exists; a host name gets a connector pinned to the
            # checked addresses, an IP literal needs none (aiohttp connects to it without a lookup).
            connector = await self.cfg.ssrf_guard.connector(
                url, allow_private_network=self.cfg.allow_private_network
            )
        if connector is None and self.session is not None:
            return self.session
        return aiohttp.ClientSession(connector=connector)

    async def _read(self, answer: _Answer, state: _Attempt, watch: IdleWatch) -> None:
        """The response, read the same way whoever reads it.

        The event stream's read loop is here, awaiting the reads itself (no async generator
        or helper coroutine between the socket and the chain: each layer is resumed per read).
        """
        name = self.adapter.name
        status, response_headers, pushed = answer.status, answer.headers, answer.pushed
        ctype = response_headers.get("Content-Type", "")
        encoding = response_headers.get("Content-Encoding", "")
        read = body_reader(answer.read, encoding, READ_SLICE)
        if status >= 400:
            text = await _read_capped(read, self.cfg.max_body_bytes, watch)
            decoded = _decode_json(self.redact.text(text))
            error = classify_http_error(
                status, decoded, provider=name, headers=dict(response_headers), url=str(answer.url)
            )
            chunk = RawStreamChunk(provider=name, error=error, data=decoded, metadata={"status": status})
            self.offer([chunk], state)
            return
        if 300 <= status < 400:
            # Redirects are never followed: a custom endpoint could bounce us to an unchecked host.
            error = ProviderError(
                type=ErrorType.API_ERROR,
                message=f"the provider answered HTTP {status} (a redirect); redirects are not followed",
                retryable=False,
                code="redirect_refused",
                status=status,
            )
            self.offer([RawStreamChunk(provider=name, error=error, metadata={"status": status})], state)
            return
        if "text/event-stream" not in ctype:
            text = self.redact.text(await _read_capped(read, self.cfg.max_body_bytes, watch))
            decoded = _decode_json(text)
            if isinstance(decoded, str):
                self.offer([_malformed(name, "response body is not JSON", text)], state)
                return
            metadata = {"complete": True, "status": status}
            self.offer([RawStreamChunk(provider=name, data=decoded, metadata=metadata)], state)
            return
        state.begin_events(watch)
        if pushed is None:
            while piece := await read():
                if state(piece):
                    return
                # Handled: not kept alive (nor what it was cut from) while the next read is awaited.
                del piece
            state.end()
            return
        # Pushed by the socket reader: each piece handled in data_received, by the same attempt
        # (through the bounded inflater); the task only waits for the end, a stop or a failure,
        # here (no coroutine of its own: a waiting stream would hold it).
        inflater = body_inflater(encoding, READ_SLICE)
        on_piece = state if inflater is None else _Inflating(state, inflater)
        try:
            stopped = await pushed.stream(on_piece)
        except asyncio.CancelledError:
            if isinstance(pushed.failure, _DownstreamError):
                # The observer raised and disposed (cancelling this task) inside data_received:
                # its exception is still its error, as on the aiohttp path.
                raise pushed.failure from None
            raise
        if not stopped:
            on_piece.end()

    def commit_past_bound(self, state: _Attempt) -> None:
        """Past the held-bytes bound: commit (bytes that carried nothing, blank lines, comments, count)."""
        try:
            self._commit(state, [])
        except Exception as exc:
            raise _DownstreamError(exc) from exc

    def events(
        self, fields: list[tuple[bytes, str | None, str | None]], state: _Attempt, *, at_end: bool = False
    ) -> bool:
        """Decode and offer parsed events, ``BATCH_EVENTS`` at a time; ``True``: stop reading.

        At ``[DONE]`` (the stream's end) reading stops too.
        """
        if not fields:
            return False
        name, ends = self.name, self.adapter.ends_stream
        redact = self.redact if self.redacts else None  # known once: no truth test per read
        # At most BATCH_EVENTS decoded events at a time: their decoded JSON is several times
        # the bytes; downstream, each batch is done with before the next is decoded.
        for start in range(0, len(fields), BATCH_EVENTS):
            part = fields if len(fields) <= BATCH_EVENTS else fields[start : start + BATCH_EVENTS]
            batch, done = _event_chunks(name, part, at_end=at_end, redact=redact)
            state.seen += len(batch)
            if batch:
                if not state.terminal:
                    if ends(batch):
                        state.terminal = True
                    elif not done:  # else the batch ends before [DONE]: the stream's end
                        state.last_raw, state.last_event, _ = part[-1]
                if at_end and batch[-1].error is not None and batch[-1].error.code == TRUNCATED:
                    state.cut = True
                if self.offer(batch, state):
                    return True
            if done:
                state.terminal = True
                self.end_of_events(state)
                return True
        return False

    def end_of_events(self, state: _Attempt) -> None:
        """The body ended (or ``[DONE]`` came): an empty stream, or one cut before its end marker."""
        if not state.seen:
            self.offer([_empty(self.adapter.name)], state)
        elif not (state.terminal or state.cut or self._last_failed(state)):
            # An error event is a stream's last word (providers close after it): nothing was cut.
            message = "the stream ended between two events, before its end marker (a cut connection)"
            self.offer([_cut(self.adapter.name, message)], state)

    def _last_failed(self, state: _Attempt) -> bool:
        """Whether the latest event was an error (decoded again: asked once, at a cut end)."""
        data = self.redact.data(state.last_raw) if self.redacts else state.last_raw
        return self.adapter.rejection(_event_chunk(self.name, data, state.last_event)) is not None


def _event_chunks(
    provider: str,
    fields: list[tuple[bytes, str | None, str | None]],
    *,
    at_end: bool = False,
    redact: Redactor | None = None,
) -> tuple[list[RawStreamChunk], bool]:
    """The chunks of parsed events, up to ``[DONE]``; and whether ``[DONE]`` was seen.

    *at_end*: these events were still pending when the body ended; one that is not valid
    JSON was cut off mid-event (a truncated body), which is reported as such. *redact*:
    the secrets replaced in each event's bytes (``None``: there are none).
    """
    batch: list[RawStreamChunk] = []
    scrub = redact.data if redact is not None else None
    for raw, event, _ in fields:
        # Redacted before decoding: a secret never reaches a decoded value.
        data = scrub(raw) if scrub is not None else raw
        if data == b"[DONE]":
            return batch, True
        chunk = _event_chunk(provider, data, event)
        if at_end and chunk.error is not None:
            chunk = _truncated(provider, chunk.data)
        batch.append(chunk)
    return batch, False


def _error_chunk(
    provider: str,
    message: str,
    *,
    retryable: bool,
    code: str,
    data: object = None,
    original: Exception | None = None,
) -> RawStreamChunk:
    """A chunk carrying a transport-level ``api_error`` (the adapter's ``rejection`` sees it)."""
    error = _error(message, retryable=retryable, code=code, original=original)
    return RawStreamChunk(provider=provider, error=error, data=data)


def _error(message: str, *, retryable: bool, code: str, original: object = None) -> ProviderError:
    return ProviderError(
        type=ErrorType.API_ERROR, message=message, retryable=retryable, code=code, original_error=original
    )


def _truncated(provider: str, text: object) -> RawStreamChunk:
    # Like a connection reset mid-body: the provider may well succeed if asked again.
    message = "the stream ended in the middle of an event (truncated body)"
    return _error_chunk(provider, message, retryable=True, code=TRUNCATED, data=text)


def _cut(provider: str, message: str, original: Exception | None = None) -> RawStreamChunk:
    # Between two events or in one: without its end marker the answer may be incomplete.
    return _error_chunk(provider, message, retryable=True, code=TRUNCATED, original=original)


def _empty(provider: str) -> RawStreamChunk:
    # A 200 with no event at all is a failed answer, not an empty one: fallbacks may retry it.
    message = "the provider sent an empty stream (no events)"
    return _error_chunk(provider, message, retryable=True, code="empty_response")


def _event_chunk(provider: str, data: bytes, event: str | None) -> RawStreamChunk:
    """One SSE event's chunk: its data (UTF-8 bytes, as the parser gives it) decoded as JSON."""
    if _orjson_loads is not None and _LONG_NUMBER not in data.translate(_DIGIT_MAP):
        try:
            decoded = _orjson_loads(data)
        except ValueError:
            pass  # the standard library decides (and words the error)
        else:
            if not safe_json.too_deep(data):
                return raw_chunk(provider, decoded, event, _NO_METADATA)
    text = data.decode("utf-8", errors="replace")
    try:
        decoded = safe_json.loads(text)
    except MalformedJsonError as exc:
        return _malformed(provider, f"malformed SSE data in event {event or 'message'} ({exc})", text)
    return raw_chunk(provider, decoded, event, _NO_METADATA)


def _malformed(provider: str, message: str, text: str) -> RawStreamChunk:
    # Broken JSON cannot be turned into text safely: a typed error instead of lost or garbled output.
    return _error_chunk(provider, message, retryable=False, code="malformed_response", data=text[:2000])


async def _read_capped(read: Read, cap: int, watch: IdleWatch) -> str:
    async def touched() -> bytes:
        piece = await read()
        watch.touch()  # every piece is progress: the idle bound is between pieces
        return piece

    try:
        body = await read_capped(touched, cap, overflow=Overflow.RAISE)
    except ResponseTooLargeError as exc:
        # A cut answer is a failed read (classified and retried as one), never a shortened body.
        raise aiohttp.ClientPayloadError(str(exc)) from exc
    return body.text()


def _literal_host(host: str) -> bool:
    """Whether *host* is an IP literal (aiohttp connects to one without a lookup)."""
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _decode_json(text: str) -> Any:
    """The JSON value of *text*; *text* itself when it is not JSON (or nested too deeply)."""
    try:
        return safe_json.loads(text)
    except MalformedJsonError:
        return text
