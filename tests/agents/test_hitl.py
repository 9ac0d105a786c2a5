import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from batonflow import observe
from batonflow.adk import AgentMiddleware, ChatModelAgent, InterruptInfo, Runner, collect_events, set_language
from batonflow.agents import HITL, HITLDecision, HITLPending, PendingTask, ReActAgent, Session, human_approval
from batonflow.agents import Runner as ConversationRunner
from batonflow.agents.middleware import HITLInterceptor
from batonflow.errors import UserError
from batonflow.schema import Message, assistant
from batonflow.store import MemoryCheckpointStore, MemorySessionStore, SqliteCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import tool


class Shop:
    def __init__(self) -> None:
        self.refunds: list[tuple[int, float]] = []
        self.lookups: list[int] = []

    def tools(self) -> list[Any]:
        @tool(threaded=False)
        def refund(order_id: int, amount: float) -> str:
            """Refund money."""
            self.refunds.append((order_id, amount))
            return f"refunded {amount} for order {order_id}"

        @tool(threaded=False)
        def lookup(order_id: int) -> str:
            """Look up an order."""
            self.lookups.append(order_id)
            return f"order {order_id}"

        return [refund, lookup]


def agent(shop: Shop, *responses: Message, hitl: AgentMiddleware | None = None) -> ChatModelAgent:
    hitl = hitl or human_approval(sensitive_tools=["refund"])
    return ChatModelAgent(name="support", model=ScriptedModel(list(responses)), tools=shop.tools(), middlewares=[hitl])


def pending_of(events: list[Any]) -> tuple[str, HITLPending]:
    info = events[-1].action.interrupted
    assert isinstance(info, InterruptInfo)
    [root] = info.interrupt_contexts
    assert isinstance(root.info, HITLPending)
    return root.id, root.info


REFUND = tool_calls(("refund", {"order_id": 7, "amount": 30.0}), ("lookup", {"order_id": 7}))


async def test_a_sensitive_call_suspends_the_whole_batch_before_anything_runs() -> None:
    shop = Shop()
    runner = Runner(agent(shop, REFUND), checkpoint_store=MemoryCheckpointStore())
    events = await collect_events(runner.query("refund 7", checkpoint_id="c"))
    _, pending = pending_of(events)
    assert [(t.call_id, t.tool_name, t.comment) for t in pending.tasks] == [
        ("call_1", "refund", "Sensitive operation: a person must confirm it")
    ]
    assert events[-1].action.interrupted.interrupt_contexts[0].address == "agent:support;tool:batch:19"
    assert shop.refunds == [] and shop.lookups == []  # not even the harmless lookup ran


async def test_approval_runs_the_batch_without_asking_the_model_again() -> None:
    shop = Shop()
    support = agent(shop, REFUND, assistant("Refunded."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.approve()}}))
    assert shop.refunds == [(7, 30.0)]
    assert shop.lookups == [7]
    assert events[-1].message_output.message.content == "Refunded."  # type: ignore[union-attr]
    assert isinstance(support.model, ScriptedModel)
    assert len(support.model.requests) == 2


async def test_approval_with_modified_arguments_and_always_allow() -> None:
    shop = Shop()
    allowed: list[tuple[str, dict[str, Any]]] = []
    hitl = human_approval(sensitive_tools=["refund"], on_approved=lambda name, args: allowed.append((name, args)))
    runner = Runner(agent(shop, REFUND, assistant("ok"), hitl=hitl), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    decision = HITL.approve(modified_args={"amount": 10.0}, always_allow=True)
    await collect_events(runner.resume("c", {interrupt_id: {"call_1": decision}}))
    assert shop.refunds == [(7, 10.0)]
    assert allowed == [("refund", {"order_id": 7, "amount": 10.0})]


async def test_skip_answers_the_call_without_running_it() -> None:
    shop = Shop()
    support = agent(shop, REFUND, assistant("Skipped it."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.skip()}}))
    assert shop.refunds == []
    assert isinstance(support.model, ScriptedModel)
    observations = [m.content for m in support.model.requests[1].messages if m.role == "tool"]
    assert observations == ["Operation skipped: please continue with the next step.", "order 7"]


