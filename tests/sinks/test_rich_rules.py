"""Embeds and components: Discord's form validation and the answer's shape (``sinks.rich_rules``)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from rxcord.sinks.payload_rules import check_message_payload
from rxcord.sinks.rich_rules import components_response, embed_response
from rxcord.testing.emulator import DiscordEmulator

BOT = {"Authorization": "Bot emulator-token"}


def _errors(payload: dict[str, Any]) -> dict[str, Any]:
    body = check_message_payload(payload)
    assert body is not None and body["code"] == 50035, body
    errors: dict[str, Any] = body["errors"]
    return errors


@pytest.mark.parametrize(
    ("embed", "path", "code"),
    [
        ({"title": 5}, ("title",), "BASE_TYPE_STRING"),
        ({"url": "javascript:alert(1)"}, ("url",), "URL_TYPE_INVALID_URL"),
        ({"timestamp": "yesterday"}, ("timestamp",), "DATE_TIME_TYPE_PARSE"),
        ({"color": "red"}, ("color",), "NUMBER_TYPE_COERCE"),
        ({"color": 0x1000000}, ("color",), "NUMBER_TYPE_MAX"),
        ({"footer": "text"}, ("footer",), "MODEL_TYPE_CONVERT"),
        ({"footer": {"icon_url": "https://x.example/a.png"}}, ("footer", "text"), "BASE_TYPE_REQUIRED"),
        ({"image": {"url": 3}}, ("image", "url"), "BASE_TYPE_STRING"),
        (
            {"fields": [{"name": "a", "value": "b", "inline": "yes"}]},
            ("fields", "0", "inline"),
            "BASE_TYPE_BOOLEAN",
        ),
    ],
)
def test_a_wrongly_typed_embed_field_is_a_form_error_naming_it(
    embed: dict[str, Any], path: tuple[str, ...], code: str
) -> None:
    node = _errors({"content": "x", "embeds": [embed]})["embeds"]["0"]
    for part in path:
        node = node[part]
    assert [error["code"] for error in node["_errors"]] == [code]


def test_null_optional_fields_and_unknown_keys_are_not_echoed() -> None:
    embed = {"title": "t", "description": None, "colour": 3, "footer": {"text": "f", "icon_url": None}}
    assert check_message_payload({"embeds": [embed]}) is None
    assert embed_response(embed) == {"title": "t", "footer": {"text": "f"}, "type": "rich"}


def test_only_action_rows_of_buttons_are_taken() -> None:
    assert "components" in _errors({"content": "x", "components": [{"type": 14}]})
    row = {"type": 1, "components": [{"type": 3, "custom_id": "s"}]}
    assert _errors({"content": "x", "components": [row]})["components"]["0"]["components"]["0"]["type"]
    assert _errors({"content": "x", "components": [{"type": 1, "components": []}]})


def test_buttons_are_echoed_with_ids_in_order() -> None:
    rows = [
        {"type": 1, "components": [{"type": 2, "style": 1, "label": "Yes", "custom_id": "y", "extra": 1}]},
        {"type": 1, "components": [{"type": 2, "style": 5, "label": "Docs", "url": "https://x.example"}]},
    ]
    assert check_message_payload({"components": rows}) is None
    assert components_response(rows) == [
        {
            "type": 1,
            "id": 1,
            "components": [{"type": 2, "id": 2, "style": 1, "label": "Yes", "custom_id": "y"}],
        },
        {
            "type": 1,
            "id": 3,
            "components": [{"type": 2, "id": 4, "style": 5, "label": "Docs", "url": "https://x.example"}],
        },
    ]


async def test_the_rest_route_answers_the_form_error_and_stores_nothing() -> None:
    async with DiscordEmulator() as emulator, aiohttp.ClientSession(headers=BOT) as session:
        url = f"{emulator.base_url}/channels/1200000000000000010/messages"
        async with session.post(url, json={"content": "x", "embeds": [{"title": ["no"]}]}) as response:
            body = await response.json()
        assert response.status == 400 and body["code"] == 50035
        assert body["errors"]["embeds"]["0"]["title"]["_errors"][0]["code"] == "BASE_TYPE_STRING"
        async with session.post(url, json={"embeds": [{"title": "ok", "url": None}]}) as response:
            created = await response.json()
        assert response.status == 200 and created["embeds"] == [{"title": "ok", "type": "rich"}]
        assert [m["embeds"] for m in emulator.messages("1200000000000000010")] == [
            [{"title": "ok", "type": "rich"}]
        ]
