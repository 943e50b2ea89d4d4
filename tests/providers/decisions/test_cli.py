"""``rxcord decide``: the JSON contract, key lookup, the loopback opt-out and exit codes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rxcord.cli.main import main
from tests.providers.decisions.server import DecisionsServer

QUESTIONS = [
    {"type": "predicate", "id": "is_spam", "instructions": "The message is unsolicited bulk advertising."},
    {"type": "predicate", "id": "needs_reply", "instructions": "The sender expects an answer."},
]
KEYS = {"kind", "answers", "usage", "model", "provider_request_id", "usage_reports"}
USAGE_KEYS = {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost"}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    evidence = tmp_path / "evidence.txt"
    evidence.write_text("Subject: WIN A FREE CRUISE!!!", encoding="utf-8")
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return evidence, questions


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "RXCORD_API_KEY", "MY_DECISIONS_KEY"):
        monkeypatch.delenv(name, raising=False)


def _args(protocol: str, base: str, evidence: Path, questions: Path, *extra: str) -> list[str]:
    return [
        "decide",
        "--protocol",
        protocol,
        "--base-url",
        base,
        "--model",
        "typesafe/jev-1.13",
        "--evidence-file",
        str(evidence),
        "--questions-file",
        str(questions),
        *extra,
        "--json",
    ]


async def _decide(argv: list[str]) -> tuple[int, dict[str, Any] | None, str]:
    """Run the CLI in a subprocess (asyncio.run needs its own loop); the exit code, JSON and stderr."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rxcord", *argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    report = json.loads(out) if out.strip() else None
    return process.returncode, report, err.decode()


@pytest.mark.parametrize("protocol", ["openrouter", "systemone", "openai"])
async def test_json_shape(protocol: str, files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "OPENROUTER_API_KEY" if protocol == "openrouter" else "RXCORD_API_KEY", "sk-cli-test-1234"
    )
    async with DecisionsServer(probabilities={"is_spam": 0.97, "needs_reply": 0.1}) as server:
        code, report, _ = await _decide(_args(protocol, server.base_url, *files, "--allow-loopback"))
    assert code == 0 and report is not None
    assert set(report) == KEYS
    assert report["kind"] == "completed"
    assert report["answers"] == [
        {"id": "is_spam", "probability": 0.97},
        {"id": "needs_reply", "probability": 0.1},
    ]
    assert set(report["usage"]) == USAGE_KEYS
    assert report["usage"]["cost"] == (2e-05 if protocol == "openrouter" else None)
    assert report["usage_reports"] == [report["usage"]]
    assert report["model"] == "typesafe/jev-1.13-20260917"
    assert report["provider_request_id"] == ("gen-dec-local-1" if protocol == "openrouter" else None)
    assert server.seen[0].headers["Authorization"] == "Bearer sk-cli-test-1234"


async def test_refusal_and_named_key_variable(
    files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_DECISIONS_KEY", "sk-named-9876")
    monkeypatch.setenv("RXCORD_API_KEY", "sk-not-this-one")
    async with DecisionsServer(probabilities={"is_spam": 0.6}, refuse=frozenset({"needs_reply"})) as server:
        argv = _args(
            "openai", server.base_url + "/v1", *files, "--allow-loopback", "--api-key-env", "MY_DECISIONS_KEY"
        )
        code, report, _ = await _decide(argv)
    assert code == 0 and report is not None
    assert report["kind"] == "refused"
    assert report["answers"] == [
        {"id": "is_spam", "probability": 0.6},
        {"id": "needs_reply", "refusal": True},
    ]
    assert server.seen[0].path == "/v1/decisions"
    assert server.seen[0].headers["Authorization"] == "Bearer sk-named-9876"


async def test_missing_key_is_no_header_and_failures_are_results(files: tuple[Path, Path]) -> None:
    async with DecisionsServer() as server:
        server.then(status=401, body="openrouter_401.json")
        code, report, _ = await _decide(_args("openrouter", server.base_url, *files, "--allow-loopback"))
    assert code == 0 and report is not None
    assert report == {
        "kind": "failed",
        "answers": [],
        "usage": None,
        "model": None,
        "provider_request_id": None,
        "usage_reports": [],
    }
    assert "Authorization" not in server.seen[0].headers


async def test_loopback_needs_the_opt_out(files: tuple[Path, Path]) -> None:
    async with DecisionsServer() as server:
        code, report, err = await _decide(_args("systemone", server.base_url, *files))
    assert code == 0 and report is not None and report["kind"] == "failed"
    assert "endpoint-refused" in err
    assert server.seen == []


async def test_invalid_questions_are_a_result(files: tuple[Path, Path], tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps([{"type": "predicate", "id": "Not-Valid", "instructions": "?"}]), encoding="utf-8"
    )
    async with DecisionsServer() as server:
        code, report, err = await _decide(_args("openai", server.base_url, files[0], bad, "--allow-loopback"))
    assert code == 0 and report is not None and report["kind"] == "invalid-input"
    assert "invalid-question-id" in err and server.seen == []


@pytest.mark.parametrize(
    "problem",
    ["missing-evidence", "questions-not-json", "questions-not-array", "bad-url", "bad-protocol", "no-model"],
)
def test_unusable_cli_input_exits_2(
    problem: str, files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evidence, questions = files
    base = "http://127.0.0.1:9"
    argv = _args("openai", base, evidence, questions)
    if problem == "missing-evidence":
        argv = _args("openai", base, tmp_path / "nope.txt", questions)
    elif problem == "questions-not-json":
        questions.write_text("[{", encoding="utf-8")
    elif problem == "questions-not-array":
        questions.write_text(json.dumps({"type": "predicate"}), encoding="utf-8")
    elif problem == "bad-url":
        argv = _args("openai", "ftp://example.org", evidence, questions)
    elif problem == "bad-protocol":
        argv = _args("anthropic", base, evidence, questions)
    elif problem == "no-model":
        argv = [arg for arg in argv if arg not in ("--model", "typesafe/jev-1.13")]
    if problem in ("bad-protocol", "no-model"):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
    else:
        assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("rxcord: ") and err.count("\n") == 1
