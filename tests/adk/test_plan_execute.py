import json
from dataclasses import dataclass

import pytest

from batonflow.adk import (
    Agent,
    AgentEvent,
    AgentInput,
    FlowAgent,
    InterruptInfo,
    LoopAgent,
    RunContext,
    Runner,
    SequentialAgent,
    collect_events,
    new_executor,
    new_planner,
    new_replanner,
    plan_execute_replan,
)
from batonflow.adk.planexecute import (
    EXECUTED_STEP,
    EXECUTED_STEPS,
    EXECUTOR_PROMPT,
    PLAN,
    PLAN_TOOL,
    PLANNER_PROMPT,
    REPLANNER_PROMPT,
    RESPOND_TOOL,
    USER_INPUT,
    ExecutedStep,
    ExecutionContext,
    MessagesPlaceholder,
    Plan,
    PromptTemplate,
)
from batonflow.errors import RunError, UserError
from batonflow.models import ForcedTool
from batonflow.schema import Message, Stream, assistant, system, user
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import ToolContext, ToolInfo, tool

TASK = "Plan a trip to Berlin"


def plan_call(*steps: str) -> Message:
    return tool_calls(("plan", {"steps": list(steps)}))


def respond_call(response: str) -> Message:
    return tool_calls(("respond", {"response": response}))


@dataclass
class Models:
    planner: ScriptedModel
    executor: ScriptedModel
    replanner: ScriptedModel

    def assert_complete(self) -> None:
        for model in (self.planner, self.executor, self.replanner):
            model.assert_complete()


def trip_models() -> Models:
    """Plan two steps; run the first; replan to the second; run it; answer."""
    return Models(
        planner=ScriptedModel([plan_call("Find the flight", "Book the hotel")]),
        executor=ScriptedModel([assistant("Flight LH123 found"), assistant("Hotel Adlon booked")]),
        replanner=ScriptedModel([plan_call("Book the hotel"), respond_call("Trip booked: LH123 and Adlon.")]),
    )


def build(models: Models, *, max_iterations: int = 10) -> SequentialAgent:
    return plan_execute_replan(
        new_planner(model=models.planner),
        new_executor(model=models.executor),
        new_replanner(model=models.replanner),
        max_iterations=max_iterations,
    )


async def run_tree(agent: Agent, text: str = TASK) -> tuple[list[AgentEvent], RunContext]:
    """Run ``agent`` as a Runner would, keeping the run context so that a test can read the session."""
    ctx = RunContext()
    input = AgentInput(messages=[user(text)])
    ctx.root_input = input
    events = await collect_events(Stream.from_async_iter(FlowAgent(agent).run(input, ctx)))
    return events, ctx


def paths(events: list[AgentEvent]) -> list[str]:
    return ["/".join(str(s) for s in e.run_path) for e in events]


def contents(events: list[AgentEvent]) -> list[str | None]:
    return [e.message_output.message.content if e.message_output and e.message_output.message else None for e in events]


def errors(events: list[AgentEvent]) -> list[BaseException]:
    return [e.error for e in events if e.error is not None]


# -- the whole pattern ----------------------------------------------------------------------------------------------


async def test_full_run_plans_executes_replans_executes_and_breaks_the_loop_on_respond() -> None:
    models = trip_models()
    events, _ = await run_tree(build(models))

    assert errors(events) == []
    assert contents(events) == [
        '{"steps": ["Find the flight", "Book the hotel"]}',
        "Flight LH123 found",
        '{"steps": ["Book the hotel"]}',
        "Hotel Adlon booked",
        '{"response": "Trip booked: LH123 and Adlon."}',
        None,
    ]
    loop = "plan_execute_replan/planner/execute_replan"
    assert paths(events) == [
        "plan_execute_replan/planner",
        f"{loop}/executor",
        f"{loop}/executor/replanner",
        f"{loop}/executor/replanner/executor",
        f"{loop}/executor/replanner/executor/replanner",
        f"{loop}/executor/replanner/executor/replanner",
    ]
    assert [e.agent_name for e in events] == ["planner", "executor", "replanner", "executor", "replanner", "replanner"]
    action = events[-1].action
    assert action is not None and action.break_loop is not None
    assert action.break_loop.from_agent == "replanner"
    assert action.break_loop.done
    assert action.break_loop.current_iterations == 1
    models.assert_complete()