async def test_rejecting_the_only_sensitive_call_ends_the_run_with_a_valid_transcript() -> None:
    shop = Shop()
    support = agent(shop, REFUND)
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.reject()}}))
    assert shop.refunds == [] and shop.lookups == []
    said = [(e.message_output.role, e.message_output.message.content) for e in events if e.message_output]  # type: ignore[union-attr]
    assert said == [
        ("tool", "Operation rejected: human approval was not granted."),
        ("tool", "Operation rejected: human approval was not granted."),
        ("assistant", "Operation rejected: human approval was not granted."),
    ]


async def test_rejecting_one_of_several_sensitive_calls_answers_only_that_one() -> None:
    shop = Shop()
    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    support = agent(shop, calls, assistant("One refunded."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, pending = pending_of(await collect_events(runner.query("two refunds", checkpoint_id="c")))
    assert [t.call_id for t in pending.tasks] == ["call_1", "call_2"]
    await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.reject(), "call_2": HITL.approve()}}))
    assert shop.refunds == [(2, 6.0)]
    assert isinstance(support.model, ScriptedModel)
    assert [m.content for m in support.model.requests[1].messages if m.role == "tool"] == [
        "Operation rejected: human approval was not granted.",
        "refunded 6.0 for order 2",
    ]


async def test_a_reject_or_skip_comment_is_the_result_of_its_call() -> None:
    shop = Shop()
    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    support = agent(shop, calls, assistant("Neither."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("two refunds", checkpoint_id="c")))
    decisions = {"call_1": HITL.reject("Order 1 was refunded last week."), "call_2": HITL.skip("Ask the bank.")}
    await collect_events(runner.resume("c", {interrupt_id: decisions}))
    assert shop.refunds == []
    assert isinstance(support.model, ScriptedModel)
    assert [m.content for m in support.model.requests[1].messages if m.role == "tool"] == [
        "Order 1 was refunded last week.",
        "Ask the bank.",
    ]


async def test_the_comment_of_a_single_reject_is_the_runs_answer() -> None:
    runner = Runner(agent(Shop(), REFUND), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.reject("Over the limit.")}}))
    said = [(e.message_output.role, e.message_output.message.content) for e in events if e.message_output]  # type: ignore[union-attr]
    assert said == [("tool", "Over the limit."), ("tool", "Over the limit."), ("assistant", "Over the limit.")]


async def test_the_pending_summary_is_the_single_tasks_comment_or_a_count() -> None:
    hitl = human_approval(sensitive_tools={"refund": "A refund needs a manager."})
    one = Runner(agent(Shop(), REFUND, hitl=hitl), checkpoint_store=MemoryCheckpointStore())
    _, pending = pending_of(await collect_events(one.query("refund 7", checkpoint_id="c")))
    assert pending.summary == str(pending) == "A refund needs a manager."
    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    two = Runner(agent(Shop(), calls, hitl=hitl), checkpoint_store=MemoryCheckpointStore())
    _, pending = pending_of(await collect_events(two.query("two refunds", checkpoint_id="c")))
    assert pending.summary == str(pending) == "2 operations await confirmation"


async def test_a_react_agents_pending_summary_is_its_answer_the_pending_reason_and_in_the_conversation() -> None:
    shop = Shop()
    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    support = ReActAgent(
        name="support",
        model=ScriptedModel([calls]),
        tools=shop.tools(),
        middlewares=[human_approval(sensitive_tools=["refund"])],
        model_retry=None,
    )
    store = MemorySessionStore()
    events = await collect_events(ConversationRunner(support, session_store=store).query("refunds", session_id="s"))
    said = [
        e.message_output.message.content for e in events if e.message_output and e.message_output.role == "assistant"
    ]  # type: ignore[union-attr]
    assert said[-1] == "2 operations await confirmation"
    assert isinstance(events[-1].action.interrupted, InterruptInfo)  # type: ignore[union-attr]
    session = await Session.load(store, "s")
    assert session.is_pending and session.pending_reason == "2 operations await confirmation"
    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "refunds"),
        ("assistant", "2 operations await confirmation"),
    ]


