r"""Google Gemini (``streamGenerateContent?alt=sse``): request building and chunk normalization.

Stage 01 (``GoogleAdapter.build_request``) turns a ``ChatRequest`` into a
Gemini ``GenerateContentRequest``; stage 03 (``GeminiNormalizer``) turns each
``GenerateContentResponse`` the transport decoded into ``ProcessedChunk``s.

Why the normalizer holds some things back
-----------------------------------------
Every Gemini chunk repeats a cumulative ``usageMetadata``, and the finish
reason comes on the last chunk. Function calls are therefore *held* until
the candidate's ``finishReason`` (or the end of the body) and released after
the terminal ``done`` chunk, which carries the last usage report. Two
guarantees follow: text of the same response always reaches the buffer
before the tool loop gets the call (text first, then the call,
also when one part set holds both), and the final usage is recorded before
control passes to the tool loop. A failure (an error object, a blocked
prompt, a safety finish) is likewise preceded by a ``done`` chunk with the
usage reported so far, because the orchestrator ends the stream at an error.

Thoughts
--------
``thought: true`` parts (and a ``thoughtSummary`` field, which some
backends use) are summaries: ``ThoughtKind.SUMMARY`` entries on a text chunk
with empty content. A ``thoughtSignature`` on any part becomes a
``ThoughtKind.SIGNATURE`` entry; on a ``functionCall`` part it is also set on
``FunctionCall.thought_signature``, which stage 01 replays on that call's
part (the API rejects a function-calling history without it).

Resent text
-----------
Some Gemini backends resend text: a whole part again, the start of a part restating the end of
the last one, or everything so far. Each channel (visible text, thought summaries) drops what a
part restates by the one rule of ``rxcord.providers.resend``: a part beginning with the last
``MIN_RESENT_PART_CHARS`` or more characters emitted restates them, unless that overlap repeats a
shorter unit ("ha ha ha", "|---|---|"); shorter repeats ("\n", "ha") are always kept.
"""

from __future__ import annotations

__all__ = (
    "GEMINI_THINKING_BUDGETS",
    "GOOGLE_BASE_URL",
    "MIN_RESENT_PART_CHARS",
    "GeminiNormalizer",
    "GoogleAdapter",
    "build_gemini_body",
)

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final
from urllib.parse import quote

import attrs
from loguru import logger

from rxcord.core import safe_json
from rxcord.core.config import Guards
from rxcord.core.errors import InputError
from rxcord.core.request import ChatRequest, ImagePart, Message, Role, TextPart
from rxcord.core.types import (
    ChunkNormalizer,
    ErrorType,
    FinishReason,
    FunctionCall,
    ProcessedChunk,
    ProviderError,
    RawStreamChunk,
    ThoughtKind,
    ThoughtLogEntry,
    Usage,
)
from rxcord.providers.base import DegradationPolicy, HttpRequest
from rxcord.providers.errors import classify_stream_error, content_blocked, describe_error
from rxcord.providers.resend import MIN_RESENT_CHARS, ResendFilter
from rxcord.providers.unrecognized import RecognitionCheck
from rxcord.providers.usage import from_gemini

_log = logger.bind(stage="03-normalize", provider="google")

PROVIDER: Final = "google"

MIN_RESENT_PART_CHARS: Final = MIN_RESENT_CHARS
"""Shortest restatement the resend rule drops (``rxcord.providers.resend``)."""

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

GOOGLE_BASE_URL: Final = "https://generativelanguage.googleapis.com"
"""The public API base URL (used when no base URL is given)."""

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


_POLICY: Final = DegradationPolicy(
    enabled=False,
    mandatory_body_keys=frozenset({"contents", "systemInstruction", "tools", "generationConfig"}),
)

_BLOCKED_FINISH: Final = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
"""Finish reasons meaning the answer was withheld: a ``content_blocked`` error."""

_FAILED_FINISH: Final[Mapping[str, bool]] = {
    "MALFORMED_FUNCTION_CALL": True,
    "UNEXPECTED_TOOL_CALL": True,
    "TOO_MANY_TOOL_CALLS": True,
    "MISSING_THOUGHT_SIGNATURE": False,
}
"""Finish reasons meaning generation failed, with whether another attempt may succeed."""

