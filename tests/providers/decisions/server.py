"""A local decisions server (aiohttp on 127.0.0.1) speaking the three protocols.

Without a script it answers honestly: one answer per question of the request, in the
protocol's shape (``probabilities`` picks each id's value, 0.5 otherwise). A scripted
response (``script``) replaces the next answer: a status, a body (bytes or a fixture name),
headers, and an optional gate the handler waits on before it answers.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import attrs
from aiohttp import web

FIXTURES = Path(__file__).parent / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@attrs.define
class Scripted:
    status: int = 200
    body: bytes | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    gate: asyncio.Event | None = None
    """Wait for it before answering (a response that settles late)."""


@attrs.define
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


@attrs.define
class DecisionsServer:
    probabilities: dict[str, float] = attrs.field(factory=dict)
    refuse: frozenset[str] = frozenset()
    """OpenAI protocol: refuse these question ids."""
    model: str = "typesafe/jev-1.13-20260917"
    script: list[Scripted] = attrs.field(factory=list)
    seen: list[Seen] = attrs.field(factory=list)
    answered: int = 0
    """Responses fully written."""
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def then(self, status: int = 200, body: bytes | str | None = None, **kwargs: Any) -> Scripted:
        if isinstance(body, str):
            body = fixture(body)
        scripted = Scripted(status=status, body=body, **kwargs)
        self.script.append(scripted)
        return scripted

    async def __aenter__(self) -> DecisionsServer:
        app = web.Application()
        for path in ("/api/alpha/decisions", "/systemone", "/v1/systemone", "/decisions", "/v1/decisions"):
            app.router.add_post(path, self._handle)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        server = site._server
        assert server is not None
        self.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._runner is not None
        await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        self.seen.append(Seen(path=request.path, headers=dict(request.headers), body=body))
        scripted = self.script.pop(0) if self.script else Scripted()
        if scripted.gate is not None:
            await scripted.gate.wait()
        payload = scripted.body if scripted.body is not None else self._honest(request.path, body)
        response = web.Response(
            status=scripted.status, body=payload, content_type="application/json", headers=scripted.headers
        )
        self.answered += 1
        return response

    def _honest(self, path: str, body: Any) -> bytes:
        usage = {"input_tokens": 40, "output_tokens": 4}
        if path.endswith("/decisions") and "alpha" not in path:
            answers = []
            for question in body["questions"]:
                name = question["name"]
                if name in self.refuse:
                    answers.append({"type": "refusal", "name": name})
                else:
                    answers.append(
                        {"type": "predicate", "name": name, "probability": self.probabilities.get(name, 0.5)}
                    )
            document: dict[str, Any] = {
                "model": self.model,
                "answers": answers,
                "usage": {**usage, "total_tokens": 44},
            }
        else:
            named = {
                qid: {"type": "noul", "noul": self.probabilities.get(qid, 0.5)}
                for qid in reversed(list(body["questions"]))
            }
            document = {"model": self.model, "answers": named, "usage": dict(usage)}
            if "alpha" in path:
                document["id"] = "gen-dec-local-1"
                document["usage"]["cost"] = 0.00002
        return json.dumps(document).encode()
