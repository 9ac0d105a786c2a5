"""OpenAIChatModel against a real OpenAI-compatible server: llama_cpp.server with SmolLM2 on loopback."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, Field

from batonflow.adk import Runner
from batonflow.agents import SimpleAgent
from batonflow.errors import ModelHTTPError
from batonflow.models import ForcedTool, JSONSchemaFormat, ModelSettings, OpenAIChatModel
from batonflow.schema import concat_message_stream, concat_messages, system, user
from batonflow.tools import ToolInfo

pytestmark = pytest.mark.real_server

AGENTS = ["refund_agent", "complaint_agent", "product_agent"]
TRANSFER = ToolInfo(
    name="transfer_to_agent",
    description="Transfer the conversation to the agent best suited to answer it.",
    parameters={
        "type": "object",
        "properties": {"agent_name": {"type": "string", "enum": AGENTS}},
        "required": ["agent_name"],
    },
)
ROUTING = [system("Route the customer to the right agent."), user("My toaster broke, I want my money back.")]


@pytest.fixture
def model(llama_server: str) -> OpenAIChatModel:
    return OpenAIChatModel("smollm2", base_url=llama_server, timeout=120)


async def test_plain_answer_has_text_and_a_finish_reason(model: OpenAIChatModel) -> None:
    answer = await model.generate([user("What is the capital of France?")], settings=ModelSettings(max_tokens=40))

    assert answer.role == "assistant"
    assert answer.content.strip()
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason in ("stop", "length")


async def test_streamed_answer_arrives_in_chunks_that_concat_to_the_text(model: OpenAIChatModel) -> None:
    chunks = await model.stream([user("Name three colours.")], settings=ModelSettings(max_tokens=40)).collect()

    texts = [c.content for c in chunks if c.content]
    answer = concat_messages(chunks)
    assert len(texts) > 1
    assert answer.content == "".join(texts)
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason in ("stop", "length")


async def test_forced_transfer_call_names_the_tool_and_an_agent_from_the_enum(model: OpenAIChatModel) -> None:
    answer = await model.generate(ROUTING, tools=[TRANSFER], tool_choice=ForcedTool("transfer_to_agent"))

    assert [c.function.name for c in answer.tool_calls] == ["transfer_to_agent"]
    assert json.loads(answer.tool_calls[0].function.arguments)["agent_name"] in AGENTS
    assert answer.tool_calls[0].id


async def test_streamed_forced_transfer_call_reassembles(model: OpenAIChatModel) -> None:
    stream = model.stream(ROUTING, tools=[TRANSFER], tool_choice=ForcedTool("transfer_to_agent"))

    answer = await concat_message_stream(stream)

    assert [c.function.name for c in answer.tool_calls] == ["transfer_to_agent"]
    assert json.loads(answer.tool_calls[0].function.arguments)["agent_name"] in AGENTS


async def test_usage_counts_prompt_and_completion_tokens(model: OpenAIChatModel) -> None:
    answer = await model.generate([user("Say hello.")], settings=ModelSettings(max_tokens=20))

    assert answer.response_meta is not None
    usage = answer.response_meta.usage
    assert usage is not None
    assert usage.prompt_tokens > 0
    assert usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens


async def test_a_stream_asks_for_usage_and_llama_cpp_python_sends_none_so_it_is_unknown_not_zero(
    model: OpenAIChatModel,
) -> None:
    # llama-cpp-python's server ignores stream_options.include_usage (llama.cpp's llama-server, vLLM, Ollama and
    # OpenAI answer it; batonflow's in-process LlamaCppChatModel counts a stream's tokens itself). Should it start
    # to send usage, this test says so.
    answer = await concat_message_stream(model.stream([user("Say hello.")], settings=ModelSettings(max_tokens=20)))

    assert model.stream_usage is True  # asked, and not refused
    assert answer.response_meta is not None and answer.response_meta.usage is None


# -- structured output -----------------------------------------------------------------------------------------


class Capital(BaseModel):
    city: str = Field(max_length=40)
    country: str = Field(max_length=40)


async def test_an_agent_with_output_schema_gets_json_that_fits_over_the_wire(llama_server: str) -> None:
    # llama-cpp-python's server takes the schema as {"type": "json_object", "schema": ...} and makes it a grammar.
    model = OpenAIChatModel("smollm2", base_url=llama_server, timeout=120, structured_output="json_object")
    agent = SimpleAgent(
        model=model,
        output_schema=Capital,
        output_key="capital",
        model_settings=ModelSettings(max_tokens=60),
        max_retries=1,
    )

    result = await Runner(agent).call("Which city is the capital of France?")

    # Stored only when the answer parsed and validated.
    assert isinstance(result.session_values["capital"], Capital)


async def test_llama_cpp_server_refuses_openais_json_schema_form(model: OpenAIChatModel) -> None:
    # Why OpenAIChatModel has structured_output="json_object": this server knows no other form.
    wanted = ModelSettings(response_format=JSONSchemaFormat(Capital.model_json_schema(), name="Capital"))

    with pytest.raises(ModelHTTPError, match=r"Input should be 'text' or 'json_object'"):
        await model.generate([user("Which city is the capital of France?")], settings=wanted)