_FAILED_MESSAGES: Final[Mapping[str, str]] = {
    "MALFORMED_FUNCTION_CALL": "Gemini generated a malformed function call",
    "UNEXPECTED_TOOL_CALL": "Gemini called a tool although none is enabled",
    "TOO_MANY_TOOL_CALLS": "Gemini made too many tool calls in one turn",
    "MISSING_THOUGHT_SIGNATURE": "Gemini rejected the history: a function call lacks its thought signature",
}

_EMPTY: Final[Mapping[str, Any]] = {}


# --------------------------------------------------------------------------- stage 01


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


# --------------------------------------------------------------------------- stage 03


def _thought(entry: ThoughtLogEntry) -> ProcessedChunk:
    return ProcessedChunk.text("", thoughts=(entry,))


def _signature(value: object) -> ThoughtLogEntry | None:
    if isinstance(value, str) and value:
        return ThoughtLogEntry(kind=ThoughtKind.SIGNATURE, signature=value)
    return None


def _blocked_categories(candidate: Mapping[str, Any]) -> list[str]:
    ratings = candidate.get("safetyRatings")
    if not isinstance(ratings, list):
        return []
    return [
        str(rating.get("category"))
        for rating in ratings
        if isinstance(rating, Mapping) and rating.get("blocked") is True
    ]


