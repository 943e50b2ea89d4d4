"""Copy the message-related schemas of Discord's official OpenAPI description into the test fixtures.

Usage (from the repo root): python scripts/extract_discord_schemas.py PATH/TO/openapi.json

Keeps the closure of the schemas that message delivery touches (the create-message and
execute-webhook requests, and the message response), unchanged, so the fidelity tests can
validate payloads and emulator responses against Discord's own description. The spec is
MIT-licensed (Copyright 2023 Discord); the notice travels with the copy.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOTS = ("MessageCreateRequest", "IncomingWebhookRequestPartial", "MessageResponse")
OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "discord_openapi" / "messages.json"


def refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/components/schemas/"):
            found.add(ref.rsplit("/", 1)[1])
        for value in node.values():
            found |= refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= refs(value)
    return found


def main(spec_path: str) -> None:
    spec = json.loads(Path(spec_path).read_text())
    schemas = spec["components"]["schemas"]
    keep: dict[str, Any] = {}
    todo = list(ROOTS)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep[name] = schemas[name]
        todo.extend(refs(schemas[name]) - keep.keys())
    OUT.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "source": "https://github.com/discord/discord-api-spec specs/openapi.json (MIT, Copyright 2023 Discord)",
        "openapi_version": spec["info"]["version"],
        "components": {"schemas": dict(sorted(keep.items()))},
    }
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"{len(keep)} schemas -> {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
