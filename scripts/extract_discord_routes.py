"""Copy the operations the emulator serves from Discord's official OpenAPI description.

Usage (from the repo root): python scripts/extract_discord_routes.py PATH/TO/openapi.json

Writes ``tests/fixtures/discord_openapi/routes.json``: a valid OpenAPI 3.1 document holding,
unchanged, every operation of Discord's description that ``rxcord.testing.emulator`` serves
(read from the emulator's own router, so a new emulator route is picked up) and the closure
of the schemas, responses and headers they reference. The schemathesis suite
(``tests/testing/emulator/test_schemathesis.py``) generates requests from it and checks the
emulator's answers. The spec is MIT-licensed (Copyright 2023 Discord); the notice travels
with the copy (``LICENSE`` beside it).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "discord_openapi" / "routes.json"
METHODS = ("get", "put", "post", "delete", "patch")


def emulator_operations() -> set[tuple[str, str]]:
    """``(method, template)`` of every Discord route the emulator serves (under ``/api/v10``)."""
    from rxcord.testing.emulator import DiscordEmulator
    from rxcord.testing.emulator.config import API_PREFIX

    found: set[tuple[str, str]] = set()
    for route in DiscordEmulator().app.router.routes():
        path = route.resource.canonical if route.resource is not None else ""
        # /_emulator/... is the emulator's own (for tests and its page), not Discord's.
        if (
            path.startswith(API_PREFIX)
            and not path.startswith(API_PREFIX + "/_emulator")
            and route.method.lower() in METHODS
        ):
            found.add((route.method.lower(), path[len(API_PREFIX) :]))
    return found


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/"):
            found.add(ref)
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def main(spec_path: str) -> None:
    raw = Path(spec_path).read_bytes()
    spec = json.loads(raw)
    wanted = emulator_operations()
    paths: dict[str, Any] = {}
    for template, item in spec["paths"].items():
        methods = {m: item[m] for m in METHODS if m in item and (m, template) in wanted}
        if methods:
            paths[template] = {
                **({"parameters": item["parameters"]} if "parameters" in item else {}),
                **methods,
            }
    missing = sorted(f"{m.upper()} {t}" for m, t in wanted if t not in paths or m not in paths[t])
    components: dict[str, dict[str, Any]] = {}
    todo = list(_refs(paths))
    while todo:
        ref = todo.pop()
        _, _, kind, name = ref.split("/", 3)
        if name in components.setdefault(kind, {}):
            continue
        node = spec["components"][kind][name]
        components[kind][name] = node
        todo.extend(_refs(node))
    components["securitySchemes"] = {"BotToken": spec["components"]["securitySchemes"]["BotToken"]}
    doc = {
        "openapi": spec["openapi"],
        "info": {**spec["info"], "x-rxcord-source": _source(raw)},
        "servers": spec["servers"],
        "security": [{"BotToken": []}],
        "paths": dict(sorted(paths.items())),
        "components": {kind: dict(sorted(names.items())) for kind, names in sorted(components.items())},
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    count = sum(len([m for m in item if m in METHODS]) for item in paths.values())
    print(f"{count} operations, {sum(map(len, components.values()))} components -> {OUT}")
    if missing:
        print("served by the emulator but not in Discord's description:", ", ".join(missing))


def _source(raw: bytes) -> str:
    digest = hashlib.sha256(raw).hexdigest()
    return f"https://github.com/discord/discord-api-spec specs/openapi.json (MIT, Copyright 2023 Discord), sha256 {digest}"


if __name__ == "__main__":
    main(sys.argv[1])
