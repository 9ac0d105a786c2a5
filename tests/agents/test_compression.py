from collections.abc import Callable, Sequence
from typing import Any

import pytest

from batonflow.adk import (
    AgentEvent,
    AgentMiddleware,
    ChatModelAgent,
    ChatModelAgentState,
    InterruptInfo,
    Language,
    RunContext,
    Runner,
    collect_events,
    set_language,
)
from batonflow.agents import (
    CompositeStrategy,
    HierarchicalSummaryStrategy,
    InMemoryVectorStore,
    KeyInfoExtractionStrategy,
    LLMSummaryStrategy,
    VectorStoreArchiveStrategy,
    context_compression,
    estimate_tokens,
)
from batonflow.agents.middleware import ContextCompressionInterceptor
from batonflow.errors import ModelHTTPError, UserError
from batonflow.observe import ContextSize, TraceEvent
from batonflow.schema import FunctionCall, ImagePart, Message, ToolCall, assistant, system, tool_message, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import Tool, ToolContext, tool

HEADER = "[Summary of the earlier conversation, compressed to save context]"


@tool(threaded=False)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


def turns(n: int, start: int = 0, name: str = "lookup") -> list[Message]:
    """``n`` assistant turns calling ``name``, each with its own call id (``c<i>_1``)."""
    return [tool_calls((name, {"key": f"k{i}"}), id_prefix=f"c{i}_") for i in range(start, start + n)]


def agent_with(
    *responses: Message,
    middlewares: Sequence[AgentMiddleware],
    tools: Sequence[Tool] = (lookup,),
    instruction: str = "Be brief.",
) -> tuple[ChatModelAgent, ScriptedModel]:
    model = ScriptedModel(list(responses))
    agent = ChatModelAgent(name="a", model=model, instruction=instruction, tools=tools, middlewares=middlewares)
    return agent, model


async def run(agent: ChatModelAgent, text: str = "go", **runner: Any) -> list[AgentEvent]:
    events = await collect_events(Runner(agent, **runner).query(text))
    assert events[-1].error is None, events[-1].error
    return events


def shape(messages: Sequence[Message]) -> list[str]:
    """Each message as ``role:text`` (an assistant's calls by id), to compare transcripts at a glance."""
    out = []
    for m in messages:
        if m.extra.get("compressed"):
            out.append("summary")
        elif m.role == "assistant" and m.tool_calls:
            out.append("call:" + ",".join(c.id for c in m.tool_calls))
        elif m.role == "tool":
            out.append(f"result:{m.tool_call_id}")
        else:
            out.append(f"{m.role}:{m.text}")
    return out


def summaries(messages: Sequence[Message]) -> list[Message]:
    return [m for m in messages if m.extra.get("compressed") is True]


def assert_valid(messages: Sequence[Message]) -> None:
    """What strict providers demand: tool results right after the call they answer, every call answered."""
    open_calls: set[str] = set()
    for m in messages:
        if m.role == "tool":
            assert m.tool_call_id in open_calls, f"tool result {m.tool_call_id} does not follow its call"
            open_calls.discard(m.tool_call_id)
            continue
        assert not open_calls, f"calls {open_calls} have no result"
        open_calls = {c.id for c in m.tool_calls} if m.role == "assistant" else set()
    assert not open_calls


def observations(events: list[AgentEvent]) -> list[str]:
    found = []
    for event in events:
        variant = event.message_output
        if variant is not None and variant.message is not None and variant.message.role == "tool":
            found.append(variant.message.content)
    return found


def prompt_of(model: ScriptedModel, call: int = 0) -> str:
    """The user message a strategy's model got."""
    return model.requests[call].messages[-1].content


async def before_chat_model(middleware: AgentMiddleware, state: ChatModelAgentState) -> None:
    """Run a middleware's hook by itself, as the agent does before a model call."""
    assert middleware.before_chat_model is not None
    result = middleware.before_chat_model(state, RunContext())
    if result is not None:
        await result


def http_error(status: int, text: str) -> ModelHTTPError:
    return ModelHTTPError(f"'m': HTTP {status}: {text}", status_code=status, model="m")


# -- thresholds and floors -----------------------------------------------------------------------------------------


