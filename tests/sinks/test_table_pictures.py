"""Tables as pictures (stage 07): the PNG, its alt text, the fallback, and delivery in order end to end."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import aiohttp
import pytest
from PIL import Image
from yarl import URL

from rxcord.cli.main import main
from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamConfig, StreamContext, TableStyle
from rxcord.core.request import ChatRequest, Message
from rxcord.core.types import DeliveryMode, StreamStatus
from rxcord.operators.flusher import Flusher
from rxcord.operators.markdown.tables import MAX_CELL_CHARS, MAX_ROWS, parse_table, render_table
from rxcord.providers.openrouter import OpenRouterAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.rest import RestSink
from rxcord.sinks.table_picture import DESCRIPTION_MAX, MARGIN, ROW_HEIGHT, draw_table, table_messages
from rxcord.sinks.uploads import FILES
from rxcord.testing.emulator import ROUTE_CREATE, DiscordEmulator, Fault
from rxcord.testing.replay import Chunking, ReplayServer
from tests.sinks.test_delivery_e2e import _answer
from tests.work import assert_linear

WIDE = (
    "| Operator | Example | Explanation | Overloadable? |\n"
    "|---|---|---|:-:|\n"
    "| `!=` | `expr != expr` | Nonequality comparison | `PartialEq` |\n"
    "| `%=` | `var %= expr` | Arithmetic remainder and assignment | `RemAssign` |\n"
)
TEXT = "Here is the table:\n\n" + WIDE + "\nAnd after it."
LOCAL = TransportConfig(allow_private_network=True)


def _rows(n: int, columns: int = 3) -> str:
    head = "| " + " | ".join(f"column {c}" for c in range(columns)) + " |\n"
    rule = "|" + "---|" * columns + "\n"
    return (
        head
        + rule
        + "".join("| " + " | ".join(f"r{r}c{c}" for c in range(columns)) + " |\n" for r in range(n))
    )


def _png(markdown: str) -> Image.Image:
    table = parse_table(markdown)
    assert table is not None
    data = draw_table(table)
    assert data is not None
    return Image.open(io.BytesIO(data))


def test_the_png_decodes_with_a_height_per_row_and_a_width_per_column() -> None:
    """Height is exactly rows x ROW_HEIGHT plus the border; more columns (same cells) make it wider."""
    for rows in (1, 4, 16):
        image = _png(_rows(rows))
        assert image.format == "PNG"
        assert image.size[1] == (rows + 1) * ROW_HEIGHT + 2 * MARGIN
    three, six = _png(_rows(4, 3)).size[0], _png(_rows(4, 6)).size[0]
    assert 1.8 * three < six < 2.2 * three


def test_the_picture_is_the_same_for_the_same_table() -> None:
    """Deterministic bytes: the split invariance of segments carries to the picture."""
    first, second = table_messages(WIDE, 2000), table_messages(WIDE, 2000)
    assert first[0][FILES][0].data == second[0][FILES][0].data


def test_alt_text_is_the_table_markdown() -> None:
    """One message: no content, one attachment table.png described by the table's markdown."""
    [body] = table_messages(WIDE, 2000)
    assert "content" not in body
    assert body["attachments"] == [{"id": 0, "filename": "table.png", "description": WIDE.strip("\n")}]
    [upload] = body[FILES]
    assert upload.filename == "table.png" and upload.content_type == "image/png"
    assert Image.open(io.BytesIO(upload.data)).size[0] > 300


def test_markdown_longer_than_a_description_also_goes_as_a_file() -> None:
    """Past 1024 characters the description is cut (with an ellipsis) and table.md carries it whole."""
    markdown = _rows(50)
    assert len(markdown) > DESCRIPTION_MAX
    [body] = table_messages(markdown, 2000)
    picture, md = body["attachments"]
    assert picture["filename"] == "table.png" and len(picture["description"]) == DESCRIPTION_MAX
    assert markdown.startswith(picture["description"][:-1])
    assert md["filename"] == "table.md" and body[FILES][1].data.decode() == markdown.strip("\n")


