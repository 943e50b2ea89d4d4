"""Stage 01 of Google Gemini: a ``ChatRequest`` as a ``GenerateContentRequest``.

``build_gemini_body`` writes the body: the system prompt as ``systemInstruction``, turns as
``contents`` with ``user`` and ``model`` roles, calls as ``functionCall`` parts and their
results as ``functionResponse`` parts, the sampler and thinking budget in ``generationConfig``.
A ``FunctionCall.thought_signature`` is replayed on that call's part (the API rejects a
function-calling history without it). ``supports_thoughts`` says which models accept
``thinkingConfig.includeThoughts``.
"""

from __future__ import annotations

__all__ = ("GEMINI_THINKING_BUDGETS", "MAX_STOP_SEQUENCES", "build_gemini_body", "supports_thoughts")

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from loguru import logger

from rxcord.core import safe_json
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest, ImagePart, Message, Role, TextPart
from rxcord.core.types import ThoughtKind

_log = logger.bind(stage="01-request", provider="google")

MAX_STOP_SEQUENCES: Final = 5
"""Gemini accepts at most five stop sequences."""

GEMINI_THINKING_BUDGETS: Final[Mapping[str, int]] = {
    "none": 0,
    "off": 0,
    "minimal": 512,
    "low": 1024,
    "medium": 8192,
    "high": 24576,
}
"""``SamplerSettings.reasoning_effort`` to ``thinkingConfig.thinkingBudget`` (a digit string: as is)."""

_THINKING_MODEL = re.compile(
    r"^(?:gemini-(?:flash|flash-lite|pro)-latest|gemini-(?:[3-9]|[1-9]\d|2\.[5-9])(?:[.\-].*)?|.*-thinking.*)$"
)
"""Gemini models that think, and so accept ``thinkingConfig.includeThoughts``."""


def supports_thoughts(model: str) -> bool:
    """Whether *model* accepts ``includeThoughts``.

    Gemini 2.5 and later (and the ``-thinking`` models) think; 1.x, 2.0 and Gemma models reject
    a ``thinkingConfig`` with a 400, and Gemini requests have no degradation path (their 400s
    name real request bugs), so the field is sent only where it is accepted.
    """
    return _THINKING_MODEL.match(model.removeprefix("models/").lower()) is not None


def _effort_budget(effort: str | None) -> int | None:
    if effort is None:
        return None
    key = effort.strip().lower()
    if key.isdigit():
        return int(key)
    budget = GEMINI_THINKING_BUDGETS.get(key)
    if budget is None:
        _log.debug("unknown reasoning effort {effort!r}: thinking budget left to the model", effort=effort)
    return budget


def _image_part(image: ImagePart) -> dict[str, Any] | None:
    if image.data_b64 is not None:
        return {"inlineData": {"mimeType": image.mime_type, "data": image.data_b64}}
    if image.url is not None:
        return {"fileData": {"mimeType": image.mime_type, "fileUri": image.url}}
    return None


def _content_parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for item in message.content:
        if isinstance(item, TextPart):
            if item.text:
                parts.append({"text": item.text})
        else:
            image = _image_part(item)
            if image is not None:
                parts.append(image)
    return parts


def _model_parts(message: Message) -> list[dict[str, Any]]:
    """An assistant turn's parts, with every thought signature back on the part it came with."""
    parts = _content_parts(message)
    on_calls = {call.thought_signature for call in message.tool_calls if call.thought_signature}
    # Signatures of text parts travel as SIGNATURE thought entries. Gemini puts the
    # signature of an answer without calls on its last part, so that is where it goes back.
    loose = [
        entry.signature
        for entry in message.thoughts
        if entry.kind is ThoughtKind.SIGNATURE and entry.signature and entry.signature not in on_calls
    ]
    if loose:
        texts = [part for part in parts if "text" in part]
        if texts:
            texts[-1]["thoughtSignature"] = loose[-1]
        else:
            parts.append({"text": "", "thoughtSignature": loose[-1]})
    for call in message.tool_calls:
        part: dict[str, Any] = {"functionCall": {"name": call.name, "args": dict(call.args)}}
        if call.thought_signature:
            part["thoughtSignature"] = call.thought_signature
        parts.append(part)
    return parts


def _tool_response(message: Message, names: Mapping[str, str], pending: list[str]) -> dict[str, Any]:
    name = message.name
    if name is None and message.tool_call_id is not None:
        name = names.get(message.tool_call_id)
    if name is None and pending:
        name = pending[0]
    if name is None:
        raise InputError(f"tool result {message.tool_call_id!r} names no tool and answers no earlier call")
    if name in pending:
        pending.remove(name)
    text = message.text
    response: Any
    try:
        response = safe_json.loads(text) if text else {}
    except ValueError:
        response = None
    if not isinstance(response, dict):
        # functionResponse.response must be an object: plain text goes under "result".
        response = {"result": text}
    return {"functionResponse": {"name": name, "response": response}}