async def test_compression_starts_only_above_max_messages_and_without_strategy_truncates() -> None:
    agent, model = agent_with(
        *turns(6), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10)]
    )
    await run(agent)
    assert len(model.requests[5].messages) == 12  # 10 after the task: at the limit, untouched
    # 12 > 10 after the task: the oldest turn goes, the task stays, no summary without a strategy.
    assert shape(model.requests[6].messages) == [
        "system:Be brief.",
        "user:go",
        *(part for i in range(1, 6) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]
    model.assert_complete()


async def test_max_messages_below_the_floor_of_10_is_raised_to_10() -> None:
    interceptor = ContextCompressionInterceptor(max_messages=4)
    assert interceptor.max_messages == 10
    agent, model = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert len(model.requests[5].messages) == 12
    assert len(model.requests[6].messages) == 12  # 14, less the oldest turn


async def test_compression_starts_when_tokens_exceed_context_length_times_ratio() -> None:
    def count(m: Message) -> int:
        return 500 if m.role == "tool" else 10

    interceptor = ContextCompressionInterceptor(
        max_messages=100, context_length=4000, max_context_ratio=0.5, count_tokens=count
    )
    assert interceptor.threshold == 2000
    agent, model = agent_with(*turns(5), assistant("done"), middlewares=[interceptor], instruction="")
    await run(agent)
    assert len(model.requests[3].messages) == 7  # 1540 tokens
    # 2050 tokens > 2000: the recent messages that fit in the budget less the summary's reserve stay, with their
    # calls.
    assert shape(model.requests[4].messages) == [
        "user:go",
        "call:c1_1",
        "result:c1_1",
        "call:c2_1",
        "result:c2_1",
        "call:c3_1",
        "result:c3_1",
    ]


async def test_at_least_three_recent_messages_stay_even_when_they_exceed_the_token_budget() -> None:
    def count(m: Message) -> int:
        return 5000 if m.role == "tool" else 10

    interceptor = ContextCompressionInterceptor(context_length=4000, count_tokens=count)
    agent, model = agent_with(*turns(3), assistant("done"), middlewares=[interceptor], instruction="")
    await run(agent)
    assert shape(model.requests[3].messages) == ["user:go", "call:c1_1", "result:c1_1", "call:c2_1", "result:c2_1"]


# -- MicroCompact --------------------------------------------------------------------------------------------------


def test_the_factory_makes_the_interceptor_with_the_same_options() -> None:
    middleware = context_compression(max_messages=12, context_length=4000)
    assert isinstance(middleware, ContextCompressionInterceptor)
    assert (middleware.max_messages, middleware.threshold) == (12, 3000)


def test_per_message_cap_is_half_the_threshold_but_at_least_2000_tokens() -> None:
    assert ContextCompressionInterceptor(context_length=100_000, max_context_ratio=0.5).per_message_cap == 25_000
    assert ContextCompressionInterceptor(context_length=4000).per_message_cap == 2000


async def test_micro_compact_caps_a_long_message_keeping_its_head_and_tail() -> None:
    long_text = "A" * 6000 + "M" * 6000 + "Z" * 6000

    @tool(threaded=False)
    def dump() -> str:
        """Dump a log."""
        return long_text

    interceptor = ContextCompressionInterceptor(context_length=4000)
    agent, model = agent_with(tool_calls(("dump", {})), assistant("done"), middlewares=[interceptor], tools=[dump])
    events = await run(agent)
    seen = model.requests[1].messages[-1]
    assert seen.role == "tool"
    assert seen.content.startswith("AAAA")
    assert seen.content.endswith("ZZZZ")
    assert TRIMMED["en"] in seen.content
    assert 1900 <= estimate_tokens(seen) <= 2000
    assert observations(events) == [long_text]  # the event the caller got is not rewritten


async def test_the_task_is_never_micro_compacted() -> None:
    task = "T" * 20_000
    interceptor = ContextCompressionInterceptor(context_length=4000)
    agent, model = agent_with(*turns(1), assistant("done"), middlewares=[interceptor])
    await run(agent, task)
    assert [m.content for m in model.requests[1].messages[:2]] == ["Be brief.", task]


# -- what is kept ------------------------------------------------------------------------------------------------


async def test_system_and_task_messages_before_the_first_assistant_message_are_kept() -> None:
    agent, model = agent_with(
        *turns(6), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10)]
    )
    events = await collect_events(Runner(agent).run([user("part 1"), user("part 2")]))
    assert events[-1].error is None
    assert len(model.requests[5].messages) == 13
    assert shape(model.requests[6].messages) == [
        "system:Be brief.",
        "user:part 1",
        "user:part 2",
        *(part for i in range(1, 6) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]


async def test_a_tool_call_is_never_separated_from_its_results() -> None:
    parallel = tool_calls(*[("lookup", {"key": f"p{i}"}) for i in range(4)], id_prefix="p_")
    agent, model = agent_with(
        parallel,
        *turns(3),
        assistant("done"),
        middlewares=[ContextCompressionInterceptor(max_messages=10, trim_to_max_messages=False)],
    )
    await run(agent)
    seen = model.requests[4].messages
    # 11 messages after the task: keeping the 10 most recent would start at a result; the cut moves back to their
    # call.
    assert shape(seen) == [
        "system:Be brief.",
        "user:go",
        "call:p_1,p_2,p_3,p_4",
        "result:p_1",
        "result:p_2",
        "result:p_3",
        "result:p_4",
        *(part for i in range(3) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]
    assert_valid(seen)


async def test_compression_removes_dangling_tool_results_and_empty_assistant_messages() -> None:
    interceptor = ContextCompressionInterceptor(max_messages=10)
    messages = [system("s"), user("go")]
    for i in range(1, 5):
        messages += [turns(1, i)[0], tool_message(f"r{i}", tool_call_id=f"c{i}_1")]
    messages += [
        assistant(""),  # empty
        tool_message("orphan", tool_call_id="c1_1"),  # the id of a call that is long gone
        turns(1, 5)[0],
        tool_message("r5", tool_call_id="c5_1"),
    ]
    state = ChatModelAgentState(messages=messages, remaining=1)
    await before_chat_model(interceptor, state)
    assert shape(state.messages) == [
        "system:s",
        "user:go",
        *(part for i in range(2, 6) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]
    assert state.messages is messages  # changed in place: the agent's loop holds this list


async def test_a_transcript_under_the_limits_is_left_alone() -> None:
    interceptor = ContextCompressionInterceptor()
    messages = [system("s"), user("go"), assistant(""), tool_message("orphan", tool_call_id="x")]
    original = list(messages)
    state = ChatModelAgentState(messages=messages, remaining=1)
    await before_chat_model(interceptor, state)
    assert state.messages == original


# -- strategies ----------------------------------------------------------------------------------------------------


async def test_llm_summary_replaces_the_expired_messages_with_a_marked_summary() -> None:
    summarizer = ScriptedModel([assistant("Looked up k0 to k2.")])
    interceptor = ContextCompressionInterceptor(
        max_messages=10, strategy=LLMSummaryStrategy(summarizer), trim_to_max_messages=False
    )
    agent, model = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    await run(agent)
    seen = model.requests[6].messages
    assert shape(seen) == [
        "system:Be brief.",
        "user:go",
        "summary",
        *(part for i in range(1, 6) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]
    summary = seen[2]
    assert summary.role == "user"
    assert summary.content == f"{HEADER}\nLooked up k0 to k2."
    assert_valid(seen)
    instruction, prompt = summarizer.requests[0].messages
    assert instruction.role == "system"
    assert "at most 300 characters" in instruction.content
    assert "value of k0" in prompt.content
    assert "value of k1" not in prompt.content
    summarizer.assert_complete()


async def test_llm_summary_folds_the_previous_summary_into_the_next_one() -> None:
    summarizer = ScriptedModel([assistant("S1"), assistant("S2")])
    interceptor = ContextCompressionInterceptor(
        max_messages=10, strategy=LLMSummaryStrategy(summarizer), trim_to_max_messages=False
    )
    agent, model = agent_with(*turns(7), assistant("done"), middlewares=[interceptor])
    await run(agent)
    second = prompt_of(summarizer, 1)
    assert second.startswith("Summary so far:\nS1\n\nMessages:\n")
    assert "value of k1" in second
    assert "value of k0" not in second
    seen = model.requests[7].messages
    assert [m.content for m in summaries(seen)] == [f"{HEADER}\nS2"]
    assert shape(seen)[:3] == ["system:Be brief.", "user:go", "summary"]


async def test_llm_summary_halves_its_input_on_a_prompt_too_long_error() -> None:
    too_long = http_error(400, "This model's maximum context length is 4096 tokens.")
    summarizer = ScriptedModel([too_long, assistant("short")])
    messages = [m for i in range(4) for m in (turns(1, i)[0], tool_message(f"value of k{i}", tool_call_id=f"c{i}_1"))]
    assert await LLMSummaryStrategy(summarizer).compress(messages, RunContext(), max_retries=1) == "short"
    first, second = prompt_of(summarizer, 0), prompt_of(summarizer, 1)
    assert "value of k0" in first
    assert len(second) < len(first)
    assert "value of k0" not in second  # the older half went
    assert "value of k2" in second


async def test_llm_summary_shrinks_its_input_three_times_at_most_as_solon_does() -> None:
    too_long = http_error(400, "This model's maximum context length is 4096 tokens.")
    summarizer = ScriptedModel([too_long] * 5)
    messages = [m for i in range(16) for m in (turns(1, i)[0], tool_message(f"value of k{i}", tool_call_id=f"c{i}_1"))]
    with pytest.raises(ModelHTTPError, match="maximum context length"):
        await LLMSummaryStrategy(summarizer).compress(messages, RunContext(), max_retries=1)
    assert len(summarizer.requests) == 4  # the first call and three shorter ones


async def test_strategy_model_calls_are_retried_on_transient_errors() -> None:
    summarizer = ScriptedModel([http_error(503, "overloaded"), assistant("S")])
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=LLMSummaryStrategy(summarizer), max_retries=2)
    agent, model = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert len(summarizer.requests) == 2
    assert summaries(model.requests[6].messages)[0].content == f"{HEADER}\nS"


@pytest.mark.parametrize(("max_retries", "calls"), [(0, 1), (1, 1), (3, 3)])
async def test_max_retries_counts_a_strategys_model_calls_in_all_as_solon_does(max_retries: int, calls: int) -> None:
    summarizer = ScriptedModel([http_error(503, "overloaded") for _ in range(4)])
    with pytest.raises(ModelHTTPError):
        await LLMSummaryStrategy(summarizer).compress(
            [user("a"), assistant("b")], RunContext(), max_retries=max_retries
        )
    assert len(summarizer.requests) == calls


async def test_key_info_extraction_puts_a_list_of_facts_in_the_summary() -> None:
    extractor = ScriptedModel([assistant("- k0 = value of k0\n- k1 = value of k1")])
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=KeyInfoExtractionStrategy(extractor))
    agent, model = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    await run(agent)
    [summary] = summaries(model.requests[6].messages)
    assert summary.content == (
        f"{HEADER}\nKey facts, parameters and conclusions:\n- k0 = value of k0\n- k1 = value of k1"
    )
    instruction = extractor.requests[0].messages[0].content
    for word in ("facts", "parameters", "conclusions", "bullet list"):
        assert word in instruction


async def test_hierarchical_summary_folds_the_rolling_summary_across_compressions() -> None:
    summarizer = ScriptedModel([assistant("R1"), assistant("R2")])
    strategy = HierarchicalSummaryStrategy(summarizer)
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=strategy, trim_to_max_messages=False)
    agent, model = agent_with(*turns(7), assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert prompt_of(summarizer, 0).startswith("Current summary:\n(none yet)\n\nNew messages:\n")
    second = prompt_of(summarizer, 1)
    assert second.startswith("Current summary:\nR1\n\nNew messages:\n")
    assert "summary of earlier messages" not in second  # the summary message is the rolling summary: not fed twice
    assert "value of k1" in second
    assert "at most 500 tokens" in summarizer.requests[0].messages[0].content
    assert [m.content for m in summaries(model.requests[7].messages)] == [f"{HEADER}\nR2"]


async def test_hierarchical_summary_is_cut_to_max_summary_tokens() -> None:
    summarizer = ScriptedModel([assistant("word " * 2000)])
    strategy = HierarchicalSummaryStrategy(summarizer, max_summary_tokens=50)
    agent, model = agent_with(
        *turns(6), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10, strategy=strategy)]
    )
    await run(agent)
    [summary] = summaries(model.requests[6].messages)
    text = summary.content.removeprefix(HEADER + "\n")
    assert text.startswith("word word")
    assert estimate_tokens(Message(role="user", content=text)) <= 50 + 4


