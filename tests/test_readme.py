"""The README's Python examples run: the offline pipeline script as written, the others as modules."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parent.parent / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _sections() -> list[tuple[str, str]]:
    """(the heading above it, code) for every python block of the README."""
    text = README.read_text(encoding="utf-8")
    out = []
    for match in _BLOCK.finditer(text):
        headings = re.findall(r"^#{2,3} (.+)$", text[: match.start()], re.M)
        out.append((headings[-1] if headings else "", match.group(1)))
    return out


def test_the_compose_section_script_runs_offline_and_shows_its_operator_ran(tmp_path: Path) -> None:
    [script] = [code for heading, code in _sections() if heading == "Compose your own pipeline"][:1]
    path = tmp_path / "compose.py"
    path.write_text(script, encoding="utf-8")
    out = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=True
    )
    lines = out.stdout.splitlines()
    assert "flush -> word_filter -> clean" in lines[0]
    assert "word_filter saw segments: ['text']" in out.stdout
    assert out.stdout.count("discord <-") >= 1 and "****" in out.stdout
    assert "rain" not in out.stdout.split("word_filter saw", 1)[1]
    assert "<think>" not in out.stdout


def test_the_one_client_object_example_streams_the_capture_offline() -> None:
    """The Streamer example replays the bundled capture on 127.0.0.1 and the sink gets the answer."""
    [code] = [code for heading, code in _sections() if heading == "One client object"]
    namespace: dict[str, Any] = {"__name__": "readme_streamer"}
    exec(compile(code, "README.md (One client object)", "exec"), namespace)
    contents = asyncio.run(namespace["main"]())
    assert contents and "Stones remember rain" in contents[0] and "<think" not in "".join(contents)


@pytest.mark.parametrize("index", range(len(_sections())))
def test_every_python_block_imports_and_defines_what_it_shows(index: int) -> None:
    """Each block is a module: executing it imports real names and defines its functions (no I/O)."""
    heading, code = _sections()[index]
    if heading == "Compose your own pipeline":
        code = code.replace("asyncio.run(main())", "")  # run for real by the test above
    namespace: dict[str, object] = {"__name__": f"readme_block_{index}"}
    exec(compile(code, f"README.md block {index} ({heading})", "exec"), namespace)
    defined = [name for name, value in namespace.items() if callable(value) and not name.startswith("__")]
    assert defined, f"block {index} under {heading!r} defines nothing"
