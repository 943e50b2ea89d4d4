"""The real bot (discord.py) against the emulator's gateway and REST API, a fake provider on 127.0.0.1."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from loguru import logger

from rxcord import StreamStatus
from rxcord.bot.app import RxcordBot
from tests.bot.conftest import ALICE, BOB, GENERAL, TESTING, World, eventually, idle


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["aggregated", "live", "edit"])
async def test_a_mention_gets_a_streamed_reply(world: World, mode: str) -> None:
    lines: list[str] = []
    logger.enable("rxcord")
    handler = logger.add(lines.append, level="DEBUG", filter="rxcord", format="{message} {extra}")
    bot = await world.bot(world.config(mode=mode))
    assert bot.client.user is not None
    # Edit mode: long enough to pass the think-tag start window (256 characters held by stage 03),
    # so the preview grows by edits after it.
    words = 90 if mode == "edit" else 30
    question = f"hello gate words={words}" if mode == "edit" else "hello words=30"
    asked = await world.say(GENERAL, f"<@{bot.client.user.id}> {question}")
    if mode == "edit":  # twelve words are written, then the rest once the test opens the gate
        await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="twelve words written")
        world.provider.gate.set()
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    text = world.bot_text(GENERAL)
    assert text == f"Answer to {question}: " + " ".join(f"w{i}" for i in range(words))
    first = world.bot_messages(GENERAL)[0]
    assert first["message_reference"]["message_id"] == asked["id"]
    edits = world.emulator.counters.requests["PATCH /channels/{channel_id}/messages/{message_id}"]
    if mode == "edit":
        assert edits >= 1  # sent, then edited as it grew
        assert first["edited_timestamp"] is not None
    else:
        assert edits == 0
    logger.remove(handler)
    logger.disable("rxcord")
    assert any("answering message" in line for line in lines)
    secrets = (world.emulator.config.token, "echo-secret-key")
    assert not [line for line in lines if any(secret in line for secret in secrets)]


def _me(bot: RxcordBot) -> str:
    assert bot.client.user is not None
    return f"<@{bot.client.user.id}>"


def _status(bot: RxcordBot, index: int) -> StreamStatus:
    result = bot.finished[index].result
    assert result is not None
    return result.result.status


@pytest.mark.timeout(120)
async def test_a_follow_up_interrupts_and_the_second_answer_arrives(world: World) -> None:
    bot = await world.bot(world.config(mode="live"))
    await world.say(GENERAL, f"{_me(bot)} slow please")
    await eventually(lambda: world.provider.written.get(0, 0) >= 5, what="the first answer to stream")
    await world.say(GENERAL, "brb, talking to bob")  # not addressed to the bot: interrupts nothing
    await world.say(GENERAL, f"{_me(bot)} actually, words=4")  # same user, same channel, addressed
    await eventually(lambda: len(bot.finished) == 2, what="both turns to end")
    assert _status(bot, 0) is StreamStatus.FOLLOW_UP_INTERRUPT
    assert _status(bot, 1) is StreamStatus.COMPLETED
    await eventually(
        lambda: 0 in world.provider.closed_early, what="the provider to see the request cancelled"
    )
    assert world.provider.last_user_text(1) == f"[alice, id {ALICE}]: actually, words=4"
    assert world.bot_messages(GENERAL)[-1]["content"] == "Answer to actually, words=4: w0 w1 w2 w3"


@pytest.mark.timeout(120)
async def test_stop_flushes_what_was_written(world: World) -> None:
    bot = await world.bot(world.config(mode="edit"))
    await world.say(GENERAL, f"{_me(bot)} stall think")
    # Twelve words are written, still inside stage 03's start window (not previewed yet); the
    # provider then stalls. The stop delivers what was written (held_at_stop).
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="twelve words written")
    answer = await world.command(GENERAL, "stop")
    await idle(bot)
    assert _status(bot, 0) is StreamStatus.STOPPED_BY_USER
    assert answer["response"]["flags"] & 64  # ephemeral
    result = bot.finished[0].result
    assert result is not None
    shown = world.bot_text(GENERAL)
    assert shown == result.result.accumulated_text.strip()  # the flush is the final edit
    assert shown.startswith("Answer to stall think: " + " ".join(f"w{i}" for i in range(11)))
    assert "secret reasoning" not in shown and result.result.reasoning
    await eventually(
        lambda: 0 in world.provider.closed_early, what="the provider to see the request cancelled"
    )


@pytest.mark.timeout(120)
async def test_kill_aborts_without_a_flush(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    await world.say(GENERAL, f"{_me(bot)} slow")
    await eventually(lambda: world.provider.written.get(0, 0) >= 10, what="the answer to stream")
    answer = await world.command(GENERAL, "kill")
    await idle(bot)
    assert _status(bot, 0) is StreamStatus.KILLED
    assert answer["response"]["flags"] & 64
    assert world.bot_messages(GENERAL) == []
    await eventually(
        lambda: 0 in world.provider.closed_early, what="the provider to see the request cancelled"
    )


@pytest.mark.timeout(120)
async def test_kill_in_edit_mode_reports_the_messages_left_in_the_channel(world: World) -> None:
    """The preview stays in Discord after /kill: the turn's result lists it (it listed none)."""
    world.provider.pace = 0.05  # the kill lands long before a second message is needed
    bot = await world.bot(world.config(mode="edit"))
    await world.say(GENERAL, f"{_me(bot)} slow")
    await eventually(lambda: bool(world.bot_messages(GENERAL)), what="the preview")
    await world.command(GENERAL, "kill")
    await idle(bot)
    assert _status(bot, 0) is StreamStatus.KILLED
    turn = bot.finished[0].result
    assert turn is not None
    held = [m["id"] for m in world.bot_messages(GENERAL)]
    assert held and [m.message_id for m in turn.result.messages] == held
    shown = world.bot_messages(GENERAL)[-1]["content"]
    assert shown.startswith("Answer to slow: w0") and shown.endswith("\n-# ✂ aborted")  # cut, and says so
    assert turn.usage is not None and turn.usage.estimated and turn.usage.input_tokens > 0