def reader() -> Tool:
    @tool(threaded=False)
    def read(key: str) -> str:
        """Read a page."""
        return "the secret code is 7421" if key == "k0" else f"page {key}: weather notes, nothing else"

    return read


async def test_vector_archive_lets_the_agent_recall_an_archived_fact() -> None:
    strategy = VectorStoreArchiveStrategy(InMemoryVectorStore())
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=strategy)
    assert [t.info.name for t in interceptor.additional_tools] == ["recall_history"]
    agent, model = agent_with(
        *turns(6, name="read"),
        tool_calls(("recall_history", {"query": "what was the secret code?", "limit": 1})),
        assistant("7421"),
        middlewares=[interceptor],
        tools=[reader()],
    )
    events = await run(agent)
    assert "recall_history" in [t.name for t in model.requests[0].tools]
    [summary] = summaries(model.requests[6].messages)
    assert "call recall_history" in summary.content
    assert "secret" not in "".join(m.content for m in model.requests[6].messages)  # it was compressed away
    assert observations(events)[-1] == "[1] tool result (read): the secret code is 7421"


async def test_vector_archive_keeps_each_run_to_its_own_archive() -> None:
    strategy = VectorStoreArchiveStrategy(InMemoryVectorStore())
    agent, _ = agent_with(
        *turns(6, name="read"),
        assistant("done"),
        tool_calls(("recall_history", {"query": "secret code"})),
        assistant("nothing"),
        middlewares=[ContextCompressionInterceptor(max_messages=10, strategy=strategy)],
        tools=[reader()],
    )
    await run(agent)  # archives the secret
    events = await run(agent)  # a new run: a new archive
    assert observations(events) == ["No archived messages match 'secret code'."]