def _contents(messages: Iterable[Message]) -> tuple[list[dict[str, Any]], list[str]]:
    """Gemini ``contents`` and the texts of in-history system messages."""
    contents: list[dict[str, Any]] = []
    system: list[str] = []
    names: dict[str, str] = {}
    pending: list[str] = []
    tool_turn: dict[str, Any] | None = None
    for message in messages:
        if message.role is Role.TOOL:
            part = _tool_response(message, names, pending)
            # All responses to one model turn's calls go in one user turn, in order.
            if tool_turn is None:
                tool_turn = {"role": "user", "parts": []}
                contents.append(tool_turn)
            tool_turn["parts"].append(part)
            continue
        tool_turn = None
        if message.role is Role.SYSTEM:
            if message.text:
                system.append(message.text)
            continue
        if message.role is Role.ASSISTANT:
            parts = _model_parts(message)
            for call in message.tool_calls:
                if call.id is not None:
                    names[call.id] = call.name
            pending = [call.name for call in message.tool_calls]
            role = "model"
        else:
            parts = _content_parts(message)
            role = "user"
        if parts:
            contents.append({"role": role, "parts": parts})
        else:
            _log.debug("skipping an empty {role} turn (Gemini rejects empty parts)", role=role)
    return contents, system


def _generation_config(request: ChatRequest, include_thoughts: bool) -> dict[str, Any]:
    sampler = request.sampler
    config: dict[str, Any] = {}
    if sampler.temperature is not None:
        config["temperature"] = sampler.temperature
    if sampler.top_p is not None:
        config["topP"] = sampler.top_p
    if sampler.top_k is not None:
        config["topK"] = sampler.top_k
    if sampler.max_tokens is not None:
        config["maxOutputTokens"] = sampler.max_tokens
    if sampler.presence_penalty is not None:
        config["presencePenalty"] = sampler.presence_penalty
    if sampler.frequency_penalty is not None:
        config["frequencyPenalty"] = sampler.frequency_penalty
    if sampler.seed is not None:
        config["seed"] = sampler.seed
    if request.stop:
        if len(request.stop) > MAX_STOP_SEQUENCES:
            _log.warning(
                "Gemini accepts {limit} stop sequences; sending the first {limit} of {count}",
                limit=MAX_STOP_SEQUENCES,
                count=len(request.stop),
            )
        config["stopSequences"] = list(request.stop[:MAX_STOP_SEQUENCES])
    thinking: dict[str, Any] = {}
    if include_thoughts:
        thinking["includeThoughts"] = True
    budget = _effort_budget(sampler.reasoning_effort)
    if budget is not None:
        thinking["thinkingBudget"] = budget
    if thinking:
        config["thinkingConfig"] = thinking
    return config


def _merge_extra(body: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        current = body.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            body[key] = {**current, **value}
        else:
            body[key] = value


def build_gemini_body(request: ChatRequest, *, include_thoughts: bool = True) -> dict[str, Any]:
    """The ``GenerateContentRequest`` JSON for *request*.

    Args:
        request: The provider-neutral request.
        include_thoughts: Ask for thought summaries (``thinkingConfig.includeThoughts``).

    Returns:
        A JSON-ready dict: ``contents``, ``systemInstruction``, ``tools``, ``generationConfig``,
        then ``request.extra`` merged on top (one level deep for objects).

    Raises:
        InputError: A tool result names no tool and matches no earlier call.
    """
    contents, system = _contents(request.messages)
    if request.prefill:
        contents.append({"role": "model", "parts": [{"text": request.prefill}]})
    body: dict[str, Any] = {"contents": contents}
    texts = [text for text in (request.system, *system) if text]
    if texts:
        body["systemInstruction"] = {"parts": [{"text": "\n\n".join(texts)}]}
    if request.tools:
        declarations = []
        for tool in request.tools:
            declaration: dict[str, Any] = {"name": tool.name}
            if tool.description:
                declaration["description"] = tool.description
            # parametersJsonSchema takes full JSON Schema; "parameters" only an OpenAPI subset.
            declaration["parametersJsonSchema"] = dict(tool.parameters)
            declarations.append(declaration)
        body["tools"] = [{"functionDeclarations": declarations}]
    config = _generation_config(request, include_thoughts)
    if config:
        body["generationConfig"] = config
    _merge_extra(body, request.extra)
    return body
