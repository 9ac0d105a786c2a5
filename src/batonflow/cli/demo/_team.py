"""``batonflow demo --team``: a research team of three (researcher, writer, reviewer) writing one short paragraph.

On a local model the team runs under the ``sequential`` protocol: a 135M-parameter model writes fluent, on-topic
text, but as a supervisor it copies parts of its prompt instead of naming a member, so the fixed order does the
routing. Any other model supervises the team itself (``hierarchical``); ``scripted`` replays a supervised run
without any model. The members' words stream as they are written, and the team's trace sums up at the end.
"""

from __future__ import annotations

import time
from typing import TextIO

from ...adk import ChatModelAgent, Runner
from ...models import ChatModel, ModelSettings
from ...observe import ConsoleRenderer
from ...schema import assistant
from ...team import TeamAgent, TeamInterceptor, TeamTrace
from ...testing import ScriptedModel
from ._run import load_demo_model

__all__ = ["TEAM_TASK", "build_team", "run_team_demo", "scripted_team"]

TEAM_TASK = "Write a short paragraph about honey bees."

_ROLES = (
    ("researcher", "lists facts about the topic", "List two short facts about the topic."),
    ("writer", "writes one paragraph from the facts", "Write one short paragraph from the facts given."),
    ("reviewer", "checks the paragraph", "Check the paragraph. Reply APPROVED and the paragraph."),
)


class _Kept(TeamInterceptor):
    """Keeps the team's trace as the run ends, for the summary."""

    def __init__(self) -> None:
        self.trace: TeamTrace | None = None

    def on_team_end(self, trace: TeamTrace) -> None:
        self.trace = trace


def build_team(
    members: list[ChatModel],
    *,
    supervisor: ChatModel | None,
    interceptors: tuple[TeamInterceptor, ...] = (),
) -> TeamAgent:
    """The three members on ``members`` (one model each, in the order researcher, writer, reviewer): supervised
    by ``supervisor`` (``hierarchical``), or in that fixed order when it is None (``sequential``)."""
    short = ModelSettings(max_tokens=40)  # small models ramble: short answers keep the prompts small
    agents = [
        ChatModelAgent(name=name, description=role, instruction=text, model=model, model_settings=short)
        for (name, role, text), model in zip(_ROLES, members, strict=True)
    ]
    protocol = "sequential" if supervisor is None else "hierarchical"
    return TeamAgent(model=supervisor, members=agents, protocol=protocol, interceptors=interceptors)


def scripted_team(interceptors: tuple[TeamInterceptor, ...] = ()) -> TeamAgent:
    """A supervised run replayed: the supervisor names each member in turn, then finishes with the answer."""
    answer = "Honey bees pollinate crops and make honey from nectar."
    decisions = ["researcher", "next: writer", "route to reviewer", f"[TEAM_AGENT_FINISH] {answer}"]
    said = ["1. Bees pollinate crops. 2. Bees make honey from nectar.", answer, f"APPROVED: {answer}"]
    members: list[ChatModel] = [ScriptedModel([assistant(text)]) for text in said]
    supervisor = ScriptedModel([assistant(text) for text in decisions])
    return build_team(members, supervisor=supervisor, interceptors=interceptors)


async def run_team_demo(model_uri: str, *, out: TextIO, task: str = TEAM_TASK) -> TeamTrace:
    """Run the team on ``task`` on ``model_uri``, printing its events as they come and a summary of its trace;
    the trace. Raises ``UserError`` for a model URI that cannot work; failures in the run print as error events."""
    kept = _Kept()
    if model_uri == "scripted":
        team, name = scripted_team((kept,)), "scripted"
    else:
        model = load_demo_model(model_uri)
        local = model_uri.startswith("local:")  # one model for all three: llama.cpp loads it once
        team = build_team([model] * 3, supervisor=None if local else model, interceptors=(kept,))
        name = model.model_name
    print(f"batonflow demo --team: a research team on model {model_uri} ({name})", file=out)
    members = ", ".join(role[0] for role in _ROLES)
    print(f"members: {members}; protocol {team.protocol.name.lower()}", file=out)
    print(f"\nuser: {task}", file=out, flush=True)
    started = time.perf_counter()
    await ConsoleRenderer(out).print_events(Runner(team, enable_streaming=True).query(task))
    took = time.perf_counter() - started
    assert kept.trace is not None, "the team's end hook runs however the team ends"
    trace = kept.trace
    print("\n== what the team did ==", file=out)
    for record in trace.records:
        if record.is_agent:
            words = len(record.content.split())
            print(f"{record.source}: {words} words in {record.duration_ms / 1000:.2f} s", file=out)
        else:  # the supervisor's notes: a refused finish, a fallback, a failure
            print(f"{record.source} noted: {record.content}", file=out)
    print(f"supervisor decisions: {trace.turn_count}", file=out)
    print(f"answer: {trace.final_answer or ''}", file=out)
    print(f"\nthe team worked {took:.2f} s", file=out)
    return trace