async def test_in_memory_vector_store_ranks_by_cosine_similarity_within_a_namespace() -> None:
    store = InMemoryVectorStore()
    await store.add("a", ["the cat sat on the mat", "stock prices fell sharply", "a cat and a dog"])
    await store.add("b", ["cat cat cat"])
    assert await store.search("a", "a cat on a mat", 2) == ["the cat sat on the mat", "a cat and a dog"]
    assert await store.search("a", "stock prices", 5) == ["stock prices fell sharply"]
    assert await store.search("a", "unrelated words", 3) == []
    assert await store.search("c", "cat", 3) == []


async def test_in_memory_vector_store_uses_a_pluggable_async_embedder() -> None:
    embedded: list[str] = []

    async def embed(text: str) -> list[float]:
        embedded.append(text)
        return [1.0, 0.0] if "x" in text else [0.0, 1.0]

    store = InMemoryVectorStore(embed)
    await store.add("n", ["xa", "yb"])
    assert await store.search("n", "x?", 1) == ["xa"]
    assert embedded == ["xa", "yb", "x?"]


async def test_in_memory_vector_store_refuses_embeddings_of_different_sizes() -> None:
    store = InMemoryVectorStore(lambda text: [1.0] * len(text))
    await store.add("n", ["ab"])
    with pytest.raises(UserError, match="expected embeddings of 2 dimensions, got 3"):
        await store.add("n", ["abc"])


async def test_composite_joins_what_its_strategies_write_with_a_markdown_rule() -> None:
    first = ScriptedModel([assistant("S")])
    second = ScriptedModel([assistant("- fact")])
    archive = VectorStoreArchiveStrategy(InMemoryVectorStore())
    composite = CompositeStrategy(LLMSummaryStrategy(first), KeyInfoExtractionStrategy(second), archive)
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=composite)
    assert [t.info.name for t in interceptor.additional_tools] == ["recall_history"]
    agent, model = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    await run(agent)
    [summary] = summaries(model.requests[6].messages)
    assert summary.content == (
        f"{HEADER}\nS\n\n---\n\nKey facts, parameters and conclusions:\n- fact\n\n---\n\n"
        "Earlier messages of this conversation were archived. To look up a detail from them, "
        "call recall_history with a query."
    )


