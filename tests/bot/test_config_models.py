"""``[[models]]`` in bot.toml: the shorthand, the one-line errors, the choices file, the candidates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rxcord import Candidate, ChatRequest, InputError, OpenAIAdapter, SamplerSettings, TransportConfig
from rxcord.bot.app import resolve_secrets
from rxcord.bot.config import ModelSection, parse_config
from rxcord.bot.models import ModelChoices, ModelSet, model_keys
from rxcord.core.errors import ConfigError

TWO = """
[[models]]
name = "fast"
provider = "openai"
model = "gpt-4o-mini"
temperature = 0.2

[[models]]
name = "deep"
provider = "openrouter"
model = "deepseek/deepseek-r1"
default = true
api_key_env = ["OR_KEY", "OR_KEY_2"]
extra_body = { top_a = 0.1 }

[models.routing]
order = ["DeepInfra"]
"""


def test_the_provider_shorthand_is_one_model_and_its_fallbacks() -> None:
    config = parse_config(
        '[provider]\nname = "openai"\nmodel = "a"\nfallback_models = ["b"]\ntemperature = 0.5\n'
    )
    assert [(m.label, m.provider, m.default, m.temperature) for m in config.all_models] == [
        ("a", "openai", True, 0.5),
        ("b", "openai", False, 0.5),
    ]
    assert config.default_model.model == "a"


def test_models_parse_with_their_parameters_and_default() -> None:
    config = parse_config(TWO)
    assert [m.label for m in config.all_models] == ["fast", "deep"]
    assert config.default_model.label == "deep"
    deep = config.all_models[1]
    assert deep.body_extra() == {"top_a": 0.1, "provider": {"order": ["DeepInfra"]}}
    assert parse_config(TWO.replace("default = true\n", "")).default_model.label == "fast"  # the first


@pytest.mark.parametrize(
    ("change", "error"),
    [
        (("temperature = 0.2", 'temperature = "hot"'), "6: models[1].temperature: must be a float"),
        (("temperature = 0.2", "colour = 1"), "6: models[1].colour: unknown key"),
        (('order = ["DeepInfra"]', "colour = 1"), "17: models[2].routing.colour: unknown key"),
        (("top_a = 0.1", "stream = false"), "14: models[2].extra_body: extra body fields cannot set stream"),
        (("top_a = 0.1", 'model = "x"'), "14: models[2].extra_body: extra body fields cannot set model"),
        (("top_a = 0.1", "messages = []"), "14: models[2].extra_body: extra body fields cannot set messages"),
        (("top_a = 0.1", 'api_key = "sk-1"'), "14: models[2].extra_body: api_key looks like a credential"),
        (('name = "deep"', 'name = "fast"'), "9: models[2].name: 'fast' names two models"),
        (("temperature = 0.2", "default = true"), "12: models[2].default: only one model can be the default"),
        (('provider = "openrouter"', 'provider = "openai"'), "16: models[2].routing: is OpenRouter's"),
        (('provider = "openai"', 'provider = "custom"'), "2: models[1].base_url: is required for the custom"),
        (
            ("temperature = 0.2", 'base_url = "http://127.0.0.1:9/v1"'),
            "6: models[1].base_url: 127.0.0.1 is refused by the SSRF guard",
        ),
        (('reasoning_effort = "x"', ""), None),
        (("default = true", 'reasoning_effort = "max"'), "12: models[2].reasoning_effort: must be one of"),
        (("default = true", "max_tokens = 0"), "12: models[2].max_tokens: must be a positive integer"),
    ],
)
def test_a_bad_model_table_is_one_line_naming_the_key(change: tuple[str, str], error: str | None) -> None:
    text = TWO.replace(*change)
    if error is None:
        assert parse_config(text).all_models  # the change was a no-op: the file is fine
        return
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="bot.toml")
    assert str(caught.value).startswith(f"bot.toml:{error}")
    assert "sk-1" not in str(caught.value)


def test_models_and_the_shorthand_exclude_each_other_and_one_is_needed() -> None:
    with pytest.raises(ConfigError, match=r"^bot.toml:19: provider: use \[\[models\]\] tables or"):
        parse_config(TWO + '\n[provider]\nname = "openai"\nmodel = "m"\n', source="bot.toml")
    with pytest.raises(ConfigError, match=r"^bot.toml: models: is required: \[\[models\]\] tables"):
        parse_config("[discord]\n", source="bot.toml")


def test_extra_body_can_never_set_what_the_request_sets() -> None:
    for key in ("model", "messages", "contents", "stream", "stream_options"):
        with pytest.raises(InputError, match=key):
            ChatRequest(model="m", extra={key: 1})
    assert ChatRequest(model="m", extra={"top_a": 1}).extra == {"top_a": 1}


def test_a_candidate_sends_its_own_parameters_over_the_requests() -> None:
    request = ChatRequest(
        model="x", sampler=SamplerSettings(temperature=1.0), extra={"user": "u", "top_a": 1}
    )
    plain = Candidate(adapter=OpenAIAdapter(), model="a")
    assert plain.request_for(request) == ChatRequest(model="a", sampler=request.sampler, extra=request.extra)
    assert plain.transport_for(None) is None
    own = Candidate(
        adapter=OpenAIAdapter(),
        model="b",
        sampler=SamplerSettings(max_tokens=5),
        extra={"top_a": 2},
        allow_private_network=True,
    )
    sent = own.request_for(request)
    assert (sent.model, sent.sampler, dict(sent.extra)) == (
        "b",
        SamplerSettings(max_tokens=5),
        {"user": "u", "top_a": 2},
    )
    transport = own.transport_for(TransportConfig(max_body_bytes=10))
    assert transport is not None and transport.allow_private_network and transport.max_body_bytes == 10


def test_every_model_needs_its_keys_and_falls_back_in_file_order() -> None:
    config = parse_config(TWO)
    env = {"DISCORD_BOT_TOKEN": "t", "OPENAI_API_KEY": "o", "OR_KEY": "r1", "OR_KEY_2": "r2"}
    secrets = resolve_secrets(config, env)
    assert secrets.api_keys == ("r1", "r2") and secrets.model_keys["fast"] == ("o",)
    models = ModelSet.build(config, secrets.model_keys)
    assert [c.label for c in models.candidates("deep")] == [
        "openrouter:deepseek/deepseek-r1#key1",
        "openrouter:deepseek/deepseek-r1#key2",
        "openai:gpt-4o-mini#key1",
    ]
    assert [c.model for c in models.candidates("fast")] == ["gpt-4o-mini", *["deepseek/deepseek-r1"] * 2]
    with pytest.raises(Exception, match="OPENAI_API_KEY"):
        model_keys(config, {"OR_KEY": "r1"})


def test_choices_follow_the_parent_channel_and_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "choices.json"
    mine, theirs = ModelChoices(path), ModelChoices(path)
    mine.choose("deep", channel=None)
    mine.choose("fast", channel="10")
    assert mine.chosen(["99", "10"]) == "fast"  # a thread of channel 10
    assert mine.chosen(["11"]) == "deep"
    theirs.choose("fast", channel=None)  # another process (or a restart): read on the next lookup
    assert mine.chosen(["10"]) == "fast" and mine.channels == {}
    assert mine.keep_only(["deep"]) == ["fast"]
    assert mine.chosen(["10"]) is None
    assert json.loads(path.read_text(encoding="utf-8")) == {"channels": {}, "everywhere": None}
    assert ModelChoices(None).chosen(["1"]) is None  # in memory, nothing stored


def test_model_section_labels_default_to_the_model() -> None:
    assert ModelSection(provider="openai", model="gpt-4o").label == "gpt-4o"