def test_past_the_bounds_the_table_is_monospace_with_its_markdown_file() -> None:
    """Too many rows, a too long cell, or wider than MAX_WIDTH pixels: not drawn; the code block
    in messages, table.md on the last."""
    wide = "|" + "|".join(["W" * MAX_CELL_CHARS] * 4) + "|\n|" + "---|" * 4 + "\n| a | b | c | d |\n"
    assert (parse_table(wide) or pytest.fail()).drawable  # within the cell bounds, too wide in pixels
    for markdown in (
        _rows(MAX_ROWS + 5),
        "| a | b |\n|---|---|\n| " + "x" * (MAX_CELL_CHARS + 1) + " | y |\n",
        wide,
    ):
        bodies = table_messages(markdown, 2000)
        assert all(FILES not in body for body in bodies[:-1])
        assert "".join(body["content"] for body in bodies).startswith("```\n")
        assert [a["filename"] for a in bodies[-1]["attachments"]] == ["table.md"]
        assert bodies[-1][FILES][0].data.decode() == markdown.strip("\n")
        block = render_table(markdown.strip("\n")) or ""
        assert len(block) > 0 and bodies[0]["content"].startswith(block[:100])


@pytest.fixture
async def emulator() -> AsyncIterator[DiscordEmulator]:
    emu = DiscordEmulator()
    await emu.start()
    try:
        yield emu
    finally:
        await emu.close()


async def _deliver(emu: DiscordEmulator, channel: str, config: StreamConfig) -> StatusAndMessages:
    async with (
        ReplayServer(body=_answer(TEXT), chunking=Chunking(seed=3)) as server,
        aiohttp.ClientSession() as session,
    ):
        adapter = OpenRouterAdapter()
        http = adapter.build_request(
            ChatRequest(model="m", messages=(Message.user("hi"),)), base_url=server.base_url, api_key="k"
        )
        sink = RestSink(emu.base_url, emu.config.token, session=session)
        job = StreamJob(
            adapter=adapter,
            request=http,
            sink=sink,
            context=StreamContext(channel_id=channel),
            config=config,
            transport=LOCAL,
        )
        result = await run_stream(job)
    return result.status, emu.messages(channel)


StatusAndMessages = tuple[StreamStatus, list[dict[str, object]]]


@pytest.mark.parametrize("mode", [DeliveryMode.AGGREGATED, DeliveryMode.LIVE, DeliveryMode.EDIT])
async def test_delivery_sends_text_before_the_picture_then_text_after(
    emulator: DiscordEmulator, mode: DeliveryMode
) -> None:
    """Through REST (multipart) to the emulator: the text, the table.png message, the text after.

    Edit mode the same: the text before committed, the picture posted once, the text after edited.
    """
    status, stored = await _deliver(emulator, "810", StreamConfig(delivery=mode, live_idle_flush=0.05))
    assert status is StreamStatus.COMPLETED
    shown = [(m["content"], [a["filename"] for a in m["attachments"]]) for m in stored]  # type: ignore[attr-defined]
    assert shown == [("Here is the table:", []), ("", ["table.png"]), ("And after it.", [])]
    [attachment] = stored[1]["attachments"]  # type: ignore[misc]
    assert attachment["description"] == WIDE.strip("\n")
    picture = Image.open(io.BytesIO(emulator.files[attachment["id"]]))
    assert picture.format == "PNG" and attachment["size"] == len(emulator.files[attachment["id"]])
    url = f"{emulator.base_url}/_emulator/channels/810/messages"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        listed = await response.json()
    assert [a["filename"] for m in listed for a in m["attachments"]] == ["table.png"]
    origin = str(URL(emulator.base_url).origin())
    async with aiohttp.ClientSession() as session, session.get(origin + attachment["url"]) as served:
        assert served.status == 200 and served.content_type == "image/png"
        assert await served.read() == emulator.files[attachment["id"]]  # the page shows the picture


async def test_monospace_keeps_the_table_in_the_text(emulator: DiscordEmulator) -> None:
    """``tables=monospace`` (aggregated and edit in place) delivers one text, the table as a code block."""
    block = render_table(WIDE) or "?"
    for channel, config in (
        ("820", StreamConfig(delivery=DeliveryMode.EDIT, tables=TableStyle.MONOSPACE)),
        ("821", StreamConfig(tables=TableStyle.MONOSPACE)),
    ):
        status, stored = await _deliver(emulator, channel, config)
        assert status is StreamStatus.COMPLETED
        assert [m["content"] for m in stored] == ["Here is the table:\n\n" + block + "\nAnd after it."]
        assert all(not m["attachments"] for m in stored)


