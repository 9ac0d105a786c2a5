"""The demo: a streamed answer and tool-call routing of customer requests, on a real model.

It runs on the offline SmolLM2-135M model by default, so what it shows is what a 135M-parameter model does:
fluent but not always right. The routing uses a forced tool call whose ``agent_name`` is an enum, the
constraint that lets a small model name only agents that exist.
"""

from __future__ import annotations

import json
import time
from typing import Literal, TextIO

from .models import ChatModel, ForcedTool, ModelSettings, load_model
from .schema import FunctionCall, Message, ToolCall, assistant, concat_messages, system, user
from .testing import FunctionModel
from .tools import ToolInfo, tool

AgentName = Literal["refund_agent", "complaint_agent", "product_agent"]

REQUESTS = (
    "I was charged twice for order 1042, I want my money back.",
    "Your courier was rude and left my parcel in the rain.",
    "Does the X200 headphone support bluetooth 5.3?",
)


@tool(threaded=False)
def transfer_to_agent(agent_name: AgentName) -> str:
    """Transfer the question to another agent.

    Args:
        agent_name: the name of the agent to transfer to
    """
    return f"successfully transferred to agent [{agent_name}]"


ROUTER_PROMPT = (
    "You route customer requests. Available agents:\n"
    "- refund_agent: refunds, double charges, money back\n"
    "- complaint_agent: complaints about delivery, staff or service\n"
    "- product_agent: questions about product features and specifications\n"
    "Call transfer_to_agent with the best agent."
)


def _scripted_router(messages: list[Message], tools: list[ToolInfo]) -> Message:
    """The ``scripted`` model: deterministic keyword routing, for a replay without any model."""
    text = messages[-1].content.lower()
    if tools:
        name = "refund_agent" if "money" in text else "complaint_agent" if "rude" in text else "product_agent"
        call = ToolCall(
            index=0, id="call_0", function=FunctionCall(name=tools[0].name, arguments=json.dumps({"agent_name": name}))
        )
        return assistant(tool_calls=[call])
    return assistant("A refund returns your money to the card you paid with, usually within five working days.")


def _model(uri: str) -> ChatModel:
    if uri == "scripted":
        return FunctionModel(_scripted_router, model_name="scripted")
    return load_model(uri)


async def run_demo(model_uri: str, *, out: TextIO) -> None:
    model = _model(model_uri)
    print(f"batonflow demo — model: {model_uri} ({model.model_name})", file=out)
    settings = ModelSettings(temperature=0.0, max_tokens=80, seed=7)

    print("\n[1] a streamed answer", file=out)
    question = "In one or two sentences: how do I get a refund for a damaged item?"
    print(f"user> {question}\nassistant> ", end="", file=out, flush=True)
    started = time.perf_counter()
    chunks: list[Message] = []
    first_token = 0.0
    async for chunk in model.stream(
        [system("You are a helpful customer service assistant."), user(question)], settings=settings
    ):
        if not chunks:
            first_token = time.perf_counter() - started
        chunks.append(chunk)
        print(chunk.content, end="", file=out, flush=True)
    answer = concat_messages(chunks)
    usage = answer.response_meta.usage if answer.response_meta else None
    tokens = f", {usage.prompt_tokens} prompt + {usage.completion_tokens} completion tokens" if usage else ""
    print(
        f"\n    ({len(chunks)} chunks, first after {first_token:.2f} s, all in {time.perf_counter() - started:.2f} s{tokens})",
        file=out,
    )

    print("\n[2] routing customer requests with a forced, enum-constrained tool call", file=out)
    for request in REQUESTS:
        started = time.perf_counter()
        reply = await model.generate(
            [system(ROUTER_PROMPT), user(request)],
            tools=[transfer_to_agent.info],
            tool_choice=ForcedTool(transfer_to_agent.info.name),
            settings=settings,
        )
        print(f"user> {request}", file=out)
        for call in reply.tool_calls:
            result = await transfer_to_agent.invoke(call.function.arguments)
            print(f"    tool call {call.function.name}({call.function.arguments}) -> {result}", file=out)
        print(f"    ({time.perf_counter() - started:.2f} s)", file=out)