async def test_session_holds_the_input_the_latest_plan_and_every_executed_step() -> None:
    _, ctx = await run_tree(build(trip_models()))

    assert ctx.get_session_value(USER_INPUT) == [user(TASK)]
    assert ctx.get_session_value(PLAN) == Plan(steps=["Book the hotel"])
    assert ctx.get_session_value(EXECUTED_STEP) == "Hotel Adlon booked"
    assert ctx.get_session_value(EXECUTED_STEPS) == [
        ExecutedStep(step="Find the flight", result="Flight LH123 found"),
        ExecutedStep(step="Book the hotel", result="Hotel Adlon booked"),
    ]


async def test_planner_sends_the_planner_prompt_then_the_user_input_and_forces_the_plan_tool() -> None:
    models = trip_models()
    await run_tree(build(models))

    [request] = models.planner.requests
    [(role, text), placeholder] = PLANNER_PROMPT.parts  # type: ignore[misc]
    assert role == "system"
    assert placeholder == MessagesPlaceholder("input")
    assert request.messages == [system(text), user(TASK)]
    assert text.startswith("You are an expert planning agent. Given an objective, create a comprehensive")
    assert request.tools == [PLAN_TOOL]
    assert request.tool_choice == ForcedTool("plan")


async def test_executor_prompt_is_rendered_from_input_plan_completed_steps_and_first_step() -> None:
    models = trip_models()
    await run_tree(build(models))

    first, second = models.executor.requests
    instruction = system(
        "You are a diligent and meticulous executor agent. Follow the given plan and execute your tasks carefully "
        "and thoroughly."
    )
    assert first.messages == [
        instruction,
        user(
            "## OBJECTIVE\n"
            "Plan a trip to Berlin\n"
            "\n"
            "## Given the following plan:\n"
            '{"steps":["Find the flight","Book the hotel"]}\n'
            "## COMPLETED STEPS & RESULTS\n"
            "\n"
            "## Your task is to execute the first step, which is: \n"
            "Find the flight"
        ),
    ]
    assert second.messages == [
        instruction,
        user(
            "## OBJECTIVE\n"
            "Plan a trip to Berlin\n"
            "\n"
            "## Given the following plan:\n"
            '{"steps":["Book the hotel"]}\n'
            "## COMPLETED STEPS & RESULTS\n"
            "Step: Find the flight\n"
            "Result: Flight LH123 found\n"
            "\n"
            "\n"
            "## Your task is to execute the first step, which is: \n"
            "Book the hotel"
        ),
    ]
    assert first.tools == [] and first.tool_choice is None


async def test_replanner_prompt_names_both_tools_lists_completed_steps_and_requires_a_tool_call() -> None:
    models = trip_models()
    await run_tree(build(models))

    first, second = models.replanner.requests
    sys_text = first.messages[0].content
    assert first.messages[0].role == "system"
    assert "Call 'respond' with:\n- A comprehensive final answer" in sys_text
    assert "Call 'plan' with a revised plan that:\n- Contains ONLY remaining steps" in sys_text
    assert "{" not in sys_text
    assert first.messages[1] == user(
        "## OBJECTIVE\n"
        "Plan a trip to Berlin\n"
        "\n"
        "\n"
        "## ORIGINAL PLAN\n"
        '{"steps":["Find the flight","Book the hotel"]}\n'
        "\n"
        "## COMPLETED STEPS & RESULTS\n"
        "Step: Find the flight\n"
        "Result: Flight LH123 found\n"
        "\n"
    )
    assert second.messages[1].content.endswith(
        "## ORIGINAL PLAN\n"
        '{"steps":["Book the hotel"]}\n'
        "\n"
        "## COMPLETED STEPS & RESULTS\n"
        "Step: Find the flight\nResult: Flight LH123 found\n\n"
        "Step: Book the hotel\nResult: Hotel Adlon booked\n\n"
    )
    assert first.tools == [PLAN_TOOL, RESPOND_TOOL]
    # The original's "forced" tool choice means "call some tool", not one named tool.
    assert first.tool_choice == "required"


