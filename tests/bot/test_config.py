"""The bot's configuration file, its permissions and its secrets."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

from rxcord import DeliveryMode, MissingCredentialError
from rxcord.bot.app import permitted, resolve_secrets
from rxcord.bot.config import parse_config
from rxcord.core.errors import ConfigError


def test_permissions_blocks_win_and_allow_lists_restrict() -> None:
    config = parse_config(
        """
[provider]
name = "openai"
model = "m"
[permissions]
allow_dms = false
allowed_roles = ["50"]
blocked_users = ["9"]
blocked_channels = ["66"]
"""
    )

    def ok(user: str, roles: set[str], channels: set[str], dm: bool = False) -> bool:
        return permitted(config, user_id=user, role_ids=roles, channel_ids=channels, dm=dm)

    assert ok("1", {"50"}, {"10"})
    assert not ok("1", set(), {"10"})  # not in an allowed role
    assert not ok("9", {"50"}, {"10"})  # blocked beats the allowed role
    assert not ok("1", {"50"}, {"10", "66"})  # a thread of a blocked channel
    assert not ok("1", {"50"}, {"5"}, dm=True)  # DMs off


def test_the_example_config_loads() -> None:
    text = (resources.files("rxcord.bot") / "example.toml").read_text()
    config = parse_config(text)
    assert config.delivery.mode is DeliveryMode.EDIT
    assert [m.label for m in config.all_models] == ["r1", "mini"]
    assert config.default_model.api_key_env == ("OPENROUTER_API_KEY",)
    assert config.default_model.body_extra() == {"provider": {"allow_fallbacks": True}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[provider]\nname = "openai"\nmodel = "m"\n\n[context]\nmax_chars = -1\n',
            "6: context.max_chars: must be",
        ),
        ('[provider]\nname = "openai"\nmodel = "m"\ncolour = 1\n', "4: provider.colour: unknown key"),
        ('[provider]\nname = "openai"\nmodel = "m"\n[extra]\n', "4: extra: unknown key"),
        ('[provider]\nname = "openai"\n', "1: provider.model: is required"),
        (
            '[provider]\nname = "openai"\nmodel = "m"\n[delivery]\nmode = "x"\n',
            "5: delivery.mode: must be one of",
        ),
        (
            '[provider]\nname = "openai"\nmodel = "m"\napi_key_env = ["sk-123"]\n',
            "4: provider.api_key_env: must be",
        ),
        (
            '[provider]\nname = "openai"\nmodel = "m"\n[prompt]\nsystem = "{oops}"\n',
            "5: prompt.system: uses unknown",
        ),
        ('[provider]\nname = "custom"\nmodel = "m"\n', "1: provider.base_url: is required for the custom"),
        (
            '[provider]\nname = "openai"\nmodel = "m"\n[tools]\nmodule = "no_such_tools_module_x"\n',
            "5: tools.module: cannot import 'no_such_tools_module_x'",
        ),
        (
            '[provider]\nname = "openai"\nmodel = "m"\n[tools]\nmodule = "json"\n',
            "5: tools.module: 'json' must",
        ),
        ('[provider]\nname = "openai"\nmodel = "m"\n[tools]\nmodule = "a b"\n', "5: tools.module: must be"),
    ],
)
def test_config_errors_name_the_key_and_line(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="bot.toml")
    assert str(caught.value).startswith(f"bot.toml:{message}")
    assert "sk-123" not in str(caught.value)  # a key pasted by mistake is never echoed


def test_secrets_come_from_the_named_variables() -> None:
    config = parse_config(
        '[provider]\nname = "openai"\nmodel = "m"\napi_key_env = ["K1", "K2", "K3"]\n'
        '[persona]\nwebhook_url_env = "HOOK"\n'
    )
    env = {"DISCORD_BOT_TOKEN": "t", "K1": "a", "K3": "c", "HOOK": "https://discord.com/api/webhooks/42/tok"}
    secrets = resolve_secrets(config, env)
    assert secrets.api_keys == ("a", "c")  # in the file's order, unset ones skipped
    assert (secrets.webhook_id, secrets.webhook_token) == ("42", "tok")
    assert "tok" not in repr(secrets) and "'a'" not in repr(secrets)
    with pytest.raises(MissingCredentialError, match="DISCORD_BOT_TOKEN"):
        resolve_secrets(config, {k: v for k, v in env.items() if k != "DISCORD_BOT_TOKEN"})
    with pytest.raises(MissingCredentialError, match="K1 or K2 or K3"):
        resolve_secrets(config, {"DISCORD_BOT_TOKEN": "t", "HOOK": env["HOOK"]})


def test_the_readme_config_is_a_valid_config() -> None:
    readme = (Path(__file__).parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run a bot", 1)[1]
    block = section.split("```toml\n", 1)[1].split("```", 1)[0]
    config = parse_config(block, source="README.md")
    assert [(m.label, m.provider) for m in config.all_models] == [("r1", "openrouter"), ("mini", "openai")]
    assert config.default_model.body_extra()["provider"] == {"order": ["DeepInfra"], "allow_fallbacks": False}
    assert config.delivery.mode is DeliveryMode.EDIT
