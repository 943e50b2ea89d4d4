"""Token usage, normalized across providers, and the per-request usage callback (stage 03).

One meaning for every provider (``rxcord.core.types.Usage``):

* ``input_tokens`` is all input processed, cache reads and writes included.
  OpenAI-compatible ``prompt_tokens`` and Gemini ``promptTokenCount`` already
  include cached input, so their cache counts are *not* added again; Anthropic
  reports uncached, cache-read and cache-creation input separately, so the
  three are added to form the total.
* ``cache_read_tokens`` / ``cache_write_tokens`` are subsets of that total,
  clamped to it (a read and a write never add up to more than the total).
  An absent field is ``None`` (unknown); a reported ``0`` stays ``0``.
* ``output_tokens`` counts every generated token, reasoning included.
* ``cost`` is what the provider reported (OpenRouter's ``usage.cost``), never an estimate.

Bounds: a token count is an integer in ``[0, MAX_TOKENS]`` (10**9 per field: no model
reads or writes a billion tokens in one response), a cost a finite number in
``[0, MAX_COST]`` (1e6 USD for one response). A value past them is treated like any
other value that is not a count or a cost (a negative number, a bool, text): the field is
unknown (``None``; an input or output total then counts 0), and a warning names the cap.
A total added up from parts each within the cap (Anthropic's input, Gemini's output) that
passes it makes the whole usage invalid: the normalizer returns ``None`` (no usage), with a
warning. A ``Usage`` built elsewhere (a custom adapter, a hook) is checked where it is reported:
``report_usage`` refuses one that breaks a bound (``usage_problem`` says which), with a
warning, instead of sending 10**100 tokens or an infinite cost to the recorders.

``sum_turn_usage`` adds the responses of one turn; a cache field or the cost
survives only if every response that reported usage reported it.

The usage callback is bound to the request with ``contextvars``
(``with_usage_callback``), so nested and concurrent requests each reach
their own recorder. ``report_usage`` is called once per completed provider
response; a callback that raises is logged and never fails inference.
"""

from __future__ import annotations

__all__ = (
    "MAX_COST",
    "MAX_TOKENS",
    "LedgerEntry",
    "ReviewLedger",
    "TurnUsageSample",
    "UsageReport",
    "clamp_usage",
    "from_anthropic",
    "from_gemini",
    "from_openai",
    "record_turn_usage",
    "register_turn_usage_hook",
    "report_usage",
    "sum_turn_usage",
    "turn_usage_sample",
    "usage_callback",
    "usage_problem",
    "usage_reporter",
    "with_usage_callback",
    "with_usage_reporter",
)

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, Literal

import attrs
from loguru import logger

from rxcord.core.types import Usage

_log = logger.bind(stage="03-usage")

MAX_TOKENS: Final = 10**9
"""The largest token count one usage field may hold (one response); more is not a count."""
MAX_COST: Final = 1e6
"""The largest cost (USD) one response may report; more, like NaN or infinity, is not a cost."""
_MAX_DIGITS: Final = len(str(MAX_TOKENS))
"""Longer digit strings are above ``MAX_TOKENS`` (and are not converted: ``int`` of a huge text is slow)."""


def _count(value: object) -> int | None:
    """A token count, or ``None`` when absent or not a count (bools, negatives, above ``MAX_TOKENS``)."""
    if isinstance(value, bool) or value is None:
        return None
    count: int | None = None
    if isinstance(value, int):
        count = value if value >= 0 else None
    elif isinstance(value, float) and math.isfinite(value) and value >= 0:
        count = int(min(value, MAX_TOKENS + 1.0))
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        count = int(value) if len(value) <= _MAX_DIGITS else MAX_TOKENS + 1
    if count is not None and count > MAX_TOKENS:
        _log.warning("usage token count above {cap}: not a count (treated as unreported)", cap=MAX_TOKENS)
        return None
    return count


