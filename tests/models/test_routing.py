"""RouteByExamples: a routing call names the option whose examples the request reads most like, scored by the
model; every other call is the model's own (with a scorer that counts shared words, then the real SmolLM2)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from batonflow.adk import Runner, TransferToAgentTool, collect_events
from batonflow.errors import ModelError, UserError
from batonflow.models import ForcedTool, ModelSettings, RouteByExamples
from batonflow.models.local import LlamaCppChatModel
from batonflow.schema import Message, assistant, concat_message_stream, tool_message, user
from batonflow.testing import FunctionModel
from batonflow.tools import ToolInfo

TRANSFER = TransferToAgentTool(["refund_agent", "product_agent"], source="router", answer_self=True).info
EXAMPLES = {
    "refund_agent": ["refund my order", "money back please"],
    "product_agent": ["do you sell kettles", "is the lamp in stock"],
    "router": ["hello there", "when do you open"],
}


class WordScorer(FunctionModel):
    """Answers ``answer`` in words, and scores a text by the words it shares with the prefix."""

    def __init__(self) -> None:
        super().__init__(lambda messages, tools: assistant("in words"))
        self.scored: list[tuple[str, str]] = []

    async def log_likelihood(self, prefix: str, text: str) -> tuple[float, int]:
        self.scored.append((prefix, text))
        shared = set(prefix.lower().split()) & set(text.lower().split())
        return float(len(shared)), len(prefix.split()) + len(text.split())


def _named(message: Message) -> str:
    [call] = message.tool_calls
    assert call.function.name == "transfer_to_agent"
    return str(json.loads(call.function.arguments)["agent_name"])


@pytest.mark.parametrize(
    ("request_text", "option"),
    [("please refund order 7", "refund_agent"), ("is the kettle in stock", "product_agent"), ("hello", "router")],
)
async def test_a_routing_call_names_the_option_whose_examples_score_highest(request_text: str, option: str) -> None:
    model = WordScorer()
    routed = await RouteByExamples(model, EXAMPLES).generate(
        [user(request_text)], tools=[TRANSFER], tool_choice=ForcedTool("transfer_to_agent")
    )
    assert _named(routed) == option
    assert model.requests == []  # no text generated
    assert [text for _, text in model.scored] == [request_text] * 3
    assert model.scored[0][0] == "Customer messages:\n- refund my order\n- money back please\n- "
    assert routed.response_meta is not None and routed.response_meta.usage is not None
    assert routed.response_meta.usage.prompt_tokens == sum(len(p.split()) + len(t.split()) for p, t in model.scored)


async def test_options_the_tool_does_not_offer_are_never_named_and_a_tie_goes_to_the_first() -> None:
    model = WordScorer()
    only = TransferToAgentTool(["product_agent", "refund_agent"]).info
    router = RouteByExamples(model, {**EXAMPLES, "elsewhere": ["refund refund"]})
    assert _named(await router.generate([user("refund")], tools=[only])) == "refund_agent"
    assert _named(await router.generate([user("nothing shared")], tools=[only])) == "product_agent"


async def test_a_stream_is_the_same_one_call() -> None:
    stream = RouteByExamples(WordScorer(), EXAMPLES).stream([user("money back")], tools=[TRANSFER])
    assert _named(await concat_message_stream(stream)) == "refund_agent"


@pytest.mark.parametrize(
    ("messages", "tools", "choice"),
    [
        ([user("refund")], [], None),  # the tool is not offered
        ([user("refund")], [TRANSFER], "none"),
        ([user("refund"), assistant("x"), tool_message("done", tool_call_id="c")], [TRANSFER], None),
    ],
)
async def test_every_other_call_is_the_models_own(
    messages: list[Message], tools: list[ToolInfo], choice: str | None
) -> None:
    model = WordScorer()
    router = RouteByExamples(model, EXAMPLES)
    assert (await router.generate(messages, tools=tools or None, tool_choice=choice)).content == "in words"
    assert (
        await concat_message_stream(router.stream(messages, tools=tools or None, tool_choice=choice))
    ).content == "in words"
    assert model.scored == [] and len(model.requests) == 2


def test_a_model_that_cannot_score_text_is_refused_when_wrapped() -> None:
    with pytest.raises(UserError) as caught:
        RouteByExamples(FunctionModel(lambda m, t: assistant("x")), EXAMPLES)
    assert str(caught.value) == (
        "RouteByExamples: expected a model that scores text (log_likelihood, as LlamaCppChatModel has), "
        "got FunctionModel"
    )


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ({}, "expected a mapping of options to example requests, got {}"),
        ({"a": "refund"}, "expected a list of non-empty example requests for 'a', got 'refund'"),
        ({"a": []}, "expected a list of non-empty example requests for 'a', got []"),
        ({"a": ["ok", ""]}, "expected a list of non-empty example requests for 'a', got ['ok', '']"),
    ],
)
def test_bad_examples_are_refused_when_wrapped(examples: dict[str, Sequence[str]], message: str) -> None:
    with pytest.raises(UserError) as caught:
        RouteByExamples(WordScorer(), examples)
    assert str(caught.value) == f"RouteByExamples: {message}"


async def test_a_tool_without_an_enum_or_without_examples_for_its_options_is_refused_at_the_call() -> None:
    open_ended = ToolInfo(
        name="transfer_to_agent",
        description="x",
        parameters={"type": "object", "properties": {"agent_name": {"type": "string"}}},
    )
    router = RouteByExamples(WordScorer(), {"nobody": ["x"]})
    with pytest.raises(UserError, match="expected transfer_to_agent's 'agent_name' to be an enum of options, got"):
        await router.generate([user("x")], tools=[open_ended])
    with pytest.raises(UserError) as caught:
        await router.generate([user("x")], tools=[TRANSFER])
    assert str(caught.value) == (
        "RouteByExamples: expected examples for one of transfer_to_agent's options "
        "['refund_agent', 'product_agent', 'router'], got examples for ['nobody']"
    )


# -- the real local model -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def smollm2() -> LlamaCppChatModel:
    return LlamaCppChatModel()


async def test_smollm2_finds_a_request_likelier_after_requests_of_its_kind(smollm2: LlamaCppChatModel) -> None:
    kind, other = "Messages:\n- Hi there!\n- Good morning!\n- ", "Messages:\n- Refund order 17.\n- Refund it.\n- "
    greeting, tokens = await smollm2.log_likelihood(kind, "Hello, who am I talking to?")
    assert greeting > (await smollm2.log_likelihood(other, "Hello, who am I talking to?"))[0]
    llama = smollm2._load()
    counted = len(llama.tokenize(kind.encode())) + len(llama.tokenize(b"Hello, who am I talking to?", add_bos=False))
    assert greeting < 0 and tokens == counted
    # A prefix scored again is restored, not decoded again, and scores alike; another scored between changes nothing.
    assert await smollm2.log_likelihood(kind, "Hello, who am I talking to?") == (greeting, tokens)
    assert list(smollm2._scorer._prefixes)[-1] == kind


async def test_a_scoring_leaves_the_chats_context_as_it_was(smollm2: LlamaCppChatModel) -> None:
    answer = await smollm2.generate([user("Say hello.")], settings=ModelSettings(max_tokens=8))
    assert answer.content.strip()
    chat = smollm2._load()
    held = list(chat.input_ids[: chat.n_tokens])
    await smollm2.log_likelihood("Messages:\n- ", "Hello there")
    assert list(chat.input_ids[: chat.n_tokens]) == held


async def test_a_text_too_long_to_score_is_refused_saying_how_long(smollm2: LlamaCppChatModel) -> None:
    with pytest.raises(ModelError) as caught:
        await smollm2.log_likelihood("", "word " * 3000)
    assert "the text to score does not fit in the scoring context: expected at most 2048 tokens, got 300" in str(
        caught.value
    )


async def test_the_demos_router_on_smollm2_keeps_an_off_topic_request_and_routes_a_refund(
    smollm2: LlamaCppChatModel,
) -> None:
    from batonflow.cli.demo import Shop, build_system, scripted_model

    routed = {}
    for request in ("What time do you open on Sunday?", "Please refund order 1044, the earbuds broke."):
        events = await collect_events(
            Runner(build_system(scripted_model(), Shop(), router_model=smollm2)).query(request)
        )
        routed[request] = [e.agent_name for e in events if e.agent_name != "router"]
        assert not [e for e in events if e.error is not None]
    assert routed["What time do you open on Sunday?"] == []  # the router answered it itself
    assert set(routed["Please refund order 1044, the earbuds broke."]) == {"refund_agent"}