@pytest.mark.timeout(120)
async def test_two_channels_stream_at_once_without_crossing(world: World) -> None:
    world.provider.pace = 0.01
    bot = await world.bot(world.config(mode="live"))
    await world.say(GENERAL, f"{_me(bot)} general words=60")
    await world.say(TESTING, f"{_me(bot)} testing words=50", author=BOB, name="bob")
    await eventually(lambda: len(bot.finished) == 2, what="both answers")
    assert world.provider.max_active == 2
    assert world.bot_text(GENERAL).replace("\n", " ") == "Answer to general words=60: " + " ".join(
        f"w{i}" for i in range(60)
    )
    assert world.bot_text(TESTING).replace("\n", " ") == "Answer to testing words=50: " + " ".join(
        f"w{i}" for i in range(50)
    )


@pytest.mark.timeout(120)
async def test_a_reply_chain_of_five_reaches_the_provider_in_order(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    first = await world.say(GENERAL, f"{_me(bot)} first words=1")
    await eventually(lambda: len(world.bot_messages(GENERAL)) == 1, what="answer 1")
    answer1 = world.bot_messages(GENERAL)[0]
    second = await world.say(GENERAL, "second words=2", author=BOB, name="bob", reply_to=answer1["id"])
    await eventually(lambda: len(world.bot_messages(GENERAL)) == 2, what="answer 2")
    answer2 = world.bot_messages(GENERAL)[1]
    await world.say(GENERAL, f"{_me(bot)} third words=3", reply_to=answer2["id"])
    await eventually(lambda: len(world.provider.requests) == 3, what="the third request")
    await idle(bot)
    messages = world.provider.requests[2]["messages"]
    chat = [
        (m["role"], m["content"] if isinstance(m["content"], str) else m["content"][0]["text"])
        for m in messages
    ]
    assert chat[0][0] == "system" and "alice" in chat[0][1] and "bob" in chat[0][1]
    assert chat[1:] == [
        ("user", f"[alice, id {ALICE}]: first words=1"),
        ("assistant", answer1["content"]),
        ("user", f"[bob, id {BOB}]: second words=2"),
        ("assistant", answer2["content"]),
        ("user", f"[alice, id {ALICE}]: third words=3"),
    ]
    assert first["id"] != second["id"]


@pytest.mark.timeout(120)
async def test_a_blocked_user_gets_no_answer(world: World) -> None:
    config = world.config(f'[permissions]\nblocked_users = ["{BOB}"]\n', mode="aggregated")
    bot = await world.bot(config)
    await world.say(GENERAL, f"{_me(bot)} from bob words=2", author=BOB, name="bob")
    await world.say(GENERAL, f"{_me(bot)} from alice words=2")  # dispatched after bob's
    await eventually(lambda: len(world.bot_messages(GENERAL)) == 1, what="alice's answer")
    await idle(bot)
    assert [world.provider.last_user_text(i) for i in range(len(world.provider.requests))] == [
        f"[alice, id {ALICE}]: from alice words=2"
    ]


@pytest.mark.timeout(120)
async def test_shutdown_stops_running_answers_with_a_flush(world: World) -> None:
    bot = await world.bot(world.config(mode="edit"))
    await world.say(GENERAL, f"{_me(bot)} stall")
    # Inside stage 03's start window: shutting down still delivers what was written (held_at_stop).
    await eventually(lambda: world.provider.written.get(0, 0) >= 12, what="twelve words written")
    await bot.close()
    assert _status(bot, 0) is StreamStatus.STOPPED_BY_USER
    result = bot.finished[0].result
    assert result is not None
    assert world.bot_text(GENERAL) == result.result.accumulated_text.strip()
    assert world.bot_text(GENERAL).startswith("Answer to stall: w0 w1 w2 w3 w4 w5 w6 w7 w8 w9 w10")
    assert bot.client.is_closed()


def test_a_config_error_exits_2_with_its_message(tmp_path: Path) -> None:
    bad = tmp_path / "bot.toml"
    bad.write_text('[provider]\nname = "openai"\nmodel = "gpt-4o"\ntempreature = 0.5\n')
    done = subprocess.run(
        [sys.executable, "-m", "rxcord", "bot", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == f"rxcord bot: {bad}:4: provider.tempreature: unknown key"


@pytest.mark.timeout(120)
async def test_in_a_thread_the_history_is_the_context(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    url = f"{world.emulator.base_url}/_emulator/threads"
    body = {"channel_id": GENERAL, "author_id": BOB, "username": "bob", "name": "plans"}
    async with world.session.post(url, json=body) as response:
        assert response.status == 200, await response.text()
        thread = (await response.json())["id"]
    await world.say(thread, "we need a name words=1", author=BOB, name="bob")
    await world.say(thread, "something short words=1")
    await world.say(thread, f"{_me(bot)} any ideas? words=2")
    await eventually(lambda: len(bot.finished) == 1, what="the answer in the thread")
    chat = [(m["role"], m["content"]) for m in world.provider.requests[0]["messages"][1:]]
    assert chat == [
        ("user", f"[bob, id {BOB}]: we need a name words=1"),
        ("user", f"[alice, id {ALICE}]: something short words=1"),
        ("user", f"[alice, id {ALICE}]: any ideas? words=2"),
    ]
    assert world.bot_text(thread) == "Answer to any ideas? words=2: w0 w1"


@pytest.mark.timeout(120)
async def test_a_persona_answers_through_its_webhook_and_its_answers_are_the_assistant(world: World) -> None:
    hook = world.emulator.add_webhook(GENERAL)
    config = world.config('[persona]\nwebhook_url_env = "HOOK"\nusername = "Sage"\n', mode="live")
    bot = await world.bot(config, HOOK=f"{world.emulator.base_url}/webhooks/{hook.id}/{hook.token}")
    await world.say(GENERAL, f"{_me(bot)} who are you words=2")
    await eventually(lambda: len(bot.finished) == 1, what="the persona's answer")
    answers = [m for m in world.emulator.messages(GENERAL) if m.get("webhook_id") == hook.id]
    assert [(m["author"]["username"], m["content"]) for m in answers][-1] == (
        "Sage",
        "Answer to who are you words=2: w0 w1",
    )
    await world.say(GENERAL, "and then? words=1", reply_to=answers[-1]["id"])
    await eventually(lambda: len(bot.finished) == 2, what="the second answer")
    roles = [m["role"] for m in world.provider.requests[1]["messages"]]
    assert roles[-2:] == ["assistant", "user"]


@pytest.mark.timeout(120)
async def test_follow_ups_in_a_row_leave_only_the_last_answer_running(world: World) -> None:
    bot = await world.bot(world.config(mode="live"))
    await world.say(GENERAL, f"{_me(bot)} slow one")
    await eventually(lambda: world.provider.written.get(0, 0) >= 3, what="the first answer to stream")
    await world.say(GENERAL, f"{_me(bot)} slow two")
    # "three" may interrupt "two" while it still waits for "one"
    await world.say(GENERAL, f"{_me(bot)} three words=3")
    await eventually(lambda: len(bot.finished) == 3, what="three turns to end")
    await idle(bot)
    assert _status(bot, 0) is StreamStatus.FOLLOW_UP_INTERRUPT
    assert _status(bot, 2) is StreamStatus.COMPLETED
    second = bot.finished[1].result
    assert second is None or second.result.status is StreamStatus.FOLLOW_UP_INTERRUPT
    assert world.bot_messages(GENERAL)[-1]["content"] == "Answer to three words=3: w0 w1 w2"


@pytest.mark.timeout(120)
async def test_text_attachments_are_read_from_discord_hosts_only(world: World) -> None:
    bot = await world.bot(world.config(mode="aggregated"))
    files = world.provider.base_url.removesuffix("/v1") + "/files"
    attachments = [
        {"url": f"{files}/notes.txt", "filename": "notes.txt", "content_type": "text/plain"},
        {"url": "http://10.255.255.1/secret.txt", "filename": "secret.txt", "content_type": "text/plain"},
    ]
    await world.say(GENERAL, f"{_me(bot)} read these words=1", attachments=attachments)
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    prompt = world.provider.last_user_text(0)
    assert prompt == (
        f"[alice, id {ALICE}]: read these words=1\n\n<file name='notes.txt'>\ncontents of notes.txt\n</file>"
    )


@pytest.mark.timeout(120)
@pytest.mark.parametrize("allowed", [True, False])
async def test_direct_messages_only_when_allowed(world: World, allowed: bool) -> None:
    extra = f"[permissions]\nallow_dms = {str(allowed).lower()}\n"
    bot = await world.bot(world.config(extra, mode="aggregated"))
    dm = "4000000000000000001"  # a channel outside the guild: a DM
    await world.say(dm, "hello in private words=2")
    await world.say(GENERAL, f"{_me(bot)} and in public words=1")  # dispatched after the DM
    await eventually(lambda: len(world.bot_messages(GENERAL)) == 1, what="the public answer")
    await idle(bot)
    answered = {world.provider.last_user_text(i) for i in range(len(world.provider.requests))}
    private = {f"[alice, id {ALICE}]: hello in private words=2"} if allowed else set()
    assert answered == {f"[alice, id {ALICE}]: and in public words=1", *private}
    assert world.bot_text(dm) == ("Answer to hello in private words=2: w0 w1" if allowed else "")


TOOLS_MODULE = """
import rxcord

TOOLS = [rxcord.ToolSpec(name="lookup", description="Look a word up.", parameters={"type": "object"})]
CALLS = []


async def handle(call):
    CALLS.append(call.args)
    return {"meaning": "a way through a wall"}
"""


@pytest.mark.timeout(120)
async def test_a_tools_table_runs_the_tool_loop(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ``[tools]``, the model's call runs the module's handler and the answer follows it."""
    (tmp_path / "bot_tools_for_test.py").write_text(TOOLS_MODULE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    bot = await world.bot(world.config('[tools]\nmodule = "bot_tools_for_test"\nmax_rounds = 2'))
    await world.say(GENERAL, f"{_me(bot)} use the tool words=3")
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    import bot_tools_for_test  # type: ignore[import-not-found]

    assert bot_tools_for_test.CALLS == [{"word": "gate"}]
    first, second = world.provider.requests[-2:]
    assert [tool["function"]["name"] for tool in first["tools"]] == ["lookup"]
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "a way through a wall" in tool_messages[0]["content"]
    assert world.bot_text(GENERAL).endswith("w0 w1 w2")
    assert _status(bot, 0) is StreamStatus.COMPLETED


async def test_without_a_tools_table_no_tool_is_offered(world: World) -> None:
    bot = await world.bot(world.config())
    await world.say(GENERAL, f"{_me(bot)} use the tool words=2")
    await eventually(lambda: len(bot.finished) == 1, what="the answer")
    assert "tools" not in world.provider.requests[-1]
    assert world.bot_text(GENERAL).endswith("w0 w1")