def _cost(value: object) -> float | None:
    """A cost, or ``None`` when absent or not one (bools, NaN, infinities, negatives, above ``MAX_COST``)."""
    if isinstance(value, bool) or value is None:
        return None
    cost: float | None = None
    if isinstance(value, int):
        cost = float(min(value, int(MAX_COST) + 1))  # an int too large for a float is still too large
    elif isinstance(value, float):
        cost = value
    elif isinstance(value, str):
        try:
            cost = float(value)
        except ValueError:
            return None
    if cost is None or not math.isfinite(cost) or cost < 0:
        return None
    if cost > MAX_COST:
        _log.warning("usage cost above {cap} USD: not a cost (treated as unreported)", cap=MAX_COST)
        return None
    return cost


def _bounded_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS


def usage_problem(usage: Usage) -> str | None:
    """Why *usage* breaks the bounds (see the module docstring), or ``None`` when it is sane."""
    for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
        value = getattr(usage, name)
        if value is None and name.startswith("cache_"):
            continue
        if not _bounded_count(value):
            return f"{name} is not a token count in [0, {MAX_TOKENS}]"
    cost = usage.cost
    # The range check alone refuses NaN and infinities too (every comparison with NaN is false),
    # and compares an int too large for a float exactly instead of overflowing.
    if cost is not None and (
        isinstance(cost, bool) or not isinstance(cost, (int, float)) or not 0 <= cost <= MAX_COST
    ):
        return f"cost is not a finite amount in [0, {MAX_COST:g}]"
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _valid(usage: Usage) -> Usage | None:
    """*usage*, or ``None`` (with a warning) when a total added up from its parts breaks a bound."""
    problem = usage_problem(usage)
    if problem is None:
        return usage
    _log.warning("invalid usage ignored: {problem}", problem=problem)
    return None


def clamp_usage(usage: Usage) -> Usage:
    """*usage* with its cache subsets clamped to the input total (reads first, then writes)."""
    read = usage.cache_read_tokens
    write = usage.cache_write_tokens
    total = usage.input_tokens
    if read is not None:
        read = min(read, total)
    if write is not None:
        write = min(write, total - (read or 0))
    if read == usage.cache_read_tokens and write == usage.cache_write_tokens:
        return usage
    return Usage(
        input_tokens=total,
        output_tokens=usage.output_tokens,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cost=usage.cost,
        estimated=usage.estimated,
    )


def from_openai(obj: object) -> Usage | None:
    """Normalize an OpenAI-compatible ``usage`` object (OpenAI, OpenRouter, NVIDIA, vLLM, DeepSeek).

    ``prompt_tokens`` (cached input included) is the input total;
    ``prompt_tokens_details.cached_tokens`` (or DeepSeek's ``prompt_cache_hit_tokens``)
    is the cache read; ``cache_write_tokens`` (OpenRouter's ``prompt_tokens_details``)
    or ``cache_creation_input_tokens`` is the cache write; ``completion_tokens``
    (reasoning included) is the output; OpenRouter's ``cost`` is kept.

    Returns:
        ``None`` when *obj* is not a usage object with token counts.
    """
    if not isinstance(obj, Mapping):
        return None
    prompt = _count(obj.get("prompt_tokens"))
    completion = _count(obj.get("completion_tokens"))
    if prompt is None and completion is None:
        return None
    details = _mapping(obj.get("prompt_tokens_details"))
    read = _count(details.get("cached_tokens"))
    if read is None:
        read = _count(obj.get("prompt_cache_hit_tokens"))
    write = _count(details.get("cache_write_tokens"))
    if write is None:
        write = _count(obj.get("cache_write_tokens"))
    if write is None:
        write = _count(obj.get("cache_creation_input_tokens"))
    if completion is None:
        total = _count(obj.get("total_tokens"))
        completion = max(0, total - (prompt or 0)) if total is not None else 0
    return clamp_usage(
        Usage(
            input_tokens=prompt or 0,
            output_tokens=completion,
            cache_read_tokens=read,
            cache_write_tokens=write,
            cost=_cost(obj.get("cost")),
        )
    )


