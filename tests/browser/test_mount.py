"""``rxcord.testing.page.mount``: what is served, with which headers (no browser needed)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from rxcord.testing.emulator import DiscordEmulator
from rxcord.testing.page import ASSET_PREFIX, ASSETS, mount, page_url


@pytest.fixture
async def client() -> AsyncIterator[TestClient[web.Request, web.Application]]:
    app = web.Application()
    mount(app, "/custom/base/")
    async with TestClient(TestServer(app, host="127.0.0.1")) as test_client:
        yield test_client


async def test_the_page_names_its_api_base_and_only_bundled_assets(
    client: TestClient[web.Request, web.Application],
) -> None:
    response = await client.get("/")
    assert response.status == 200 and response.content_type == "text/html"
    html = await response.text()
    assert '<meta name="rxcord-api-base" content="/custom/base">' in html
    referenced = set(re.findall(r'(?:src|href)="' + ASSET_PREFIX + r'/([^"]+)"', html))
    assert referenced and referenced <= set(ASSETS)
    policy = response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "img-src 'self' data:" in policy
    assert response.headers["X-Content-Type-Options"] == "nosniff"


async def test_assets_are_served_with_their_types_and_nothing_else(
    client: TestClient[web.Request, web.Application],
) -> None:
    for name, content_type in ASSETS.items():
        response = await client.get(f"{ASSET_PREFIX}/{name}")
        assert response.status == 200 and response.content_type == content_type
        assert len(await response.read()) > 100
    for name in ("index.html", "unknown.js", "app.js.map", "__init__.py"):
        assert (await client.get(f"{ASSET_PREFIX}/{name}")).status == 404


async def test_the_emulator_serves_the_page_and_keeps_its_json_404s() -> None:
    async with DiscordEmulator() as emulator:
        assert emulator.page_url == page_url(emulator.base_url) == emulator.base_url.removesuffix("api/v10")
        async with TestClient(TestServer(emulator.app, host="127.0.0.1")) as test_client:
            page = await test_client.get("/")
            assert page.status == 200 and "rxcord-api-base" in await page.text()
            missing = await test_client.get("/api/v10/no-such-route")
            assert missing.status == 404 and (await missing.json())["code"] == 0


def test_page_url() -> None:
    assert page_url("http://127.0.0.1:5000/api/v10") == "http://127.0.0.1:5000/"
    assert page_url("http://[::1]:80/api/v10/") == "http://[::1]:80/"


def test_without_chromium_the_browser_tests_fail_naming_the_install_script(tmp_path: Path) -> None:
    env = {**os.environ, "RXCORD_CHROMIUM": str(tmp_path / "no-chromium")}
    env.pop("PYTEST_XDIST_WORKER", None)
    test = "tests/browser/test_markdown.py::test_inline_styles"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-n",
            "0",
            test,
        ],
        check=False,
        cwd=Path(__file__).parent.parent.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1, run.stdout[-2000:]
    assert "1 error" in run.stdout and "skipped" not in run.stdout
    assert "bash scripts/install_browser.sh" in run.stdout
