"""Every JSON reader of the Decisions client is bounded: a 100k-deep body is a typed failure.

The readers: the strict decoder of an answer (``strict_json``), the lenient one of an error
body, the hook path's cost reader (``fetch_with_provider_request``) and the command line's
questions file. Each refuses nesting past ``rxcord.core.safe_json.MAX_DEPTH`` (bodies are
already bounded in size by ``DecisionConfig.max_response_bytes``); none lets a
``RecursionError`` out, and ``rxcord decide`` never prints a traceback.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rxcord.core.errors import DecisionValidationError
from rxcord.core.safe_json import MAX_DEPTH
from rxcord.providers.decisions import DecisionProtocol, FailureCategory
from rxcord.providers.decisions.fetch import fetch_with_provider_request
from rxcord.providers.decisions.types import DecisionFailed
from rxcord.providers.decisions.validate import strict_json
from tests.providers.decisions.server import DecisionsServer
from tests.providers.decisions.test_call import run
from tests.providers.decisions.test_fetch import REQUEST, FakeResponse, FakeSend, Hold, hook

DEEP = b"[" * 100_000 + b"]" * 100_000
"""A 100k-deep array: the standard decoder raises RecursionError on it."""
QUESTIONS = [{"type": "predicate", "id": "is_spam", "instructions": "Unsolicited bulk advertising."}]


def test_the_deep_body_does_overflow_the_standard_decoder() -> None:
    """The premise: without the bound this body is a RecursionError, not a ValueError."""
    with pytest.raises(RecursionError):
        json.loads(DEEP)


def test_strict_json_refuses_nesting_past_the_bound() -> None:
    with pytest.raises(DecisionValidationError) as caught:
        strict_json(DEEP)
    assert caught.value.reason == "invalid-json"
    at_bound = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert strict_json(at_bound) is not None  # the bound itself is still JSON
    with pytest.raises(DecisionValidationError):
        strict_json(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))


@pytest.mark.parametrize("status", [200, 400, 500])
@pytest.mark.parametrize("protocol", list(DecisionProtocol))
async def test_a_deep_body_is_a_failed_result(status: int, protocol: DecisionProtocol) -> None:
    """An answer or an error body 100k deep: a ``failed`` result of its category, never an exception."""
    async with DecisionsServer() as server:
        server.then(status=status, body=DEEP)
        result, reports = await run(server, protocol)
    assert isinstance(result, DecisionFailed)
    if status == 200:
        assert (result.category, result.reason) == (FailureCategory.MALFORMED_RESPONSE, "invalid-json")
    else:
        assert result.reason == "http-error"
    assert reports == []


async def test_the_hook_path_reads_a_deep_body_without_a_cost() -> None:
    """With a request hook the body is read for its cost: a deep one reports none, and is handed back."""
    hold = Hold()
    with hook(hold, []):
        async with fetch_with_provider_request(
            "openrouter", REQUEST, FakeSend(FakeResponse(body=DEEP)), max_bytes=len(DEEP)
        ) as response:
            assert await response.read(len(DEEP)) == DEEP
    assert (hold.costs, hold.released) == ([], [True])


async def _decide(tmp_path: Path, base_url: str, questions: bytes) -> tuple[int, str, str]:
    evidence = tmp_path / "evidence.txt"
    evidence.write_text("Subject: WIN A FREE CRUISE!!!", encoding="utf-8")
    questions_file = tmp_path / "questions.json"
    questions_file.write_bytes(questions)
    argv = [
        *("decide", "--protocol", "openrouter", "--base-url", base_url, "--model", "typesafe/jev-1.13"),
        *("--evidence-file", str(evidence), "--questions-file", str(questions_file)),
        *("--allow-loopback", "--json"),
    ]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rxcord", *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("status", [200, 400])
async def test_decide_reports_a_deep_answer_in_one_line(status: int, tmp_path: Path) -> None:
    """``rxcord decide`` against a 100k-deep answer: the ``failed`` result (exit 0) and one stderr line."""
    async with DecisionsServer() as server:
        server.then(status=status, body=DEEP)
        code, out, err = await _decide(tmp_path, server.base_url, json.dumps(QUESTIONS).encode())
    assert "Traceback" not in err and "RecursionError" not in err
    assert code == 0 and json.loads(out)["kind"] == "failed"
    assert err.startswith("rxcord: decide: failed (") and err.count("\n") == 1


async def test_decide_refuses_a_deep_questions_file_with_exit_2(tmp_path: Path) -> None:
    """A questions file 100k deep is unusable input: exit 2 with one line, no request sent."""
    async with DecisionsServer() as server:
        code, out, err = await _decide(tmp_path, server.base_url, DEEP)
    assert "Traceback" not in err
    assert (code, out) == (2, "")
    assert err.startswith("rxcord: the questions file ") and err.count("\n") == 1
    assert server.seen == []