async def test_decisions_for_some_of_the_calls_are_kept_until_the_others_are_decided(tmp_path: Path) -> None:
    shop = Shop()
    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    store = SqliteCheckpointStore(tmp_path / "runs.db")  # the kept decisions go through the codec
    runner = Runner(agent(shop, calls, assistant("Both done.")), checkpoint_store=store)
    interrupt_id, _ = pending_of(await collect_events(runner.query("two refunds", checkpoint_id="c")))
    again, pending = pending_of(await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.approve()}})))
    assert again == interrupt_id
    assert [t.call_id for t in pending.tasks] == ["call_2"]  # only the undecided call is asked about
    assert shop.refunds == []  # nothing runs until the whole batch is decided
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_2": HITL.approve()}}))
    assert events[-1].error is None
    assert shop.refunds == [(1, 5.0), (2, 6.0)]
    await store.close()


async def test_a_resume_without_decisions_suspends_the_batch_again_with_the_same_id() -> None:
    runner = Runner(agent(Shop(), REFUND), checkpoint_store=MemoryCheckpointStore())
    first, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    again, _ = pending_of(await collect_events(runner.resume("c")))
    assert again == first


async def test_a_strategy_decides_which_calls_need_a_person() -> None:
    shop = Shop()
    hitl = human_approval(strategies={"refund": lambda args, ctx: "large refund" if args["amount"] > 100 else None})
    small = tool_calls(("refund", {"order_id": 1, "amount": 5.0}))
    runner = Runner(agent(shop, small, assistant("done"), hitl=hitl))
    await collect_events(runner.query("small refund"))
    assert shop.refunds == [(1, 5.0)]


async def test_a_pending_approval_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SqliteCheckpointStore(path)
    interrupt_id, _ = pending_of(
        await collect_events(Runner(agent(Shop(), REFUND), checkpoint_store=store).query("x", checkpoint_id="c"))
    )
    await store.close()
    shop = Shop()  # a new process: new agent, new store object on the same file
    store = SqliteCheckpointStore(path)
    runner = Runner(agent(shop, assistant("Refunded.")), checkpoint_store=store)
    await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.approve()}}))
    assert shop.refunds == [(7, 30.0)]
    await store.close()


async def test_decisions_that_are_not_hitl_decisions_are_refused() -> None:
    runner = Runner(agent(Shop(), REFUND), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": "yes"}}))
    assert isinstance(events[-1].error, UserError)
    assert "HITL resume data for call 'call_1': expected a HITLDecision, one of" in str(events[-1].error)
    assert str(events[-1].error).endswith("got the action 'yes'")


def test_the_interceptor_is_the_middleware_and_says_which_tools_it_watches() -> None:
    hitl = HITLInterceptor(sensitive_tools=["refund"], strategies={"lookup": lambda args, ctx: None})
    assert isinstance(hitl, AgentMiddleware)
    assert hitl.before_tools is not None
    assert repr(hitl) == "HITLInterceptor(tools=['lookup', 'refund'])"
    assert isinstance(human_approval(sensitive_tools=["refund"]), AgentMiddleware)


async def test_the_interceptor_class_works_as_the_factory_does() -> None:
    shop = Shop()
    runner = Runner(agent(shop, REFUND, hitl=HITLInterceptor(sensitive_tools=["refund"])))
    _, pending = pending_of(await collect_events(runner.query("refund 7")))
    assert [t.tool_name for t in pending.tasks] == ["refund"]
    assert shop.refunds == []


async def test_sensitive_tools_may_each_have_the_comment_a_person_is_shown() -> None:
    hitl = human_approval(sensitive_tools={"refund": "Money leaves the shop.", "lookup": None})
    runner = Runner(agent(Shop(), REFUND, hitl=hitl), checkpoint_store=MemoryCheckpointStore())
    _, pending = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    assert [(t.tool_name, t.comment) for t in pending.tasks] == [
        ("refund", "Money leaves the shop."),
        ("lookup", "Sensitive operation: a person must confirm it"),
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"sensitive_tools": "refund"}, "expected a list of tool names, got the string 'refund'"),
        ({"sensitive_tools": [""]}, "HITL sensitive_tools: expected tool names, got ''"),
        ({"sensitive_tools": {"refund": 3}}, "expected a comment string or None, got 3"),
        ({"strategies": {"refund": "yes"}}, "expected a function of (arguments, ctx), got str"),
        (
            {"sensitive_tools": ["refund"], "strategies": {"refund": lambda args, ctx: None}},
            "HITL tool 'refund': expected it in sensitive_tools or in strategies, got it in both",
        ),
        ({"on_approved": "log"}, "HITL on_approved: expected a function of (tool name, arguments), got 'log'"),
    ],
)
def test_a_configuration_that_cannot_work_is_a_user_error(options: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        human_approval(**options)
    with pytest.raises(UserError, match=re.escape(message)):
        HITLInterceptor(**options)


async def test_an_approval_comment_is_noted_in_the_result_of_its_call() -> None:
    shop = Shop()
    support = agent(shop, REFUND, assistant("Refunded."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("refund 7", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.approve("regular customer")}}))
    said = [e.message_output.message.content for e in events if e.message_output and e.message_output.role == "tool"]  # type: ignore[union-attr]
    assert said == ["refunded 30.0 for order 7 (Note: regular customer)", "order 7"]
    assert isinstance(support.model, ScriptedModel)
    assert [m.content for m in support.model.requests[1].messages if m.role == "tool"] == said


