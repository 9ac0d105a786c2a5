"""What every AI component shares: node events on the bus, the I/O conventions, properties, per-node caches and
typed meta readers.

The conventions are solon-ai-flow's. Meta ``input`` names the context variable a component reads (default
``message``), ``output`` the one it writes (default ``message``), ``attachment`` the attachment's (default
``attachment``). A node meta whose key equals the input name is a literal input (``meta: {message: "hi"}``).
Properties, the models and repositories one node hands to the next, live in ``context["property_<name>"]`` as a
one-element list. What a node builds (a model, a repository) is cached per node, in the component.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ..errors import UserError
from ..graph import FlowContext, FlowEngine, Node
from ._allow import DEFAULT_HTTP_TIMEOUT, DEFAULT_MAX_FETCH_BYTES, HostRule, command_entries, host_rules
from ._errors import FlowMetaError

__all__ = [
    "FLOW_NODE_END",
    "FLOW_NODE_START",
    "AiComponent",
    "FlowSettings",
    "NodeEvent",
    "meta_bool",
    "meta_mapping",
    "meta_text",
    "meta_texts",
]

FLOW_NODE_START = "flow.node.start"
"""The bus topic a component sends a ``NodeEvent`` to before its work."""
FLOW_NODE_END = "flow.node.end"
"""The bus topic a component sends a ``NodeEvent`` to after its work."""

INPUT, OUTPUT, ATTACHMENT = "input", "output", "attachment"
MESSAGE = "message"
PROPERTY_PREFIX = "property_"


@dataclass(frozen=True, slots=True)
class NodeEvent:
    """The payload of ``flow.node.start`` and ``flow.node.end``: the run's context and the node."""

    context: FlowContext
    node: Node


@dataclass(slots=True, kw_only=True)
class FlowSettings:
    """What the components registered on one engine share: the engine (for models and tool providers registered
    on it by name), the console, what a flow file may reach (see ``AiFlowEngine``: by default nothing), the bounds
    of a fetch, and the models loaded in this process (one in-process model serves every node that names it).

    ``base_dir`` is resolved here; ``None`` means that no file may be read."""

    engine: FlowEngine
    stdin: TextIO | None = None
    stdout: TextIO | None = None
    allowed_hosts: frozenset[str] = frozenset()
    allowed_commands: frozenset[str] = frozenset()
    base_dir: Path | None = None
    http_timeout: float = DEFAULT_HTTP_TIMEOUT
    max_fetch_bytes: int = DEFAULT_MAX_FETCH_BYTES
    shared: dict[str, Any] = field(default_factory=dict)
    host_rules: tuple[HostRule, ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        self.host_rules = host_rules(sorted(self.allowed_hosts))
        self.allowed_commands = command_entries(self.allowed_commands)
        if self.base_dir is not None:
            self.base_dir = Path(self.base_dir).expanduser().resolve()
        timeout = self.http_timeout
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
            raise UserError(f"http_timeout: expected a positive number of seconds, got {timeout!r}")
        size = self.max_fetch_bytes
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise UserError(f"max_fetch_bytes: expected a positive whole number of bytes, got {size!r}")

    @property
    def console_in(self) -> TextIO:
        return self.stdin if self.stdin is not None else sys.stdin

    @property
    def console_out(self) -> TextIO:
        return self.stdout if self.stdout is not None else sys.stdout


class AiComponent:
    """A task component: ``run`` sends ``flow.node.start``, does the work (``do_run``), sends ``flow.node.end``."""

    name = ""
    """The name it is registered under (``@<name>`` in a graph)."""

    def __init__(self, settings: FlowSettings) -> None:
        self.settings = settings
        self._cache: dict[Node, Any] = {}

    async def run(self, context: FlowContext, node: Node) -> None:
        await context.send(FLOW_NODE_START, NodeEvent(context, node))
        await self.do_run(context, node)
        await context.send(FLOW_NODE_END, NodeEvent(context, node))

    async def do_run(self, context: FlowContext, node: Node) -> None:
        raise NotImplementedError

    # -- the per-node cache ------------------------------------------------------------------------------------

    def cached(self, node: Node, build: Callable[[], Any]) -> Any:
        """What ``build()`` made for ``node`` the first time it ran here."""
        if node not in self._cache:
            self._cache[node] = build()
        return self._cache[node]

    # -- I/O ---------------------------------------------------------------------------------------------------

    def input_name(self, node: Node) -> str:
        return meta_text(node, INPUT) or MESSAGE

    def output_name(self, node: Node) -> str:
        return meta_text(node, OUTPUT) or MESSAGE

    def attachment_name(self, node: Node) -> str:
        return meta_text(node, ATTACHMENT) or ATTACHMENT

    def get_input(self, context: FlowContext, node: Node) -> Any:
        """The node's literal meta of the input's name if it has one, else the context variable."""
        name = self.input_name(node)
        literal = node.meta.get(name)
        return context.get(name) if literal is None else literal

    def get_attachment(self, context: FlowContext, node: Node) -> Any:
        """The context's attachment variable if set, else the node's meta of that name."""
        name = self.attachment_name(node)
        value = context.get(name)
        return node.meta.get(name) if value is None else value

    def set_output(self, context: FlowContext, node: Node, data: Any) -> None:
        context.put(self.output_name(node), data)

    def set_attachment(self, context: FlowContext, node: Node, data: Any) -> None:
        context.put(self.attachment_name(node), data)

    # -- properties --------------------------------------------------------------------------------------------

    @staticmethod
    def get_property(context: FlowContext, name: str) -> Any:
        values = context.get(PROPERTY_PREFIX + name)
        return values[0] if values else None

    @staticmethod
    def set_property(context: FlowContext, name: str, value: Any) -> None:
        context.put(PROPERTY_PREFIX + name, [value])


# -- typed meta readers ----------------------------------------------------------------------------------------


def _refuse(node: Node, key: str, expected: str, value: Any) -> FlowMetaError:
    return FlowMetaError(
        f"expected {expected}, got {type(value).__name__} {value!r}", graph_id=node.graph.id, node_id=node.id, meta=key
    )


def meta_text(node: Node, key: str, default: str | None = None) -> str | None:
    """The meta ``key`` as text (``default`` when absent); another type is a ``FlowMetaError``."""
    value = node.meta.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _refuse(node, key, "text", value)
    return value


def meta_bool(node: Node, key: str, default: bool = False) -> bool:
    """The meta ``key`` as a switch: ``true``/``false``, as YAML booleans or as text in any case."""
    value = node.meta.get(key)
    if value is None:
        return default
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _refuse(node, key, "true or false", value)


def meta_texts(node: Node, key: str) -> list[str]:
    """The meta ``key`` as a list of texts (empty when absent)."""
    value = node.meta.get(key)
    if value is None:
        return []
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise _refuse(node, key, "a list of texts", value)
    return list(value)


def meta_mapping(node: Node, key: str) -> Mapping[str, Any] | None:
    """The meta ``key`` as a mapping (``None`` when absent)."""
    value = node.meta.get(key)
    if value is None:
        return None
    if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
        raise _refuse(node, key, "a mapping", value)
    return value


def config_text(node: Node, meta: str, config: Mapping[str, Any], key: str) -> str | None:
    """``config[key]`` of the mapping meta ``meta`` as text (``None`` when absent)."""
    value = config.get(key)
    if value is None or isinstance(value, str):
        return value
    raise _refuse(node, meta, f"text for {key!r}", value)
