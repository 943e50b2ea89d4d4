"""The benchmark's provider server: serves captures over HTTP on 127.0.0.1, in its own process.

It runs in a child process so that its CPU (writing the body) lands on the other
core and the client's CPU time is the client's alone. Every request's path says
what to serve and how::

    POST /c/<capture>/<mode>/<pace_ms>/<phase_ms>/<stream_id>/v1/chat/completions

* ``mode`` ``random``: the body cut into seeded random pieces of 1-512 bytes
  (events, lines and UTF-8 characters split anywhere); ``event``: one write per
  SSE event.
* ``g<N>x<GAP>`` (figure 1's controlled reads): *N* SSE events per write, one write every
  *GAP* microseconds on an absolute schedule; a gap shorter than the loop's timer resolution
  (about a millisecond) is waited by spinning on ``time.monotonic`` in this process, which
  serves one stream at a time in figure 1. With a gap longer than the client needs for a
  write, aiohttp hands the client one write per read: the events per read are set, not
  incidental (``grouped_mode``).
* ``pace_ms`` > 0 (``event`` mode): event *i* is written at ``t0 + phase + i * pace``
  (an absolute schedule, so pacing does not drift; ``phase_ms`` spreads streams
  over the interval). The time each event was actually written is recorded
  under ``stream_id`` on ``time.monotonic`` (one clock for every process on the
  machine); ``GET /writes`` returns ``{stream_id: [seconds, ...]}`` so the client
  can measure its lag and latency from the write. ``POST /reset`` forgets them.

Started by ``bench.server.ServerProcess``; ``python -m bench.server --captures DIR``
prints the port on its first line and serves until stdin closes.
"""

from __future__ import annotations

__all__ = (
    "ServerProcess",
    "grouped_mode",
    "parse_grouped",
    "piece_sizes",
    "split_events",
    "split_grouped",
    "split_random",
)

import argparse
import asyncio
import os
import random
import subprocess
import sys
import time
from pathlib import Path

from aiohttp import web

RANDOM_MAX = 512
"""Random pieces are 1-RANDOM_MAX bytes."""


def split_random(body: bytes, seed: int = 11) -> list[bytes]:
    """*body* as seeded random pieces of 1-``RANDOM_MAX`` bytes."""
    rng = random.Random(seed)
    pieces: list[bytes] = []
    pos = 0
    while pos < len(body):
        step = rng.randint(1, RANDOM_MAX)
        pieces.append(body[pos : pos + step])
        pos += step
    return pieces


def split_events(body: bytes) -> list[bytes]:
    """*body* as one piece per SSE event (each keeps its blank line)."""
    parts = body.split(b"\n\n")
    pieces = [part + b"\n\n" for part in parts[:-1]]
    if parts[-1]:
        pieces.append(parts[-1])
    return pieces


def grouped_mode(events: int, gap_us: int) -> str:
    """The write mode serving *events* SSE events per write, one write every *gap_us* microseconds."""
    return f"g{events}x{gap_us}"


def parse_grouped(mode: str) -> tuple[int, int] | None:
    """``(events per write, gap in microseconds)`` of a ``grouped_mode``; ``None`` for another mode."""
    if not mode.startswith("g") or "x" not in mode:
        return None
    events, gap = mode[1:].split("x", 1)
    return int(events), int(gap)


def split_grouped(body: bytes, events: int) -> list[bytes]:
    """*body* as pieces of *events* whole SSE events each (the last may hold fewer)."""
    singles = split_events(body)
    return [b"".join(singles[i : i + events]) for i in range(0, len(singles), events)]


_SPIN_BELOW = 0.002
"""Waits shorter than this are spun, not slept: the loop's timers round up to about a millisecond."""


async def _wait_until(deadline: float) -> None:
    delay = deadline - time.monotonic()
    if delay > _SPIN_BELOW:
        await asyncio.sleep(delay - _SPIN_BELOW)
    while time.monotonic() < deadline:
        pass


