"""``batonflow eval SET TARGET``: run an eval set on the agent a target names and print the report; with
``--compare``, on a second target too, side by side. The exit code is 0 when every case passed, 1 when one failed,
2 for an eval set, a target or a judge it cannot use.

A target is ``module:attr`` (as ``batonflow run`` takes it) or ``FILE.py:attr``. A factory there is called once per
case, so that each case gets fresh agents (and whatever state their tools keep).
"""

from __future__ import annotations

import asyncio
import importlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer

from ..adk import Agent
from ..errors import UserError
from ..evals import CaseResult, EvalReport, EvalSet, LLMJudge, compare, evaluate, load_eval_set
from ..models import load_model

__all__ = ["EvalOptions", "run_eval"]


@dataclass(slots=True, kw_only=True)
class EvalOptions:
    """What ``batonflow eval`` was given."""

    eval_set: str
    target: str
    agent: str | None = None
    compare: str | None = None
    judge: str | None = None
    concurrency: int = 4
    json_path: str | None = None
    html_path: str | None = None


def _module_target(target: str) -> str:
    """``target`` as ``module:attr``: a ``FILE.py:attr`` is imported as the module named by the file, from its
    folder (as ``python FILE.py`` finds its neighbours)."""
    path, sep, attr = target.rpartition(":")
    if sep and path.endswith(".py"):
        file = Path(path).resolve()
        if not file.is_file():
            raise UserError(f"target {target!r}: expected a python file {path!r}, got none there")
        if str(file.parent) not in sys.path:
            sys.path.insert(0, str(file.parent))
        return f"{file.stem}:{attr}"
    return target


def agent_factory(target: str, name: str | None) -> Callable[[], Agent]:
    """A function that gives ``target``'s agent ``name`` (the only one when None), made anew when the target is a
    factory; it is called once here, so that a target that cannot work fails before any case runs."""
    from ._chat import pick
    from ._target import load_target

    module_target = _module_target(target)

    def make() -> Agent:
        return pick(load_target(module_target)[0], name, "eval")

    make()
    return make


def _judge(uri: str | None) -> LLMJudge | None:
    if uri is None:
        return None
    if uri.startswith("local:"):
        importlib.import_module("llama_cpp")  # the model loads on its first call: a missing extra is said up front
    return LLMJudge(load_model(uri))


def run_eval(ctx: typer.Context, options: EvalOptions) -> int:
    """Run the command; its exit code."""
    try:
        eval_set = load_eval_set(options.eval_set)
    except UserError as error:
        raise typer.BadParameter(str(error), ctx, None, "SET") from None
    try:
        targets = [(options.target, agent_factory(options.target, options.agent))]
        if options.compare is not None:
            targets.append((options.compare, agent_factory(options.compare, options.agent)))
        judge = _judge(options.judge)
    except UserError as error:
        raise typer.BadParameter(str(error), ctx) from None
    graded = [case.id for case in eval_set.cases if case.rubrics]
    if graded and judge is None:
        raise typer.BadParameter(
            f"expected a judge model for the rubrics of case {graded[0]!r} (and {len(graded) - 1} more), got none",
            ctx,
            None,
            "--judge",
        )
    reports = [asyncio.run(_evaluated(eval_set, make, label, judge, options.concurrency)) for label, make in targets]
    for report in reports:
        typer.echo(report.table())
    output: Any = reports[0]
    if len(reports) == 2:
        output = compare(reports[0], reports[1])
        typer.echo("")
        typer.echo(output.table())
    if options.json_path:
        Path(options.json_path).write_text(output.to_json() + "\n", encoding="utf-8")
    if options.html_path:
        Path(options.html_path).write_text(output.to_html(), encoding="utf-8")
    return 0 if all(r.passed for r in reports) else 1


async def _evaluated(
    eval_set: EvalSet, make: Callable[[], Agent], label: str, judge: LLMJudge | None, concurrency: int
) -> EvalReport:
    """The report of ``eval_set`` on ``make``'s agents, with a progress bar on a terminal (rich)."""
    if not sys.stderr.isatty():
        return await evaluate(eval_set, make, concurrency=concurrency, judge=judge, target=label)
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"{eval_set.name} on {label}", total=len(eval_set.cases))

        def advance(result: CaseResult, done: int, total: int) -> None:
            bar.update(task, completed=done)

        return await evaluate(eval_set, make, concurrency=concurrency, judge=judge, target=label, progress=advance)