def from_gemini(usage_metadata: object) -> Usage | None:
    """Normalize Gemini ``usageMetadata``.

    ``promptTokenCount`` already includes ``cachedContentTokenCount`` (the cache
    read) and tool-use prompt tokens are input too; output is
    ``candidatesTokenCount + thoughtsTokenCount``. Gemini reports no cache write.

    Returns:
        ``None`` when *usage_metadata* carries no token counts.
    """
    if not isinstance(usage_metadata, Mapping):
        return None
    prompt = _count(usage_metadata.get("promptTokenCount"))
    candidates = _count(usage_metadata.get("candidatesTokenCount"))
    thoughts = _count(usage_metadata.get("thoughtsTokenCount"))
    if prompt is None and candidates is None and thoughts is None:
        return None
    tool_prompt = _count(usage_metadata.get("toolUsePromptTokenCount")) or 0
    usage = Usage(
        input_tokens=(prompt or 0) + tool_prompt,
        output_tokens=(candidates or 0) + (thoughts or 0),
        cache_read_tokens=_count(usage_metadata.get("cachedContentTokenCount")),
    )
    return _valid(clamp_usage(usage))


def from_anthropic(
    input_tokens: int | None,
    cache_read: int | None,
    cache_creation: int | None,
    output_tokens: int | None,
) -> Usage | None:
    """Normalize Anthropic usage: the input total is uncached + cache read + cache creation.

    Each count goes through the same bounds as the other providers' (a negative or a
    count above ``MAX_TOKENS`` is unreported); ``None`` when the input total passes
    ``MAX_TOKENS`` (invalid usage).
    """
    input_tokens, cache_read = _count(input_tokens), _count(cache_read)
    cache_creation, output_tokens = _count(cache_creation), _count(output_tokens)
    usage = Usage(
        input_tokens=(input_tokens or 0) + (cache_read or 0) + (cache_creation or 0),
        output_tokens=output_tokens or 0,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_creation,
    )
    return _valid(clamp_usage(usage))


def sum_turn_usage(segments: Iterable[Usage | None]) -> Usage | None:
    """Add up the responses of one turn.

    Segments without usage are skipped. A cache field or the cost is kept only
    when every segment with usage reported it (otherwise the sum would look
    exact while missing a part). The sum is ``estimated`` when any part is.

    Returns:
        ``None`` when no segment reported usage.
    """
    reported = [segment for segment in segments if segment is not None]
    if not reported:
        return None

    def total_of(values: list[int | None]) -> int | None:
        return None if any(value is None for value in values) else sum(value or 0 for value in values)

    costs = [segment.cost for segment in reported]
    return clamp_usage(
        Usage(
            input_tokens=sum(segment.input_tokens for segment in reported),
            output_tokens=sum(segment.output_tokens for segment in reported),
            cache_read_tokens=total_of([segment.cache_read_tokens for segment in reported]),
            cache_write_tokens=total_of([segment.cache_write_tokens for segment in reported]),
            cost=None if any(cost is None for cost in costs) else sum(cost or 0.0 for cost in costs),
            estimated=any(segment.estimated for segment in reported),
        )
    )


usage_callback: ContextVar[Callable[[Usage], None] | None] = ContextVar("rxcord_usage_callback", default=None)
"""The recorder of the current request: ``report_usage`` sends each completed response's usage to it."""


@contextmanager
def with_usage_callback(callback: Callable[[Usage], None] | None) -> Iterator[None]:
    """Bind *callback* as the usage recorder for the work inside the block.

    Pass ``None`` to bind "no recorder" explicitly (an unfunded nested request);
    the outer binding is restored on exit. Tasks created inside the block copy
    the binding (``contextvars`` semantics).
    """
    token = usage_callback.set(callback)
    try:
        yield
    finally:
        usage_callback.reset(token)


@attrs.frozen(kw_only=True)
class UsageReport:
    """One completed provider response's usage, with the identity of the request it answered."""

    usage: Usage
    provider: str = ""
    model: str = ""
    request_id: str | None = None
    """The provider's id of the response (``chatcmpl-...``, ``gen-...``, ``msg_...``, ``responseId``)."""