async def test_a_decision_for_a_call_that_is_not_pending_is_refused_and_nothing_runs() -> None:
    shop = Shop()
    runner = Runner(agent(shop, REFUND), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    # call_2 is in the batch, but not sensitive: nobody was asked about it.
    decisions = {"call_1": HITL.approve(), "call_2": HITL.skip(), "call_9": HITL.reject()}
    events = await collect_events(runner.resume("c", {interrupt_id: decisions}))
    assert isinstance(events[-1].error, UserError)
    assert str(events[-1].error) == (
        "HITL resume data: expected decisions for the pending call ids ['call_1'], "
        "got ['call_1', 'call_2', 'call_9'] (unknown: ['call_2', 'call_9'])"
    )
    assert shop.refunds == [] and shop.lookups == []


async def test_a_refused_resume_keeps_the_checkpoint_for_a_second_one_with_the_right_ids() -> None:
    shop = Shop()
    store = MemoryCheckpointStore()
    runner = Runner(agent(shop, REFUND, assistant("Refunded.")), checkpoint_store=store)
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    refused = await collect_events(runner.resume("c", {interrupt_id: {"call_9": HITL.approve()}}))
    assert isinstance(refused[-1].error, UserError)
    assert await store.get("c") is not None
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.approve()}}))
    assert events[-1].error is None
    assert shop.refunds == [(7, 30.0)]


async def test_resume_data_that_is_not_a_mapping_of_decisions_is_refused() -> None:
    runner = Runner(agent(Shop(), REFUND), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: 42}))
    assert isinstance(events[-1].error, UserError)
    assert str(events[-1].error) == (
        "HITL resume data: expected a mapping of call ids to HITLDecisions (or one of ['approve', 'reject', 'skip']), "
        "got int"
    )


async def test_one_decision_for_the_interrupt_decides_every_call_it_waits_for() -> None:
    shop = Shop()
    runner = Runner(agent(shop, REFUND, assistant("Refunded.")), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: HITL.approve()}))
    assert events[-1].error is None
    assert shop.refunds == [(7, 30.0)]


@pytest.mark.parametrize(
    "answer",
    [
        {"action": "approve", "comment": "ok", "modified_args": {"amount": 5.0}},
        {"call_1": {"action": "approve", "comment": "ok", "modified_args": {"amount": 5.0}}},
    ],
)
async def test_decisions_in_their_json_form_are_applied(answer: dict[str, Any]) -> None:
    shop = Shop()
    support = agent(shop, REFUND, assistant("Refunded."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: answer}))
    assert events[-1].error is None
    assert shop.refunds == [(7, 5.0)]
    assert isinstance(support.model, ScriptedModel)
    said = [m.content for m in support.model.requests[1].messages if m.role == "tool"]
    assert said[0] == "refunded 5.0 for order 7 (Note: ok)"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("maybe", "HITL resume data: expected a HITLDecision, one of ['approve', 'reject', 'skip'], or "),
        ({"action": "approve", "why": 1}, "got the fields ['why']"),
        ({"call_1": {"action": "nod"}}, "HITL resume data for call 'call_1': expected a HITLDecision"),
        ({"action": "reject", "comment": 3}, "expected a comment string, got int"),
        (
            {"action": "approve", "modified_args": [1]},
            "expected modified_args as a mapping of argument names, got list",
        ),
    ],
)
async def test_a_bad_json_decision_is_refused_saying_what_was_expected(answer: Any, message: str) -> None:
    shop = Shop()
    runner = Runner(agent(shop, REFUND), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, _ = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    events = await collect_events(runner.resume("c", {interrupt_id: answer}))
    assert isinstance(events[-1].error, UserError)
    assert message in str(events[-1].error)
    assert shop.refunds == []


async def test_decisions_apply_to_the_tasks_the_person_was_shown_even_if_the_strategy_changed() -> None:
    shop = Shop()
    limit = [10.0]
    hitl = human_approval(strategies={"refund": lambda args, ctx: "large" if args["amount"] > limit[0] else None})
    runner = Runner(agent(shop, REFUND, hitl=hitl), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, pending = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    assert [t.comment for t in pending.tasks] == ["large"]
    limit[0] = 100.0  # the refund would now pass on its own, but a person rejected it
    await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.reject()}}))
    assert shop.refunds == []