@attrs.define
class GeminiNormalizer:
    """Stage 03 for one Gemini stream (see the module docstring for what is held back and why)."""

    _emitted: dict[ThoughtKind | None, ResendFilter] = attrs.field(factory=dict, init=False)
    """The resend rule's state per channel (``None``: visible text)."""
    _usage: Usage | None = attrs.field(default=None, init=False)
    """The last usage report."""
    _usage_sent: Usage | None = attrs.field(default=None, init=False)
    _calls: list[FunctionCall] = attrs.field(factory=list, init=False)
    """Function calls held until the response's end."""

    def feed(self, raw: RawStreamChunk) -> Sequence[ProcessedChunk]:
        """Normalize one decoded SSE event, a complete response, or a JSON array of responses."""
        if raw.error is not None:
            return self._fail(raw.error)
        data = raw.data
        if isinstance(data, list):
            out: list[ProcessedChunk] = []
            for item in data:
                if isinstance(item, Mapping):
                    out.extend(self._response(item))
                else:
                    _log.debug("filtered a non-object array item: {item!r:.500}", item=item)
            return out
        if isinstance(data, Mapping):
            return self._response(data)
        _log.debug("filtered an unknown chunk: {data!r:.500}", data=data)
        return []

    def finish(self) -> Sequence[ProcessedChunk]:
        """The body ended: release held calls and a usage report not sent yet."""
        out = self._pending_usage()
        out.extend(self._release_calls())
        return out

    # -- one GenerateContentResponse

    def _response(self, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        error = data.get("error")
        if isinstance(error, Mapping):
            return self._fail(classify_stream_error(data, provider=PROVIDER))
        usage_meta = data.get("usageMetadata")
        if isinstance(usage_meta, Mapping):
            usage = from_gemini(usage_meta)
            if usage is not None:
                self._usage = usage
        feedback = data.get("promptFeedback")
        block = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        if isinstance(block, str) and block:
            return self._prompt_blocked(block, data)
        candidates = data.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(candidate, Mapping):
            if not isinstance(usage_meta, Mapping):
                _log.debug("filtered an unknown chunk: {data!r:.500}", data=data)
            return []
        out: list[ProcessedChunk] = []
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if isinstance(parts, list):
            for part in parts:
                if isinstance(part, Mapping):
                    out.extend(self._part(part))
        summary = candidate.get("thoughtSummary")
        fresh = self._fresh(ThoughtKind.SUMMARY, summary) if isinstance(summary, str) else ""
        if fresh:
            out.append(_thought(ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text=fresh)))
        finish = candidate.get("finishReason")
        if isinstance(finish, str) and finish:
            out.extend(self._finish(finish, candidate))
        return out

    def _part(self, part: Mapping[str, Any]) -> list[ProcessedChunk]:
        signature = _signature(part.get("thoughtSignature"))
        call = part.get("functionCall")
        if isinstance(call, Mapping):
            args = call.get("args")
            call_id = call.get("id")
            self._calls.append(
                FunctionCall(
                    name=str(call.get("name", "")),
                    args=dict(args) if isinstance(args, Mapping) else {},
                    id=call_id if isinstance(call_id, str) and call_id else None,
                    thought_signature=signature.signature if signature is not None else None,
                )
            )
            return [ProcessedChunk.text("", thoughts=(signature,))] if signature is not None else []
        text = part.get("text")
        summary = part.get("thoughtSummary")
        if part.get("thought") is True or isinstance(summary, str):
            # {"text": "", "thoughtSummary": "..."}: the summary is the field that has text.
            body = text if isinstance(text, str) and text else summary
            thoughts: list[ThoughtLogEntry] = []
            fresh = self._fresh(ThoughtKind.SUMMARY, body) if isinstance(body, str) else ""
            if fresh:
                thoughts.append(ThoughtLogEntry(kind=ThoughtKind.SUMMARY, text=fresh))
            if signature is not None:
                thoughts.append(signature)
            return [ProcessedChunk.text("", thoughts=tuple(thoughts))] if thoughts else []
        if isinstance(text, str):
            visible = self._fresh(None, text)
            sig = (signature,) if signature is not None else ()
            return [ProcessedChunk.text(visible, thoughts=sig)] if visible or sig else []
        if signature is not None:
            return [ProcessedChunk.text("", thoughts=(signature,))]
        _log.debug("filtered an unsupported part: {keys}", keys=sorted(part))
        return []

    def _fresh(self, channel: ThoughtKind | None, text: str) -> str:
        """*text* without what it restates of the channel's emitted text (the resend rule)."""
        if not text:
            return ""
        emitted = self._emitted.get(channel)
        if emitted is None:
            emitted = self._emitted[channel] = ResendFilter()
        fresh = emitted.fresh(text)
        if len(fresh) < len(text):
            _log.debug("dropped {n} resent chars of a part", n=len(text) - len(fresh))
        return fresh

    def _finish(self, finish: str, candidate: Mapping[str, Any]) -> list[ProcessedChunk]:
        if finish in _BLOCKED_FINISH:
            categories = _blocked_categories(candidate)
            detail = f" ({', '.join(categories)})" if categories else ""
            error = content_blocked(
                f"Gemini withheld the answer: finish reason {finish}{detail}", code=finish, original=candidate
            )
            return [self._done(FinishReason.CONTENT_FILTER, finish), *self._fail(error)]
        if finish in _FAILED_FINISH:
            failure = ProviderError(
                type=ErrorType.API_ERROR,
                message=_FAILED_MESSAGES[finish],
                retryable=_FAILED_FINISH[finish],
                code=finish,
                original_error=candidate,
            )
            return [self._done(FinishReason.ERROR, finish), *self._fail(failure)]
        if finish == "MAX_TOKENS":
            reason = FinishReason.LENGTH
        elif finish == "STOP":
            reason = FinishReason.TOOL_CALLS if self._calls else FinishReason.STOP
        else:
            _log.debug("finish reason {finish} taken as a normal stop", finish=finish)
            reason = FinishReason.TOOL_CALLS if self._calls else FinishReason.STOP
        return [self._done(reason, finish), *self._release_calls()]

    def _prompt_blocked(self, block: str, data: Mapping[str, Any]) -> list[ProcessedChunk]:
        error = content_blocked(f"Gemini blocked the prompt: {block}", code=block, original=data)
        return [self._done(FinishReason.CONTENT_FILTER, block), *self._fail(error)]

    # -- terminal chunks

    def _done(self, reason: FinishReason, raw_reason: str) -> ProcessedChunk:
        self._usage_sent = self._usage
        return ProcessedChunk.done(finish_reason=reason, raw_finish_reason=raw_reason, usage=self._usage)

    def _pending_usage(self) -> list[ProcessedChunk]:
        if self._usage is None or self._usage == self._usage_sent:
            return []
        self._usage_sent = self._usage
        return [ProcessedChunk.done(usage=self._usage)]

    def _fail(self, error: ProviderError) -> list[ProcessedChunk]:
        # The error ends the stream: held calls die with it, the usage so far goes first.
        self._calls.clear()
        return [*self._pending_usage(), ProcessedChunk.fail(error)]

    def _release_calls(self) -> list[ProcessedChunk]:
        calls, self._calls = self._calls, []
        return [ProcessedChunk.call(call) for call in calls]


