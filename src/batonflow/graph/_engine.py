"""``FlowEngine``: runs graphs with solon-flow's semantics, on asyncio.

A run walks the graph depth-first from its start node. Each visit: stop if the run is stopped; end the branch if it
was interrupted; record the node as the graph's last (unless replaying); count a step (a ``steps`` limit stops the
run once passed); then act by node type. Replaying ("reverting") is how a context with a recorded node resumes: the
walk starts at the start node with tasks and hooks skipped and conditions evaluated, until it reaches the recorded
node, whose task runs again.

The original walks a parallel gateway's branches one after the other, so that when a node stops the run no later
branch has run; here they run concurrently, and a branch may have finished a node after (in the walk's order) the
one that stopped, or before it while another branch was recorded last. So the context also keeps a journal of how
each visit of the run ended (``VisitLog``, per graph and node, counted). When the saved run fanned a parallel
gateway out, reverting ends at that gateway instead of at the recorded node, and from there the walk follows the
journal: a visit the saved run finished is replayed (task and hooks skipped, joins counted, links followed; one
that ``interrupt()`` ended ends its branch again), every other visit runs. A graph whose runs never fan out resumes
exactly as the original's.

Where the original recurses into the last link of a node, this engine loops instead (the walk does nothing after
it), so that a long chain or a cycle through an exclusive gateway does not grow the stack; the order of every
task, hook and condition is the same. Every other link is a walk inside the walk, as in the original (a link back
to its own node that is not the node's last recurses at each visit, as it does there), so walks may nest at most
``MAX_WALK_DEPTH`` deep: past that a ``FlowRunError`` names the node, where Python's stack would end the run with a
``RecursionError`` (the original's, with a ``StackOverflowError``). A parallel gateway runs its branches as tasks of one ``asyncio.TaskGroup``:
the first error cancels the others and is raised.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextvars import ContextVar
from pathlib import Path
from types import TracebackType
from typing import Self

from ..errors import BatonflowError
from ._context import CURRENT, DONE, ENDED, FANNED, FINISHED, FlowContext
from ._errors import FlowRunError, GraphError, VisitLimitError
from ._exchanger import Branch, Exchanger, FlowInterceptor, FlowInvocation, Visit, VisitLog, maybe_await
from ._expr import Expression
from ._graph import ComponentRef, Condition, Graph, GraphRef, Node
from ._loop import Peekable, loop_items
from ._registry import Registrations, Registry
from ._spec import NodeType

__all__ = ["DEFAULT_MAX_VISITS", "MAX_WALK_DEPTH", "FlowEngine"]

DEFAULT_MAX_VISITS = 100_000
"""How often one run may visit one node when no ``steps`` limit is set, before it is taken for an endless cycle."""

YIELD_EVERY = 64
"""A run lets the event loop run other tasks once every this many node visits, whatever its tasks do."""

MAX_WALK_DEPTH = 100
"""How deeply walks may nest in one run: each link but a node's last, each branch but an inclusive fork's last, each
loop item and each sub-graph is walked inside the walk that reached it. A few Python frames a level (more through
interceptors), so that the deepest task still has stack to run in."""

_WALK_DEPTH: ContextVar[int] = ContextVar("batonflow_walk_depth", default=0)


class FlowEngine(Registrations):
    """Runs graphs. It knows graphs by id (``load``), components by name and kind (``tasks``, ``conditions``,
    ``models``, ``tools``: ``register_task`` and the like, or ``register``, which files a component by what it is),
    and engine-wide interceptors (``add_interceptor``); ``eval`` runs a graph on a context and returns the context.
    A ``@name`` task is looked up among the tasks, a ``@name`` condition among the conditions."""

    def __init__(self, *, max_visits: int = DEFAULT_MAX_VISITS) -> None:
        if type(max_visits) is not int or max_visits < 1:
            raise GraphError(f"max_visits must be a positive int, got {max_visits!r}")
        self.max_visits = max_visits
        self._graphs: dict[str, Graph] = {}
        self._registry = Registry(self._EXTRA_KINDS)
        self._interceptors: list[tuple[int, FlowInterceptor]] = []
        self._closers: list[Callable[[], Awaitable[object]]] = []

    # -- what the components opened ----------------------------------------------------------------------------

    def add_closer(self, close: Callable[[], Awaitable[object]]) -> None:
        """Have ``aclose`` call ``close``: for a component that opens a connection the engine outlives."""
        self._closers.append(close)

    async def aclose(self) -> None:
        """Close what the components opened, last opened first; each is closed even if another fails."""
        closers, self._closers = self._closers, []
        for close in reversed(closers):
            with contextlib.suppress(Exception):
                await close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.aclose()

    # -- registries --------------------------------------------------------------------------------------------

    def load(self, source: Graph | str | os.PathLike[str]) -> Graph:
        """Know a graph (or the graph in a file) by its id, for ``eval("id")`` and ``#id`` tasks; returns it."""
        graph = source if isinstance(source, Graph) else Graph.load(source)
        self._graphs[graph.id] = graph
        return graph

    def load_all(self, pattern: str | os.PathLike[str]) -> list[Graph]:
        """Load every graph file a glob pattern matches (``flows/*.yml``), or every ``.yml``, ``.yaml`` and ``.json``
        file of a folder, in name order; ``GraphError`` if there is none."""
        root = Path(pattern)
        if root.is_dir():
            files = sorted(p for p in root.iterdir() if p.suffix.lower() in (".yml", ".yaml", ".json"))
        else:
            files = sorted(Path(match) for match in glob.glob(str(pattern)))
        if not files:
            raise GraphError(f"no graph files found at {str(pattern)!r}")
        return [self.load(file) for file in files]

    def unload(self, graph_id: str) -> None:
        self._graphs.pop(graph_id, None)

    def get_graph(self, graph_id: str) -> Graph | None:
        return self._graphs.get(graph_id)

    @property
    def graphs(self) -> tuple[Graph, ...]:
        return tuple(self._graphs.values())

    def add_interceptor(self, interceptor: FlowInterceptor, rank: int = 0) -> None:
        """Intercept every run of this engine; lower ranks run first (outermost), equal ranks in the order added."""
        self._interceptors.append((rank, interceptor))
        self._interceptors.sort(key=lambda entry: entry[0])

    def remove_interceptor(self, interceptor: FlowInterceptor) -> None:
        self._interceptors = [entry for entry in self._interceptors if entry[1] is not interceptor]

    # -- running -----------------------------------------------------------------------------------------------

    async def eval(
        self,
        graph: Graph | str,
        context: FlowContext | None = None,
        *,
        steps: int = -1,
        interceptors: Sequence[FlowInterceptor | tuple[FlowInterceptor, int]] = (),
    ) -> FlowContext:
        """Run ``graph`` (or the loaded graph of that id) on ``context`` (a new one if none), at most ``steps``
        node visits (``-1``: no limit), with ``interceptors`` besides the engine's. A context that recorded a
        node resumes there. Returns the context."""
        if isinstance(graph, str):
            found = self._graphs.get(graph)
            if found is None:
                raise GraphError(f"Flow graph not found: {graph}; loaded: {sorted(self._graphs) or 'none'}")
            graph = found
        elif not isinstance(graph, Graph):
            raise GraphError(f"eval expects a Graph or a graph id, got {type(graph).__name__}")
        if context is None:
            context = FlowContext()
        if type(steps) is not int:
            raise GraphError(f"steps must be an int (-1 for no limit), got {steps!r}")
        trace = context.trace
        journal = VisitLog(dict(trace._visits))
        ex = Exchanger(graph, context, steps, self._ranked(interceptors), self.max_visits, [0], {}, journal)
        context._stopped = False  # as the original: every eval starts unstopped
        context._outcome = None
        try:
            await self._run_graph(ex)
            context._outcome = ex.outcome()
        except RecursionError:  # walks through many sub-graphs and interceptors, before MAX_WALK_DEPTH is reached
            raise FlowRunError(
                f"expected walks nested less deeply than Python's stack allows, found deeper ones (walks nest at most"
                f" {MAX_WALK_DEPTH} deep, MAX_WALK_DEPTH, but sub-graphs and interceptors take more stack a level)",
                graph_id=graph.id,
            ) from None
        finally:
            if trace.enabled:
                trace._visits = journal.merged()
        return context

    def _ranked(self, extra: Iterable[FlowInterceptor | tuple[FlowInterceptor, int]]) -> tuple[FlowInterceptor, ...]:
        entries: list[tuple[int, FlowInterceptor]] = []
        for item in extra:
            interceptor, rank = item if isinstance(item, tuple) else (item, 0)
            if not isinstance(interceptor, FlowInterceptor):
                raise GraphError(f"an interceptor must be a FlowInterceptor, got {type(interceptor).__name__}")
            entries.append((rank, interceptor))
        entries.extend(self._interceptors)
        return tuple(interceptor for _, interceptor in sorted(entries, key=lambda entry: entry[0]))

    async def _run_graph(self, ex: Exchanger) -> None:
        branch = Branch()
        token = CURRENT.set((ex, branch))
        try:
            trace = ex.context.trace
            ex.open_journal(fresh=trace.last_record(ex.graph.id) is None)
            start = trace.last_node(ex.graph)
            await FlowInvocation(self, ex, branch, start).invoke()
            ex.halt_waiting()
        finally:
            CURRENT.reset(token)

    async def _walk(
        self, ex: Exchanger, branch: Branch, node: Node | None, start: Node, came_from: Node | None
    ) -> None:
        """Visit ``node`` (reached from ``came_from``) and what follows it in this branch."""
        depth = _WALK_DEPTH.get() + 1
        if depth > MAX_WALK_DEPTH and node is not None:
            raise FlowRunError(
                f"expected walks nested at most {MAX_WALK_DEPTH} deep (MAX_WALK_DEPTH), found one more: each link"
                " but a node's last (a link back to the node itself, say), each inclusive branch but the last, each"
                " loop item and each sub-graph is walked inside the walk that reached it; make the link that"
                " cycles the node's last",
                graph_id=ex.graph.id,
                node_id=node.id,
            )
        token = _WALK_DEPTH.set(depth)
        try:
            while node is not None:
                if ex.is_stopped:
                    return
                if branch.interrupted:
                    branch.interrupted = False
                    return
                visit = ex.begin(node.id)
                saved = visit.saved
                resumed = ex.reverting and ((saved == FANNED) if ex.marked else (node is start))
                if resumed:  # where the saved run is picked up: its fanned-out gateway, else its last node
                    ex.reverting = False
                    ex.following = ex.marked
                if ex.reverting:
                    visit.replay_as(saved or DONE, ends=False)
                elif ex.following and saved is not None and saved in FINISHED:
                    visit.replay_as(saved, ends=saved == ENDED)
                elif not resumed:
                    ex.context.trace._note(ex.graph, node)
                if ex.steps < 0:
                    key = (ex.graph.id, node.id)
                    visits = ex.visits.get(key, 0) + 1
                    ex.visits[key] = visits
                    if visits > ex.max_visits:
                        raise VisitLimitError(
                            f"visited {visits} times in one run, more than max_visits={ex.max_visits}: an endless "
                            "cycle? Give eval a steps limit, or the engine a larger max_visits",
                            graph_id=ex.graph.id,
                            node_id=node.id,
                            visits=visits,
                        )
                elif not visit.replay and not ex.next_step():
                    ex.stop()
                    ex.halt(node, f"the steps limit ({ex.steps}) was reached before this node")
                    return
                ex.ticks[0] += 1
                if not ex.ticks[0] % YIELD_EVERY:
                    # Tasks that never await would keep the event loop to this run for as long as it walks (a
                    # server's other requests, /health included, waiting on a loop of 100,000 items): now and
                    # then, let go.
                    await asyncio.sleep(0)
                came_from, node = node, await self._visit(ex, branch, node, start, visit, came_from)
        finally:
            _WALK_DEPTH.reset(token)

    async def _visit(
        self, ex: Exchanger, branch: Branch, node: Node, start: Node, visit: Visit, came_from: Node | None
    ) -> Node | None:
        """Act on ``node`` by its type; returns the node the branch goes on to (its last link's), if any."""
        kind = node.type
        if kind is NodeType.ACTIVITY:
            if not await self._task(ex, branch, node, visit):
                return None
            return await self._free_out(ex, branch, node, start)
        if kind is NodeType.EXCLUSIVE:
            if not await self._task(ex, branch, node, visit):
                return None
            default = None
            for link in node.links:
                if link._condition is None:
                    default = link  # the last unconditioned link is the default
                elif await self._test(ex, link._condition, node, f"link to {link.next_id!r}"):
                    return link.next_node
            if default is None:
                ex.dead_end(node)
                return None
            return default.next_node
        if kind is NodeType.START or kind is NodeType.END:
            ex.ended = ex.ended or kind is NodeType.END
            if not await self._task(ex, branch, node, visit, hooks_only=True):
                return None
            return await self._free_out(ex, branch, node, start) if kind is NodeType.START else None
        if kind is NodeType.PARALLEL:
            return await self._parallel(ex, branch, node, start, visit, came_from)
        if kind is NodeType.INCLUSIVE:
            forks = ex.stack("inclusive")
            if len(node.prev_links) > 1 and forks:
                arrived = ex.counts.get(node.id, 0) + 1
                ex.counts[node.id] = arrived
                if forks[-1] > arrived:
                    visit.finish(DONE)
                    ex.arrive(node, came_from, forks[-1])
                    return None
                ex.settle_join(node)
                forks.pop()
                ex.counts[node.id] = 0
            if not await self._task(ex, branch, node, visit):
                return None
            taken = [
                link for link in node.links if await self._test(ex, link._condition, node, f"link to {link.next_id!r}")
            ]
            if not taken:
                ex.dead_end(node)
                return None
            forks.append(len(taken))
            for link in taken[:-1]:
                await self._walk(ex, branch, link.next_node, start, node)
            return taken[-1].next_node
        return await self._loop(ex, branch, node, start, visit)

    async def _parallel(
        self, ex: Exchanger, branch: Branch, node: Node, start: Node, visit: Visit, came_from: Node | None
    ) -> Node | None:
        """A parallel gateway: as a join, it counts the arrival and the last one goes on; as a fork, it runs its
        branches concurrently."""
        arrived = ex.counts.get(node.id, 0) + 1
        ex.counts[node.id] = arrived
        if len(node.prev_links) > arrived:
            visit.finish(DONE)
            ex.arrive(node, came_from, len(node.prev_links))
            return None  # a join waits for every inbound branch; the last one goes on
        ex.settle_join(node)
        if not await self._task(ex, branch, node, visit):
            return None
        ex.counts[node.id] = 0
        following = node.next_nodes
        if len(following) < 2:
            return following[0] if following else None
        if not ex.reverting:
            visit.fanned()
        await self._fan_out(ex, node, start)
        return None

    async def _loop(self, ex: Exchanger, branch: Branch, node: Node, start: Node, visit: Visit) -> Node | None:
        iterators = ex.stack("loop")
        item_key = node.meta.get("$for")
        if not item_key:  # the join: waits until the loop it closes has walked its last item
            if iterators:
                if iterators[-1].has_next():
                    visit.finish(DONE)
                    return None
                iterators.pop()
            if not await self._task(ex, branch, node, visit):
                return None
            return await self._free_out(ex, branch, node, start)
        if not await self._task(ex, branch, node, visit):
            return None
        items = Peekable(loop_items(node.meta.get("$in"), ex.context._data, graph_id=ex.graph.id, node_id=node.id))
        iterators.append(items)
        if not items.has_next() and node.links:
            ex.halt(node, "the loop has no items, and a loop that walks none never reaches its join", soft=True)
        while items.has_next() and not ex.is_stopped:
            ex.context.set(str(item_key), items.next())
            tail = await self._free_out(ex, branch, node, start)
            if tail is not None:
                await self._walk(ex, branch, tail, start, node)
        return None

    async def _free_out(self, ex: Exchanger, branch: Branch, node: Node, start: Node) -> Node | None:
        """Follow every link whose condition holds (none counts as true), in order; the last is returned."""
        links = node.links
        if not links:
            return None
        taken = False
        for link in links[:-1]:
            if link._condition is None or await self._test(ex, link._condition, node, f"link to {link.next_id!r}"):
                taken = True
                await self._walk(ex, branch, link.next_node, start, node)
        last = links[-1]
        if last._condition is None or await self._test(ex, last._condition, node, f"link to {last.next_id!r}"):
            return last.next_node
        if not taken:
            ex.dead_end(node)
        return None

    async def _fan_out(self, ex: Exchanger, gateway: Node, start: Node) -> None:
        following = gateway.next_nodes
        if ex.reverting:
            # A replay runs no tasks: walking the branches in order keeps which one reaches the resume point first
            # the same as in the original.
            for node in following:
                await self._walk(ex, Branch(), node, start, gateway)
            return

        async def run_branch(node: Node) -> None:
            branch = Branch()
            CURRENT.set((ex, branch))  # this task's own copy of the variable
            await self._walk(ex, branch, node, start, gateway)

        first: BaseException | None = None
        try:
            async with asyncio.TaskGroup() as group:
                for node in following:
                    group.create_task(run_branch(node))
        except BaseExceptionGroup as errors:
            first = errors.exceptions[0]
        if first is not None:
            raise first

    async def _hooks(self, ex: Exchanger, node: Node, *, start: bool) -> None:
        for interceptor in ex.interceptors:
            hook = interceptor.on_node_start if start else interceptor.on_node_end
            await maybe_await(hook(ex.context, node))

    async def _task(self, ex: Exchanger, branch: Branch, node: Node, visit: Visit, *, hooks_only: bool = False) -> bool:
        """The node's hooks and (when its ``when`` holds, unless ``hooks_only``) task, or nothing for a replayed
        visit; whether the branch goes on. The visit is journaled as its task ended."""
        if visit.replay:
            return not visit.ends
        if ex.interceptors:
            await self._hooks(ex, node, start=True)
            if not ex.goes_on(branch, node, "an interceptor's on_node_start"):
                return False
        finished = True
        # As the original, a node's ``when`` is tested even when it has no task to guard (an unknown ``@name``
        # there fails the run).
        if not hooks_only and await self._test(ex, node._condition, node, "when") and node._target is not None:
            finished = await self._run_task(ex, branch, node)
        visit.settle(branch, finished)
        if not ex.goes_on(branch, node, "its task" if finished else ""):
            return False
        if ex.interceptors:
            await self._hooks(ex, node, start=False)
            visit.settle(branch, finished)  # an end hook that stops the run leaves the visit to run again
            return ex.goes_on(branch, node, "an interceptor's on_node_end")
        return True

    async def _run_task(self, ex: Exchanger, branch: Branch, node: Node) -> bool:
        """Run the node's task; whether it finished (a sub-graph that did not reach its end did not)."""
        target = node._target
        try:
            if isinstance(target, GraphRef):
                return await self._run_subgraph(ex, branch, target.graph_id, node)
            if isinstance(target, ComponentRef):
                target = self._component(target.name, node, "task")
            run = getattr(target, "run", None)
            if callable(run):
                await maybe_await(run(ex.context, node))
            else:
                assert callable(target)
                await maybe_await(target(ex.context, node))
            return True
        except BatonflowError:
            raise
        except Exception as exc:
            raise FlowRunError(
                f"the task failed: {type(exc).__name__}: {exc}", graph_id=ex.graph.id, node_id=node.id
            ) from exc

    async def _run_subgraph(self, ex: Exchanger, branch: Branch, graph_id: str, node: Node) -> bool:
        graph = self._graphs.get(graph_id)
        if graph is None:
            raise GraphError(
                f"sub-graph '#{graph_id}' is not loaded; loaded: {sorted(self._graphs) or 'none'}",
                graph_id=ex.graph.id,
                node_id=node.id,
                field="task",
            )
        ex.prev_step()  # the sub-graph's first node takes the step this node took
        await self._run_graph(ex.copy(graph))
        if ex.context.trace.is_end(graph.id):
            return True
        if not ex.is_stopped:
            branch.interrupted = True  # an unfinished sub-graph holds the branch that called it
            ex.halt(
                node, f"its sub-graph '#{graph.id}' did not reach an end node, which holds the branch that called it"
            )
        return False

    async def _test(self, ex: Exchanger, condition: Condition | None, node: Node, where: str) -> bool:
        if condition is None:
            return True
        try:
            if isinstance(condition, Expression):
                return condition.test(ex.context._data)
            if isinstance(condition, ComponentRef):
                condition = self._component(condition.name, node, "condition")
            test = getattr(condition, "test", None)
            result = test(ex.context) if callable(test) else condition(ex.context)  # type: ignore[operator]
            return bool(await maybe_await(result))
        except BatonflowError:
            raise
        except Exception as exc:
            raise FlowRunError(
                f"the condition of the {where} failed: {type(exc).__name__}: {exc}",
                graph_id=ex.graph.id,
                node_id=node.id,
            ) from exc
