"""The docs site: ``mkdocs build --strict`` succeeds offline and documents every façade's ``__all__``."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"

# Loaded into the build's interpreter (sitecustomize): any connection to a host that is not
# loopback raises, so a theme font, a plugin or an inventory fetched at build time fails the build.
_NO_NETWORK = """
import socket

_connect = socket.socket.connect


def _loopback_only(self, address):
    host = address[0] if isinstance(address, tuple) else address
    local = host in ("127.0.0.1", "::1", "localhost") or self.family == socket.AF_UNIX
    if not local:
        raise OSError(f"network refused in the docs build: {address!r}")
    return _connect(self, address)


socket.socket.connect = _loopback_only
"""


FACADES = (
    "rxcord",
    "rxcord.cli",
    "rxcord.compose",
    "rxcord.decisions",
    "rxcord.discord",
    "rxcord.hooks",
    "rxcord.io",
    "rxcord.operators",
    "rxcord.providers",
    "rxcord.sinks",
    "rxcord.testing",
)


def _documented(text: str) -> list[tuple[str, str]]:
    """Each ``::: rxcord[.room].Name`` line as (façade, name)."""
    return [
        (facade, name) for facade, name in re.findall(r"^::: (rxcord(?:\.[a-z]+)?)\.(\w+)$", text, flags=re.M)
    ]


def test_every_public_name_has_a_place_on_an_api_page() -> None:
    """Every façade's every name, on exactly one page; a room's names on one page of their own."""
    pages = {page.name: _documented(page.read_text(encoding="utf-8")) for page in API.glob("*.md")}
    documented = [entry for entries in pages.values() for entry in entries]
    assert len(documented) == len(set(documented)), "a name documented on two pages"
    for facade in FACADES:
        names = sorted(name for home, name in documented if home == facade)
        assert names == sorted(importlib.import_module(facade).__all__), f"docs/api for {facade}"
        if facade != "rxcord":  # the root's pages stay split by area
            homes = [page for page, entries in pages.items() if any(home == facade for home, _ in entries)]
            assert len(homes) == 1, (facade, homes)


def test_the_site_builds_offline() -> None:
    """Material's fonts, privacy and social plugins would fetch at build time: all off."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert config["theme"]["font"] is False
    names = {next(iter(p)) if isinstance(p, dict) else p for p in config["plugins"]}
    assert names.isdisjoint({"privacy", "social", "material/privacy", "material/social"})
    assert config["strict"] is True


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_NO_NETWORK, encoding="utf-8")
    site = tmp_path / "site"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
        "NO_MKDOCS_2_WARNING": "1",
    }
    probe = "import socket; socket.create_connection(('192.0.2.1', 9), timeout=1)"
    refused = subprocess.run(
        [sys.executable, "-c", probe], check=False, env=env, capture_output=True, text=True
    )
    assert "network refused in the docs build" in refused.stderr  # the guard is loaded
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    done = subprocess.run(build, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=110)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr

    anchors: set[str] = set()
    for page in (site / "api").glob("*/index.html"):
        anchors |= set(re.findall(r'id="(rxcord(?:\.[a-z]+)?\.\w+)"', page.read_text(encoding="utf-8")))
    for facade in FACADES:
        names = {f"{facade}.{name}" for name in importlib.import_module(facade).__all__}
        assert names <= anchors, sorted(names - anchors)
    entry_points = (site / "api" / "entry-points" / "index.html").read_text(encoding="utf-8")
    assert 'id="rxcord.stream_to_discord"' in entry_points
    assert "into Discord: the call a bot makes per reply" in entry_points  # its docstring, rendered
    results = (site / "api" / "requests-results" / "index.html").read_text(encoding="utf-8")
    for name in ("ChatRequest", "StreamResult"):
        assert f'id="rxcord.{name}"' in results, name

    stages = (site / "stage-types" / "index.html").read_text(encoding="utf-8")
    flow = ["ChatRequest", "HttpRequest", "RawStreamChunk", "ProcessedChunk", "StreamState", "Segment"]
    positions = [stages.index(f"<code>{name}</code>") for name in [*flow, "Delivery", "StreamResult"]]
    assert positions == sorted(positions)
    for page in ("architecture", "decisions", "faults", "changelog"):
        assert (site / page / "index.html").is_file(), page
    assert "Unreleased" in (site / "changelog" / "index.html").read_text(encoding="utf-8")
