"""``POST /agui/{agent}`` of ``create_app(agui=True)``: every event it sends parsed back with the ``ag-ui-protocol``
package's own models and checked for the protocol's order; text, tool calls, state, steps, an interrupt and its
resume, failures, and the refusals of bad input in the API's error body."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from ag_ui.core import (
    BaseEvent,
    EventType,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    TextMessageContentEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from batonflow.server import create_app
from batonflow.testing import FunctionModel

from .agui_checks import approvals, check_order, echo, failing, parsed, refunds, router, run_input, shopper, types


def client(*agents: Any, **options: Any) -> httpx.AsyncClient:
    app = create_app(list(agents) or [echo()], agui=True, **options)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app")


async def run(http: httpx.AsyncClient, agent: str, body: dict[str, Any]) -> list[BaseEvent]:
    answer = await http.post(f"/agui/{agent}", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/event-stream")
    events = parsed(answer.text)
    check_order(events)
    return events


def finished(events: list[BaseEvent]) -> RunFinishedEvent:
    assert isinstance(events[-1], RunFinishedEvent)
    return events[-1]


async def test_a_run_streams_its_answer_as_text_message_deltas_between_run_started_and_finished() -> None:
    async with client() as http:
        events = await run(http, "echo", run_input("thread-1", "run-1", "one two three"))
    assert types(events) == [
        "RUN_STARTED",
        "STATE_SNAPSHOT",
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]
    deltas = [e.delta for e in events if isinstance(e, TextMessageContentEvent)]
    assert "".join(deltas) == "echo: one two three"
    end = finished(events)
    assert (end.thread_id, end.run_id) == ("thread-1", "run-1")
    assert end.outcome is not None and end.outcome.type == "success"
    assert end.result["text"] == "echo: one two three"


async def test_a_thread_is_a_conversation_whose_next_run_takes_only_the_messages_after_the_last_answer() -> None:
    model = FunctionModel(lambda messages, tools: echo_of(messages))
    async with client(echo(model)) as http:
        await run(http, "echo", run_input("thread-2", "run-1", "first"))
        again = run_input("thread-2", "run-2", "first")
        again["messages"] += [
            {"id": "a1", "role": "assistant", "content": "seen 1: first"},
            {"id": "u2", "role": "user", "content": "second"},
        ]
        events = await run(http, "echo", again)
    assert finished(events).result["text"] == "seen 3: second"  # first, its answer, second: no message twice
    assert [m.content for m in model.requests[-1].messages if m.role != "system"] == [
        "first",
        "seen 1: first",
        "second",
    ]


def echo_of(messages: Any) -> Any:
    from batonflow.schema import assistant

    said = [m for m in messages if m.role != "system"]
    return assistant(f"seen {len(said)}: {said[-1].content}")


async def test_tool_calls_are_start_args_end_and_their_answers_results_and_state_a_snapshot_then_a_delta() -> None:
    async with client(shopper()) as http:
        events = await run(http, "shopper", run_input("thread-3", "run-1", "a pear", state={"cart": ["apple"]}))
    assert types(events)[3:7] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    start = next(e for e in events if isinstance(e, ToolCallStartEvent))
    result = next(e for e in events if isinstance(e, ToolCallResultEvent))
    assert (start.tool_call_name, result.tool_call_id, result.content) == ("add_to_cart", start.tool_call_id, "2 items")
    snapshot = next(e for e in events if isinstance(e, StateSnapshotEvent))
    delta = next(e for e in events if isinstance(e, StateDeltaEvent))
    assert snapshot.snapshot == {"cart": ["apple"]}
    patch = [op.model_dump(exclude_none=True) for op in delta.delta]
    assert patch == [
        {"op": "replace", "path": "/cart", "value": ["apple", "pear"]},
        {"op": "add", "path": "/count", "value": 2},
    ]
    assert applied(snapshot.snapshot, patch) == {"cart": ["apple", "pear"], "count": 2}


def applied(state: dict[str, Any], patch: list[dict[str, Any]]) -> dict[str, Any]:
    """``patch`` applied to ``state`` (the top-level add, replace and remove this endpoint makes)."""
    out = dict(state)
    for op in patch:
        key = op["path"][1:].replace("~1", "/").replace("~0", "~")
        if op["op"] == "remove":
            del out[key]
        else:
            out[key] = op["value"]
    return out


async def test_a_transfer_is_a_step_per_agent_and_the_transfer_call_is_answered() -> None:
    async with client(router()) as http:
        events = await run(http, "router", run_input("thread-4", "run-1", "refund please"))
    steps = [(e.type.value, e.step_name) for e in events if e.type in (EventType.STEP_STARTED, EventType.STEP_FINISHED)]
    assert steps == [
        ("STEP_STARTED", "router"),
        ("STEP_FINISHED", "router"),
        ("STEP_STARTED", "refunds"),
        ("STEP_FINISHED", "refunds"),
    ]
    transfer = next(e for e in events if isinstance(e, ToolCallStartEvent))
    answer = next(e for e in events if isinstance(e, ToolCallResultEvent))
    assert (transfer.tool_call_name, answer.tool_call_id, answer.content) == (
        "transfer_to_agent",
        transfer.tool_call_id,
        "transferred to refunds",
    )


async def test_an_interrupt_ends_the_run_with_the_interrupt_outcome_and_resume_entries_answer_it() -> None:
    async with client(refunds()) as http:
        paused = finished(await run(http, "refunds", run_input("thread-5", "run-1", "refund")))
        assert paused.outcome is not None and paused.outcome.type == "interrupt"
        [asked] = paused.outcome.interrupts
        assert (asked.reason, asked.message) == ("question", '{"approve_refund": 42}')
        assert asked.metadata is not None and asked.metadata["batonflow"]["info"] == {"approve_refund": 42}
        assert paused.result["interrupt_ids"] == [asked.id] and paused.result["checkpoint_id"] == "thread-5"
        listed = (await http.get("/checkpoints")).json()["checkpoints"]
        resume = [{"interruptId": asked.id, "status": "resolved", "payload": "yes"}]
        events = await run(http, "refunds", run_input("thread-5", "run-2", "refund", resume=resume))
    assert [entry["session_id"] for entry in listed] == ["thread-5"]
    end = finished(events)
    assert (end.run_id, end.result["text"]) == ("run-2", "order 42: refunded")
    assert end.outcome is not None and end.outcome.type == "success"
    assert [e.content for e in events if isinstance(e, ToolCallResultEvent)] == ["refunded"]


async def test_the_interrupt_names_the_tool_call_that_asked() -> None:
    async with client(refunds()) as http:
        events = await run(http, "refunds", run_input("thread-11", "run-1", "refund"))
    call = next(e for e in events if isinstance(e, ToolCallStartEvent))
    outcome = finished(events).outcome
    assert outcome is not None and outcome.type == "interrupt"
    assert [i.tool_call_id for i in outcome.interrupts] == [call.tool_call_id]


async def test_an_approval_is_the_approval_reason_and_its_payload_a_decision_per_call() -> None:
    async with client(approvals()) as http:
        paused = finished(await run(http, "support", run_input("thread-12", "run-1", "refund 1 and 2")))
        assert paused.outcome is not None and paused.outcome.type == "interrupt"
        [asked] = paused.outcome.interrupts
        decisions = {"call_1": {"action": "approve"}, "call_2": {"action": "reject", "comment": "needs a manager"}}
        bad = [{"interruptId": asked.id, "status": "resolved", "payload": {"call_1": {"action": "maybe"}}}]
        refused = await http.post("/agui/support", json=run_input("thread-12", "run-2", resume=bad))
        good = [{"interruptId": asked.id, "status": "resolved", "payload": decisions}]
        done = finished(await run(http, "support", run_input("thread-12", "run-3", resume=good)))
    assert asked.reason == "approval" and asked.tool_call_id is None  # two calls wait: the metadata names them
    assert asked.metadata is not None
    assert [t["call_id"] for t in asked.metadata["batonflow"]["info"]["tasks"]] == ["call_1", "call_2"]
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_decision")
    assert done.result["text"] == "refunded 1 / needs a manager"


async def test_a_failed_run_ends_with_run_error_naming_the_error() -> None:
    async with client(failing()) as http:
        events = await run(http, "broken", run_input("thread-6", "run-1", "x"))
    error = events[-1]
    assert isinstance(error, RunErrorEvent)
    assert error.code == "ModelError"
    assert error.message.startswith("ModelError: provider down")
    assert not any(e.type == EventType.RUN_FINISHED for e in events)


async def test_a_body_that_is_no_run_agent_input_is_a_422_and_text_that_is_not_json_a_400() -> None:
    async with client() as http:
        off = await http.post("/agui/echo", json={"threadId": 1, "messages": "hello"})
        broken = await http.post("/agui/echo", content=b"{not json", headers={"content-type": "application/json"})
    assert off.status_code == 422
    assert off.json()["error"]["code"] == "invalid_request"
    assert "runId: Field required" in off.json()["error"]["message"]
    assert (broken.status_code, broken.json()["error"]["code"]) == (400, "malformed_json")
    with pytest.raises(ValueError, match="runId"):
        RunAgentInput.model_validate({"threadId": "t", "messages": []})  # the package's model refuses it too


async def test_an_unknown_agent_is_a_404_in_the_api_s_error_body() -> None:
    async with client() as http:
        answer = await http.post("/agui/nobody", json=run_input("thread-7", "run-1", "x"))
    assert answer.status_code == 404
    assert answer.json()["error"] == {
        "code": "unknown_agent",
        "message": "agent: expected one of ['echo'], got 'nobody'",
        "expected": ["echo"],
        "found": "nobody",
    }


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        (run_input("thread-8", "run-1"), 422, "empty_input"),
        (run_input("thread-8", "run-1", "x", state=[1, 2]), 422, "invalid_state"),
        (run_input("thread-8", "run-1", resume=[{"interruptId": "i", "status": "resolved"}]), 409, "nothing_pending"),
        (
            run_input("thread-8", "run-1", resume=[{"interruptId": "i", "status": "cancelled"}]),
            422,
            "cancelled_interrupt",
        ),
        (run_input("", "run-1", "x"), 422, "invalid_thread_id"),
    ],
)
async def test_input_the_endpoint_cannot_run_is_refused_saying_what_was_expected(
    body: dict[str, Any], status: int, code: str
) -> None:
    async with client() as http:
        answer = await http.post("/agui/echo", json=body)
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
    assert "expected" in answer.json()["error"]["message"]


async def test_a_resume_answering_another_interrupt_is_refused() -> None:
    async with client(refunds()) as http:
        await run(http, "refunds", run_input("thread-9", "run-1", "refund"))
        resume = [{"interruptId": "no-such-interrupt", "status": "resolved", "payload": "yes"}]
        answer = await http.post("/agui/refunds", json=run_input("thread-9", "run-2", resume=resume))
    assert answer.status_code == 422, answer.text


async def test_the_endpoint_is_there_only_when_asked_for_and_behind_the_token() -> None:
    plain = httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app([echo()])), base_url="http://app")
    async with plain as http:
        absent = await http.post("/agui/echo", json=run_input("thread-10", "run-1", "x"))
    async with client(auth_token="secret") as http:
        refused = await http.post("/agui/echo", json=run_input("thread-10", "run-1", "x"))
        let_in = await http.post(
            "/agui/echo", json=run_input("thread-10", "run-1", "x"), headers={"Authorization": "Bearer secret"}
        )
    assert absent.status_code == 404
    assert refused.status_code == 401
    assert let_in.status_code == 200 and parsed(let_in.text)[-1].type == EventType.RUN_FINISHED