@pytest.mark.parametrize("delivery", ["aggregated", "edit"])
def test_replay_json_lists_the_attachment_with_its_filename(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, delivery: str
) -> None:
    """``rxcord replay --json``: messages keep content, embeds-free shape, and attachments name table.png."""
    capture = tmp_path / "table.sse"
    capture.write_bytes(_answer(TEXT))
    code = main(["replay", str(capture), "--provider", "openai", "--delivery", delivery, "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    messages = report["messages"]
    assert [m.get("content") for m in messages] == ["Here is the table:", None, "And after it."]
    assert messages[1]["attachments"] == [{"id": 0, "filename": "table.png", "description": WIDE.strip("\n")}]
    assert all(FILES not in m for m in messages)


def test_drawing_is_linear_in_the_table() -> None:
    """Counted, not timed: 4x the rows cost at most 4x1.5 the Python work (one measure, one draw per cell)."""

    def run(rows: int) -> None:
        table = parse_table(_rows(rows))
        assert table is not None
        draw_table(table)

    assert_linear(run, 12, scale=4)


def test_many_tables_through_the_flusher_are_linear() -> None:
    """Live and aggregated: 8x the text with wide tables in it costs about 8x the work."""
    unit = "Some text before.\n\n" + WIDE + "\nSome text after.\n\n"

    def run(config: StreamConfig) -> Callable[[int], None]:
        def go(n: int) -> None:
            flusher = Flusher(config)
            text = unit * n
            for i in range(0, len(text), 40):
                flusher.push(text[i : i + 40])
            flusher.flush(final=True)

        return go

    for mode in (DeliveryMode.AGGREGATED, DeliveryMode.LIVE):
        assert_linear(run(StreamConfig(delivery=mode)), 10, scale=8)


def test_replay_tables_monospace_keeps_the_code_block(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``rxcord replay --tables monospace``: one message, the table as its code block, no attachment."""
    capture = tmp_path / "table.sse"
    capture.write_bytes(_answer(TEXT))
    code = main(["replay", str(capture), "--provider", "openai", "--tables", "monospace", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [m["content"] for m in report["messages"]] == [
        "Here is the table:\n\n" + (render_table(WIDE) or "?") + "\nAnd after it."
    ]
    assert all(not m.get("attachments") for m in report["messages"])


def test_discordpy_sends_the_picture_as_a_described_file() -> None:
    """``DiscordPySink``: the uploads become ``discord.File``s named and described as planned."""
    from rxcord.sinks.discordpy import send_kwargs

    [body] = table_messages(WIDE, 2000)
    [file] = send_kwargs(StreamContext(), {**body, "allowed_mentions": {"parse": []}})["files"]
    assert file.filename == "table.png" and file.description == WIDE.strip("\n")
    assert Image.open(file.fp).format == "PNG"


async def test_a_retried_upload_sends_the_files_again(emulator: DiscordEmulator) -> None:
    """Two 503s, then a 500 after Discord stored it: the multipart body is rebuilt for each try,
    and the nonce makes the stored message the one answer (one message, one attachment)."""
    waits: list[float] = []

    async def sleep(delay: float) -> None:
        waits.append(delay)

    emulator.inject(Fault(kind="error", route=ROUTE_CREATE, count=2, status=503))
    emulator.inject(Fault(kind="error_after_accept", route=ROUTE_CREATE, count=1, status=500))
    [body] = table_messages(WIDE, 2000)
    payload = {**body, "allowed_mentions": {"parse": []}, "nonce": "table-1", "enforce_nonce": True}
    async with aiohttp.ClientSession() as session:
        sink = RestSink(emulator.base_url, emulator.config.token, session=session, sleep=sleep)
        sent = await sink.create_message(StreamContext(channel_id="830"), payload)
    [stored] = emulator.messages("830")
    assert len(waits) == 3 and sent.message_id == stored["id"]
    assert [a["filename"] for a in stored["attachments"]] == ["table.png"]
    assert FILES not in sent.payload and sent.payload["attachments"][0]["filename"] == "table.png"


async def test_the_emulator_refuses_a_file_named_but_not_sent(emulator: DiscordEmulator) -> None:
    """``attachments`` naming ``files[0]`` without that part is a 400, and nothing is stored."""
    form = aiohttp.FormData(default_to_multipart=True)
    form.add_field("payload_json", json.dumps({"attachments": [{"id": 0, "filename": "table.png"}]}))
    headers = {"Authorization": f"Bot {emulator.config.token}"}
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{emulator.base_url}/channels/840/messages", data=form, headers=headers) as answer,
    ):
        assert answer.status == 400
        assert "ATTACHMENT_NOT_FOUND" in await answer.text()
    assert emulator.messages("840") == []
