"""The command-line contract: `rxcord replay --json`, exit codes, `rxcord emulator`, `rxcord demo`."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from rxcord.cli.main import main
from tests.conftest import DEMO_DATA

CONTRACT_KEYS = {
    "status",
    "text",
    "reasoning",
    "function_calls",
    "finish_reason",
    "raw_finish_reason",
    "error",
    "usage",
    "serving_provider",
    "messages",
    "provider_connection_closed",
}


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_replay_json_is_exactly_one_object_with_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    """--json prints one JSON object with the contract's keys and types."""
    code, out, _ = _run(
        capsys, "replay", str(DEMO_DATA / "openai_think_leak.sse"), "--provider", "openai", "--json"
    )
    assert code == 0
    report = json.loads(out)
    assert out.count("\n") == 1
    assert set(report) == CONTRACT_KEYS
    assert report["status"] == "completed" and report["finish_reason"] == "stop"
    assert report["text"].startswith("Stones remember rain")
    assert report["reasoning"] == "They asked for a haiku about rivers. Five, seven, five."
    assert report["usage"] == {
        "input_tokens": 35,
        "output_tokens": 40,
        "cache_read_tokens": None,
        "cache_write_tokens": None,
        "cost": None,
    }
    assert [m["content"] for m in report["messages"]] == [report["text"]]
    assert report["messages"][0]["allowed_mentions"]["parse"] == []


def test_replay_human_output(capsys: pytest.CaptureFixture[str]) -> None:
    """Without --json the messages are printed for a person, then a summary."""
    code, out, _ = _run(capsys, "replay", str(DEMO_DATA / "google_thoughts.sse"), "--provider", "google")
    assert code == 0
    assert "Rayleigh scattering" in out and "status: completed" in out


def test_missing_capture_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A missing capture file is unusable input: exit 2, one line on stderr."""
    code, out, err = _run(capsys, "replay", str(tmp_path / "nope.sse"), "--provider", "openai", "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "capture not found" in err


def test_unknown_provider_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown provider is unusable input: exit 2, one line on stderr."""
    code, _, err = _run(capsys, "replay", str(DEMO_DATA / "google_thoughts.sse"), "--provider", "nope")
    assert code == 2 and err.count("\n") == 1 and "unknown provider" in err


def test_bad_flag_exits_2_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed --stop value exits 2 with one line."""
    with pytest.raises(SystemExit) as exc:
        main(["replay", "x.sse", "--provider", "openai", "--stop", "later"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_http_error_capture_is_a_result_not_a_crash(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An error status exits 0 with status error; the non-retryable error is shown as one embed."""
    capture = tmp_path / "err.json"
    capture.write_text('{"error": {"message": "Invalid API key", "type": "invalid_request_error"}}')
    code, out, _ = _run(capsys, "replay", str(capture), "--provider", "openai", "--status", "401", "--json")
    report = json.loads(out)
    assert code == 0 and report["status"] == "error" and report["finish_reason"] == "error"
    assert report["error"]["retryable"] is False
    [message] = report["messages"]
    assert "content" not in message and "Invalid API key" in message["embeds"][0]["description"]


async def test_emulator_command_serves_and_prints_base_url() -> None:
    """`rxcord emulator` prints the base URL, `bot token: T` and `gateway: ws://...`, each working."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "rxcord", "emulator", stdout=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stdout is not None
        base_url = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode().strip()
        token_line = (await asyncio.wait_for(proc.stdout.readline(), 5)).decode().strip()
        gateway_line = (await asyncio.wait_for(proc.stdout.readline(), 5)).decode().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/api/v10")
        assert token_line.startswith("bot token: ") and gateway_line.startswith("gateway: ws://127.0.0.1:")
        token = token_line.removeprefix("bot token: ")
        async with aiohttp.ClientSession() as session:
            headers = {"Authorization": f"Bot {token}"}
            async with session.get(f"{base_url}/users/@me", headers=headers) as resp:
                assert resp.status == 200 and (await resp.json())["bot"] is True
            async with session.ws_connect(gateway_line.removeprefix("gateway: ")) as ws:
                hello = await ws.receive_json(timeout=20)
                await ws.send_json({"op": 2, "d": {"token": token, "intents": 1, "properties": {}}})
                ready = await ws.receive_json(timeout=20)
                guild = await ws.receive_json(timeout=20)
        assert hello["op"] == 10 and hello["d"]["heartbeat_interval"] > 0
        assert ready["t"] == "READY" and guild["t"] == "GUILD_CREATE"
        channels = guild["d"]["channels"]
        assert channels and all(channel["type"] == 0 for channel in channels)
    finally:
        proc.terminate()
        await proc.wait()


def test_demo_runs_offline_and_prints_messages() -> None:
    """`rxcord demo` streams the bundled replies into the emulator and summarizes each result."""
    done = subprocess.run(
        [sys.executable, "-m", "rxcord", "demo"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("status=completed") == 3
    assert "```python" in done.stdout and "served by DeepInfra" in done.stdout
    assert "They asked for a haiku" not in done.stdout  # leaked reasoning never reaches Discord