def piece_sizes(pieces: list[bytes]) -> tuple[int, float]:
    """Number of pieces and mean size."""
    return len(pieces), (sum(map(len, pieces)) / len(pieces) if pieces else 0.0)


class _App:
    def __init__(self, captures: Path) -> None:
        self.captures = captures
        self.cache: dict[tuple[str, str], list[bytes]] = {}
        self.writes: dict[str, list[float]] = {}

    def pieces(self, capture: str, mode: str) -> list[bytes]:
        key = (capture, mode)
        found = self.cache.get(key)
        if found is None:
            path = self.captures / capture
            if path.parent != self.captures or not path.is_file():
                raise web.HTTPNotFound()
            body = path.read_bytes()
            grouped = parse_grouped(mode)
            if grouped is not None:
                found = split_grouped(body, grouped[0])
            else:
                found = split_random(body) if mode == "random" else split_events(body)
            self.cache[key] = found
        return found

    async def handle(self, request: web.Request) -> web.StreamResponse:
        parts = request.path.split("/")
        # ["", "c", capture, mode, pace_ms, phase_ms, stream_id, ...]
        if len(parts) < 7 or parts[1] != "c":
            raise web.HTTPNotFound()
        capture, mode, stream_id = parts[2], parts[3], parts[6]
        pace_ms, phase_ms = float(parts[4]), float(parts[5])
        await request.read()
        pieces = self.pieces(capture, mode)
        response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        try:
            grouped = parse_grouped(mode)
            if grouped is not None:
                gap = grouped[1] / 1e6
                t0 = time.monotonic() + 0.002
                for index, piece in enumerate(pieces):
                    await _wait_until(t0 + index * gap)
                    await response.write(piece)
            elif pace_ms > 0:
                pace = pace_ms / 1000.0
                t0 = time.monotonic() + 0.005 + phase_ms / 1000.0
                written = self.writes[stream_id] = []
                for index, piece in enumerate(pieces):
                    delay = t0 + index * pace - time.monotonic()
                    if delay > 0:
                        await asyncio.sleep(delay)
                    written.append(time.monotonic())
                    await response.write(piece)
            else:
                for piece in pieces:
                    await response.write(piece)
            await response.write_eof()
        except (ConnectionError, asyncio.CancelledError):
            pass
        return response

    async def writes_seen(self, request: web.Request) -> web.Response:
        return web.json_response(self.writes)

    async def reset(self, request: web.Request) -> web.Response:
        self.writes.clear()
        return web.json_response({})


async def _serve(captures: Path) -> None:
    app_state = _App(captures)
    app = web.Application()
    app.router.add_get("/writes", app_state.writes_seen)
    app.router.add_post("/reset", app_state.reset)
    app.router.add_route("*", "/c/{tail:.*}", app_state.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, backlog=1024)
    await site.start()
    port = runner.addresses[0][1]
    print(port, flush=True)
    loop = asyncio.get_running_loop()
    # Serve until the parent closes our stdin (or goes away).
    await loop.run_in_executor(None, sys.stdin.read)
    await runner.cleanup()


class ServerProcess:
    """The server as a child process (context manager); ``url(...)`` builds base URLs."""

    def __init__(self, captures: Path) -> None:
        self.captures = captures
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> ServerProcess:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.server", "--captures", str(self.captures)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(Path(__file__).resolve().parent.parent),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip():
            raise RuntimeError("the benchmark server did not start")
        self.port = int(line)
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        self.proc = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def url(
        self, capture: str, mode: str, *, pace_ms: float = 0.0, phase_ms: float = 0.0, stream_id: str = "s"
    ) -> str:
        """The OpenAI-style base URL (``.../v1``) serving *capture* in *mode*."""
        return f"http://127.0.0.1:{self.port}/c/{capture}/{mode}/{pace_ms:g}/{phase_ms:.3f}/{stream_id}/v1"

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="serve benchmark captures on 127.0.0.1")
    parser.add_argument("--captures", required=True)
    args = parser.parse_args(argv)
    asyncio.run(_serve(Path(args.captures).resolve()))


if __name__ == "__main__":
    main()
