"""Browser tests: a real headless Chromium (Debian's chromium + chromium-driver) driven by selenium.

The emulator (or any aiohttp app) runs on its own event loop in a background thread, so the
test's blocking WebDriver calls never stall the server; coroutines (a replay, a live stream, a
discord.py client) are submitted to that loop with ``ServerThread.run`` / ``ServerThread.submit``.

Without Chromium these tests FAIL with the command that installs it; they never skip.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig

T = TypeVar("T")

ARTIFACTS = Path(__file__).parent / "artifacts"
"""Screenshots the tests save (git-ignored)."""

CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--disable-extensions",
    "--disable-default-apps",
    "--metrics-recording-only",
    "--window-size=1400,900",
)


def _find(env: str, *candidates: str) -> str | None:
    explicit = os.environ.get(env)
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    for candidate in candidates:
        found = shutil.which(candidate)
        if found:
            return found
    return None


_INSTALL = Path(__file__).resolve().parents[2] / "scripts" / "install_browser.sh"


def _install() -> None:
    """Install Debian's Chromium with the project's script, once per machine (xdist workers wait).

    Only as root (CI and the sessions here are) and only when no explicit path was given; a
    failed install leaves the check below to fail with its message.
    """
    if os.geteuid() != 0 or not _INSTALL.exists():
        return
    with open("/tmp/rxcord-browser-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if shutil.which("chromium") and shutil.which("chromedriver"):
            return
        subprocess.run(["bash", str(_INSTALL)], check=False, timeout=900)


@pytest.fixture(scope="session")
def chromium() -> tuple[str, str]:
    """Paths of the Chromium binary and its driver; installs them if missing, else fails (never skips)."""
    binary = _find("RXCORD_CHROMIUM", "chromium", "chromium-browser")
    driver = _find("RXCORD_CHROMEDRIVER", "chromedriver")
    explicit = "RXCORD_CHROMIUM" in os.environ or "RXCORD_CHROMEDRIVER" in os.environ
    if (binary is None or driver is None) and not explicit:
        _install()
        binary = _find("RXCORD_CHROMIUM", "chromium", "chromium-browser")
        driver = _find("RXCORD_CHROMEDRIVER", "chromedriver")
    if binary is None or driver is None:
        pytest.fail(
            "the browser tests need Chromium and its driver (missing: "
            + ", ".join(name for name, path in (("chromium", binary), ("chromedriver", driver)) if not path)
            + "); install them with: bash scripts/install_browser.sh "
            "(apt-get install chromium chromium-driver)",
            pytrace=False,
        )
    return binary, driver


@pytest.fixture
def browser(chromium: tuple[str, str], tmp_path: Path) -> Iterator[webdriver.Chrome]:
    """A fresh headless Chromium with its own profile directory."""
    binary, driver_path = chromium
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    profile = tmp_path / "chromium-profile"
    profile.mkdir()
    options.add_argument(f"--user-data-dir={profile}")
    # The driver is given, so selenium's own driver manager (which would download) is not used.
    service = Service(executable_path=driver_path)
    driver = webdriver.Chrome(options=options, service=service)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


class ServerThread:
    """An asyncio loop in a daemon thread, for servers the blocking WebDriver talks to."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="browser-test-loop", daemon=True)
        self._thread.start()

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        """Schedule *coro* on the loop; returns its future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        """Run *coro* on the loop and wait for its result."""
        return self.submit(coro).result(timeout)

    def call(self, function: Callable[[], T], timeout: float = 30.0) -> T:
        """Run a plain function on the loop's thread (emulator state is not thread-safe)."""

        async def wrapper() -> T:
            return function()

        return self.run(wrapper(), timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()


@pytest.fixture
def server_thread() -> Iterator[ServerThread]:
    thread = ServerThread()
    try:
        yield thread
    finally:
        thread.close()


@pytest.fixture
def emulator(server_thread: ServerThread) -> Iterator[DiscordEmulator]:
    """A Discord emulator running on the server thread's loop."""

    async def start() -> DiscordEmulator:
        emu = DiscordEmulator(EmulatorConfig())
        await emu.start()
        return emu

    emu = server_thread.run(start())
    try:
        yield emu
    finally:
        server_thread.run(emu.close())


def wait_for(predicate: Callable[[], T], timeout: float = 30.0, *, what: str = "condition") -> T:
    """Poll *predicate* until it returns something truthy; fail with *what* after *timeout* seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
