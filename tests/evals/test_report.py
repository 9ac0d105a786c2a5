"""Reports: a terminal table with each failed check under its case, JSON, a self-contained HTML page with every
text escaped, and two reports compared case by case."""

from __future__ import annotations

import json

from batonflow.evals import CaseResult, CheckResult, EvalReport, ToolUse, TurnResult, compare


def _turn(passed: bool, answer: str = "Refunded.") -> TurnResult:
    check = CheckResult(
        name="contains 'Refunded'",
        passed=passed,
        score=float(passed),
        reason="ok" if passed else "expected an answer containing 'Refunded', got 'No.'",
    )
    return TurnResult(
        input="Refund 1042",
        answer=answer,
        tool_uses=(ToolUse(name="issue_refund", args={"order_id": "1042"}),),
        checks=(check,),
    )


def report(target: str = "v1", *, refund: bool = True, complaint: bool = False) -> EvalReport:
    return EvalReport(
        name="shop",
        target=target,
        results=(
            CaseResult(case_id="refund", turns=(_turn(refund),)),
            CaseResult(case_id="complaint", turns=(_turn(complaint, "No."),)),
            CaseResult(case_id="broken", error="RuntimeError: the model is down"),
        ),
    )


def test_the_table_has_a_line_per_case_the_failures_under_it_and_a_summary() -> None:
    assert report().table() == "\n".join(
        [
            "case       result  score  checks",
            "---------  ------  -----  ------",
            "refund     pass     1.00  1/1",
            "complaint  FAIL     0.00  0/1",
            "             turn 1: contains 'Refunded': expected an answer containing 'Refunded', got 'No.'",
            "broken     FAIL     0.00  0/0",
            "             error: RuntimeError: the model is down",
            "shop on v1: 1 of 3 cases passed, score 0.33",
        ]
    )


def test_json_holds_every_turn_call_and_check() -> None:
    data = json.loads(report().to_json())

    assert {k: data[k] for k in ("name", "target", "passed", "pass_count", "cases", "score")} == {
        "name": "shop",
        "target": "v1",
        "passed": False,
        "pass_count": 1,
        "cases": 3,
        "score": 0.3333,
    }
    refund = data["results"][0]
    assert refund["turns"][0]["tool_uses"] == [{"name": "issue_refund", "args": {"order_id": "1042"}}]
    assert refund["turns"][0]["checks"] == [
        {"name": "contains 'Refunded'", "passed": True, "score": 1.0, "reason": "ok"}
    ]
    assert data["results"][2]["error"] == "RuntimeError: the model is down"


def test_html_is_one_page_with_every_text_escaped() -> None:
    hostile = EvalReport(
        name="<shop>",
        target="v1",
        results=(
            CaseResult(case_id="<script>alert(1)</script>", turns=(_turn(False, '<img src=x onerror="alert(2)">'),)),
        ),
    )

    page = hostile.to_html()

    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=&quot;alert(2)&quot;&gt;" in page
    assert "<title>eval &lt;shop&gt;</title>" in page
    assert "<link" not in page and "http" not in page


def test_compare_sets_two_reports_side_by_side() -> None:
    a = report("v1", refund=True, complaint=False)
    b = EvalReport(
        name="shop",
        target="v2",
        results=(*report("v2", refund=False, complaint=True).results[:2], CaseResult(case_id="new")),
    )

    comparison = compare(a, b)

    assert [(r.case_id, r.change) for r in comparison.rows] == [
        ("refund", "broken"),
        ("complaint", "fixed"),
        ("broken", "only in a"),
        ("new", "only in b"),
    ]
    assert comparison.table() == "\n".join(
        [
            "case       v1            v2            change",
            "---------  ------------  ------------  ------",
            "refund     pass 1.00     FAIL 0.00     broken",
            "complaint  FAIL 0.00     pass 1.00     fixed",
            "broken     FAIL 0.00     -             only in a",
            "new        -             pass 1.00     only in b",
            "shop on v1: 1 of 3 cases passed, score 0.33",
            "shop on v2: 2 of 3 cases passed, score 0.67",
        ]
    )
    data = json.loads(comparison.to_json())
    assert data["rows"][0] == {
        "case_id": "refund",
        "a": {"passed": True, "score": 1.0},
        "b": {"passed": False, "score": 0.0},
        "change": "broken",
    }
    assert data["a"]["target"] == "v1" and data["b"]["target"] == "v2"
    page = comparison.to_html()
    assert page.startswith("<!DOCTYPE html>") and "<h1>shop: v1 vs v2</h1>" in page


def test_same_results_are_same() -> None:
    assert {r.change for r in compare(report(), report("v1b")).rows} == {"same"}
