"""Stage 01 of the Chat Completions wire: a ``ChatRequest`` as a Chat Completions body.

OpenAI, OpenRouter, NVIDIA NIM and custom endpoints speak the same format and share
``build_messages`` / ``build_chat_body``. Images become ``image_url`` parts, tools
``{"type": "function", ...}``, calls keep their ids, tool results are role ``tool``; replay
fields (DeepSeek-style ``reasoning_content``, OpenRouter ``reasoning_details``) go back on the
assistant message that produced them. What differs between providers (the ``max_tokens`` key,
``top_k``, the reasoning field, the stop-string limit) is a parameter, set by each adapter's
``WireOptions`` (``rxcord.providers.chat_completions.adapter``).
"""

from __future__ import annotations

__all__ = ("ReasoningStyle", "build_chat_body", "build_messages")

import json
from typing import Any, Final, Literal

from loguru import logger

from rxcord.core.request import ChatRequest, ImagePart, Message, Role, TextPart
from rxcord.core.types import FunctionCall

_log = logger.bind(stage="01-request")


def _image_url(part: ImagePart) -> str | None:
    if part.url:
        return part.url
    if part.data_b64:
        return f"data:{part.mime_type};base64,{part.data_b64}"
    return None


def _content(message: Message) -> str | list[dict[str, Any]]:
    """Plain text when there are no images (the widest-supported shape), else a parts list."""
    if not any(isinstance(part, ImagePart) for part in message.content):
        return message.text
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, TextPart):
            if part.text:
                parts.append({"type": "text", "text": part.text})
            continue
        url = _image_url(part)
        if url is not None:
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _arguments(call: FunctionCall) -> str:
    return json.dumps(dict(call.args), ensure_ascii=False, separators=(",", ":"))


_REPLAY_KEYS: Final = ("reasoning_content", "reasoning_details")


def _assistant(message: Message, pending: list[tuple[str, str]], number: int) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "assistant"}
    text = message.text
    out["content"] = text if text or not message.tool_calls else None
    if message.tool_calls:
        calls = []
        for position, call in enumerate(message.tool_calls):
            call_id = call.id or f"call_{number}_{position}"
            pending.append((call_id, call.name))
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments(call)},
                }
            )
        out["tool_calls"] = calls
    replay: dict[str, Any] = {key: message.replay[key] for key in _REPLAY_KEYS if key in message.replay}
    for call in message.tool_calls:
        for key in _REPLAY_KEYS:
            # Every call of one response carries the same replay fields: the first one found is kept.
            if key in call.replay and key not in replay:
                replay[key] = call.replay[key]
    out.update(replay)
    return out


def _tool_result(message: Message, pending: list[tuple[str, str]]) -> dict[str, Any]:
    call_id = message.tool_call_id
    if call_id is None:
        # A result without an id answers the oldest open call (of the same name, when named).
        match = next((item for item in pending if message.name in (None, item[1])), None)
        if match is not None:
            call_id = match[0]
    pending[:] = [item for item in pending if item[0] != call_id]
    return {"role": "tool", "tool_call_id": call_id or "", "content": message.text}


def build_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """The ``messages`` array of *request* (system prompt first, prefill last)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    pending: list[tuple[str, str]] = []
    for number, message in enumerate(request.messages):
        if message.role is Role.SYSTEM:
            messages.append({"role": "system", "content": message.text})
        elif message.role is Role.USER:
            messages.append({"role": "user", "content": _content(message)})
        elif message.role is Role.ASSISTANT:
            messages.append(_assistant(message, pending, number))
        else:
            messages.append(_tool_result(message, pending))
    if request.prefill:
        messages.append({"role": "assistant", "content": request.prefill})
    return messages


ReasoningStyle = Literal["reasoning_effort", "openrouter", "none"]


def build_chat_body(
    request: ChatRequest,
    *,
    stream: bool = True,
    max_tokens_key: str = "max_tokens",
    send_top_k: bool = True,
    reasoning_style: ReasoningStyle = "reasoning_effort",
    max_stop: int | None = None,
) -> dict[str, Any]:
    """A Chat Completions body for *request*.

    Args:
        request: The provider-neutral request.
        stream: Ask for SSE (``stream: true`` and ``stream_options.include_usage``).
        max_tokens_key: ``max_tokens`` or ``max_completion_tokens`` (OpenAI).
        send_top_k: Whether ``top_k`` is sent (OpenAI rejects it).
        reasoning_style: ``reasoning_effort`` (top-level string), ``openrouter``
            (``reasoning: {"effort": ...}``) or ``none``.
        max_stop: The most stop strings the provider accepts (OpenAI: 4); the first ones are
            kept (empty and repeated strings dropped first) and the rest logged as not sent.

    Returns:
        The body; ``request.extra`` is merged last and wins.
    """
    body: dict[str, Any] = {"model": request.model, "messages": build_messages(request)}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": dict(tool.parameters),
                },
            }
            for tool in request.tools
        ]
    stops = list(dict.fromkeys(stop for stop in request.stop if stop))
    if max_stop is not None and len(stops) > max_stop:
        _log.warning(
            "{dropped} stop strings not sent: the provider accepts at most {limit}",
            dropped=len(stops) - max_stop,
            limit=max_stop,
        )
        stops = stops[:max_stop]
    if stops:
        body["stop"] = stops
    sampler = request.sampler
    optional: dict[str, Any] = {
        "temperature": sampler.temperature,
        "top_p": sampler.top_p,
        "top_k": sampler.top_k if send_top_k else None,
        max_tokens_key: sampler.max_tokens,
        "frequency_penalty": sampler.frequency_penalty,
        "presence_penalty": sampler.presence_penalty,
        "seed": sampler.seed,
    }
    body.update({key: value for key, value in optional.items() if value is not None})
    if sampler.reasoning_effort is not None:
        if reasoning_style == "reasoning_effort":
            body["reasoning_effort"] = sampler.reasoning_effort
        elif reasoning_style == "openrouter":
            body["reasoning"] = {"effort": sampler.reasoning_effort}
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    body.update(request.extra)
    return body
