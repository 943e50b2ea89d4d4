"""The bot's pure parts: the conversation to the model's context, permissions, the config file."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rxcord import DeliveryMode, ImagePart, MissingCredentialError, Role, TextPart
from rxcord.bot.app import permitted, resolve_secrets
from rxcord.bot.config import ConfigError, ContextLimits, parse_config
from rxcord.bot.history import Attachment, ChatLine, build_messages

BOT = "100"
PNG = Attachment(filename="cat.png", url="https://cdn.example/cat.png", content_type="image/png", size=10)
TXT = Attachment(
    filename="notes.txt", url="https://cdn.example/notes.txt", content_type="text/plain", size=10
)


def _line(i: int, text: str, author: str = "7", name: str = "alice", **kw: object) -> ChatLine:
    return ChatLine(id=str(i), channel_id="1", author_id=author, author_name=name, content=text, **kw)  # type: ignore[arg-type]


def test_roles_names_and_the_bot_mention() -> None:
    lines = [
        _line(1, f"<@{BOT}> hi"),
        _line(2, "hello!", author=BOT, name="bot"),
        _line(3, f"<@!{BOT}> more"),
    ]
    context = build_messages(lines, assistant_ids=[BOT], limits=ContextLimits(), vision=False)
    assert [(m.role, m.text) for m in context.messages] == [
        (Role.USER, "alice: hi"),
        (Role.ASSISTANT, "hello!"),
        (Role.USER, "alice: more"),
    ]
    assert context.notes == ()
    assert context.user_names == ("alice",)


@given(count=st.integers(1, 40), size=st.integers(1, 300), max_messages=st.integers(1, 30))
def test_the_budget_keeps_the_newest_and_says_what_was_left_out(
    count: int, size: int, max_messages: int
) -> None:
    limits = ContextLimits(max_messages=max_messages, max_chars=1000)
    lines = [_line(i, f"{i}:" + "x" * size) for i in range(count)]
    context = build_messages(lines, assistant_ids=[BOT], limits=limits, vision=False)
    kept = context.messages
    assert 1 <= len(kept) <= max_messages
    assert sum(len(m.text) for m in kept) <= 1000
    # The newest messages, in order, oldest first.
    assert [m.text.split(":")[1].strip() for m in kept] == [str(i) for i in range(count - len(kept), count)]
    left_out = count - len(kept)
    if left_out:
        assert context.notes[0].startswith(f"{left_out} earlier message(s)")
    else:
        assert not any("earlier" in note for note in context.notes)


def test_images_for_vision_models_only_and_text_attachments_inline() -> None:
    lines = [_line(1, "look", attachments=(PNG, TXT))]
    texts = {TXT.url: "y" * 50}
    limits = ContextLimits(max_attachment_chars=20)
    seen = build_messages(lines, assistant_ids=[BOT], limits=limits, vision=True, texts=texts)
    parts = seen.messages[0].content
    assert (
        isinstance(parts[0], TextPart)
        and "<file name='notes.txt'>\n" + "y" * 20 + "\n</file>" in parts[0].text
    )
    assert parts[1] == ImagePart(mime_type="image/png", url=PNG.url)
    assert any("notes.txt were cut at 20" in note for note in seen.notes)
    blind = build_messages(lines, assistant_ids=[BOT], limits=limits, vision=False, texts=texts)
    assert not any(isinstance(p, ImagePart) for p in blind.messages[0].content)
    assert any("1 image attachment(s) were left out (this model reads no images)" in n for n in blind.notes)


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
    assert config.provider.api_key_env == ("OPENROUTER_API_KEY",)


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
    assert config.provider.name == "openrouter"
    assert config.delivery.mode is DeliveryMode.EDIT