async def test_max_iterations_bounds_the_loop_when_the_replanner_never_responds() -> None:
    models = Models(
        planner=ScriptedModel([plan_call("a", "b", "c")]),
        executor=ScriptedModel([assistant("did a"), assistant("did b")]),
        replanner=ScriptedModel([plan_call("b", "c"), plan_call("c")]),
    )
    events, ctx = await run_tree(build(models, max_iterations=2))

    assert errors(events) == []
    assert [e.agent_name for e in events] == ["planner", "executor", "replanner", "executor", "replanner"]
    assert all(e.action is None for e in events)
    assert ctx.get_session_value(PLAN) == Plan(steps=["c"])
    assert [s.step for s in ctx.get_session_value(EXECUTED_STEPS)] == ["a", "b"]
    models.assert_complete()


def test_plan_execute_replan_is_a_sequence_of_the_planner_and_an_execute_replan_loop() -> None:
    agent = build(trip_models(), max_iterations=4)
    planner, loop = (s.agent for s in agent.sub_agents)
    assert agent.name == "plan_execute_replan"
    assert planner.name == "planner"
    assert isinstance(loop, LoopAgent)
    assert loop.name == "execute_replan"
    assert loop.max_iterations == 4
    assert [s.name for s in loop.sub_agents] == ["executor", "replanner"]


def test_plan_execute_replan_rejects_a_non_positive_max_iterations() -> None:
    models = trip_models()
    with pytest.raises(UserError, match="max_iterations: expected a positive number"):
        build(models, max_iterations=0)


# -- errors ---------------------------------------------------------------------------------------------------------


async def test_replanner_calling_an_unknown_tool_is_an_error_event_and_ends_the_run() -> None:
    models = trip_models()
    models.replanner = ScriptedModel([tool_calls(("search", {"q": "hotels"}))])
    events, ctx = await run_tree(build(models))

    [error] = errors(events)
    assert isinstance(error, RunError)
    assert str(error) == "unexpected tool call: search; expected 'plan' or 'respond'"
    assert events[-1].agent_name == "replanner"
    assert len(models.executor.requests) == 1
    assert ctx.get_session_value(PLAN) == Plan(steps=["Find the flight", "Book the hotel"])


async def test_planner_answer_without_a_tool_call_is_an_error_event_and_nothing_runs_after_it() -> None:
    models = trip_models()
    models.planner = ScriptedModel([assistant("I would first look for flights.")])
    events, ctx = await run_tree(build(models))

    assert len(events) == 1
    error = events[0].error
    assert isinstance(error, RunError)
    assert str(error) == (
        "no tool call: expected the model to call 'plan', got an answer without tool calls: "
        "'I would first look for flights.'"
    )
    assert events[0].agent_name == "planner"
    assert models.executor.requests == []
    assert ctx.get_session_value(PLAN) is None


@pytest.mark.parametrize(
    ("arguments", "detail"),
    [
        ("first flights, then hotel", "Expecting value"),
        ('{"steps": "flights"}', 'expected a JSON object {"steps": [<strings>]}'),
        ('{"steps": [1, 2]}', 'expected a JSON object {"steps": [<strings>]}'),
        ('["flights"]', 'expected a JSON object {"steps": [<strings>]}'),
        ("[" * 100_000, "expected JSON nested at most 100 levels deep, got 100,000 levels"),
    ],
)
async def test_planner_arguments_that_are_not_a_plan_are_shown_then_reported_as_an_error(
    arguments: str, detail: str
) -> None:
    models = trip_models()
    models.planner = ScriptedModel([tool_calls(("plan", arguments))])
    events, ctx = await run_tree(build(models))

    assert contents(events) == [arguments, None]
    error = events[1].error
    assert isinstance(error, RunError)
    assert str(error).startswith("unmarshal plan error: ")
    assert detail in str(error)
    assert models.executor.requests == []
    assert ctx.get_session_value(PLAN) is None


async def test_replanner_answer_without_a_tool_call_is_an_error_event() -> None:
    models = trip_models()
    models.replanner = ScriptedModel([assistant("All done, I think.")])
    events, _ = await run_tree(build(models))

    [error] = errors(events)
    assert str(error).startswith("no tool call: expected the model to call 'plan' or 'respond'")
    assert events[-1].agent_name == "replanner"