async def test_the_suspension_and_each_decision_are_trace_events() -> None:
    traced: list[observe.TraceEvent] = []

    async def record(event: observe.TraceEvent) -> None:
        if isinstance(event, (observe.HITLPending, observe.HITLDecided)):
            traced.append(event)

    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    runner = Runner(agent(Shop(), calls, assistant("ok")), checkpoint_store=MemoryCheckpointStore(), callbacks=[record])
    interrupt_id, pending = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    assert [(type(e), e.agent_name) for e in traced] == [(observe.HITLPending, "support")]
    assert isinstance(traced[0], observe.HITLPending) and traced[0].tasks == pending.tasks
    traced.clear()
    approve, skip = HITL.approve(), HITL.skip("not now")
    await collect_events(runner.resume("c", {interrupt_id: {"call_1": approve, "call_2": skip}}))
    assert [(e.call_id, e.tool_name, e.decision) for e in traced if isinstance(e, observe.HITLDecided)] == [
        ("call_1", "refund", approve),
        ("call_2", "refund", skip),
    ]
    assert len(traced) == 2


def test_decisions_made_by_the_helper() -> None:
    assert HITL.approve("ok", modified_args={"amount": 1}, always_allow=True) == HITLDecision(
        action="approve", comment="ok", modified_args={"amount": 1}, always_allow=True
    )
    assert HITL.reject("no") == HITLDecision(action="reject", comment="no")
    assert HITL.skip() == HITLDecision(action="skip")
    task = PendingTask(call_id="c", tool_name="refund", arguments="{}", comment="why")
    assert str(HITLPending(tasks=(task,))) == "why"


@pytest.fixture
def chinese() -> Iterator[None]:
    set_language("zh")
    yield
    set_language("en")


async def test_the_original_chinese_texts(chinese: None) -> None:
    shop = Shop()
    runner = Runner(agent(shop, REFUND), checkpoint_store=MemoryCheckpointStore())
    interrupt_id, pending = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    assert pending.tasks[0].comment == str(pending) == "敏感操作，需要人工介入确认"
    events = await collect_events(runner.resume("c", {interrupt_id: {"call_1": HITL.reject()}}))
    assert events[-1].message_output.message.content == "操作拒绝：人工审批未通过。"  # type: ignore[union-attr]
    calls = tool_calls(("refund", {"order_id": 1, "amount": 5.0}), ("refund", {"order_id": 2, "amount": 6.0}))
    two = Runner(agent(shop, calls), checkpoint_store=MemoryCheckpointStore())
    _, pending = pending_of(await collect_events(two.query("x", checkpoint_id="c")))
    assert str(pending) == "有 2 项操作待人工确认"


