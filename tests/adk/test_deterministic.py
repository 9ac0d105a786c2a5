from batonflow.adk import (
    AgentEvent,
    ChatModelAgent,
    InterruptInfo,
    Runner,
    collect_events,
    set_sub_agents,
    supervisor,
    with_deterministic_transfer,
)
from batonflow.schema import Message, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, tool


def agent(name: str, *responses: Message, **kw: object) -> ChatModelAgent:
    return ChatModelAgent(name=name, description=f"{name} agent", model=ScriptedModel(list(responses)), **kw)


def summary(events: list[AgentEvent]) -> list[tuple[str, str, str]]:
    out = []
    for e in events:
        message = e.message_output.message if e.message_output else None
        transfer = e.action.transfer_to_agent.dest_agent_name if e.action and e.action.transfer_to_agent else ""
        out.append(("/".join(str(s) for s in e.run_path), message.content if message else "", transfer))
    return out


def transfer(name: str) -> Message:
    return tool_calls(("transfer_to_agent", {"agent_name": name}))


async def test_transfer_pair_is_appended_after_the_agent_finishes() -> None:
    worker = with_deterministic_transfer(agent("worker", assistant("work done")), to=["root"])
    root = set_sub_agents(agent("root", transfer("worker"), assistant("thanks")), [worker])
    events = await collect_events(Runner(root).query("go"))
    assert summary(events)[2:] == [
        ("root/worker", "work done", ""),
        ("root/worker", "", ""),
        ("root/worker", "successfully transferred to agent [root]", "root"),
        ("root/worker/root", "thanks", ""),
    ]
    call = events[3].message_output.message.tool_calls[0]  # type: ignore[union-attr]
    assert (call.function.name, call.function.arguments) == ("transfer_to_agent", "root")


async def test_of_several_targets_the_last_one_wins() -> None:
    worker = with_deterministic_transfer(agent("worker", assistant("done")), to=["nowhere", "root"])
    root = set_sub_agents(agent("root", transfer("worker"), assistant("back")), [worker])
    events = await collect_events(Runner(root).query("go"))
    assert summary(events)[-1] == ("root/worker/root", "back", "")


async def test_no_transfer_after_an_exit() -> None:
    worker = with_deterministic_transfer(
        agent("worker", tool_calls(("exit", {"final_result": "bye"})), exit=True), to=["root"]
    )
    root = set_sub_agents(agent("root", transfer("worker"), assistant("never")), [worker])
    events = await collect_events(Runner(root).query("go"))
    assert summary(events)[-1] == ("root/worker", "bye", "")


def approval() -> object:
    @tool(threaded=False)
    def approve(ctx: ToolContext) -> str:
        """Wait for approval."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("approve?")
        return "approved"

    return approve


async def test_no_transfer_after_an_interrupt_and_the_transfer_follows_the_resume() -> None:
    worker = with_deterministic_transfer(
        agent("worker", tool_calls(("approve", {})), assistant("worked"), tools=[approval()]), to=["root"]
    )
    root = agent("root", transfer("worker"), assistant("reviewed"))
    runner = Runner(set_sub_agents(root, [worker]), checkpoint_store=MemoryCheckpointStore())
    events = await collect_events(runner.query("go", checkpoint_id="c"))
    assert isinstance(events[-1].action.interrupted, InterruptInfo)  # type: ignore[union-attr]
    assert all(not e.action or not e.action.transfer_to_agent or e.run_path[-1].agent_name == "root" for e in events)
    resumed = await collect_events(runner.resume("c"))
    assert summary(resumed)[-1] == ("root/worker/root", "reviewed", "")


async def test_a_wrapped_agent_tree_runs_on_an_isolated_session_and_resumes() -> None:
    leaf = agent("leaf", tool_calls(("approve", {})), assistant("leaf done"), tools=[approval()])
    team = set_sub_agents(agent("team", transfer("leaf")), [leaf])
    wrapped = with_deterministic_transfer(team, to=["boss"])
    boss = agent("boss", transfer("team"), assistant("boss wraps up"))
    runner = Runner(set_sub_agents(boss, [wrapped]), checkpoint_store=MemoryCheckpointStore())
    events = await collect_events(runner.query("go", checkpoint_id="c"))
    info = events[-1].action.interrupted  # type: ignore[union-attr]
    assert isinstance(info, InterruptInfo)
    chain = []
    node = info.interrupt_contexts[0]
    while node is not None:
        chain.append((node.address, node.info))
        node = node.parent  # type: ignore[assignment]
    assert chain[2] == ("agent:boss;agent:team", "deterministic transfer wrapper interrupted")
    resumed = await collect_events(runner.resume("c"))
    assert summary(resumed)[-1][1:] == ("boss wraps up", "")
    # The isolated tree's events were copied into the caller's history: the boss saw the leaf's answer.
    assert isinstance(boss.model, ScriptedModel)
    assert any("leaf done" in m.content for m in boss.model.requests[1].messages)
    # ... while the leaf saw only the input, not the boss's transfer.
    assert isinstance(leaf.model, ScriptedModel)
    assert not any("[boss]" in m.content for m in leaf.model.requests[0].messages)


async def test_supervisor_gets_control_back_after_each_sub_agent() -> None:
    boss = agent("boss", transfer("math"), transfer("words"), assistant("4, four"))
    math, words = agent("math", assistant("4")), agent("words", assistant("four"))
    events = await collect_events(Runner(supervisor(boss, [math, words])).query("2+2 in digits and words"))
    answers = [(p, text) for p, text, _ in summary(events) if text and not text.startswith("successfully")]
    assert answers == [("boss/math", "4"), ("boss/math/boss/words", "four"), ("boss/math/boss/words/boss", "4, four")]
    assert isinstance(math.model, ScriptedModel)
    assert math.model.requests[0].tools == []  # sub-agents do not decide where to go: the supervisor does


async def test_a_transfer_to_a_missing_agent_never_reports_success() -> None:
    worker = with_deterministic_transfer(agent("worker", assistant("work done")), to=["ghost"])
    root = set_sub_agents(agent("root", transfer("worker"), assistant("never")), [worker])
    events = await collect_events(Runner(root).query("go"))
    failed = "transfer failed: agent 'ghost' not found when transferring from 'worker'"
    assert summary(events)[-2] == ("root/worker", failed, "ghost")
    assert str(events[-1].error) == failed
    said = [s[1] for s in summary(events)]
    assert "successfully transferred to agent [ghost]" not in said


async def test_of_several_targets_a_missing_one_is_reported_as_failed() -> None:
    worker = with_deterministic_transfer(agent("worker", assistant("done")), to=["nowhere", "root"])
    root = set_sub_agents(agent("root", transfer("worker"), assistant("back")), [worker])
    said = [s[1] for s in summary(await collect_events(Runner(root).query("go")))]
    assert "transfer failed: agent 'nowhere' not found when transferring from 'worker'" in said
    assert "successfully transferred to agent [root]" in said
