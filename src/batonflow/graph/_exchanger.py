"""The state of one run of a graph (``Exchanger``, with a ``Branch`` per concurrent branch, and the ``VisitLog`` of
how its visits ended), and the interceptor chain around it (``FlowInterceptor``, ``FlowInvocation``)."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

from ._context import DONE, ENDED, FANNED, PENDING, FlowContext, FlowOutcome, FlowStop

if TYPE_CHECKING:
    from ._engine import FlowEngine
    from ._graph import Graph, Node

MAX_STOPS = 100
"""The stops of a run its outcome keeps (a loop of many items could make one an item)."""

__all__ = ["MAX_STOPS", "Branch", "Exchanger", "FlowInterceptor", "FlowInvocation", "Visit", "VisitLog", "maybe_await"]


class FlowInterceptor:
    """Hooks around a flow and its nodes. Override what you need; each may be plain or ``async``.

    ``intercept_flow`` wraps a whole run (a sub-graph's too) and must call ``await invocation.invoke()`` to go on;
    ``on_node_start`` and ``on_node_end`` run around each node's task, not while a run replays.
    """

    async def intercept_flow(self, invocation: FlowInvocation) -> None:
        await invocation.invoke()

    def on_node_start(self, context: FlowContext, node: Node) -> Any:
        return None

    def on_node_end(self, context: FlowContext, node: Node) -> Any:
        return None


class Branch:
    """One branch of a run: ``interrupt()`` ends it and no other; ``stopped`` says that code of this branch called
    ``stop()``, which tells a visit that stopped the run from one that finished while another branch stopped it."""

    __slots__ = ("interrupted", "stopped")

    def __init__(self) -> None:
        self.interrupted = False
        self.stopped = False


class Visit:
    """One visit of a node in a run: ``replay`` when its task and hooks are skipped (``ends``: and its branch ends
    there, as it did when the visit was made), ``saved`` how the same visit of the saved run ended, if it made one."""

    __slots__ = ("_entries", "_index", "ends", "replay", "saved")

    def __init__(self, entries: list[str], index: int, saved: str | None) -> None:
        self._entries = entries
        self._index = index
        self.saved = saved
        self.replay = False
        self.ends = False

    def replay_as(self, outcome: str, *, ends: bool) -> None:
        """Skip the visit's task and hooks; it is journaled as ``outcome``, the way it ended before."""
        self.replay = True
        self.ends = ends
        self._entries[self._index] = outcome

    def finish(self, outcome: str) -> None:
        """Log how a live visit ended (a replayed one keeps the outcome it had)."""
        if not self.replay:
            self._entries[self._index] = outcome

    def fanned(self) -> None:
        """The visit's parallel gateway runs its branches concurrently (replayed or not)."""
        self._entries[self._index] = FANNED

    def settle(self, branch: Branch, finished: bool) -> None:
        """Log the visit by what its task did: done, or ended by ``interrupt()``, unless it was cut short."""
        if not self.replay:
            cut = not finished or branch.stopped
            self._entries[self._index] = PENDING if cut else ENDED if branch.interrupted else DONE


class VisitLog:
    """How the visits of one run ended, per graph and node in the order made (one letter each, see ``_context``), next to those of the run the context saved
    before (``saved``): the n-th visit of a node in a resumed run is the n-th visit of the saved run. ``merged``
    is what the context keeps: this run's visits, then those of the saved run this run did not get to."""

    __slots__ = ("made", "saved")

    def __init__(self, saved: dict[str, dict[str, str]]) -> None:
        self.saved = saved
        self.made: dict[str, dict[str, list[str]]] = {}

    def of(self, graph_id: str, *, fresh: bool) -> tuple[dict[str, list[str]], dict[str, str]]:
        """This run's visits of ``graph_id`` and the saved run's, by node; for a run that starts afresh the saved
        ones are past, and forgotten."""
        if fresh:
            self.saved.pop(graph_id, None)
        return self.made.setdefault(graph_id, {}), self.saved.get(graph_id, {})

    def merged(self) -> dict[str, dict[str, str]]:
        result = {graph_id: dict(nodes) for graph_id, nodes in self.saved.items()}
        for graph_id, nodes in self.made.items():
            graph = result.setdefault(graph_id, {})
            for node_id, entries in nodes.items():
                graph[node_id] = "".join(entries) + graph.get(node_id, "")[len(entries) :]
        return result


class Exchanger:
    """The state of one graph's run: shared by its branches, copied (with the step counter shared) for each
    sub-graph it calls."""

    __slots__ = (
        "context",
        "counts",
        "ended",
        "following",
        "graph",
        "interceptors",
        "journal",
        "made",
        "marked",
        "max_visits",
        "reverting",
        "saved",
        "soft",
        "stacks",
        "stepped",
        "steps",
        "stopped",
        "stops",
        "ticks",
        "visits",
        "waits",
    )

    def __init__(
        self,
        graph: Graph,
        context: FlowContext,
        steps: int,
        interceptors: tuple[FlowInterceptor, ...],
        max_visits: int,
        stepped: list[int],
        visits: dict[tuple[str, str], int],
        journal: VisitLog,
    ) -> None:
        self.graph = graph
        self.context = context
        self.steps = steps
        self.interceptors = interceptors
        self.max_visits = max_visits
        self.stepped = stepped  # one cell, shared with sub-graph runs
        self.ticks = [0]  # the run's visits, counted to yield to the event loop now and then (shared likewise)
        self.visits = visits
        self.journal = journal  # shared with sub-graph runs
        self.made: dict[str, list[str]] = {}  # this graph's part of the journal (``open_journal``)
        self.saved: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.stacks: dict[str, list[Any]] = {}
        self.stops: list[FlowStop] = []  # where branches ended short of an end node (shared with sub-graph runs)
        self.waits: dict[str, tuple[int, list[str]]] = {}  # joins waiting: the arrivals they need, the ones come
        self.soft: list[FlowStop] = []  # this graph's stops that do not count once it reached an end node
        self.ended = False  # this graph's run visited an end node
        self.stopped = False
        self.reverting = True  # replaying the way to where the saved run stopped
        self.marked = False  # the saved run fanned out: reverting ends at that parallel gateway, not the last node
        self.following = False  # past that gateway: visits the saved run finished are replayed, the others run

    def copy(self, graph: Graph) -> Exchanger:
        """The run of a sub-graph: a node that runs again while following the journal runs its sub-graph by the
        journal too (its own last node may name a visit that finished)."""
        sub = Exchanger(
            graph, self.context, self.steps, self.interceptors, self.max_visits, self.stepped, self.visits, self.journal
        )
        sub.ticks = self.ticks
        sub.stops = self.stops
        if self.following:
            sub.reverting, sub.following = False, True
        return sub

    def open_journal(self, *, fresh: bool) -> None:
        """Take this graph's part of the journal, as a run of it starts (``fresh``: not a resumed one). A resumed
        run whose saved run fanned out is ``marked``: it picks up at that gateway."""
        self.made, self.saved = self.journal.of(self.graph.id, fresh=fresh)
        if self.reverting and not fresh:
            self.marked = any(FANNED in outcomes for outcomes in self.saved.values())

    def begin(self, node_id: str) -> Visit:
        """Log a visit of ``node_id``, cut short until it says otherwise."""
        entries = self.made.get(node_id)
        if entries is None:
            entries = self.made[node_id] = []
        index = len(entries)
        entries.append(PENDING)
        before = self.saved.get(node_id)
        return Visit(entries, index, before[index] if before is not None and index < len(before) else None)

    @property
    def is_stopped(self) -> bool:
        return self.stopped or self.context._stopped

    def stop(self) -> None:
        self.stopped = True
        self.context._stopped = True

    def next_step(self) -> bool:
        if self.steps < 0:
            return True
        self.stepped[0] += 1
        return self.stepped[0] <= self.steps

    def prev_step(self) -> None:
        if self.steps >= 0:
            self.stepped[0] -= 1

    def halt(self, node: Node, reason: str, *, soft: bool = False) -> None:
        """Note that a branch ended at ``node``, short of an end node, and why (the first ``MAX_STOPS``). A
        ``soft`` stop is a choice the graph made (no link held, a loop had no items): it stops the run short only
        if the graph reaches no end node."""
        if len(self.stops) < MAX_STOPS:
            stop = FlowStop(self.graph.id, node.id, reason)
            self.stops.append(stop)
            if soft:
                self.soft.append(stop)

    def dead_end(self, node: Node) -> None:
        """No link of ``node`` held. Inside a loop that has items left, its join waits anyway: nothing to note."""
        loops = self.stacks.get("loop")
        if loops and loops[-1].has_next():
            return
        targets = ", ".join(repr(link.next_id) for link in node.links)
        self.halt(node, f"no outgoing link whose condition holds (links to {targets})", soft=True)

    def goes_on(self, branch: Branch, node: Node, by: str) -> bool:
        """Whether ``branch`` goes on after ``by`` (a hook or the task of ``node``) ran; where it does not because
        of ``by``, the run notes why (``by`` empty: nothing to note, as for a sub-graph, which notes its own)."""
        if self.is_stopped:
            if branch.stopped and by:
                self.halt(node, f"{by} stopped the run (context.stop())")
            return False
        if branch.interrupted:
            branch.interrupted = False
            if by:
                self.halt(node, f"{by} ended its branch (context.interrupt())")
            return False
        return True

    def outcome(self) -> FlowOutcome:
        """How this (a root graph's) run ended."""
        stops = list(self.stops)
        context = self.context
        if context.is_stopped and not stops:  # stopped from outside any branch of the run
            stops.append(FlowStop(self.graph.id, context.last_node_id or self.graph.start.id, "the run was stopped"))
        return FlowOutcome(finished=not stops, reached_end=context.trace.is_end(self.graph.id), stops=tuple(stops))

    def arrive(self, join: Node, came_from: Node | None, needed: int) -> None:
        """Note an arrival at a join that waits for ``needed`` (``settle`` once it goes on)."""
        sources = self.waits.get(join.id, (needed, []))[1]
        sources.append(came_from.id if came_from is not None else "?")
        self.waits[join.id] = (needed, sources)

    def settle_join(self, join: Node) -> None:
        self.waits.pop(join.id, None)

    def halt_waiting(self) -> None:
        """As this graph's run ends: forget its soft stops if it reached an end node, and note the joins still
        waiting."""
        if self.ended and self.soft:
            soft = {id(stop) for stop in self.soft}
            self.stops[:] = [stop for stop in self.stops if id(stop) not in soft]
        for join_id, (needed, sources) in self.waits.items():
            kind = self.graph.nodes[join_id].type.value
            what = "inbound links" if kind == "parallel" else "branches (as many as its fork took)"
            self.stops.append(
                FlowStop(
                    self.graph.id,
                    join_id,
                    f"{kind} join waits for {needed} {what}, {len(sources)} arrived (from {', '.join(sources)})",
                )
            )

    def stack(self, name: str) -> list[Any]:
        return self.stacks.setdefault(name, [])


class FlowInvocation:
    """A run about to start, as ``FlowInterceptor.intercept_flow`` sees it: ``invoke()`` goes on to the next
    interceptor, and after the last to the graph."""

    __slots__ = ("_branch", "_engine", "_exchanger", "_index", "start_node")

    def __init__(self, engine: FlowEngine, exchanger: Exchanger, branch: Branch, start_node: Node) -> None:
        self._engine = engine
        self._exchanger = exchanger
        self._branch = branch
        self._index = 0
        self.start_node = start_node
        """Where the run resumes: the recorded last node, else the graph's start."""

    @property
    def context(self) -> FlowContext:
        return self._exchanger.context

    @property
    def graph(self) -> Graph:
        return self._exchanger.graph

    async def invoke(self) -> None:
        interceptors = self._exchanger.interceptors
        if self._index < len(interceptors):
            interceptor = interceptors[self._index]
            self._index += 1
            await maybe_await(interceptor.intercept_flow(self))
        else:
            ex = self._exchanger
            await self._engine._walk(ex, self._branch, ex.graph.start, self.start_node, None)


async def maybe_await(value: Any) -> Any:
    """``value``, awaited first if it is awaitable: hooks and tasks may be plain or ``async``."""
    return await value if inspect.isawaitable(value) else value
