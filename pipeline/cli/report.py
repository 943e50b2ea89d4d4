"""The CLI's JSON output (cattrs at the edge).

``rxcord replay --json`` prints exactly one object of this shape (the
contract other work checks against)::

    {"status": str, "text": str, "reasoning": str|null,
     "function_calls": [{"name": str, "args": object}],
     "finish_reason": str|null, "raw_finish_reason": str|null,
     "error": null|{"type": str, "message": str, "retryable": bool, "code": str|int|null},
     "usage": null|{"input_tokens": int, "output_tokens": int, "cache_read_tokens": int|null,
                    "cache_write_tokens": int|null, "cost": float|null},
     "serving_provider": str|null,
     "messages": [{"content": str, ...the other payload fields as sent}],
     "provider_connection_closed": bool}
"""

from __future__ import annotations

__all__ = ("ReplayReport", "converter", "report_from_result")

from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from rxcord.core.state import StreamResult
from rxcord.core.types import FunctionCall, ProviderError, Usage


@attrs.frozen(kw_only=True)
class CallReport:
    """A function call as reported."""

    name: str
    args: Mapping[str, Any]


@attrs.frozen(kw_only=True)
class ErrorReport:
    """An error as reported."""

    type: str
    message: str
    retryable: bool
    code: str | int | None


@attrs.frozen(kw_only=True)
class UsageReport:
    """Usage as reported."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost: float | None


@attrs.frozen(kw_only=True)
class ReplayReport:
    """The JSON object ``rxcord replay --json`` prints."""

    status: str
    text: str
    reasoning: str | None
    function_calls: tuple[CallReport, ...]
    finish_reason: str | None
    raw_finish_reason: str | None
    error: ErrorReport | None
    usage: UsageReport | None
    serving_provider: str | None
    messages: tuple[Mapping[str, Any], ...]
    provider_connection_closed: bool


converter = cattrs.Converter()
"""The one converter for JSON out (and wire-shaped values in)."""


def _call(call: FunctionCall) -> CallReport:
    return CallReport(name=call.name, args=dict(call.args))


def _error(error: ProviderError | None) -> ErrorReport | None:
    if error is None:
        return None
    return ErrorReport(
        type=error.type.value, message=error.message, retryable=error.retryable, code=error.code
    )


def _usage(usage: Usage | None) -> UsageReport | None:
    if usage is None:
        return None
    return UsageReport(
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost=usage.cost,
    )


def report_from_result(result: StreamResult, *, connection_closed: bool = False) -> ReplayReport:
    """The report for *result*."""
    return ReplayReport(
        status=result.status.value,
        text=result.visible_text,
        reasoning=result.reasoning,
        function_calls=tuple(_call(call) for call in result.function_calls),
        finish_reason=result.finish_reason.value if result.finish_reason is not None else None,
        raw_finish_reason=result.raw_finish_reason,
        error=_error(result.error),
        usage=_usage(result.usage),
        serving_provider=result.serving_provider,
        messages=tuple(dict(message.payload) for message in result.messages),
        provider_connection_closed=connection_closed,
    )


def to_json_obj(report: ReplayReport) -> dict[str, Any]:
    """The report as plain JSON values."""
    obj: dict[str, Any] = converter.unstructure(report)
    return obj
