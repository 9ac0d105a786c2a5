"""The names stored checkpoints use for batonflow's own types, pinned.

A payload names each class by its registered wire name, so renaming a class is harmless and renaming its wire name
breaks every stored checkpoint that holds it. Moving a class to another module changes only the right-hand side
below: update it there. Changing a name on the left needs a decoder for the old one first.
"""

from __future__ import annotations

import json
import subprocess
import sys

from batonflow.codec import registered_types

WIRE_NAMES = {
    "AddressSegment": "batonflow.schema._paths.AddressSegment",
    "AgentAction": "batonflow.adk._events.AgentAction",
    "AgentToolState": "batonflow.adk._agent_tool.AgentToolState",
    "AudioPart": "batonflow.schema._messages.AudioPart",
    "BreakLoopAction": "batonflow.adk._events.BreakLoopAction",
    "Checkpoint": "batonflow.adk._checkpoint.Checkpoint",
    "DeterministicTransferState": "batonflow.adk._deterministic.DeterministicTransferState",
    "FlowChatSession": "batonflow.flow._chat.ChatSession",
    "FlowContext": "batonflow.graph._context._ContextSnapshot",
    "FlowNodeRecord": "batonflow.graph._context.NodeRecord",
    "FlowNodeType": "batonflow.graph._spec.NodeType",
    "FunctionCall": "batonflow.schema._messages.FunctionCall",
    "GraphState": "batonflow.graph._agent.GraphState",
    "ImagePart": "batonflow.schema._messages.ImagePart",
    "InterruptRecord": "batonflow.adk._interrupt.InterruptRecord",
    "JournalChunk": "batonflow.adk._journal.JournalChunk",
    "HistoryPart": "batonflow.adk._parts.HistoryPart",
    "HistoryStepEntry": "batonflow.adk._run_record.StepEntry",
    "LoopState": "batonflow.adk._workflow.LoopState",
    "Message": "batonflow.schema._messages.Message",
    "ParallelState": "batonflow.adk._workflow.ParallelState",
    "ReactState": "batonflow.adk.loop._state.ReactState",
    "ResponseMeta": "batonflow.schema._messages.ResponseMeta",
    "RunRecord": "batonflow.adk._run_record.RunRecord",
    "RunStep": "batonflow.schema._paths.RunStep",
    "SequentialState": "batonflow.adk._workflow.SequentialState",
    "SessionEvent": "batonflow.adk._context.SessionEvent",
    "TextPart": "batonflow.schema._messages.TextPart",
    "ToolCall": "batonflow.schema._messages.ToolCall",
    "ToolResult": "batonflow.adk.loop._state.ToolResult",
    "TransferToAgentAction": "batonflow.adk._events.TransferToAgentAction",
    "Usage": "batonflow.schema._messages.Usage",
    "fanout.Branch": "batonflow.adk._fanout.Branch",
    "fanout.BranchEvent": "batonflow.adk._fanout.BranchEvent",
    "fanout.BranchResult": "batonflow.adk._fanout.BranchResult",
    "hitl.HITLDecision": "batonflow.agents._hitl.HITLDecision",
    "hitl.HITLPending": "batonflow.agents._hitl.HITLPending",
    "hitl.PendingTask": "batonflow.agents._hitl.PendingTask",
    "hitl.Waiting": "batonflow.agents._hitl._Waiting",
    "plan_execute.ExecutedStep": "batonflow.adk._plan.ExecutedStep",
    "plan_execute.Plan": "batonflow.adk._plan.Plan",
    "react.FeedbackRequest": "batonflow.agents._react.FeedbackRequest",
    "team.TeamMetrics": "batonflow.team._trace.TeamMetrics",
    "team.TeamRecord": "batonflow.team._trace.TeamRecord",
    "team.TeamState": "batonflow.team._run.TeamState",
    "team.TeamTrace": "batonflow.team._trace.TeamTrace",
}


def batonflow_types(table: dict[str, type]) -> dict[str, str]:
    """The entries for batonflow's classes (tests register their own besides), as ``name: module.qualname``."""
    paths = {name: f"{cls.__module__}.{cls.__qualname__}" for name, cls in table.items()}
    return {name: path for name, path in paths.items() if path.startswith("batonflow.")}


def test_every_checkpointed_type_of_batonflow_has_its_pinned_wire_name() -> None:
    assert batonflow_types(registered_types()) == WIRE_NAMES


def test_importing_the_store_alone_registers_them_all() -> None:
    # A program that only decodes (a worker resuming runs, say) imports nothing else; batonflow's own types must
    # be registered all the same, without the store importing the runtime.
    code = "import batonflow.store as s; print('\\n'.join(sorted(s.registered_types())))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert set(WIRE_NAMES) <= set(out.split())


# The packages that `import batonflow` loads; every other package's types load when a payload names them.
CORE = ("batonflow.schema.", "batonflow.adk.", "batonflow.agents.")


def later_loaded_samples() -> dict[str, object]:
    """One value of each checkpointed type that a package loaded on first use registers, by wire name."""
    from batonflow.flow import ChatSession
    from batonflow.graph import GraphState, NodeRecord, NodeType
    from batonflow.team import TeamMetrics, TeamRecord, TeamState, TeamTrace

    context = registered_types()["FlowContext"]
    return {
        "FlowChatSession": ChatSession(session_id="s"),
        "FlowContext": context("run-1", False, {"x": 1}),
        "FlowNodeRecord": NodeRecord("g", "n", "n", NodeType.END, 1.0),
        "FlowNodeType": NodeType.LOOP,
        "GraphState": GraphState(context="{}"),
        "team.TeamMetrics": TeamMetrics(model_calls=2),
        "team.TeamRecord": TeamRecord(role="assistant", source="a", content="hi"),
        "team.TeamState": TeamState(flow="{}"),
        "team.TeamTrace": TeamTrace(team_name="t"),
    }


def test_types_of_packages_loaded_on_first_use_decode_after_importing_only_batonflow() -> None:
    from batonflow.store import encode

    samples = later_loaded_samples()
    assert set(samples) == {name for name, path in WIRE_NAMES.items() if not path.startswith(CORE)}
    payloads = {name: encode(value).hex() for name, value in samples.items()}
    code = (
        "import json, sys\n"
        "import batonflow\n"
        "from batonflow.store import decode\n"
        "loaded = sorted(m for m in ('batonflow.graph', 'batonflow.flow', 'batonflow.team') if m in sys.modules)\n"
        "found = {n: type(decode(bytes.fromhex(p))).__qualname__ for n, p in json.loads(sys.argv[1]).items()}\n"
        "print(json.dumps([loaded, found]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(payloads)], capture_output=True, text=True, timeout=120, check=True
    )
    loaded, found = json.loads(out.stdout)
    assert loaded == []  # none was loaded before a payload named one of its types
    assert found == {name: WIRE_NAMES[name].rpartition(".")[2] for name in samples}
