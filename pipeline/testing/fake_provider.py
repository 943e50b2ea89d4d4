"""A scripted stand-in model server on 127.0.0.1: point any Chat Completions adapter at it.

``FakeProvider(reply="Hello!")`` streams that reply in the Chat Completions wire format
(``data:`` events of ``chat.completion.chunk`` objects, a finish reason, a usage event,
``data: [DONE]``), optionally preceded by reasoning deltas and followed by one tool call; a
non-2xx ``status`` answers with the wire's JSON error body instead. It is built on
``ReplayServer``: the body is written exactly as scripted, cut by ``chunking`` (so the
adapter's parser sees network-like splits), and every request is recorded in ``requests``.

It binds to 127.0.0.1 only and never contacts anything; an adapter pointed at it needs the
loopback opt-out (``TransportConfig(allow_private_network=True)``), which the SSRF guard
names when it refuses.

Example::

    async with FakeProvider(reply="Hello!") as model:
        adapter = OpenAIAdapter()
        ...  # base_url=model.base_url, transport=TransportConfig(allow_private_network=True)
"""

from __future__ import annotations

__all__ = ("FakeProvider", "ScriptedToolCall", "chat_completions_body")

import json
from typing import Any

import attrs

from rxcord.core.errors import FakeProviderNotStartedError
from rxcord.testing.replay import Chunking, ReplayServer, ServedRequest

_LOOPBACK = "127.0.0.1"
_SSE = "text/event-stream"


@attrs.frozen(kw_only=True)
class ScriptedToolCall:
    """One function call the fake model makes after its reply."""

    name: str
    arguments: str = "{}"
    """The arguments as the model streams them: JSON text."""
    call_id: str = "call_1"


def _event(delta: dict[str, Any], finish: str | None = None, model: str = "fake-model") -> str:
    chunk = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chat_completions_body(
    reply: str,
    *,
    reasoning: str = "",
    tool_call: ScriptedToolCall | None = None,
    delta_size: int = 16,
    model: str = "fake-model",
) -> bytes:
    """The SSE body a Chat Completions model streams for this script (deltas of *delta_size* characters)."""
    step = max(1, delta_size)
    events = [_event({"role": "assistant", "content": ""}, model=model)]
    events += [_event({"reasoning": piece}, model=model) for piece in _pieces(reasoning, step)]
    events += [_event({"content": piece}, model=model) for piece in _pieces(reply, step)]
    finish = "stop"
    if tool_call is not None:
        function = {"name": tool_call.name, "arguments": tool_call.arguments}
        call = {"index": 0, "id": tool_call.call_id, "type": "function", "function": function}
        events.append(_event({"tool_calls": [call]}, model=model))
        finish = "tool_calls"
    events.append(_event({}, finish, model=model))
    completion = len(reasoning) + len(reply)  # a stand-in count: one "token" per character
    usage = {"prompt_tokens": 1, "completion_tokens": completion, "total_tokens": completion + 1}
    events.append(f"data: {json.dumps({'id': 'chatcmpl-fake', 'choices': [], 'usage': usage})}\n\n")
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


def _error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "fake_provider_error", "code": status}}).encode()


@attrs.define(kw_only=True)
class FakeProvider:
    """A Chat Completions server on 127.0.0.1 answering every request with one scripted reply.

    Args:
        reply: The answer's text, streamed as content deltas of ``delta_size`` characters.
        reasoning: Reasoning streamed before the reply (``delta.reasoning``).
        tool_call: A function call streamed after the reply (finish reason ``tool_calls``).
        status: Non-2xx: answer with this status and the wire's JSON error body (``error``).
        error: The error body's message.
        chunking: How the body is cut into network writes (default: one per line).
        pace: Seconds between writes (``0``: no pause).
    """

    reply: str = ""
    reasoning: str = ""
    tool_call: ScriptedToolCall | None = None
    status: int = 200
    error: str = "scripted error"
    delta_size: int = 16
    chunking: Chunking = Chunking()
    pace: float = 0.0
    model: str = "fake-model"
    _server: ReplayServer | None = attrs.field(default=None, init=False)

    def _response(self) -> tuple[int, str, bytes]:
        if not 200 <= self.status < 300:
            return self.status, "application/json", _error_body(self.status, self.error)
        body = chat_completions_body(
            self.reply,
            reasoning=self.reasoning,
            tool_call=self.tool_call,
            delta_size=self.delta_size,
            model=self.model,
        )
        return self.status, _SSE, body

    def _started(self) -> ReplayServer:
        if self._server is None:
            raise FakeProviderNotStartedError(
                "FakeProvider is not running: use `async with FakeProvider(...)`"
            )
        return self._server

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``: the base URL to give the adapter."""
        return self._started().base_url

    @property
    def requests(self) -> list[ServedRequest]:
        """Every request served so far (path, decoded JSON body, headers, whether it completed)."""
        return self._started().requests

    async def __aenter__(self) -> FakeProvider:
        status, content_type, body = self._response()
        server = ReplayServer(
            body=body, status=status, content_type=content_type, chunking=self.chunking, pace=self.pace
        )
        await server.start(host=_LOOPBACK)
        self._server = server
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            await self._server.close()
            self._server = None