async def test_model_failure_in_the_planner_is_an_error_event() -> None:
    models = trip_models()
    models.planner = ScriptedModel([RunError("provider down")])
    events, _ = await run_tree(build(models))

    assert [str(e) for e in errors(events)] == ["provider down"]


async def test_executor_run_without_a_plan_in_the_session_reports_which_value_is_missing() -> None:
    executor = new_executor(model=ScriptedModel([]))
    events = await collect_events(Runner(executor).query(TASK))

    [error] = errors(events)
    assert isinstance(error, UserError)
    assert str(error) == (
        "agent 'executor': expected session value 'Plan' to hold a plan (set by the planner), got NoneType"
    )


async def test_replanner_run_without_an_executed_step_reports_which_value_is_missing() -> None:
    replanner = new_replanner(model=ScriptedModel([]))
    events = await collect_events(Runner(replanner).query(TASK, session_values={PLAN: Plan(steps=["a"])}))

    [error] = errors(events)
    assert isinstance(error, UserError)
    assert "expected session value 'ExecutedStep' (the executor's result), got none" in str(error)


def test_replanner_rejects_plan_and_respond_tools_with_the_same_name() -> None:
    with pytest.raises(UserError, match="expected different names for the plan and respond tools"):
        new_replanner(model=ScriptedModel([]), respond_tool=PLAN_TOOL)


# -- the agents on their own ----------------------------------------------------------------------------------------


async def test_replanner_alone_shows_the_response_arguments_then_asks_to_break_the_loop() -> None:
    model = ScriptedModel([respond_call("Here you are.")])
    values = {PLAN: Plan(steps=["Step 1", "Step 2"]), EXECUTED_STEP: "Execution result", USER_INPUT: [user("x")]}
    events = await collect_events(Runner(new_replanner(model=model)).query("x", session_values=values))

    assert contents(events) == ['{"response": "Here you are."}', None]
    action = events[1].action
    assert action is not None and action.break_loop is not None
    # No loop around it to claim the break.
    assert not action.break_loop.done


async def test_planner_without_a_plan_tool_reads_the_plan_from_the_answer_text() -> None:
    model = ScriptedModel([assistant('{"steps":["Step 1","Step 2"]}')])
    events, ctx = await run_tree(new_planner(model=model, plan_tool=None))

    assert contents(events) == ['{"steps":["Step 1","Step 2"]}']
    assert ctx.get_session_value(PLAN) == Plan(steps=["Step 1", "Step 2"])
    assert model.requests[0].tools == []
    assert model.requests[0].tool_choice is None


async def test_planner_with_a_custom_plan_tool_forces_that_tool() -> None:
    steps_tool = ToolInfo(name="make_steps", description="Steps.", parameters=PLAN_TOOL.parameters)
    model = ScriptedModel([tool_calls(("make_steps", {"steps": ["s"]}))])
    _, ctx = await run_tree(new_planner(model=model, plan_tool=steps_tool))

    assert model.requests[0].tool_choice == ForcedTool("make_steps")
    assert ctx.get_session_value(PLAN) == Plan(steps=["s"])


# -- hooks ----------------------------------------------------------------------------------------------------------


@dataclass
class Checklist:
    """A plan of another shape: numbered items, JSON {"items": [{"n": 1, "do": "..."}]}."""

    items: list[tuple[int, str]]

    def first_step(self) -> str:
        return f"#{self.items[0][0]}: {self.items[0][1]}" if self.items else ""

    def to_json(self) -> str:
        return json.dumps({"items": [{"n": n, "do": d} for n, d in self.items]})

    @classmethod
    def parse(cls, text: str) -> "Checklist":
        return cls(items=[(i["n"], i["do"]) for i in json.loads(text)["items"]])