async def test_composite_leaves_out_a_strategy_that_fails() -> None:
    failing = ScriptedModel([http_error(400, "bad request")])
    working = ScriptedModel([assistant("S")])
    composite = CompositeStrategy(LLMSummaryStrategy(failing), LLMSummaryStrategy(working))
    agent, model = agent_with(
        *turns(6), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10, strategy=composite)]
    )
    await run(agent)
    assert summaries(model.requests[6].messages)[0].content == f"{HEADER}\nS"


# -- events --------------------------------------------------------------------------------------------------------


async def test_a_context_size_event_reports_every_model_call() -> None:
    trace: list[TraceEvent] = []
    summarizer = ScriptedModel([assistant("S")])
    interceptor = ContextCompressionInterceptor(
        max_messages=10, strategy=LLMSummaryStrategy(summarizer), trim_to_max_messages=False
    )
    agent, model = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    await run(agent, callbacks=[trace.append])
    sizes = [e for e in trace if isinstance(e, ContextSize)]
    assert len(sizes) == len(model.requests) == 7
    assert [(e.removed, e.summarized) for e in sizes] == [(0, False)] * 6 + [(2, True)]
    for event, request in zip(sizes, model.requests, strict=True):
        assert event.message_count == len(request.messages)
        assert event.tokens == sum(estimate_tokens(m) for m in request.messages)
        assert event.agent_name == "a"


async def test_a_context_size_event_counts_truncated_messages_as_not_summarized() -> None:
    trace: list[TraceEvent] = []
    agent, _ = agent_with(*turns(6), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10)])
    await run(agent, callbacks=[trace.append])
    sizes = [e for e in trace if isinstance(e, ContextSize)]
    assert (sizes[6].message_count, sizes[6].removed, sizes[6].summarized) == (12, 2, False)


# -- checkpoints ---------------------------------------------------------------------------------------------------


