"""Stage 01 of Anthropic Messages: a ``ChatRequest`` as a Messages API body.

``build_anthropic_body`` writes the body: the system prompt apart, turns as content blocks,
tool calls as ``tool_use`` blocks and their results as ``tool_result`` blocks, a thinking
budget from the sampler's reasoning effort. Claude signs each thinking block, and a tool-use
turn must be sent back with its thinking blocks, unchanged, before its ``tool_use`` blocks:
``thinking_blocks`` rebuilds them from an assistant ``Message.thoughts`` by one rule. RAW
texts accumulate until a SIGNATURE entry (or a RAW entry carrying a signature) closes the
block; a REDACTED entry is a block of its own; RAW text never closed by a signature cannot be
replayed and is dropped.
"""

from __future__ import annotations

__all__ = (
    "ANTHROPIC_THINKING_BUDGETS",
    "DEFAULT_MAX_TOKENS",
    "MIN_THINKING_BUDGET",
    "build_anthropic_body",
    "thinking_blocks",
    "thinking_budget",
)

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from loguru import logger

from rxcord.core.request import ChatRequest, ImagePart, Message, Role, TextPart
from rxcord.core.types import ThoughtKind, ThoughtLogEntry

_log = logger.bind(stage="01-request", provider="anthropic")

DEFAULT_MAX_TOKENS: Final = 4096
"""``max_tokens`` is required by the API; this is the answer room when the sampler sets none."""

MIN_THINKING_BUDGET: Final = 1024
"""The API's smallest ``budget_tokens``."""

ANTHROPIC_THINKING_BUDGETS: Final[Mapping[str, int]] = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
}
"""``SamplerSettings.reasoning_effort`` to ``thinking.budget_tokens`` (a digit string is taken as is).

``none``/``off``/``0`` leave thinking disabled.
"""

_NO_THINKING: Final = frozenset({"none", "off", "0", "disabled"})

_TOOL_ID_UNSAFE: Final = re.compile(r"[^a-zA-Z0-9_-]")


def thinking_budget(effort: str | None) -> int | None:
    """The thinking budget *effort* asks for, or ``None`` for no thinking."""
    if effort is None:
        return None
    key = effort.strip().lower()
    if key in _NO_THINKING:
        return None
    if key.isdigit():
        return max(int(key), MIN_THINKING_BUDGET)
    budget = ANTHROPIC_THINKING_BUDGETS.get(key)
    if budget is None:
        _log.debug("unknown reasoning effort {effort!r}: using the medium budget", effort=effort)
        budget = ANTHROPIC_THINKING_BUDGETS["medium"]
    return budget


def _image_block(image: ImagePart) -> dict[str, Any] | None:
    if image.data_b64 is not None:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": image.mime_type, "data": image.data_b64},
        }
    if image.url is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    return None


def _content_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for item in message.content:
        if isinstance(item, TextPart):
            if item.text:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": item.text})
        else:
            image = _image_block(item)
            if image is not None:
                blocks.append(image)
    return blocks


def thinking_blocks(thoughts: Iterable[ThoughtLogEntry]) -> list[dict[str, Any]]:
    """Rebuild signed ``thinking`` and ``redacted_thinking`` blocks from thought-log entries.

    See the module docstring for the grouping rule.
    """
    blocks: list[dict[str, Any]] = []
    pending: list[str] = []

    def close(signature: str) -> None:
        blocks.append({"type": "thinking", "thinking": "".join(pending), "signature": signature})
        pending.clear()

    def drop_unsigned() -> None:
        if pending:
            _log.debug(
                "dropped {n} chars of unsigned thinking: they cannot be replayed", n=len("".join(pending))
            )
            pending.clear()

    for entry in thoughts:
        if entry.kind is ThoughtKind.RAW:
            pending.append(entry.text)
            if entry.signature:
                close(entry.signature)
        elif entry.kind is ThoughtKind.SIGNATURE:
            if entry.signature:
                close(entry.signature)
        elif entry.kind is ThoughtKind.REDACTED:
            drop_unsigned()
            data = entry.signature or entry.text
            if data:
                blocks.append({"type": "redacted_thinking", "data": data})
    drop_unsigned()
    return blocks


def _tool_id(call_id: str | None, fallback: str) -> str:
    # Ids from other providers may hold characters Anthropic rejects (^[a-zA-Z0-9_-]+$).
    return _TOOL_ID_UNSAFE.sub("_", call_id) if call_id else fallback