usage_reporter: ContextVar[Callable[[UsageReport], None] | None] = ContextVar(
    "rxcord_usage_reporter", default=None
)
"""The full-report recorder of the current request (usage plus provider, model and request id)."""


@contextmanager
def with_usage_reporter(reporter: Callable[[UsageReport], None] | None) -> Iterator[None]:
    """Bind *reporter* to receive a ``UsageReport`` per completed response (``contextvars`` semantics)."""
    token = usage_reporter.set(reporter)
    try:
        yield
    finally:
        usage_reporter.reset(token)


def report_usage(
    usage: Usage | None, *, provider: str = "", model: str = "", request_id: str | None = None
) -> None:
    """Send *usage* to the bound recorders, if any (call once per completed provider response).

    The usage callback gets the ``Usage``; the usage reporter gets a ``UsageReport`` that
    also carries the provider, the model and the provider's request identity. Does nothing
    without a recorder or without usage, and reports nothing for usage past the bounds
    (``usage_problem``; a warning says why). A recorder that raises is logged and ignored:
    reporting never fails inference.
    """
    if usage is None:
        return
    problem = usage_problem(usage)
    if problem is not None:
        # Invalid usage is a note in the log, never a crash and never a bogus bill.
        _log.warning("invalid usage not reported ({provider}): {problem}", provider=provider, problem=problem)
        return
    callback = usage_callback.get()
    if callback is not None:
        try:
            callback(usage)
        except Exception as exc:
            _log.opt(exception=exc).warning("usage recorder failed; inference continues")
    reporter = usage_reporter.get()
    if reporter is not None:
        try:
            reporter(UsageReport(usage=usage, provider=provider, model=model, request_id=request_id))
        except Exception as exc:
            _log.opt(exception=exc).warning("usage reporter failed; inference continues")


# ---------------------------------------------------------------------------------------------------------
# The per-turn usage sample (the overview's recordUsageStats)

Measurement = Literal["measured", "estimated"]

_CHARS_PER_TOKEN = 4
"""The estimate for a response that reported no usage: about four characters per token."""


@attrs.frozen(kw_only=True)
class TurnUsageSample:
    """The ``turn_usage`` sample: one per turn, to the log and to the registered metrics hooks.

    It carries no conversation or account identifiers (no channel, guild, user or key).
    """

    provider: str
    model: str
    measurement: Measurement
    """``estimated`` when any response of the turn had no native usage (its tokens are estimated)."""
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None
    """``None``: unknown (some response did not report it)."""
    cache_write_tokens: int | None
    cost: float | None
    """The reported cost summed over the turn's requests; ``None`` unless every request reported one."""
    requests: int
    """Provider responses in the turn (ledger entries, when a ledger supplied the accounting)."""
    accounting: Literal["stream", "ledger"] = "stream"
    """Who supplied the numbers: the turn's stream segments, or its response-review ledger."""


@attrs.frozen(kw_only=True)
class LedgerEntry:
    """One request a response-review ledger accounts for, with the source of its numbers."""

    usage: Usage
    measurement: Measurement
    """``measured``: the provider reported it; ``estimated``: the reviewer estimated it."""


@attrs.define
class ReviewLedger:
    """A turn's response-review ledger: when it holds entries, it supplies the turn's accounting.

    A response reviewer (or anything that re-runs, re-prices or reconciles the turn's requests)
    records one entry per request it accounts for. Each entry keeps its measurement source, and
    one estimated entry makes the whole turn ``estimated``, even when other requests reported
    native usage. An empty ledger supplies nothing: the stream segments are used.
    """

    entries: list[LedgerEntry] = attrs.field(factory=list)

    def record(self, usage: Usage, *, measurement: Measurement = "measured") -> None:
        """Add one request's usage.

        Raises:
            ValueError: *usage* breaks the usage bounds (``usage_problem`` says which), or
                *measurement* is neither ``measured`` nor ``estimated``.
        """
        problem = usage_problem(usage)
        if problem is not None:
            raise ValueError(f"review ledger entry refused: {problem}")
        if measurement not in ("measured", "estimated"):
            raise ValueError(f"review ledger entry refused: measurement {measurement!r}")
        self.entries.append(LedgerEntry(usage=usage, measurement=measurement))


