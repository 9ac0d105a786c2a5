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
    joins = [node for node in nodes.values() if node.type is NodeType.PARALLEL and len(node.prev_links) > 1]
    if not joins:
        return
    order = _reverse_postorder(start)
    rank = {node.id: index for index, node in enumerate(order)}
    sources = {
        node.id: [
            nodes[link.prev_id]
            for link in node.prev_links
            if link.prev_id in rank and nodes[link.prev_id].type is not NodeType.END
        ]
        for node in order
    }
    dominators = _dominators(order, rank, sources)
    visits = _most_visits(order, rank, sources)
    for join in joins:
        if join is not start:
            _check(nodes, join, graph_id, dominators.get(join.id), visits)


def _check(
    nodes: Mapping[str, Node], join: Node, graph_id: str, above_all: Node | None, visits: Mapping[str, int]
) -> None:
    """Refuse ``join`` if the most arrivals a run could bring it are fewer than its inbound links, naming why.
    Every branch that reaches ``join`` passed ``above_all`` (its immediate dominator, None when no branch reaches
    it), at most ``visits`` times: the arrivals are at most that many times the most one branch there can make."""
    needed = len(join.prev_links)
    if above_all is None:
        counted: dict[str, int] = {}
        arriving = 0
    else:
        times = visits[above_all.id]
        if times >= needed:
            return  # too many branches pass there to tell
        counted = _most_arrivals(join, above_all, _reaching(nodes, join, above_all), needed)
        arriving = min(needed, times * counted.get(above_all.id, 0))
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
        " build the graph with check_joins=False (in its file: checkJoins: false) to keep it as written",
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


def _reaching(nodes: Mapping[str, Node], join: Node, above_all: Node) -> set[str]:
    """The ids of the nodes with a path to ``join`` that passes neither through it nor through ``above_all``
    (which is included): since every branch to ``join`` passes ``above_all``, the part of the graph between them."""
    seen: set[str] = set()
    todo = list(join.prev_links)
    while todo:
        link = todo.pop()
        if link.prev_id in seen or link.prev_id == join.id:
            continue
        seen.add(link.prev_id)
        if link.prev_id != above_all.id:
            todo.extend(nodes[link.prev_id].prev_links)
    return seen


def _following(node: Node) -> list[Node]:
    """The nodes a branch at ``node`` may go on to (an end node follows none of its links)."""
    return [] if node.type is NodeType.END else [link.next_node for link in node.links]


def _reverse_postorder(start: Node) -> list[Node]:
    """The nodes a branch from ``start`` can reach, each before those it links to (but along a cycle)."""
    seen = {start.id}
    postorder: list[Node] = []
    todo: list[tuple[Node, int]] = [(start, 0)]
    while todo:
        node, index = todo.pop()
        following = _following(node)
        if index < len(following):
            todo.append((node, index + 1))
            after = following[index]
            if after.id not in seen:
                seen.add(after.id)
                todo.append((after, 0))
        else:
            postorder.append(node)
    return postorder[::-1]


def _dominators(order: list[Node], rank: Mapping[str, int], sources: Mapping[str, list[Node]]) -> dict[str, Node]:
    """Each reachable node's immediate dominator (the start's is itself): the iteration of Cooper, Harvey and
    Kennedy over ``order``, a reverse postorder from the start."""
    idom: dict[str, Node] = {order[0].id: order[0]}

    def common(a: Node, b: Node) -> Node:
        while a is not b:
            while rank[a.id] > rank[b.id]:
                a = idom[a.id]
            while rank[b.id] > rank[a.id]:
                b = idom[b.id]
        return a

    changed = True
    while changed:
        changed = False
        for node in order[1:]:
            found: Node | None = None
            for source in sources[node.id]:
                if source.id in idom:
                    found = source if found is None else common(source, found)
            if found is not None and idom.get(node.id) is not found:
                idom[node.id] = found
                changed = True
    return idom


def _most_visits(order: list[Node], rank: Mapping[str, int], sources: Mapping[str, list[Node]]) -> dict[str, int]:
    """For each reachable node, the most times a run can visit it, capped: a node on or after a cycle, or below a
    loop with ``$for``, may be visited any number of times. A parallel join goes on at most once for as many
    arrivals as it waits for; every other node sends a branch down each link at each visit."""
    cap = 1 << 30
    visits: dict[str, int] = {}
    for node in order:
        total = 1 if node is order[0] else 0  # the run visits the start once
        for source in sources[node.id]:
            if rank[source.id] >= rank[node.id]:
                total = cap  # a link back along a cycle
                break
            seen = visits[source.id]
            if source.type is NodeType.LOOP and source.meta.get("$for"):
                total = cap
            elif source.type is NodeType.PARALLEL and len(source.prev_links) > 1:
                total += seen // len(source.prev_links)
            else:
                total += seen
        visits[node.id] = min(cap, total)
    return visits
