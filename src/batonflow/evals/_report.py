"""What an evaluation came to: each case's turns (answer, tool calls, check results), shown as a terminal table, as
JSON and as a self-contained HTML page; and two reports of the same set compared case by case."""

from __future__ import annotations

import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._checks import CheckResult
from ._set import ToolUse

__all__ = ["CaseResult", "Comparison", "ComparisonRow", "EvalReport", "TurnResult", "compare"]


@dataclass(slots=True, frozen=True, kw_only=True)
class TurnResult:
    """One turn as it ran: the ``input``, the final ``answer`` text, the ``tool_uses`` made (in order, transfers
    among them), each check's result, and whether the run stopped to wait for a person (``interrupted``)."""

    input: str
    answer: str
    tool_uses: tuple[ToolUse, ...] = ()
    checks: tuple[CheckResult, ...] = ()
    interrupted: bool = False

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)


@dataclass(slots=True, frozen=True, kw_only=True)
class CaseResult:
    """One case as it ran. ``error`` is set when a run failed (the case fails; later turns did not run);
    ``seconds`` is how long the case took."""

    case_id: str
    turns: tuple[TurnResult, ...] = ()
    error: str = ""
    seconds: float = 0.0

    @property
    def checks(self) -> tuple[CheckResult, ...]:
        return tuple(c for t in self.turns for c in t.checks)

    @property
    def passed(self) -> bool:
        return not self.error and all(t.passed for t in self.turns)

    @property
    def score(self) -> float:
        """The mean score of the case's checks: 0 for a failed run, 1 for a run with nothing to check."""
        if self.error:
            return 0.0
        checks = self.checks
        return sum(c.score for c in checks) / len(checks) if checks else 1.0

    def failures(self) -> list[str]:
        """A line for each failed check (and the error), naming the turn."""
        lines = [
            f"turn {i}: {c.name}: {c.reason}" for i, t in enumerate(self.turns, 1) for c in t.checks if not c.passed
        ]
        return [f"error: {self.error}", *lines] if self.error else lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "passed": self.passed,
            "score": round(self.score, 4),
            "error": self.error,
            "seconds": round(self.seconds, 3),
            "turns": [
                {
                    "input": t.input,
                    "answer": t.answer,
                    "interrupted": t.interrupted,
                    "tool_uses": [{"name": u.name, "args": u.args} for u in t.tool_uses],
                    "checks": [
                        {"name": c.name, "passed": c.passed, "score": round(c.score, 4), "reason": c.reason}
                        for c in t.checks
                    ],
                }
                for t in self.turns
            ],
        }


@dataclass(slots=True, frozen=True, kw_only=True)
class EvalReport:
    """The results of running the eval set ``name`` on ``target`` (a label: the agent's name, a module path),
    graded by ``judge`` (its model's name, when there was one)."""

    name: str
    target: str
    results: tuple[CaseResult, ...]
    judge: str = ""

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def pass_count(self) -> int:
        return sum(r.passed for r in self.results)

    @property
    def pass_rate(self) -> float:
        return self.pass_count / len(self.results) if self.results else 1.0

    @property
    def score(self) -> float:
        """The mean of the cases' scores."""
        return sum(r.score for r in self.results) / len(self.results) if self.results else 1.0

    def result(self, case_id: str) -> CaseResult:
        """The result of case ``case_id``; ``KeyError`` when it did not run."""
        for r in self.results:
            if r.case_id == case_id:
                return r
        raise KeyError(case_id)

    def summary(self) -> str:
        return (
            f"{self.name} on {self.target}: {self.pass_count} of {len(self.results)} cases passed, "
            f"score {self.score:.2f}"
        )

    def table(self) -> str:
        """The report as plain text for a terminal: a line per case, its failed checks below it, and a summary."""
        width = max([4, *(len(r.case_id) for r in self.results)])
        lines = [f"{'case':<{width}}  result  score  checks", f"{'-' * width}  ------  -----  ------"]
        for r in self.results:
            checks = r.checks
            passed = sum(c.passed for c in checks)
            verdict = "pass" if r.passed else "FAIL"
            lines.append(f"{r.case_id:<{width}}  {verdict:<6}  {r.score:5.2f}  {passed}/{len(checks)}")
            lines += [f"{'':<{width}}    {_line(f)}" for f in r.failures()]
        lines.append(self.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "target": self.target,
            "judge": self.judge,
            "passed": self.passed,
            "pass_count": self.pass_count,
            "cases": len(self.results),
            "score": round(self.score, 4),
            "results": [r.to_dict() for r in self.results],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent, default=repr)

    def to_html(self) -> str:
        """A page that needs nothing else (no script, no stylesheet to fetch): a summary, a row per case, and each
        turn's answer, calls and checks. Every text from a run or the set is escaped."""
        rows = "\n".join(_case_html(r) for r in self.results)
        judge = f" · judge {_e(self.judge)}" if self.judge else ""
        body = (
            f"<h1>{_e(self.name)}</h1>\n<p class=summary>{_e(self.summary())}{judge}</p>\n"
            f"<table>\n<tr><th>case</th><th>result</th><th>score</th><th>turns</th></tr>\n{rows}\n</table>"
        )
        return _page(f"eval {self.name}", body)


