"""Human-readable rendering of a replay report (``rxcord replay`` without ``--json``)."""

from __future__ import annotations

__all__ = ("render_report",)

from collections.abc import Mapping
from typing import Any

_RULE = "─" * 60


def render_report(report: Mapping[str, Any]) -> str:
    """Messages as a person would read them, then a one-paragraph summary."""
    lines: list[str] = []
    messages = report.get("messages") or []
    for index, message in enumerate(messages, 1):
        lines.append(f"{_RULE} message {index}/{len(messages)}")
        content = message.get("content")
        if content:
            lines.append(content)
        for embed in message.get("embeds") or []:
            lines.append(f"[embed] {embed.get('title', '')}: {embed.get('description', '')}")
    lines.append(_RULE)
    lines.append(f"status: {report['status']}   finish: {report.get('finish_reason')}")
    if report.get("reasoning"):
        reasoning = report["reasoning"]
        lines.append(f"reasoning: {len(reasoning)} chars (kept out of Discord)")
    for call in report.get("function_calls") or []:
        lines.append(f"function call: {call['name']}({call['args']})")
    if report.get("error"):
        error = report["error"]
        lines.append(f"error: {error['type']} (retryable={error['retryable']}): {error['message']}")
    if report.get("usage"):
        usage = report["usage"]
        lines.append(
            f"usage: {usage['input_tokens']} in / {usage['output_tokens']} out, cost {usage.get('cost')}"
        )
    if report.get("serving_provider"):
        lines.append(f"served by: {report['serving_provider']}")
    return "\n".join(lines) + "\n"
