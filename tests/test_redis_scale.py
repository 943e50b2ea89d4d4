"""The multi-process scale test (bench/scale_redis.py) against a real Redis, as CI runs it.

4 worker processes x 50 concurrent streams, one bot token, rate limits shared through Redis,
into one Discord emulator. This test checks correctness only (every message delivered once and
in order, no 429 after bucket discovery); the time ratio is a benchmark figure, printed and
recorded in bench/RESULTS.md, never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.redis_server import redis_url  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(300)  # about 25 s idle, a minute or more beside a CPU hog; the run has its own 240 s
def test_redis_scale_four_processes_fifty_streams(redis_url: str) -> None:  # noqa: F811
    """Every message of 4 x 50 streams arrives once, in order, with no 429 after discovery."""
    done = subprocess.run(
        [sys.executable, "-m", "bench.scale_redis", "--json", "--redis-url", redis_url],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.strip(), done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"scale figures: {figures}")
    assert figures["processes"] == 4 and figures["streams_per_process"] == 50
    assert figures["delivery_ok"] is True
    assert figures["delivered"] == figures["messages"]
    assert figures["limiter_429_after_discovery"] == 0