def _line(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


_STYLE = (
    "body{font:14px system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;width:100%}"
    "td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;text-align:left}"
    ".pass{color:#176f2c;font-weight:600}.fail{color:#b3261e;font-weight:600}pre{white-space:pre-wrap;margin:0}"
    "ul{margin:0;padding-left:1.2em}.summary{font-size:16px}"
)


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{_e(title)}</title>\n'
        f"<style>{_STYLE}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


def _verdict_html(passed: bool) -> str:
    return '<span class="pass">pass</span>' if passed else '<span class="fail">FAIL</span>'


def _case_html(result: CaseResult) -> str:
    turns = []
    for t in result.turns:
        calls = ", ".join(_e(u) for u in t.tool_uses) or "no tool calls"
        checks = (
            "".join(f"<li>{_verdict_html(c.passed)} {_e(c.name)}: {_e(c.reason)}</li>" for c in t.checks)
            or "<li>no checks</li>"
        )
        waited = " (stopped for a person)" if t.interrupted else ""
        turns.append(
            f"<p><b>user:</b> {_e(t.input)}</p><pre>{_e(t.answer)}</pre><p><b>calls:</b> {calls}{waited}</p>"
            f"<ul>{checks}</ul>"
        )
    error = f'<p class="fail">{_e(result.error)}</p>' if result.error else ""
    return (
        f"<tr><td>{_e(result.case_id)}</td><td>{_verdict_html(result.passed)}</td><td>{result.score:.2f}</td>"
        f"<td>{error}{''.join(turns)}</td></tr>"
    )


# -- comparing two reports ------------------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True, kw_only=True)
class ComparisonRow:
    """One case in two reports: its results in each (None where it did not run) and what changed."""

    case_id: str
    a: CaseResult | None
    b: CaseResult | None

    @property
    def change(self) -> str:
        """``fixed`` (fails in a, passes in b), ``broken`` (the other way), ``same``, or ``only in a`` / ``only in
        b``."""
        if self.a is None or self.b is None:
            return "only in b" if self.a is None else "only in a"
        if self.a.passed == self.b.passed:
            return "same"
        return "fixed" if self.b.passed else "broken"


@dataclass(slots=True, frozen=True, kw_only=True)
class Comparison:
    """Reports ``a`` and ``b`` of one eval set side by side, a row per case (a's order, then b's new ones)."""

    a: EvalReport
    b: EvalReport
    rows: tuple[ComparisonRow, ...] = field(default=())

    def table(self) -> str:
        """Both reports case by case, as plain text: each side's result and score, and what changed."""
        width = max([4, *(len(r.case_id) for r in self.rows)])
        side = max(12, len(self.a.target), len(self.b.target))
        lines = [
            f"{'case':<{width}}  {self.a.target:<{side}}  {self.b.target:<{side}}  change",
            f"{'-' * width}  {'-' * side}  {'-' * side}  ------",
        ]
        for row in self.rows:
            lines.append(f"{row.case_id:<{width}}  {_cell(row.a):<{side}}  {_cell(row.b):<{side}}  {row.change}")
        for report in (self.a, self.b):
            lines.append(report.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a.to_dict(),
            "b": self.b.to_dict(),
            "rows": [
                {
                    "case_id": r.case_id,
                    "a": None if r.a is None else {"passed": r.a.passed, "score": round(r.a.score, 4)},
                    "b": None if r.b is None else {"passed": r.b.passed, "score": round(r.b.score, 4)},
                    "change": r.change,
                }
                for r in self.rows
            ],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent, default=repr)

    def to_html(self) -> str:
        """Both reports on one self-contained page: the side-by-side table, then each report in full."""
        head = f"<tr><th>case</th><th>{_e(self.a.target)}</th><th>{_e(self.b.target)}</th><th>change</th></tr>"
        rows = "\n".join(
            f"<tr><td>{_e(r.case_id)}</td><td>{_e(_cell(r.a))}</td><td>{_e(_cell(r.b))}</td><td>{_e(r.change)}</td></tr>"
            for r in self.rows
        )
        sides = "".join(
            f"<h2>{_e(rep.target)}</h2><p class=summary>{_e(rep.summary())}</p><table>"
            f"<tr><th>case</th><th>result</th><th>score</th><th>turns</th></tr>"
            f"{''.join(_case_html(r) for r in rep.results)}</table>"
            for rep in (self.a, self.b)
        )
        body = (
            f"<h1>{_e(self.a.name)}: {_e(self.a.target)} vs {_e(self.b.target)}</h1><table>{head}{rows}</table>{sides}"
        )
        return _page(f"eval {self.a.name}: comparison", body)


def _cell(result: CaseResult | None) -> str:
    if result is None:
        return "-"
    return f"{'pass' if result.passed else 'FAIL'} {result.score:.2f}"


def compare(a: EvalReport, b: EvalReport) -> Comparison:
    """``a`` and ``b`` (two agents, or two versions of one, on the same eval set) side by side."""
    ids: list[str] = [r.case_id for r in a.results]
    ids += [r.case_id for r in b.results if r.case_id not in set(ids)]
    rows = tuple(ComparisonRow(case_id=i, a=_find(a.results, i), b=_find(b.results, i)) for i in ids)
    return Comparison(a=a, b=b, rows=rows)


def _find(results: Sequence[CaseResult], case_id: str) -> CaseResult | None:
    return next((r for r in results if r.case_id == case_id), None)
