"""What a run carries for the code deep inside it, on its context: the scope that packages above the runtime hang
their run on (found by class, the nearest first, never changed in place) and the dispatcher, both handed to every
child context of the run."""

from __future__ import annotations

from batonflow.adk import RunContext, RunScope


class Hosted:
    def __init__(self, name: str) -> None:
        self.name = name


class Team(Hosted):
    pass


def test_a_scope_finds_a_value_by_its_class_and_none_of_a_class_it_does_not_hold() -> None:
    scope = RunScope().with_value(Hosted("graph"))
    found = scope.get(Hosted)
    assert found is not None and found.name == "graph"
    assert scope.get(Team) is None
    assert RunScope().get(Hosted) is None


def test_the_value_added_last_wins_and_the_scope_it_was_added_to_is_left_as_it_was() -> None:
    outer = RunScope().with_value(Team("team"))
    inner = outer.with_value(Hosted("graph"))
    again = inner.with_value(Hosted("sub-graph"))

    assert [v.name for v in again.values] == ["team", "sub-graph"]  # in place of the value of the very same class
    assert inner.get(Hosted).name == "graph"  # type: ignore[union-attr]
    assert again.get(Hosted).name == "sub-graph"  # type: ignore[union-attr]
    assert again.get(Team).name == "team"  # type: ignore[union-attr]
    assert outer.get(Hosted).name == "team"  # type: ignore[union-attr]  # a Team is a Hosted


def test_child_contexts_carry_the_scope_and_the_dispatcher_and_scoped_leaves_its_context_alone() -> None:
    class Dispatcher:
        async def run_branch(self, branch: object) -> object:
            raise AssertionError("not called")

    dispatcher = Dispatcher()
    root = RunContext(dispatcher=dispatcher)  # type: ignore[arg-type]
    hosted = root.scoped(Hosted("graph"))
    child = hosted.child("a").child("b")

    assert root.scope.get(Hosted) is None
    assert child.scope.get(Hosted) is hosted.scope.get(Hosted)
    assert child.dispatcher is dispatcher and hosted.dispatcher is dispatcher
    assert child.session is root.session  # one run: the session stays shared
