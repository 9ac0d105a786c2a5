"""The components an engine knows by name, apart by kind: tasks, conditions, models and tool providers.

``register(name, component)`` files a component by what it is (Solon's ``putComponent``, whose one container holds
them all): an agent, or an object with ``run(context, node)``, is a task; one with ``test(context)`` a condition; a
``ChatModel`` or ``EmbeddingModel`` a model; a ``Tool``, a list of tools or an object with ``tools()`` a tool
provider; a plain function can be a task or a condition, so it is filed as both. The ``register_*`` methods file a
component under the kind they name, whatever it looks like.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from ..adk import Agent
from ..models import ChatModel, EmbeddingModel
from ..tools import Tool
from ._errors import ComponentError, GraphError

if TYPE_CHECKING:
    from ._graph import Node

__all__ = ["AI_COMPONENTS", "KINDS", "Registrations", "Registry"]

KINDS = ("tasks", "conditions", "models", "tools")
"""The kinds of every engine, in the order ``get_component`` looks a name up in them."""

# solon-ai-flow's component names: ``batonflow.flow.AiFlowEngine`` registers them on itself, and a plain engine,
# which does not know them, says where they are.
AI_COMPONENTS = frozenset(
    (
        *("VarInput", "VarCopy", "ConsoleInput", "WebInput", "ChatModel", "EmbeddingModel", "GenerateModel"),
        *("InMemoryRepository", "RedisRepository", "VarOutput", "ConsoleOutput", "WebOutput"),
    )
)


class Registry:
    """Named components by kind; a name is one component of each kind at most. ``kinds`` adds kinds of a layer
    above (the AI flow engine's splitters) after the four of every engine."""

    def __init__(self, kinds: tuple[str, ...] = ()) -> None:
        self._maps: dict[str, dict[str, object]] = {kind: {} for kind in (*KINDS, *kinds)}

    def view(self, kind: str) -> Mapping[str, object]:
        return MappingProxyType(self._maps[kind])

    def add(self, kind: str, name: str, component: object) -> None:
        if not isinstance(name, str) or not name or name.startswith("@"):
            raise GraphError(f"a component name must be non-empty text without the '@', got {name!r}")
        if kind == "tasks" and isinstance(component, Agent):
            from ._agent import AgentTask

            component = AgentTask(component)
        self._maps[kind][name] = component

    def file(self, name: str, component: object, kind_of: Callable[[object], tuple[str, ...]]) -> None:
        """File ``component`` under the kinds ``kind_of`` finds, replacing what ``name`` named before."""
        kinds = kind_of(component)
        self.remove(name)
        for kind in kinds:
            self.add(kind, name, component)

    def remove(self, name: str) -> None:
        for components in self._maps.values():
            components.pop(name, None)

    def get(self, name: str, kind: str | None = None) -> object | None:
        if kind is not None:
            return self._maps[kind].get(name)
        for components in self._maps.values():
            if name in components:
                return components[name]
        return None

    def kinds_of(self, name: str) -> list[str]:
        return [kind for kind, components in self._maps.items() if name in components]

    def names(self) -> Iterator[str]:
        seen: dict[str, None] = {}
        for components in self._maps.values():
            seen.update(dict.fromkeys(components))
        return iter(sorted(seen))


def kind_of(component: object) -> tuple[str, ...]:
    """The kinds ``register`` files ``component`` under (see the module docstring); anything else is a task, which
    a run refuses, naming it, if it cannot run."""
    if isinstance(component, Agent):
        return ("tasks",)
    if isinstance(component, Tool) or callable(getattr(component, "tools", None)):
        return ("tools",)
    if isinstance(component, list | tuple) and component and all(isinstance(item, Tool) for item in component):
        return ("tools",)
    if isinstance(component, ChatModel | EmbeddingModel):
        return ("models",)
    if callable(getattr(component, "run", None)):
        return ("tasks",)
    if callable(getattr(component, "test", None)):
        return ("conditions",)
    if callable(component):
        return ("tasks", "conditions")
    return ("tasks",)


class Registrations:
    """What ``FlowEngine`` does with its registry: registering components by name and kind, and finding a node's."""

    _EXTRA_KINDS: tuple[str, ...] = ()
    _registry: Registry

    def register(self, name: str, component: object) -> None:
        """Know ``component`` as ``name``, filed by what it is (Solon's ``putComponent``): an agent or an object with
        ``run(context, node)`` is a task; ``test(context)``, a condition; a ``ChatModel`` or ``EmbeddingModel``, a
        model; a ``Tool``, a list of tools or an object with ``tools()``, a tool provider; a plain function, which
        can be either, a task and a condition. It replaces whatever ``name`` named before."""
        self._registry.file(name, component, self._kind_of)

    def register_task(self, name: str, task: object) -> None:
        """``task`` (an agent, ``run(context, node)`` or a callable ``(context, node)``) as the task ``@name``."""
        self._registry.add("tasks", name, task)

    def register_condition(self, name: str, condition: object) -> None:
        """``condition`` (``test(context)`` or a callable ``(context)``) as the condition ``@name``."""
        self._registry.add("conditions", name, condition)

    def register_model(self, name: str, model: object) -> None:
        """A chat, embedding or image model that flow nodes name (``chatConfig: {model: name}``)."""
        self._registry.add("models", name, model)

    def register_tools(self, name: str, tools: object) -> None:
        """A tool provider that flow nodes name (``toolProviders: [name]``): a tool, a list of them, a function or
        an object with ``tools()``."""
        self._registry.add("tools", name, tools)

    def unregister(self, name: str) -> None:
        """Forget ``name``, of every kind."""
        self._registry.remove(name)

    def get_component(self, name: str) -> object | None:
        """What ``name`` names: a task, else a condition, a model or a tool provider (the first kind holding it)."""
        return self._registry.get(name)

    @property
    def tasks(self) -> Mapping[str, object]:
        return self._registry.view("tasks")

    @property
    def conditions(self) -> Mapping[str, object]:
        return self._registry.view("conditions")

    @property
    def models(self) -> Mapping[str, object]:
        return self._registry.view("models")

    @property
    def tools(self) -> Mapping[str, object]:
        return self._registry.view("tools")

    def _kind_of(self, component: object) -> tuple[str, ...]:
        return kind_of(component)

    def _component(self, name: str, node: Node, kind: str) -> object:
        registry = "tasks" if kind == "task" else "conditions"
        component = self._registry.get(name, registry)
        if component is None:
            elsewhere = self._registry.kinds_of(name)
            if elsewhere:
                known = f"{name!r} is registered among the {' and '.join(elsewhere)}, not the {registry}"
            else:
                known = f"registered {registry}: {sorted(self._registry.view(registry)) or 'none'}"
            if name in AI_COMPONENTS:
                known += f"; @{name} is an AI flow component: run the graph on a batonflow.flow.AiFlowEngine"
            raise ComponentError(
                f"The {kind} component {name!r} not exist; {known}",
                name=name,
                graph_id=node.graph.id,
                node_id=node.id,
            )
        method = "run" if kind == "task" else "test"
        if not callable(getattr(component, method, None)) and not callable(component):
            raise ComponentError(
                f"the component {name!r} is not a {kind} component: expected {method}() or a callable, got "
                f"{type(component).__name__}",
                name=name,
                graph_id=node.graph.id,
                node_id=node.id,
            )
        return component