# --------------------------------------------------------------------------- adapter


def _event_meaningful(data: object) -> bool:
    if not isinstance(data, Mapping):
        return False
    if isinstance(data.get("usageMetadata"), Mapping):
        return True
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
        return False
    content = candidates[0].get("content", _EMPTY)
    parts = content.get("parts") if isinstance(content, Mapping) else None
    if not isinstance(parts, list):
        return False
    return any(
        isinstance(part, Mapping)
        and (
            bool(part.get("text"))
            or bool(part.get("thoughtSummary"))
            or "functionCall" in part
            or bool(part.get("thoughtSignature"))
        )
        for part in parts
    )


def _event_error(data: object) -> ProviderError | None:
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        return classify_stream_error(data, provider=PROVIDER)
    return None


@attrs.frozen(kw_only=True)
class GoogleAdapter:
    """Google Gemini through the Generative Language API (``v1beta``).

    The key goes in the ``x-goog-api-key`` header, never in the URL, where it
    would end up in access logs and tracebacks.
    """

    include_thoughts: bool = True
    """Ask for thought summaries (``thinkingConfig.includeThoughts``)."""

    @property
    def name(self) -> str:
        """``google``."""
        return PROVIDER

    @property
    def default_base_url(self) -> str:
        """The public API; another origin is a custom endpoint (``rxcord.providers.ssrf``)."""
        return GOOGLE_BASE_URL

    @property
    def policy(self) -> DegradationPolicy:
        """Degradation is disabled: Gemini's 400s name real request bugs, not optional fields."""
        return _POLICY

    def build_request(
        self, request: ChatRequest, *, base_url: str | None = None, api_key: str | None, stream: bool = True
    ) -> HttpRequest:
        """POST ``{base_url}/v1beta/models/{model}:streamGenerateContent?alt=sse``.

        With ``stream=False``: ``:generateContent``, one JSON response.

        Raises:
            InputError: A tool result names no tool and matches no earlier call.
        """
        model = request.model.removeprefix("models/")
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        url = (
            f"{(base_url or GOOGLE_BASE_URL).rstrip('/')}/v1beta/models/{quote(model, safe='-._~')}:{method}"
        )
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["x-goog-api-key"] = api_key
        thoughts = self.include_thoughts and supports_thoughts(model)
        body = build_gemini_body(request, include_thoughts=thoughts)
        return HttpRequest(url=url, body=body, headers=headers, stream=stream)

    @property
    def guards(self) -> Guards:
        """No stage 03 text guards: reasoning arrives in its own parts, never in the text."""
        return Guards()

    def new_normalizer(self) -> ChunkNormalizer:
        """A fresh ``GeminiNormalizer`` (a stream it recognises nothing in ends in an ``api_error``)."""
        return RecognitionCheck(GeminiNormalizer(), PROVIDER, "Gemini generateContent")

    def is_meaningful(self, raw: RawStreamChunk) -> bool:
        """Text, a thought, a function call, a thought signature or usage commits the stream."""
        if raw.error is not None:
            return False
        if isinstance(raw.data, list):
            return any(_event_meaningful(item) for item in raw.data)
        return _event_meaningful(raw.data)

    def rejection(self, raw: RawStreamChunk) -> ProviderError | None:
        """A transport error, or an ``{"error": ...}`` object in the body or stream."""
        if raw.error is not None:
            return raw.error
        if isinstance(raw.data, list):
            for item in raw.data:
                error = _event_error(item)
                if error is not None:
                    return error
            return None
        return _event_error(raw.data)

    def ends_stream(self, chunks: Sequence[RawStreamChunk]) -> bool:
        """A candidate's ``finishReason`` ends the stream (Gemini sends no ``[DONE]``)."""
        return any(_finished(raw.data) for raw in chunks)

    def describe_error(self, error: ProviderError) -> str:
        """The error embed's text (a model_error keeps the provider's details)."""
        return describe_error(error, provider=PROVIDER)


def _finished(data: object) -> bool:
    if not isinstance(data, Mapping):
        return False
    candidates = data.get("candidates")
    if not isinstance(candidates, list):
        return False
    return any(isinstance(candidate, Mapping) and candidate.get("finishReason") for candidate in candidates)
