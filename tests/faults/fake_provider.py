"""A scripted Chat Completions server on 127.0.0.1: full, dropped, cut or stalled streams, per attempt."""

from __future__ import annotations

import asyncio
import json
from typing import Literal

import attrs
from aiohttp import web

PlanKind = Literal["full", "drop", "cut", "stall"]


@attrs.frozen
class Plan:
    """One attempt: stream everything, or drop / cut / stall after ``after`` content events.

    ``drop`` closes the connection mid-body; ``cut`` ends the body cleanly at an event boundary,
    with no finish reason and no ``[DONE]`` (a clean close that is not a clean end).
    """

    kind: PlanKind = "full"
    after: int = 0


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    chunk = {
        "id": "chatcmpl-fault",
        "object": "chat.completion.chunk",
        "model": "fault-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n".encode()


class FakeProvider:
    """Streams ``pieces`` as content deltas; attempt ``n`` follows ``plans[n]`` (later ones: full)."""

    def __init__(self, pieces: list[str], plans: list[Plan] | None = None) -> None:
        self.pieces = pieces
        self.plans = list(plans or [])
        self.attempts = 0
        self.base_url = ""
        self._runner: web.AppRunner | None = None
        self._release = asyncio.Event()

    async def __aenter__(self) -> FakeProvider:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        plan = self.plans[self.attempts] if self.attempts < len(self.plans) else Plan()
        self.attempts += 1
        await request.read()
        if plan.kind == "drop" and plan.after == 0 and request.transport is not None:
            request.transport.close()  # before any byte: no status line at all
            return web.Response(status=500)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(_event({"role": "assistant", "content": ""}))
        for index, piece in enumerate(self.pieces):
            if plan.kind != "full" and index == plan.after:
                if plan.kind == "stall":
                    await self._release.wait()
                elif plan.kind == "cut":
                    await response.write_eof()
                elif request.transport is not None:
                    request.transport.close()
                return response
            await response.write(_event({"content": piece}))
        await response.write(_event({}, "stop"))
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response
