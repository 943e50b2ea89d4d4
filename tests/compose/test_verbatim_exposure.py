"""The verbatim tool-call parser recognises only the tools the request exposed (issue 14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rxcord.compose.run import StreamJob, run_stream
from rxcord.core.config import StreamContext
from rxcord.core.request import ChatRequest, Message, ToolSpec
from rxcord.core.types import StreamStatus
from rxcord.operators.verbatim_tools import exposed_tool_names
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.transport import TransportConfig
from rxcord.sinks.memory import MemorySink
from rxcord.testing.replay import ReplayServer

CAPTURE = Path(__file__).parent.parent / "fixtures" / "captures" / "custom" / "verbatim_tool.sse"
ADAPTER = CustomAdapter(tool_names=frozenset({"generate_image", "web_search"}), verbatim_tool_calling=True)


async def _run(tools: tuple[str, ...]):  # type: ignore[no-untyped-def]
    request = ChatRequest(
        model="gemma", messages=(Message.user("draw"),), tools=tuple(ToolSpec(name=n) for n in tools)
    )
    async with ReplayServer(body=CAPTURE.read_bytes()) as server:
        http = ADAPTER.build_request(request, base_url=server.base_url, api_key=None)
        job = StreamJob(
            adapter=ADAPTER,
            request=http,
            sink=MemorySink(),
            context=StreamContext(),
            transport=TransportConfig(allow_private_network=True),  # the replay server is on 127.0.0.1
        )
        return await run_stream(job)


async def test_exposed_tool_is_recovered() -> None:
    """The request exposes generate_image: the call written as text is a function call."""
    result = await _run(("generate_image",))
    assert result.status is StreamStatus.FUNCTION_CALL
    assert [call.name for call in result.function_calls] == ["generate_image"]


@pytest.mark.parametrize("tools", [(), ("web_search",)], ids=["no tools", "another tool"])
async def test_tool_the_request_did_not_expose_stays_text(tools: tuple[str, ...]) -> None:
    """The adapter knows generate_image, but this request did not offer it: the text is text."""
    result = await _run(tools)
    assert result.status is StreamStatus.COMPLETED and result.function_calls == ()
    assert "generate_image(" in result.visible_text


def test_exposed_tool_names_of_a_body() -> None:
    """The names under tools[].function.name, nothing else."""
    body = {"tools": [{"type": "function", "function": {"name": "a"}}, {"function": {}}, "x"]}
    assert exposed_tool_names(body) == {"a"} and exposed_tool_names({}) == frozenset()