async def test_the_compressed_transcript_and_rolling_summary_survive_an_interrupt_and_resume() -> None:
    @tool(threaded=False)
    def approve(ctx: ToolContext) -> str:
        """Ask a human."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("approve?")
        return "approved"

    summarizer = ScriptedModel([assistant("R1"), assistant("R2")])
    interceptor = ContextCompressionInterceptor(
        max_messages=10, strategy=HierarchicalSummaryStrategy(summarizer), trim_to_max_messages=False
    )
    agent, model = agent_with(
        *turns(6),
        tool_calls(("approve", {}), id_prefix="ok_"),
        assistant("done"),
        middlewares=[interceptor],
        tools=[lookup, approve],
    )
    store = MemoryCheckpointStore()
    events = await collect_events(Runner(agent, checkpoint_store=store).query("go", checkpoint_id="c"))
    action = events[-1].action
    assert action is not None and isinstance(action.interrupted, InterruptInfo)
    assert len(summarizer.requests) == 1

    assert summaries(model.requests[6].messages)[0].content == f"{HEADER}\nR1"

    await collect_events(Runner(agent, checkpoint_store=store).resume("c"))
    # The resumed loop continues from the compressed transcript, summary (and its tag) included: the summary is
    # known as one, so it is not fed to the strategy again.
    second = prompt_of(summarizer, 1)
    assert "summary of earlier messages" not in second
    # The rolling summary came back from the checkpoint's session values and was folded.
    assert second.startswith("Current summary:\nR1\n")
    assert shape(model.requests[7].messages)[:3] == ["system:Be brief.", "user:go", "summary"]
    assert [m.content for m in summaries(model.requests[7].messages)] == [f"{HEADER}\nR2"]
    model.assert_complete()


# -- failures and bad input ----------------------------------------------------------------------------------------


async def test_a_failing_strategy_leaves_the_transcript_as_it_is_and_compression_is_tried_again() -> None:
    summarizer = ScriptedModel([http_error(400, "bad request"), assistant("S")])
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=LLMSummaryStrategy(summarizer))
    agent, model = agent_with(*turns(7), assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert len(model.requests[6].messages) == 14  # nothing lost
    assert summaries(model.requests[7].messages)[0].content == f"{HEADER}\nS"
    assert_valid(model.requests[7].messages)


async def test_an_empty_summary_counts_as_a_failure_and_loses_nothing() -> None:
    summarizer = ScriptedModel([assistant(""), assistant("S")])
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=LLMSummaryStrategy(summarizer))
    agent, model = agent_with(*turns(7), assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert len(model.requests[6].messages) == 14
    assert summaries(model.requests[7].messages)[0].content == f"{HEADER}\nS"


async def test_a_failing_strategy_truncates_once_the_transcript_exceeds_the_context_length() -> None:
    def count(m: Message) -> int:
        return 500 if m.role == "tool" else 10

    summarizer = ScriptedModel([http_error(400, "bad request"), http_error(400, "bad request")])
    interceptor = ContextCompressionInterceptor(
        max_messages=100, context_length=2000, strategy=LLMSummaryStrategy(summarizer), count_tokens=count
    )
    agent, model = agent_with(*turns(4), assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert len(model.requests[3].messages) == 8  # 1550 tokens: over the threshold, within the context length
    seen = model.requests[4].messages  # 2060 tokens: the model could not take it
    assert shape(seen) == ["system:Be brief.", "user:go", "call:c2_1", "result:c2_1", "call:c3_1", "result:c3_1"]


async def test_a_developer_mistake_in_a_strategy_is_not_swallowed() -> None:
    summarizer = ScriptedModel([])  # no answer scripted: a UserError
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=LLMSummaryStrategy(summarizer))
    agent, _ = agent_with(*turns(6), assistant("done"), middlewares=[interceptor])
    events = await collect_events(Runner(agent).query("go"))
    assert isinstance(events[-1].error, UserError)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"max_messages": "15"}, "max_messages: expected an int number of messages, got '15'"),
        ({"max_context_ratio": 1.5}, r"max_context_ratio: expected a number in \(0, 1\], got 1.5"),
        ({"max_context_ratio": 0}, r"max_context_ratio: expected a number in \(0, 1\], got 0"),
        ({"context_length": 0}, r"context_length \(tokens\): expected an int >= 1, got 0"),
        ({"max_retries": -1}, "max_retries: expected an int >= 0, got -1"),
        ({"strategy": "summary"}, "strategy: expected a CompressionStrategy .*, got str"),
        ({"count_tokens": 4}, "count_tokens: expected a function of a Message, got int"),
    ],
)
def test_invalid_interceptor_options_say_what_was_expected_and_found(options: dict[str, Any], expected: str) -> None:
    with pytest.raises(UserError, match=expected):
        ContextCompressionInterceptor(**options)


NOT_A_MODEL: Any = "gpt-4o"
NOT_A_STORE: Any = {}
NOT_A_STRATEGY: Any = object()


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda: LLMSummaryStrategy(NOT_A_MODEL), "LLMSummaryStrategy model: expected a ChatModel, got str"),
        (
            lambda: HierarchicalSummaryStrategy(ScriptedModel([]), max_summary_tokens=0),
            "max_summary_tokens: expected an int >= 1, got 0",
        ),
        (lambda: VectorStoreArchiveStrategy(NOT_A_STORE), "expected a VectorStore .*, got dict"),
        (lambda: CompositeStrategy(), "expected at least one strategy, got none"),
        (lambda: CompositeStrategy(NOT_A_STRATEGY), "expected a CompressionStrategy .*, got object"),
    ],
)
def test_invalid_strategy_options_say_what_was_expected_and_found(make: Callable[[], object], expected: str) -> None:
    with pytest.raises(UserError, match=expected):
        make()


# -- the token estimate ----------------------------------------------------------------------------------------


def test_estimate_tokens_counts_ascii_by_fours_other_characters_singly_calls_and_media() -> None:
    assert estimate_tokens(user("abcd" * 10)) == 4 + 10
    assert estimate_tokens(user("你好世界")) == 4 + 4
    call = Message(
        role="assistant", tool_calls=[ToolCall(id="1", function=FunctionCall(name="look", arguments='{"k": 1}'))]
    )
    assert estimate_tokens(call) == 4 + 1 + 2
    assert estimate_tokens(user([ImagePart(url="https://x/y.png")])) == 4 + 85


# -- reason retry: a prompt the model refuses as too long ----------------------------------------------------------


async def test_a_prompt_too_long_error_compresses_below_the_thresholds_and_the_call_is_made_again() -> None:
    too_long = http_error(400, "This model's maximum context length is 4096 tokens")
    agent, model = agent_with(*turns(5), too_long, assistant("done"), middlewares=[ContextCompressionInterceptor()])
    sizes: list[tuple[int, int]] = []

    def on_event(event: Any) -> None:
        if event.kind == "context_size":
            sizes.append((event.message_count, event.removed))

    events = await run(agent, callbacks=[on_event])
    last = events[-1].message_output
    assert last is not None and last.message is not None and last.message.content == "done"
    failed, retried = model.requests[5], model.requests[6]
    assert len(failed.messages) == 12  # under max_messages 15: no compression before the call
    assert len(retried.messages) < len(failed.messages)
    assert shape(retried.messages)[:2] == ["system:Be brief.", "user:go"]
    assert_valid(retried.messages)
    assert sizes[-2][1] > 0  # the forced compression was reported
    model.assert_complete()


async def test_other_model_errors_are_not_retried_by_compression() -> None:
    agent, model = agent_with(
        *turns(5), http_error(500, "context length exceeded"), middlewares=[ContextCompressionInterceptor()]
    )
    events = await collect_events(Runner(agent).query("go"))
    assert isinstance(events[-1].error, ModelHTTPError)
    assert len(model.requests) == 6


# -- Solon's first chain, cut and repair ---------------------------------------------------------------------------


def long_history() -> list[Message]:
    # The answer is over the per-message cap (48,000 tokens): MicroCompact would cut it if it could.
    return [user("q1"), assistant("a1 " + "x" * 200_000), user("now")]


async def test_the_history_and_prompt_a_run_starts_from_are_never_compressed_or_cut() -> None:
    agent, model = agent_with(
        *turns(6), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10)]
    )
    events = await collect_events(Runner(agent).run(long_history()))
    assert events[-1].error is None
    seen = model.requests[5].messages  # 12 messages after the first chain: compressed
    assert len(seen) == 4 + 10
    assert [m.content for m in seen[:4]] == ["Be brief.", *(m.content for m in long_history())]


async def test_the_trigger_counts_only_the_messages_after_the_first_chain() -> None:
    history = [m for i in range(4) for m in (user(f"q{i}"), assistant(f"a{i}"))]
    agent, model = agent_with(
        *turns(5), assistant("done"), middlewares=[ContextCompressionInterceptor(max_messages=10)]
    )
    events = await collect_events(Runner(agent).run([*history, user("now")]))
    assert events[-1].error is None
    assert len(model.requests[5].messages) == 1 + 9 + 10  # 10 after the first chain: at the limit, untouched


def thoughtful() -> list[Message]:
    """The task, a call, a thought, then five more calls: 13 messages after the task."""
    messages = [system("s"), user("go"), turns(1, 0)[0], tool_message("r0", tool_call_id="c0_1")]
    messages.append(assistant("I should look at k1 next."))
    for i in range(1, 6):
        messages += [turns(1, i)[0], tool_message(f"r{i}", tool_call_id=f"c{i}_1")]
    return messages


async def test_the_thought_before_the_cut_is_kept_and_the_oldest_group_goes_to_meet_max_messages() -> None:
    state = ChatModelAgentState(messages=thoughtful(), remaining=1)
    await before_chat_model(ContextCompressionInterceptor(max_messages=10), state)
    # The cut keeps c1..c5 and moves back to the thought: 11 messages; Solon's convergeToBudget then drops the
    # oldest group but the thought, down to 9 (a call goes with its result).
    assert shape(state.messages) == [
        "system:s",
        "user:go",
        "assistant:I should look at k1 next.",
        *(part for i in range(2, 6) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]


async def test_without_trimming_the_latest_max_messages_stay_with_the_thought_before_them() -> None:
    state = ChatModelAgentState(messages=thoughtful(), remaining=1)
    await before_chat_model(ContextCompressionInterceptor(max_messages=10, trim_to_max_messages=False), state)
    assert shape(state.messages) == [
        "system:s",
        "user:go",
        "assistant:I should look at k1 next.",
        *(part for i in range(1, 6) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]


def twenty_steps() -> list[Message]:
    """Solon's test: the goal, then 20 short assistant answers (each one a thought)."""
    return [system("s"), user("goal"), *(assistant(f"short {i}") for i in range(20))]