@pytest.mark.parametrize(
    ("decision", "answer", "ledger_text"),
    [
        ("approve", "Refund done.", "refund 42\n"),
        ("reject", "Operation rejected: human approval was not granted.", None),
    ],
)
def test_a_react_agents_pending_approval_survives_a_killed_process_on_sqlite(
    tmp_path: Path, decision: str, answer: str, ledger_text: str | None
) -> None:
    import json
    import os
    import signal
    import subprocess
    import sys

    child = Path(__file__).with_name("hitl_react_child.py")
    database, ledger = str(tmp_path / "runs.db"), tmp_path / "ledger"
    first = subprocess.Popen(
        [sys.executable, str(child), "run", database, str(ledger)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stdout is not None
        line = first.stdout.readline()
        assert line, first.stderr.read() if first.stderr else "child printed nothing"
        pending = json.loads(line)
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(10)
    assert pending["tasks"] == [["call_1", "refund"]]
    assert not ledger.exists()  # nothing ran before the decision

    second = subprocess.run(
        [sys.executable, str(child), "resume", database, str(ledger), pending["interrupt_id"], decision],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout.splitlines()[-1]) == {"answer": answer}
    assert (ledger.read_text() if ledger.exists() else None) == ledger_text


async def test_deeply_nested_arguments_of_a_sensitive_call_are_refused_without_asking() -> None:
    shop = Shop()
    support = agent(shop, tool_calls(("refund", "[" * 100_000)), assistant("Sorry."))
    events = await collect_events(Runner(support, checkpoint_store=MemoryCheckpointStore()).query("refund 7"))
    assert [e.error for e in events if e.error is not None] == []
    assert all(e.action is None or e.action.interrupted is None for e in events)
    assert shop.refunds == []
    assert isinstance(support.model, ScriptedModel)
    assert support.model.requests[1].messages[-1].content == (
        "Invalid arguments for tool [refund]: expected JSON nested at most 100 levels deep, got 100,000 levels"
    )


def _results(model: object, request: int) -> list[str]:
    assert isinstance(model, ScriptedModel)
    return [m.content for m in model.requests[request].messages if m.role == "tool"]


@pytest.mark.parametrize(
    ("arguments", "refusal"),
    [
        ('{"order_id": 7, "amo', "Invalid arguments for tool [refund]: expected a JSON object, got "),
        ('{"order_id": 7, "amount": "lots"}', "Invalid arguments for tool [refund]: "),
        ('{"order_id": 7}', "Invalid arguments for tool [refund]: "),
    ],
)
async def test_a_call_whose_arguments_do_not_validate_is_answered_with_the_error_and_no_approval_is_asked(
    arguments: str, refusal: str
) -> None:
    shop = Shop()
    calls = tool_calls(("refund", arguments), ("lookup", {"order_id": 7}))
    support = agent(shop, calls, assistant("The refund could not be made."))
    events = await collect_events(Runner(support, checkpoint_store=MemoryCheckpointStore()).query("x"))
    assert all(e.action is None or e.action.interrupted is None for e in events)
    assert shop.refunds == [] and shop.lookups == [7]
    said = _results(support.model, 1)
    assert said[0].startswith(refusal) and said[1] == "order 7"
    assert events[-1].message_output.message.content == "The refund could not be made."  # type: ignore[union-attr]


async def test_an_invalid_call_is_answered_and_the_valid_sensitive_one_still_waits_for_a_person() -> None:
    shop = Shop()
    calls = tool_calls(("refund", {"order_id": 7, "amount": 30.0}), ("lookup", '{"order_id": "seven"}'))
    support = agent(shop, calls, assistant("Done."))
    runner = Runner(support, checkpoint_store=MemoryCheckpointStore())
    interrupt_id, pending = pending_of(await collect_events(runner.query("x", checkpoint_id="c")))
    assert [t.call_id for t in pending.tasks] == ["call_1"]
    events = await collect_events(runner.resume("c", {interrupt_id: HITL.approve()}))
    assert events[-1].error is None
    assert shop.refunds == [(7, 30.0)] and shop.lookups == []
    said = _results(support.model, 1)
    assert said[0] == "refunded 30.0 for order 7"
    assert said[1].startswith("Invalid arguments for tool [lookup]: ")


async def test_every_call_invalid_is_answered_without_asking() -> None:
    shop = Shop()
    support = agent(shop, tool_calls(("refund", "{"), ("lookup", "[1]")), assistant("Sorry."))
    events = await collect_events(Runner(support, checkpoint_store=MemoryCheckpointStore()).query("x"))
    assert events[-1].error is None
    assert [s.split(":")[0] for s in _results(support.model, 1)] == [
        "Invalid arguments for tool [refund]",
        "Invalid arguments for tool [lookup]",
    ]