def _estimate(output_text: str) -> Usage:
    return Usage(output_tokens=math.ceil(len(output_text) / _CHARS_PER_TOKEN))


def turn_usage_sample(
    provider: str,
    model: str,
    responses: Sequence[tuple[Usage | None, str]],
    *,
    ledger: ReviewLedger | None = None,
) -> TurnUsageSample | None:
    """The sample for a turn whose responses reported *responses* (``(usage or None, output text)``).

    A *ledger* with entries supplies the accounting instead of the responses (the overview:
    "response-review ledgers supply accounting when present; otherwise stream segments supply
    it"), labelled ``estimated`` when any entry is. Otherwise a response without usage is
    estimated from its output text (input unknown: counted 0), and the sample is then labelled
    ``estimated``, as it is when a response's usage is itself an estimate (``Usage.estimated``:
    a stopped stream's). ``None`` for a turn with no response and no ledger entry.
    """
    if ledger is not None and ledger.entries:
        return _ledger_sample(provider, model, ledger.entries)
    if not responses:
        return None
    estimated = any(usage is None or usage.estimated for usage, _ in responses)
    total = sum_turn_usage(usage if usage is not None else _estimate(text) for usage, text in responses)
    assert total is not None
    return _sample(provider, model, total, estimated=estimated, requests=len(responses))


def _ledger_sample(provider: str, model: str, entries: Sequence[LedgerEntry]) -> TurnUsageSample:
    total = sum_turn_usage(entry.usage for entry in entries)
    assert total is not None
    estimated = any(entry.measurement == "estimated" for entry in entries)
    return _sample(provider, model, total, estimated=estimated, requests=len(entries), accounting="ledger")


def _sample(
    provider: str,
    model: str,
    total: Usage,
    *,
    estimated: bool,
    requests: int,
    accounting: Literal["stream", "ledger"] = "stream",
) -> TurnUsageSample:
    """The turn's sample from its summed usage."""
    return TurnUsageSample(
        provider=provider,
        model=model,
        measurement="estimated" if estimated else "measured",
        input_tokens=total.input_tokens,
        output_tokens=total.output_tokens,
        cache_read_tokens=total.cache_read_tokens,
        cache_write_tokens=total.cache_write_tokens,
        cost=total.cost,
        requests=requests,
        accounting=accounting,
    )


_turn_hooks: list[tuple[object, Callable[[TurnUsageSample], None]]] = []


def register_turn_usage_hook(hook: Callable[[TurnUsageSample], None]) -> Callable[[], None]:
    """Register a metrics hook for ``turn_usage`` samples; the disposer unregisters it.

    Every registered hook receives every sample. The disposer removes this registration
    only, and is idempotent: safe in any order.
    """
    token = object()
    _turn_hooks.append((token, hook))

    def dispose() -> None:
        for index, (entry, _) in enumerate(_turn_hooks):
            if entry is token:
                del _turn_hooks[index]
                return

    return dispose


def record_turn_usage(sample: TurnUsageSample | None) -> None:
    """Emit *sample*: one ``turn_usage`` log line and a call to each registered hook.

    A hook that raises is logged and ignored (metrics never fail a turn).
    """
    if sample is None:
        return
    _log.bind(metric="turn_usage", **attrs.asdict(sample)).info(
        "turn_usage {provider}/{model}: {measurement}, {input} in, {output} out, cost {cost}",
        provider=sample.provider,
        model=sample.model,
        measurement=sample.measurement,
        input=sample.input_tokens,
        output=sample.output_tokens,
        cost=sample.cost,
    )
    for _, hook in tuple(_turn_hooks):
        try:
            hook(sample)
        except Exception as exc:
            _log.opt(exception=exc).warning("turn_usage hook failed; the turn goes on")