async def test_twenty_steps_become_ten_as_in_solon() -> None:
    state = ChatModelAgentState(messages=twenty_steps(), remaining=1)
    await before_chat_model(ContextCompressionInterceptor(max_messages=10), state)
    # Kept by count: short 10..19; the thought before them, short 9, joins; one more must go, and the thought is
    # spared: the oldest after it, short 10.
    assert shape(state.messages) == [
        "system:s",
        "user:goal",
        "assistant:short 9",
        *(f"assistant:short {i}" for i in range(11, 20)),
    ]


async def test_twenty_steps_keep_eleven_without_trimming() -> None:
    state = ChatModelAgentState(messages=twenty_steps(), remaining=1)
    await before_chat_model(ContextCompressionInterceptor(max_messages=10, trim_to_max_messages=False), state)
    assert shape(state.messages)[2:] == [f"assistant:short {i}" for i in range(9, 20)]


async def test_a_summary_counts_against_max_messages() -> None:
    summarizer = ScriptedModel([assistant("S1")])
    interceptor = ContextCompressionInterceptor(max_messages=10, strategy=LLMSummaryStrategy(summarizer))
    state = ChatModelAgentState(messages=twenty_steps(), remaining=1)
    await before_chat_model(interceptor, state)
    assert shape(state.messages) == [
        "system:s",
        "user:goal",
        "summary",
        "assistant:short 9",
        *(f"assistant:short {i}" for i in range(12, 20)),
    ]


def test_trim_to_max_messages_must_be_a_bool() -> None:
    with pytest.raises(UserError, match=r"trim_to_max_messages: expected a bool, got 'no'"):
        ContextCompressionInterceptor(trim_to_max_messages="no")  # type: ignore[arg-type]


async def test_calls_without_all_their_results_are_removed_with_their_results() -> None:
    messages = [system("s"), user("go")]
    messages += [tool_calls(("lookup", {"key": "a"}), ("lookup", {"key": "b"}), id_prefix="pair_")]
    messages += [tool_message("only a", tool_call_id="pair_1")]  # pair_2 has no result
    messages += [tool_calls(("lookup", {"key": "c"}), id_prefix="lone_")]  # no result at all
    for i in range(5):
        messages += [turns(1, i)[0], tool_message(f"r{i}", tool_call_id=f"c{i}_1")]
    state = ChatModelAgentState(messages=messages, remaining=1)
    await before_chat_model(ContextCompressionInterceptor(max_messages=10), state)
    assert shape(state.messages) == [
        "system:s",
        "user:go",
        *(part for i in range(5) for part in (f"call:c{i}_1", f"result:c{i}_1")),
    ]
    assert_valid(state.messages)


async def test_an_assistant_message_with_tool_calls_is_never_cut() -> None:
    thinking_aloud = tool_calls(("lookup", {"key": "k"}))
    # 2,500 tokens: over the per-message cap of 2,000, while the whole transcript is under the threshold of 3,000.
    thinking_aloud = Message(role="assistant", content="t" * 10_000, tool_calls=thinking_aloud.tool_calls)
    interceptor = ContextCompressionInterceptor(context_length=4000)
    agent, model = agent_with(thinking_aloud, assistant("done"), middlewares=[interceptor])
    await run(agent)
    assert model.requests[1].messages[2].content == "t" * 10_000


