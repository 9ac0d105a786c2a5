"""Parallel joins that can never go on, found when a graph is built.

A parallel join goes on once as many branches arrived as it has inbound links. Before it first goes on, no branch
passes through it, so the arrivals it can get are bounded by the graph above it. One branch at a start node, an
activity, an inclusive or a parallel gateway may go down each of its links; at an exclusive gateway down one of
them; at an end node down none; at a loop with ``$for`` and on a cycle any number of times. Counted that way
(every condition as the count needs it, every other join going on at each arrival), the arrivals are never fewer
than a run can bring: a join whose count stays below its inbound links can never go on, whatever the conditions
say, and refusing it refuses no graph some run could take through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._errors import JoinError
from ._spec import NodeType

if TYPE_CHECKING:
    from ._graph import Node

__all__ = ["refuse_dead_joins"]


def refuse_dead_joins(nodes: Mapping[str, Node], start: Node, graph_id: str) -> None:
    """Refuse (``JoinError``) the first parallel join of ``nodes`` that no run from ``start`` can make go on."""
    for join in nodes.values():
        if join.type is NodeType.PARALLEL and len(join.prev_links) > 1:
            _check(nodes, join, start, graph_id)


def _check(nodes: Mapping[str, Node], join: Node, start: Node, graph_id: str) -> None:
    """Refuse ``join`` if the most arrivals a run could bring it are fewer than its inbound links, naming why."""
    needed = len(join.prev_links)
    above = _reaching(nodes, join)
    counted = _most_arrivals(join, start, above, needed)
    arriving = counted.get(start.id, 1 if start is join else 0)
    if arriving >= needed:
        return
    choosers = [
        node.id
        for node in nodes.values()
        if node.type is NodeType.EXCLUSIVE
        and node.id in counted
        and sum(1 for link in node.links if link.next_node is join or counted.get(link.next_id, 0)) > 1
    ]
    unreached = [link.prev_id for link in join.prev_links if link.prev_id not in counted]
    causes = []
    ends = [link.prev_id for link in join.prev_links if nodes[link.prev_id].type is NodeType.END]
    if ends:
        causes.append(f"{', '.join(repr(name) for name in ends)} is an end node, which follows no link")
    if choosers:
        names = ", ".join(repr(name) for name in choosers)
        causes.append(f"they come from different links of the exclusive gateway {names}, which follows only one")
    if unreached:
        names = ", ".join(repr(name) for name in dict.fromkeys(unreached))
        causes.append(f"no branch reaches {names} before the join goes on")
    links = ", ".join(f"{link.prev_id} -> {join.id}" for link in join.prev_links)
    raise JoinError(
        f"a parallel join waits for all its {needed} inbound links ({links}), but at most {arriving} can arrive in a"
        f" run: {'; '.join(causes)}. Make it an inclusive gateway (which waits for the branches its fork took), or"
        " build the graph with check_joins=False to keep it as written",
        graph_id=graph_id,
        node_id=join.id,
        gateways=tuple(choosers),
        links=tuple((link.prev_id, join.id) for link in join.prev_links),
    )


def _most_arrivals(join: Node, start: Node, above: set[str], needed: int) -> dict[str, int]:
    """For each node of ``above`` a branch from ``start`` reaches: the most arrivals at ``join`` that one branch
    there can make before the join goes on, capped at ``needed`` (a cycle, or a loop's items, count as ``needed``).
    Walked with a stack of its own: a graph may be deeper than Python's recursion allows."""
    counted: dict[str, int] = {}
    open_: set[str] = set()
    todo: list[tuple[Node, bool]] = [(start, False)]
    while todo:
        node, finished = todo.pop()
        if node is join or node.id not in above or node.id in counted:
            continue
        following = [link.next_node for link in node.links] if node.type is not NodeType.END else []
        if not finished:
            if node.id in open_:
                continue
            open_.add(node.id)
            todo.append((node, True))
            todo.extend((after, False) for after in reversed(following))
            continue
        open_.discard(node.id)
        below = [
            1 if after is join else needed if after.id in open_ else counted.get(after.id, 0) for after in following
        ]
        if node.type is NodeType.EXCLUSIVE:
            counted[node.id] = max(below, default=0)
        elif node.type is NodeType.LOOP and node.meta.get("$for") and any(below):
            counted[node.id] = needed  # its links are walked once an item, and the items are not known here
        else:
            counted[node.id] = min(needed, sum(below))
    return counted


def _reaching(nodes: Mapping[str, Node], join: Node) -> set[str]:
    """The ids of the nodes with a path to ``join`` that does not pass through it."""
    seen: set[str] = set()
    todo = list(join.prev_links)
    while todo:
        link = todo.pop()
        if link.prev_id in seen or link.prev_id == join.id:
            continue
        seen.add(link.prev_id)
        todo.extend(nodes[link.prev_id].prev_links)
    return seen
