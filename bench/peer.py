"""LiteLLM, figure 1's peer (d), in a child process of its own.

Importing LiteLLM adds about 350,000 objects the garbage collector tracks (four times the
rest of the benchmark process): in the measuring process every later full collection, and
so every live figure, would pay for them. The child imports it once (offline: the bundled
cost map) and streams a URL per line of its stdin, answering one JSON line per stream with
its own CPU seconds for it (``time.process_time`` around the stream) and the characters of
answer collected. The parent's figure 1 interleaves it with the other contenders as before.
"""

from __future__ import annotations

__all__ = ("LiteLLMPeer",)

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.clients import Work


class LiteLLMPeer:
    """The child process (context manager); ``available`` is false when LiteLLM is not installed."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.available = False

    def __enter__(self) -> LiteLLMPeer:
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.peer"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(Path(__file__).resolve().parent.parent),
        )
        assert self.proc.stdout is not None
        self.available = self.proc.stdout.readline().strip() == "ready"
        return self

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None:
            return
        try:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=10)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            proc.kill()
            proc.wait()
        self.proc = None

    async def stream(self, url: str) -> tuple[Work, float]:
        """Stream *url* in the child: (what it collected, its CPU seconds for the stream)."""
        proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(url + "\n")
        proc.stdin.flush()
        line = await asyncio.get_running_loop().run_in_executor(None, proc.stdout.readline)
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"LiteLLM failed: {answer['error']}")
        return Work(events=-1, content=answer["content"]), float(answer["cpu"])


def main() -> None:
    from bench.clients import litellm_module, litellm_stream

    module = litellm_module()
    print("ready" if module is not None else "missing", flush=True)
    if module is None:
        return
    loop = asyncio.new_event_loop()
    for line in sys.stdin:
        url = line.strip()
        start = time.process_time()
        try:
            work = loop.run_until_complete(litellm_stream(module, url))
        except Exception as exc:  # reported to the parent, which fails the run
            print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
            continue
        cpu = time.process_time() - start
        print(json.dumps({"cpu": cpu, "content": work.content}), flush=True)
    loop.close()


if __name__ == "__main__":
    main()