async def test_custom_plan_type_is_parsed_saved_and_shown_to_the_executor() -> None:
    checklist_tool = ToolInfo(
        name="checklist",
        description="A checklist.",
        parameters={"type": "object", "properties": {"items": {"type": "array"}}, "required": ["items"]},
    )
    models = Models(
        planner=ScriptedModel([tool_calls(("checklist", {"items": [{"n": 1, "do": "pack"}, {"n": 2, "do": "go"}]}))]),
        executor=ScriptedModel([assistant("packed")]),
        replanner=ScriptedModel([respond_call("Ready.")]),
    )
    agent = plan_execute_replan(
        new_planner(model=models.planner, plan_tool=checklist_tool, parse_plan=Checklist.parse),
        new_executor(model=models.executor),
        new_replanner(model=models.replanner, plan_tool=checklist_tool, parse_plan=Checklist.parse),
    )
    events, ctx = await run_tree(agent)

    assert errors(events) == []
    assert ctx.get_session_value(PLAN) == Checklist(items=[(1, "pack"), (2, "go")])
    prompt = models.executor.requests[0].messages[1].content
    assert '{"items": [{"n": 1, "do": "pack"}, {"n": 2, "do": "go"}]}' in prompt
    assert prompt.endswith("which is: \n#1: pack")
    assert ctx.get_session_value(EXECUTED_STEPS) == [ExecutedStep(step="#1: pack", result="packed")]
    assert "Call 'checklist' with a revised plan" in models.replanner.requests[0].messages[0].content


async def test_gen_input_hooks_replace_the_default_prompts() -> None:
    seen: list[ExecutionContext] = []

    def planner_input(messages: list[Message]) -> list[Message]:
        return [system("Plan tersely."), *messages]

    async def executor_input(context: ExecutionContext) -> list[Message]:
        seen.append(context)
        return [user(f"Do: {context.plan.first_step()}")]

    def replanner_input(context: ExecutionContext) -> list[Message]:
        return [user(f"Done so far: {[s.result for s in context.executed_steps]}")]

    models = Models(
        planner=ScriptedModel([plan_call("a")]),
        executor=ScriptedModel([assistant("did a")]),
        replanner=ScriptedModel([respond_call("ok")]),
    )
    agent = plan_execute_replan(
        new_planner(model=models.planner, gen_input=planner_input),
        new_executor(model=models.executor, gen_input=executor_input),
        new_replanner(model=models.replanner, gen_input=replanner_input),
    )
    await run_tree(agent)

    assert models.planner.requests[0].messages == [system("Plan tersely."), user(TASK)]
    assert models.executor.requests[0].messages == [user("Do: a")]
    assert models.replanner.requests[0].messages == [user("Done so far: ['did a']")]
    assert seen == [ExecutionContext(user_input=[user(TASK)], plan=Plan(steps=["a"]), executed_steps=[])]


async def test_braces_in_user_input_and_results_are_inserted_as_they_are() -> None:
    models = Models(
        planner=ScriptedModel([plan_call("print {step}")]),
        executor=ScriptedModel([assistant("printed {input} and }{")]),
        replanner=ScriptedModel([respond_call("ok")]),
    )
    await run_tree(build(models), text="Use {plan} and {{ literally")

    executor_prompt = models.executor.requests[0].messages[1].content
    assert executor_prompt.startswith("## OBJECTIVE\nUse {plan} and {{ literally\n\n")
    assert executor_prompt.endswith("which is: \nprint {step}")
    assert "Step: print {step}\nResult: printed {input} and }{\n\n" in models.replanner.requests[0].messages[1].content


async def test_executor_can_use_tools_before_answering_its_step() -> None:
    @tool
    def lookup_flight(city: str) -> str:
        """Find a flight to a city."""
        return f"LH123 to {city}"

    models = trip_models()
    models.executor = ScriptedModel(
        [tool_calls(("lookup_flight", {"city": "Berlin"})), assistant("Flight LH123 found"), assistant("Booked")]
    )
    agent = plan_execute_replan(
        new_planner(model=models.planner),
        new_executor(model=models.executor, tools=[lookup_flight]),
        new_replanner(model=models.replanner),
    )
    events, ctx = await run_tree(agent)

    assert errors(events) == []
    assert "LH123 to Berlin" in contents(events)
    assert models.executor.requests[0].tools[0].name == "lookup_flight"
    assert ctx.get_session_value(EXECUTED_STEPS)[0] == ExecutedStep(step="Find the flight", result="Flight LH123 found")


# -- streaming, checkpoints, the plan type --------------------------------------------------------------------------


