"""FlowContext: variables, scoped values, the event bus, the trace, and JSON snapshots through the codec."""

from __future__ import annotations

import dataclasses
import json

import pytest

from batonflow.errors import CodecError
from batonflow.graph import FlowContext, GraphSpec, NodeType
from batonflow.schema import Message


def test_variables_api() -> None:
    ctx = FlowContext("run-1", {"a": 1, "skipped": None})
    assert ctx.instance_id == "run-1"
    assert "a" in ctx and "skipped" not in ctx
    ctx.put("b", 2).put("b", None)  # None is skipped: b keeps 2
    assert ctx.get("b") == 2
    ctx.put_if_absent("b", 3).put_if_absent("c", 3)
    assert (ctx.get("b"), ctx.get("c")) == (2, 3)
    assert ctx.compute_if_absent("d", lambda key: key * 2) == "dd"
    assert ctx.compute_if_absent("d", lambda key: "other") == "dd"
    assert ctx.compute_if_absent("e", lambda key: None) is None and "e" not in ctx
    ctx.remove("a")
    ctx.remove("never-set")
    assert ctx.get("a", "default") == "default"
    assert dict(ctx.data) == {"b": 2, "c": 3, "d": "dd"}
    with pytest.raises(TypeError):
        ctx.data["x"] = 1  # type: ignore[index]


def test_with_sets_a_value_for_a_block_and_restores_it() -> None:
    ctx = FlowContext(variables={"kept": "old"})
    with ctx.with_("kept", "new"), ctx.with_("temp", 1):
        assert (ctx.get("kept"), ctx.get("temp")) == ("new", 1)
    assert ctx.get("kept") == "old" and "temp" not in ctx
    with pytest.raises(ValueError, match="boom"), ctx.with_("kept", "inside"):
        raise ValueError("boom")
    assert ctx.get("kept") == "old"


async def test_event_bus_delivers_by_topic_in_order_and_unsubscribes() -> None:
    ctx = FlowContext()
    got: list[str] = []

    async def later(payload: str) -> None:
        got.append(f"async:{payload}")

    stop = ctx.listen("flow.node.start", lambda payload: got.append(f"sync:{payload}"))
    ctx.listen("flow.node.start", later)
    ctx.listen("other", lambda payload: got.append("wrong topic"))
    assert await ctx.send("flow.node.start", "a") == 2
    stop()
    stop()  # a second call does nothing
    assert await ctx.send("flow.node.start", "b") == 1
    assert await ctx.send("nobody") == 0
    assert got == ["sync:a", "async:a", "async:b"]


def test_interrupt_and_stop_outside_a_run() -> None:
    ctx = FlowContext()
    ctx.interrupt()  # no branch to end: nothing happens
    assert not ctx.is_stopped
    ctx.stop()
    assert ctx.is_stopped


@dataclasses.dataclass
class Unregistered:
    value: int


def test_snapshot_round_trip_keeps_variables_trace_and_stopped() -> None:
    spec = GraphSpec("g")
    spec.add_start("s").link_add("e")
    spec.add_end("e", title="The end")
    graph = spec.build()
    ctx = FlowContext("id-7", {"n": 1, "items": [1, "two", {"three": 3.0}], "msg": Message(role="user", content="hi")})
    ctx.trace.record(graph, graph.nodes["e"])
    ctx.stop()
    text = ctx.to_json()
    assert json.loads(text)["data"]["n"] == 1  # plain JSON text
    back = FlowContext.from_json(text)
    assert back.instance_id == "id-7" and back.is_stopped
    assert dict(back.data) == dict(ctx.data)
    record = back.last_record
    assert record is not None
    assert (record.graph_id, record.id, record.title, record.type) == ("g", "e", "The end", NodeType.END)
    assert back.trace.is_end("g") and back.last_node_id == "e"


@pytest.mark.parametrize("value", [lambda: 1, Unregistered(1), object()])
def test_a_variable_that_cannot_be_saved_is_named_not_dropped(value: object) -> None:
    ctx = FlowContext(variables={"fine": 1, "bad thing": {"inner": value}})
    with pytest.raises(CodecError) as caught:
        ctx.to_json()
    assert "variable 'bad thing'" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{not json", "invalid JSON"),
        ('{"$c": "NoSuchClass"}', "NoSuchClass"),
        (
            '{"$c": "FlowNodeRecord", "graph_id": "g", "id": "a", "title": "a", "type": null, "timestamp": 1}',
            "expected FlowNodeType, got None",
        ),
        ("[1, 2]", "expected a FlowContext snapshot, got list"),
    ],
)
def test_corrupt_snapshots_are_codec_errors(text: str, expected: str) -> None:
    with pytest.raises(CodecError, match=expected):
        FlowContext.from_json(text)


def test_set_update_and_set_if_absent_are_plain_methods_that_skip_none() -> None:
    context = FlowContext()
    assert context.set("a", 1) is None
    context.set("none", None)
    context.update({"b": 2, "c": None})
    context.set_if_absent("a", 9)
    context.set_if_absent("d", 4)

    assert dict(context.data) == {"a": 1, "b": 2, "d": 4}


def test_the_solon_setters_are_aliases_that_return_the_context() -> None:
    context = FlowContext()
    assert context.put("a", 1).put_all({"b": 2, "c": None}).put_if_absent("a", 9).put_if_absent("d", 4) is context
    assert dict(context.data) == {"a": 1, "b": 2, "d": 4}
