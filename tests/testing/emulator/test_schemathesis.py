"""The emulator against Discord's own OpenAPI description, with schemathesis.

``tests/fixtures/discord_openapi/routes.json`` holds, unchanged, every operation of Discord's
description that the emulator serves (``scripts/extract_discord_routes.py``). Schemathesis
generates requests from it (valid ones and, in its negative phase, invalid ones) and sends
them to an emulator on 127.0.0.1 (the document's server, discord.com, is replaced before
any request is made); each answer must be no server error, carry a status code and content
type the description lists for the operation, and match the description's schema for that
status (a message, a ``ErrorResponse``, a ``RatelimitedResponse``...).

One correction, where the description disagrees with Discord's docs (which win, as its README
says): the ``_errors`` of a field carry string codes (``BASE_TYPE_REQUIRED``, ``NUMBER_TYPE_COERCE``
in the docs' examples and in the API's answers), where the description reuses ``Error``, whose
``code`` is an integer.

Checks left out, each for a reason of Discord's, not the emulator's:

* ``positive_data_acceptance``: a schema-valid request for a random snowflake is a 404
  (Unknown Message, Unknown Webhook) on Discord too; the description does not say which ids exist.
* ``negative_data_rejection`` and ``missing_required_header``: Discord accepts what its
  description does not allow in places (unknown fields, ``content`` up to 4000 characters in
  the request schema for 2000 in the API) and the emulator follows the API.
* ``use_after_free`` / ``ensure_resource_availability`` (stateful links): none are declared.
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode, checks

from rxcord.testing.emulator import DiscordEmulator, EmulatorConfig

ROUTES = Path(__file__).parents[2] / "fixtures" / "discord_openapi" / "routes.json"
RAW: dict[str, Any] = json.loads(ROUTES.read_text(encoding="utf-8"))

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
]


class _EmulatorThread:
    """An emulator on 127.0.0.1 in a thread of its own (schemathesis calls it synchronously)."""

    def __init__(self) -> None:
        # Limits high enough that generated traffic is answered, not rate limited (429 bodies
        # are checked by the fault tests); ids outside the guild are DM channels that exist.
        self.config = EmulatorConfig(
            channel_limit=1_000_000, global_limit=1_000_000, webhook_limit=1_000_000, ban_threshold=None
        )
        self.loop = asyncio.new_event_loop()
        self.started = threading.Event()
        self.stop: asyncio.Event | None = None
        self.base_url = ""
        self.thread = threading.Thread(target=self._run, name="emulator", daemon=True)

    def _run(self) -> None:
        self.loop.run_until_complete(self._serve())

    async def _serve(self) -> None:
        self.stop = asyncio.Event()
        async with DiscordEmulator(self.config) as emulator:
            self.base_url = emulator.base_url
            self.started.set()
            await self.stop.wait()

    def __enter__(self) -> _EmulatorThread:
        self.thread.start()
        if not self.started.wait(30):
            raise RuntimeError("the emulator did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        self.thread.join(30)
        self.loop.close()


@pytest.fixture(scope="module")
def running() -> Iterator[_EmulatorThread]:
    with _EmulatorThread() as emulator:
        yield emulator


FIELD_ERROR: dict[str, Any] = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
}
"""A field's error in an ``errors`` tree, as Discord's docs show it (``"code": "BASE_TYPE_REQUIRED"``)."""


def _local(raw: dict[str, Any]) -> dict[str, Any]:
    """The description with its server (discord.com) replaced, so nothing generated can reach it,
    and the one correction the docs make to it (see the module docstring)."""
    local = copy.deepcopy(raw)
    local["servers"] = [{"url": "http://127.0.0.1:9/api/v10"}]
    local["components"]["schemas"]["InnerErrors"]["properties"]["_errors"]["items"] = FIELD_ERROR
    return local


SCHEMA = schemathesis.openapi.from_dict(_local(RAW))
OPERATIONS = sorted(result.ok().label for result in SCHEMA.get_all_operations())


def _takes_input(label: str) -> bool:
    """Whether the operation has a parameter or a body (else no request can be invalid)."""
    method, path = label.split(" ", 1)
    item = RAW["paths"][path]
    operation = item[method.lower()]
    return bool(item.get("parameters") or operation.get("parameters") or operation.get("requestBody"))


CASES = [(label, GenerationMode.POSITIVE) for label in OPERATIONS] + [
    (label, GenerationMode.NEGATIVE) for label in OPERATIONS if _takes_input(label)
]
REQUEST_LINE_LIMIT = 8190
"""aiohttp's (and most servers') bound on the request line; Discord's edge answers longer ones itself."""


def _operation(label: str) -> Any:
    method, path = label.split(" ", 1)
    return SCHEMA[path][method]


@pytest.mark.parametrize(("label", "mode"), CASES, ids=[f"{label}-{mode.value}" for label, mode in CASES])
def test_every_answer_is_one_discord_describes(
    label: str, mode: GenerationMode, running: _EmulatorThread
) -> None:
    """Generated requests (valid, then invalid): every answer is one Discord's description allows."""
    headers = {"Authorization": f"Bot {running.config.token}"}
    sent: list[int] = []
    too_long: list[int] = []

    @given(_operation(label).as_strategy(mode))
    @settings(
        max_examples=10,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def calls(case: Any) -> None:
        kwargs = case.as_transport_kwargs(base_url=running.base_url, headers=headers)
        line = requests.Request(kwargs["method"], kwargs["url"], params=kwargs.get("params")).prepare()
        if len(line.path_url or "") >= REQUEST_LINE_LIMIT - 100:
            # Never reaches Discord's API (its edge answers), nor the emulator's routes: not sent.
            too_long.append(len(line.path_url or ""))
            return
        response = case.call_and_validate(
            base_url=running.base_url, headers=headers, checks=CHECKS, timeout=30
        )
        sent.append(response.status_code)

    calls()
    assert sent or too_long, f"no request was generated for {label}"
    if mode is GenerationMode.POSITIVE:
        assert sent, f"every valid request for {label} was over-long"


def test_the_vendored_operations_are_the_ones_the_emulator_serves() -> None:
    """A route added to the emulator is vendored too (rerun scripts/extract_discord_routes.py)."""
    import importlib.util

    script = Path(__file__).parents[3] / "scripts" / "extract_discord_routes.py"
    spec = importlib.util.spec_from_file_location("extract_discord_routes", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    served = module.emulator_operations()
    vendored = {
        (method, path) for path, item in RAW["paths"].items() for method in item if method != "parameters"
    }
    assert served == vendored
    assert RAW["servers"] == [{"url": "https://discord.com/api/v10"}]  # unchanged copy; replaced in tests