async def test_streaming_run_shows_the_tool_arguments_as_streamed_assistant_text() -> None:
    models = trip_models()
    runner = Runner(build(models), enable_streaming=True)
    events = await collect_events(runner.query(TASK))

    assert errors(events) == []
    shown = [e for e in events if e.message_output is not None]
    assert all(e.message_output is not None and e.message_output.is_streaming for e in shown)
    assert contents(events) == [
        '{"steps": ["Find the flight", "Book the hotel"]}',
        "Flight LH123 found",
        '{"steps": ["Book the hotel"]}',
        "Hotel Adlon booked",
        '{"response": "Trip booked: LH123 and Adlon."}',
        None,
    ]
    assert all(r.streaming for r in models.planner.requests + models.replanner.requests)
    action = events[-1].action
    assert action is not None and action.break_loop is not None and action.break_loop.done
    models.assert_complete()


async def test_streaming_planner_without_a_tool_call_shows_an_empty_answer_then_the_error() -> None:
    model = ScriptedModel([assistant("no plan here")])
    events = await collect_events(Runner(new_planner(model=model), enable_streaming=True).query(TASK))

    assert contents(events) == ["", None]
    assert str(events[1].error).startswith("no tool call: expected the model to call 'plan'")


async def test_interrupt_in_an_executor_tool_resumes_from_a_checkpoint_with_the_plan_intact() -> None:
    @tool(threaded=False)
    def book_hotel(name: str, ctx: ToolContext) -> str:
        """Book a hotel once a human approved it."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt(f"approve booking {name}?")
        return f"{name} booked ({ctx.get_resume_context().data})"

    models = Models(
        planner=ScriptedModel([plan_call("Book the hotel")]),
        executor=ScriptedModel([tool_calls(("book_hotel", {"name": "Adlon"})), assistant("Adlon booked")]),
        replanner=ScriptedModel([respond_call("Done.")]),
    )
    agent = plan_execute_replan(
        new_planner(model=models.planner),
        new_executor(model=models.executor, tools=[book_hotel]),
        new_replanner(model=models.replanner),
    )
    store = MemoryCheckpointStore()
    runner = Runner(agent, checkpoint_store=store)
    first = await collect_events(runner.query(TASK, checkpoint_id="trip"))
    interrupted = first[-1].action.interrupted if first[-1].action else None
    assert isinstance(interrupted, InterruptInfo)
    [point] = [c for c in interrupted.interrupt_contexts if c.is_root_cause]

    resumed = await collect_events(runner.resume("trip", targets={point.id: "approved"}))

    assert errors(resumed) == []
    assert contents(resumed) == ["Adlon booked (approved)", "Adlon booked", '{"response": "Done."}', None]
    request = models.replanner.requests[0].messages[1].content
    assert '{"steps":["Book the hotel"]}' in request
    assert "Step: Book the hotel\nResult: Adlon booked\n\n" in request
    models.assert_complete()


def test_plan_json_form_and_first_step() -> None:
    plan = Plan(steps=["Find the flight", "Über-book the hotel"])
    assert plan.to_json() == '{"steps":["Find the flight","Über-book the hotel"]}'
    assert Plan.from_json(plan.to_json()) == plan
    assert plan.first_step() == "Find the flight"
    assert Plan().first_step() == ""
    assert Plan.from_json('{"steps": [], "note": "extra keys are ignored"}') == Plan()


def test_prompt_template_fills_names_and_places_messages() -> None:
    template = PromptTemplate((("system", "Hello {who}, {{braces}}"), MessagesPlaceholder("history")))
    messages = template.format({"who": "{you}", "history": [user("hi"), assistant("hey")]})
    assert messages == [system("Hello {you}, {braces}"), user("hi"), assistant("hey")]
    with pytest.raises(UserError, match="expected messages named 'history'"):
        template.format({"who": "x"})
    with pytest.raises(UserError, match="expected a session value named 'step'"):
        EXECUTOR_PROMPT.format({"input": "", "plan": "", "executed_steps": ""})


def test_replanner_prompt_placeholders_are_the_original_ones() -> None:
    system_text = REPLANNER_PROMPT.parts[0][1]  # type: ignore[index]
    user_text = REPLANNER_PROMPT.parts[1][1]  # type: ignore[index]
    assert "'{respond_tool}'" in system_text and "'{plan_tool}'" in system_text
    assert (
        user_text
        == "## OBJECTIVE\n{input}\n\n## ORIGINAL PLAN\n{plan}\n\n## COMPLETED STEPS & RESULTS\n{executed_steps}"
    )