@pytest.mark.parametrize(("attempt", "kept"), [(1, 16), (2, 12), (3, 8), (4, 4)])
async def test_a_prompt_too_long_error_shrinks_the_kept_part_more_on_each_retry(attempt: int, kept: int) -> None:
    # 20 messages after the task: 0.8, 0.6, 0.4 and 0.25 of them stay, in whole call groups and no more than that
    # share (0.25: 5, a cut at 6 in groups of two, so 4).
    messages = [system("s"), user("go")]
    for i in range(10):
        messages += [turns(1, i)[0], tool_message(f"r{i}", tool_call_id=f"c{i}_1")]
    state = ChatModelAgentState(messages=messages, remaining=1)
    interceptor = ContextCompressionInterceptor(max_retries=4)
    assert interceptor.on_model_error is not None
    too_long = http_error(400, "This model's maximum context length is 4096 tokens")
    assert await interceptor.on_model_error(state, too_long, attempt, RunContext()) is True
    assert len(state.messages) - 2 == kept
    assert shape(state.messages)[-1] == "result:c9_1"
    assert_valid(state.messages)


async def test_the_hierarchical_strategy_summarises_the_older_half_then_merges_the_newer_half() -> None:
    too_long = http_error(400, "This model's maximum context length is 4096 tokens")
    summarizer = ScriptedModel([too_long, assistant("R-old"), assistant("R-all")])
    messages = [m for i in range(4) for m in (turns(1, i)[0], tool_message(f"value of k{i}", tool_call_id=f"c{i}_1"))]
    ctx = RunContext()
    text = await HierarchicalSummaryStrategy(summarizer).compress(messages, ctx, max_retries=1)
    assert text == "R-all"
    older, newer = prompt_of(summarizer, 1), prompt_of(summarizer, 2)
    assert older.startswith("Current summary:\n(none yet)\n")
    assert "value of k0" in older and "value of k1" in older and "value of k2" not in older
    assert newer.startswith("Current summary:\nR-old\n")
    assert "value of k2" in newer and "value of k3" in newer and "value of k1" not in newer
    again = ScriptedModel([assistant("R-next")])
    assert await HierarchicalSummaryStrategy(again).compress(messages[:2], ctx, max_retries=1) == "R-next"
    assert prompt_of(again).startswith("Current summary:\nR-all\n")  # the merged summary is the rolling one


TRIMMED = {
    "en": "\n... [Content too large, truncated: this single message exceeded the context budget, so the middle was "
    "left out and only the head and tail kept. To see all of it, fetch it again page by page] ...\n",
    "zh": "\n... [内容过大已截断：单条消息超过上下文预算，省略中间部分，仅保留首尾。如需完整内容，请用分页方式重新获取] ...\n",
}


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_the_trim_marker_is_solons_in_the_active_language(language: Language) -> None:
    messages = [system("s"), user("go"), turns(1, 0)[0], tool_message("A" * 9000 + "Z" * 9000, tool_call_id="c0_1")]
    state = ChatModelAgentState(messages=messages, remaining=1)
    set_language(language)
    try:
        await before_chat_model(ContextCompressionInterceptor(context_length=4000), state)
    finally:
        set_language("en")
    trimmed = state.messages[-1].content
    assert trimmed.startswith("AAAA") and trimmed.endswith("ZZZZ")
    assert TRIMMED[language] in trimmed


async def test_a_prompt_too_long_error_is_not_retried_when_compressing_removes_nothing() -> None:
    messages = [system("s"), user("go"), turns(1, 0)[0], tool_message("r0", tool_call_id="c0_1")]
    state = ChatModelAgentState(messages=messages, remaining=1)
    interceptor = ContextCompressionInterceptor()
    assert interceptor.on_model_error is not None
    too_long = http_error(400, "This model's maximum context length is 4096 tokens")
    # One call and its result after the task: 0.8 of them rounds up to the whole group.
    assert await interceptor.on_model_error(state, too_long, 1, RunContext()) is False
    assert shape(state.messages) == ["system:s", "user:go", "call:c0_1", "result:c0_1"]


async def test_a_message_trigger_factor_compresses_less_often_and_keeps_max_messages() -> None:
    summarizer = ScriptedModel([assistant("S1"), assistant("S2")])
    interceptor = ContextCompressionInterceptor(
        max_messages=10, strategy=LLMSummaryStrategy(summarizer), message_trigger_factor=1.5
    )
    agent, model = agent_with(*turns(12), assistant("done"), middlewares=[interceptor])
    await run(agent)
    sizes = [len(r.messages) - 2 for r in model.requests]  # after the task
    # 16 > 15 messages start the first compression, down to 10 at most, the summary counted (a summary and four
    # call groups); 17 > 15 start the second.
    assert sizes == [0, 2, 4, 6, 8, 10, 12, 14, 9, 11, 13, 15, 9]
    assert len(summarizer.requests) == 2


@pytest.mark.parametrize("factor", [0.5, True, "2"])
def test_a_message_trigger_factor_below_1_is_refused(factor: Any) -> None:
    with pytest.raises(UserError, match=r"message_trigger_factor: expected a number >= 1.0, got "):
        ContextCompressionInterceptor(message_trigger_factor=factor)
