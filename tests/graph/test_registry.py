"""An engine's components by name and kind: tasks, conditions, models and tool providers apart."""

from __future__ import annotations

from typing import Any

import pytest

from batonflow.adk import ChatModelAgent
from batonflow.graph import AgentTask, ComponentError, FlowContext, FlowEngine, Graph, GraphError, Node
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel
from batonflow.tools import tool


class Task:
    def run(self, context: FlowContext, node: Node) -> None:
        context.put("ran", node.id)


class Condition:
    def test(self, context: FlowContext) -> bool:
        return True


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


class Provider:
    async def tools(self) -> list[Any]:
        return [lookup]


def test_register_files_each_component_by_what_it_is() -> None:
    engine = FlowEngine()
    agent = ChatModelAgent(name="writer", description="writes", model=ScriptedModel([assistant("hi")]))
    model = ScriptedModel([])

    def function(context: FlowContext, node: Node) -> None: ...

    for name, component in [
        ("agent", agent),
        ("task", Task()),
        ("condition", Condition()),
        ("model", model),
        ("tool", lookup),
        ("tool_list", [lookup]),
        ("provider", Provider()),
        ("function", function),
    ]:
        engine.register(name, component)

    assert set(engine.tasks) == {"agent", "task", "function"}
    assert isinstance(engine.tasks["agent"], AgentTask) and engine.tasks["agent"].agent is agent
    assert set(engine.conditions) == {"condition", "function"}  # a plain function can be either
    assert dict(engine.models) == {"model": model}
    assert set(engine.tools) == {"tool", "tool_list", "provider"}
    assert engine.get_component("model") is model


def test_registering_a_name_again_replaces_it_whatever_its_kind() -> None:
    engine = FlowEngine()
    engine.register("chat", Task())
    engine.register("chat", ScriptedModel([]))

    assert "chat" not in engine.tasks and "chat" in engine.models
    engine.unregister("chat")
    assert engine.get_component("chat") is None and "chat" not in engine.models


async def test_a_task_and_a_model_may_share_a_name_when_registered_by_kind() -> None:
    engine = FlowEngine()
    model = ScriptedModel([])
    engine.register_model("chat", model)
    engine.register_task("chat", Task())
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: n, task: "@chat"}\n')

    context = await engine.eval(graph)

    assert context.get("ran") == "n" and engine.models["chat"] is model


async def test_a_name_of_another_kind_is_a_component_error_saying_which_kind_it_is() -> None:
    engine = FlowEngine()
    engine.register_model("chat", ScriptedModel([]))
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: n, task: "@chat"}\n')

    with pytest.raises(ComponentError, match="'chat' is registered among the models, not the tasks") as caught:
        await engine.eval(graph)
    assert "graph 'g', node 'n'" in str(caught.value)


async def test_a_condition_is_looked_up_among_the_conditions() -> None:
    engine = FlowEngine()
    engine.register("yes", Condition())
    engine.register("mark", Task())
    graph = Graph.from_yaml('id: g\nlayout:\n  - {id: n, task: "@mark", when: "@yes"}\n')

    assert (await engine.eval(graph)).get("ran") == "n"
    with pytest.raises(ComponentError, match="registered among the tasks, not the conditions"):
        await engine.eval(Graph.from_yaml('id: h\nlayout:\n  - {id: n, task: "@mark", when: "@mark"}\n'))


def test_the_registries_are_read_only_views() -> None:
    engine = FlowEngine()
    with pytest.raises(TypeError):
        engine.tasks["x"] = Task()  # type: ignore[index]
    assert "x" not in engine.tasks


@pytest.mark.parametrize("name", ["", "@x", 3])
def test_a_bad_name_is_a_graph_error_and_registers_nothing(name: Any) -> None:
    engine = FlowEngine()
    with pytest.raises(GraphError, match="a component name must be non-empty text without the '@'"):
        engine.register_task(name, Task())
    with pytest.raises(GraphError, match="a component name must be non-empty text without the '@'"):
        engine.register(name, Task())
    assert dict(engine.tasks) == {}
