"""Custom OpenAI-compatible endpoints: think leaks, verbatim tool calls, resent content, errors."""

from __future__ import annotations

from rxcord.compose.pipeline import stage03
from rxcord.core.request import ChatRequest
from rxcord.core.types import ChunkType, ErrorType, FinishReason, ProcessedChunk, RawStreamChunk
from rxcord.providers.chat_completions.normalizer import ChatCompletionsNormalizer
from rxcord.providers.custom import CustomAdapter
from rxcord.providers.errors import classify_http_error
from tests.providers.chat_completions.test_normalizer import (
    calls_of,
    load_json,
    of_type,
    raws,
    run,
    sse_events,
    text_of,
    thoughts_of,
)


def replay(adapter: CustomAdapter, name: str) -> list[ProcessedChunk]:
    # Stage 03 as the chain runs it: the normalizer and the guards the adapter declares.
    return run(stage03(adapter)(), raws("custom", sse_events("custom", name)))


def test_stray_closer_sends_the_start_to_thoughts() -> None:
    """Reasoning leaked without an opener, closed by a stray ``</think>``, is rerouted."""
    chunks = replay(CustomAdapter(), "think_stray_closer")
    assert thoughts_of(chunks) == "Okay, the user greets me."
    assert text_of(chunks) == "\n\nHello! What can I do?"
    usage = of_type(chunks, ChunkType.DONE)[-1].usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (14, 26)


def test_verbatim_tool_call_is_recovered() -> None:
    """With verbatim tool calling on, a call written as text becomes a function_call after the narration."""
    adapter = CustomAdapter(frozenset({"generate_image"}), True)
    chunks = replay(adapter, "verbatim_tool")
    assert text_of(chunks) == "Fine. "
    (call,) = calls_of(chunks)
    assert (call.name, dict(call.args)) == ("generate_image", {"prompt": "a cat", "mode": "txt2img"})
    kinds = [chunk.type for chunk in chunks]
    assert kinds.index(ChunkType.TEXT) < kinds.index(ChunkType.FUNCTION_CALL)


def test_verbatim_parser_off_or_without_tools_leaves_text() -> None:
    """Without the setting, or without tool names, the call text stays text."""
    for adapter in (CustomAdapter(frozenset({"generate_image"}), False), CustomAdapter(frozenset(), True)):
        chunks = replay(adapter, "verbatim_tool")
        assert calls_of(chunks) == []
        assert "generate_image(" in text_of(chunks)


def test_resent_whole_content_is_dropped() -> None:
    """A final delta repeating the whole content so far is dropped."""
    chunks = replay(CustomAdapter(), "resent_content")
    assert text_of(chunks) == "The quick brown fox jumps over the lazy dog."
    assert of_type(chunks, ChunkType.DONE)[0].metadata["finish_reason"] is FinishReason.STOP


def test_short_repeats_are_real_text() -> None:
    """Short repeated deltas ("ha", "ha") and partial overlaps are the model's own text."""
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in ("ha", "ha", "haha")]
    assert text_of(run(ChatCompletionsNormalizer(provider="custom"), raws("custom", events))) == "hahahaha"
    long = "A sentence long enough."
    events = [{"choices": [{"index": 0, "delta": {"content": piece}}]} for piece in (long, long + " More.")]
    assert (
        text_of(run(ChatCompletionsNormalizer(provider="custom"), raws("custom", events)))
        == long + long + " More."
    )


def test_complete_json_from_a_server_that_ignored_stream() -> None:
    """A JSON body instead of SSE (llama.cpp) gives the same chunks, think tags stripped."""
    raw = RawStreamChunk(
        provider="custom", data=load_json("custom", "complete_text"), metadata={"complete": True}
    )
    chunks = run(stage03(CustomAdapter())(), [raw])
    assert text_of(chunks) == "Hi from llama.cpp"
    assert thoughts_of(chunks) == "short plan"
    (done,) = of_type(chunks, ChunkType.DONE)
    assert done.usage is not None and done.usage.output_tokens == 12


def test_unknown_model_errors_keep_supported_ids() -> None:
    """A 400 naming the model lists the supported ids in the embed; vLLM's 404 is a model_error."""
    adapter = CustomAdapter()
    listed = classify_http_error(400, load_json("custom", "http_400_model_supported_list"), provider="custom")
    assert listed.type is ErrorType.MODEL_ERROR
    text = adapter.describe_error(listed)
    assert text.startswith("The custom endpoint cannot serve the selected model")
    assert "qwen3-32b, llama-3.3-70b-instruct, mistral-small-3.2-24b" in text
    missing = classify_http_error(404, load_json("custom", "http_404_model_vllm"), provider="custom")
    assert missing.type is ErrorType.MODEL_ERROR and "llama-3-70b" in adapter.describe_error(missing)


def test_custom_request_uses_the_given_endpoint() -> None:
    """The custom adapter posts to the given base URL with an optional bearer key, top_k allowed."""
    request = ChatRequest(model="local", extra={"top_k": 20})
    http = CustomAdapter().build_request(request, base_url="http://127.0.0.1:8080/v1", api_key="local-key")
    assert http.url == "http://127.0.0.1:8080/v1/chat/completions"
    assert http.headers["Authorization"] == "Bearer local-key"
    assert http.body["top_k"] == 20
    assert CustomAdapter().name == "custom"


def test_template_opened_think_block_routes_long_reasoning() -> None:
    """With the template opening <think>, reasoning longer than the default window still never shows."""
    from rxcord.core.types import ChunkType, RawStreamChunk
    from rxcord.providers.custom import CustomAdapter

    reasoning = "Let me think step by step about this. " * 40
    deltas = [reasoning[i : i + 7] for i in range(0, len(reasoning), 7)] + [
        "</think>",
        "\n\nThe answer is 4.",
    ]
    for adapter, leaks in ((CustomAdapter(think_opened_by_template=True), False), (CustomAdapter(), True)):
        normalizer = stage03(adapter)()
        chunks = []
        for d in deltas:
            chunks += normalizer.feed(
                RawStreamChunk(provider="custom", data={"choices": [{"index": 0, "delta": {"content": d}}]})
            )
        chunks += normalizer.finish()
        visible = "".join(c.content for c in chunks if c.type is ChunkType.TEXT)
        assert visible.strip().endswith("The answer is 4.")
        assert ("step by step" in visible) is leaks
