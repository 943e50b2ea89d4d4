"""``rxcord replay ... --serve`` and ``rxcord emulator``: the printed page URL shows what was delivered."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver

from tests.browser.conftest import wait_for

pytestmark = pytest.mark.browser

CAPTURE = Path(__file__).parent.parent.parent / "pipeline" / "data" / "openrouter_reasoning_code.sse"
WAIT = 60.0


class Cli:
    """``python -m rxcord ARGS`` with its stdout read line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rxcord", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self) -> str:
        try:
            line = self.lines.get(timeout=WAIT)
        except queue.Empty:
            raise AssertionError(f"no output from rxcord within {WAIT} s") from None
        if line is None:
            stderr = self.process.stderr.read() if self.process.stderr else ""
            raise AssertionError(f"rxcord ended early ({self.process.wait()}): {stderr}")
        return line

    def line_starting(self, prefix: str) -> str:
        seen = []
        while not (line := self.line()).startswith(prefix):
            seen.append(line)
            assert len(seen) < 100, seen
        return line

    def interrupt(self) -> int:
        self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture
def cli_factory() -> Iterator[list[Cli]]:
    started: list[Cli] = []
    yield started
    for cli in started:
        if cli.process.poll() is None:
            cli.process.kill()
            cli.process.wait(WAIT)


def _message_count(browser: webdriver.Chrome) -> int:
    return int(browser.execute_script("return document.querySelectorAll('#messages .msg').length"))


def test_replay_serve_keeps_the_emulator_and_its_page_up(
    browser: webdriver.Chrome, cli_factory: list[Cli]
) -> None:
    cli = Cli("replay", str(CAPTURE), "--provider", "openrouter", "--serve", "--json")
    cli_factory.append(cli)
    report = json.loads(cli.line())
    assert report["status"] == "completed" and len(report["messages"]) >= 2
    page = cli.line_starting("page: ").removeprefix("page: ")
    assert page.startswith("http://127.0.0.1:") and "#" in page
    assert cli.line_starting("emulator: ").startswith("emulator: http://127.0.0.1:")
    browser.get(page)
    wait_for(lambda: _message_count(browser) == len(report["messages"]), what="the replay's messages")
    contents = browser.execute_script(
        "return [...document.querySelectorAll('#messages .msg .md-codeblock pre code')].length"
    )
    assert contents >= 1, "the replayed answer's code blocks are on the page"
    assert cli.interrupt() == 130


def test_rxcord_emulator_prints_the_page_url(cli_factory: list[Cli]) -> None:
    cli = Cli("emulator")
    cli_factory.append(cli)
    base = cli.line()
    assert base.startswith("http://127.0.0.1:") and base.endswith("/api/v10")
    assert cli.line().startswith("bot token: ")
    assert cli.line().startswith("gateway: ws://127.0.0.1:")
    page = cli.line_starting("page: ").removeprefix("page: ")
    assert page == base.removesuffix("api/v10")
    with urllib.request.urlopen(page, timeout=WAIT) as response:  # 127.0.0.1 only
        html = response.read().decode()
        assert response.headers["Content-Type"].startswith("text/html")
    assert '<meta name="rxcord-api-base" content="/api/v10">' in html
    assert cli.interrupt() == 130