def _tool_result(message: Message, pending: list[tuple[str, str]]) -> dict[str, Any]:
    tool_id = _tool_id(message.tool_call_id, "") if message.tool_call_id else None
    if tool_id is None:
        # No id: answer the earliest unanswered call of that name (or the earliest one).
        match = next((p for p in pending if message.name is None or p[1] == message.name), None)
        tool_id = match[0] if match is not None else "toolu_unknown"
    pending[:] = [p for p in pending if p[0] != tool_id]
    blocks = _content_blocks(message)
    has_image = any(block["type"] == "image" for block in blocks)
    content: str | list[dict[str, Any]] = blocks if has_image else message.text
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content}


def _messages(messages: Iterable[Message]) -> tuple[list[dict[str, Any]], list[str]]:
    """Anthropic ``messages`` and the texts of in-history system messages."""
    out: list[dict[str, Any]] = []
    system: list[str] = []
    pending: list[tuple[str, str]] = []

    def add_user(blocks: list[dict[str, Any]]) -> None:
        # Tool results of one turn share a user message (they must lead it).
        if (
            out
            and out[-1]["role"] == "user"
            and out[-1]["content"][:1]
            and (out[-1]["content"][0]["type"] == "tool_result")
        ):
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": "user", "content": blocks})

    for turn, message in enumerate(messages):
        if message.role is Role.SYSTEM:
            if message.text:
                system.append(message.text)
        elif message.role is Role.TOOL:
            add_user([_tool_result(message, pending)])
        elif message.role is Role.ASSISTANT:
            blocks = thinking_blocks(message.thoughts)
            blocks.extend(block for block in _content_blocks(message) if block["type"] == "text")
            pending = []
            for index, call in enumerate(message.tool_calls):
                tool_id = _tool_id(call.id, f"toolu_rx_{turn}_{index}")
                pending.append((tool_id, call.name))
                blocks.append(
                    {"type": "tool_use", "id": tool_id, "name": call.name, "input": dict(call.args)}
                )
            if blocks:
                out.append({"role": "assistant", "content": blocks})
            else:
                _log.debug("skipping an empty assistant turn (the API rejects empty content)")
        else:
            blocks = _content_blocks(message)
            if blocks:
                add_user(blocks)
            else:
                _log.debug("skipping an empty user turn (the API rejects empty content)")
    return out, system


def build_anthropic_body(request: ChatRequest, *, stream: bool = True) -> dict[str, Any]:
    """The Messages API JSON body for *request*.

    ``max_tokens`` is required: the sampler's ``max_tokens`` (default
    ``DEFAULT_MAX_TOKENS``) is the answer room. With thinking, the API
    counts thinking inside ``max_tokens`` and wants ``budget_tokens`` below
    it, so the budget is added on top. Thinking is incompatible with
    ``temperature``, ``top_k``, a ``top_p`` under 0.95 and an assistant
    prefill: those are left out (with a debug log) instead of failing.

    Args:
        request: The provider-neutral request.
        stream: Ask for a streamed (SSE) response.

    Returns:
        A JSON-ready dict, ``request.extra`` merged on top (one level deep for objects).
    """
    sampler = request.sampler
    messages, system = _messages(request.messages)
    budget = thinking_budget(sampler.reasoning_effort)
    room = sampler.max_tokens if sampler.max_tokens is not None else DEFAULT_MAX_TOKENS
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": room + (budget or 0),
    }
    texts = [text for text in (request.system, *system) if text]
    if texts:
        body["system"] = "\n\n".join(texts)
    if request.prefill:
        prefill = request.prefill.rstrip()  # the API rejects a final assistant turn ending in whitespace
        if budget is not None:
            _log.debug("assistant prefill left out: it is incompatible with extended thinking")
        elif prefill:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": prefill}]})
    body["messages"] = messages
    if request.tools:
        tools = []
        for tool in request.tools:
            spec: dict[str, Any] = {"name": tool.name}
            if tool.description:
                spec["description"] = tool.description
            spec["input_schema"] = dict(tool.parameters)
            tools.append(spec)
        body["tools"] = tools
    if request.stop:
        body["stop_sequences"] = list(request.stop)
    if budget is None:
        if sampler.temperature is not None:
            body["temperature"] = sampler.temperature
        if sampler.top_k is not None:
            body["top_k"] = sampler.top_k
        if sampler.top_p is not None:
            body["top_p"] = sampler.top_p
    else:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        if sampler.temperature is not None or sampler.top_k is not None:
            _log.debug("temperature/top_k left out: incompatible with extended thinking")
        if sampler.top_p is not None:
            if 0.95 <= sampler.top_p <= 1.0:
                body["top_p"] = sampler.top_p
            else:
                _log.debug("top_p {top_p} left out: thinking allows 0.95 to 1 only", top_p=sampler.top_p)
    if stream:
        body["stream"] = True
    for key, value in request.extra.items():
        current = body.get(key)
        body[key] = (
            {**current, **value} if isinstance(current, dict) and isinstance(value, Mapping) else value
        )
    return body
