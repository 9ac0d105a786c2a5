"""The HTTP API against the real app: httpx's ASGI transport, and a real uvicorn on loopback where it takes one."""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from batonflow import ChatModelAgent, MemoryCheckpointStore, ModelError, UserError
from batonflow.distributed import InProcessBackend
from batonflow.errors import BackendUnavailableError
from batonflow.server import ServerLimits, create_app
from batonflow.testing import FunctionModel

from . import apps
from .conftest import asgi_client, eventually, parse_sse, run_tasks, serving


def app(**kwargs: Any) -> Any:
    return create_app([apps.echo(), apps.refunds(), apps.router()], **kwargs)


def failing() -> ChatModelAgent:
    def fail(messages: Any, tools: Any) -> Any:
        raise ModelError("provider down: expected an answer, got a 503")

    return ChatModelAgent(name="broken", description="Fails.", model=FunctionModel(fail))


async def test_lists_the_agents_with_their_descriptions_and_trees() -> None:
    async with asgi_client(app()) as client:
        answer = await client.get("/agents")
    assert answer.status_code == 200
    assert answer.json()["agents"] == [
        {"name": "echo", "description": "Says back what it was told.", "tree": ["echo"]},
        {"name": "refunds", "description": "Refunds orders.", "tree": ["refunds"]},
        {"name": "router", "description": "Routes requests.", "tree": ["router", "refunds"]},
    ]


async def test_a_run_answers_its_result_as_json() -> None:
    async with asgi_client(app()) as client:
        answer = await client.post("/runs", json={"agent": "echo", "input": "hello"})
    body = answer.json()
    assert answer.status_code == 200
    assert (body["status"], body["text"], body["error"]) == ("completed", "echo: hello", None)
    assert [e["message"]["content"] for e in body["events"]] == ["echo: hello"]


async def test_a_streamed_run_sends_one_frame_per_event_with_its_seq_and_the_deltas() -> None:
    async with asgi_client(app()) as client:
        answer = await client.post("/runs", json={"agent": "echo", "input": "one two three", "stream": True})
    frames = parse_sse(answer.text)
    assert answer.headers["content-type"].startswith("text/event-stream")
    assert [f.event for f in frames] == ["run", "message_start", "delta", "delta", "delta", "delta", "message", "end"]
    ids = [f.id for f in frames]  # the records' ids in the run's event log: '<n>-0', in order
    assert all(re.fullmatch(r"\d+-0", i) for i in ids) and ids == sorted(ids, key=lambda i: int(i[:-2]))
    assert len(set(ids)) == len(ids)
    assert "".join(f.data["content"] for f in frames if f.event == "delta") == "echo: one two three"
    assert frames[-2].data["message"]["content"] == "echo: one two three"
    assert frames[-1].data["status"] == "completed"
    assert "trace" not in [f.event for f in frames]


async def test_trace_events_come_in_the_stream_when_asked_for() -> None:
    async with asgi_client(app()) as client:
        answer = await client.post("/runs", json={"agent": "echo", "input": "hi", "stream": True, "trace": True})
    kinds = [f.data["kind"] for f in parse_sse(answer.text) if f.event == "trace"]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end" and "reason_end" in kinds


async def test_a_run_s_values_come_as_its_state_before_its_end_bounded_for_people_to_read() -> None:
    values = {f"k{i:03}": i for i in range(101)} | {"k000": "x" * 3_000, "k001": {"nested": [1, 2]}}
    async with asgi_client(app()) as client:
        body = {"agent": "echo", "input": "hi", "stream": True, "session_values": values}
        frames = parse_sse((await client.post("/runs", json=body)).text)
        plain = parse_sse((await client.post("/runs", json={"agent": "echo", "input": "hi", "stream": True})).text)
    assert [f.event for f in frames][-2:] == ["state", "end"]
    state = frames[-2].data
    assert (state["run_id"], state["more"]) == (frames[-1].data["run_id"], 1)  # 100 kept, the 101st counted
    assert list(state["values"]) == [f"k{i:03}" for i in range(100)]
    assert state["values"]["k000"] == f'"{"x" * 1_998}…' and state["values"]["k001"] == {"nested": [1, 2]}
    assert "state" not in [f.event for f in plain]  # a run that holds no values sends none


async def test_a_failing_run_reports_its_error_in_band_and_in_its_result() -> None:
    server = create_app([failing()])
    async with asgi_client(server) as client:
        streamed = await client.post("/runs", json={"agent": "broken", "input": "hi", "stream": True})
        plain = await client.post("/runs", json={"agent": "broken", "input": "hi"})
    errors = [f for f in parse_sse(streamed.text) if f.event == "error"]
    assert streamed.status_code == 200 and len(errors) == 1
    assert errors[0].data["error"]["type"] == "ModelError"
    assert plain.json()["status"] == "failed"
    assert "provider down" in plain.json()["error"]["message"]


async def test_an_interrupted_run_is_listed_resumed_with_its_targets_and_then_forgotten() -> None:
    async with asgi_client(app()) as client:
        first = (await client.post("/runs", json={"agent": "router", "input": "refund 42"})).json()
        listed = (await client.get("/checkpoints")).json()["checkpoints"]
        checkpoint_id, interrupt = first["checkpoint_id"], first["interrupts"][0]
        wrong = await client.post(f"/checkpoints/{checkpoint_id}/resume", json={"targets": {"nope": "yes"}})
        resumed = await client.post(f"/checkpoints/{checkpoint_id}/resume", json={"targets": {interrupt["id"]: "yes"}})
        after = (await client.get("/checkpoints")).json()["checkpoints"]
        again = await client.post(f"/checkpoints/{checkpoint_id}/resume", json={"targets": {}})
    assert first["status"] == "interrupted" and interrupt["info"] == {"approve_refund": 42}
    assert [(c["checkpoint_id"], c["interrupts"]) for c in listed] == [(checkpoint_id, [interrupt])]
    assert wrong.status_code == 422
    assert wrong.json()["error"] == {
        "code": "unknown_targets",
        "message": f"targets: expected interrupt ids among ['{interrupt['id']}'], got [\"'nope'\"], which match no interrupt",
        "expected": [interrupt["id"]],
        "found": ["nope"],
    }
    assert (resumed.json()["status"], resumed.json()["text"]) == ("completed", "order 42: refunded")
    assert after == []
    # Another answer to the pause the resume answered: refused, naming the winner and how it ended.
    assert (again.status_code, again.json()["error"]["code"]) == (409, "resume_conflict")
    assert again.json()["error"]["found"]["run_id"] == resumed.json()["run_id"]
    assert again.json()["error"]["found"]["status"] == "completed" and again.json()["error"]["found"]["ended"]


async def test_a_checkpoint_the_server_did_not_make_resumes_with_its_agent_named() -> None:
    store = MemoryCheckpointStore()
    first = create_app([apps.refunds()], checkpoint_store=store)
    async with asgi_client(first) as client:
        started = (await client.post("/runs", json={"agent": "refunds", "input": "x", "checkpoint_id": "c1"})).json()
    second = create_app([apps.refunds()], checkpoint_store=store)  # another process, say
    async with asgi_client(second) as client:
        anonymous = await client.post("/checkpoints/c1/resume", json={"targets": {}})
        missing = await client.post("/checkpoints/c2/resume", json={"targets": {}, "agent": "refunds"})
        target = started["interrupts"][0]["id"]
        resumed = await client.post("/checkpoints/c1/resume", json={"targets": {target: "no"}, "agent": "refunds"})
    assert anonymous.status_code == 404 and "name its agent" in anonymous.json()["error"]["message"]
    assert missing.status_code == 404 and "holds no such checkpoint" in missing.json()["error"]["message"]
    assert resumed.json()["text"] == "order 42: not refunded"


async def test_a_conversation_keeps_its_messages_resumes_its_pending_run_and_can_be_deleted() -> None:
    async with asgi_client(app()) as client:
        await client.post("/runs", json={"agent": "echo", "input": "one", "session_id": "s1"})
        await client.post("/runs", json={"agent": "echo", "input": "two", "session_id": "s1"})
        waiting = (await client.post("/runs", json={"agent": "refunds", "input": "r", "session_id": "s2"})).json()
        pending = (await client.get("/checkpoints/s2")).json()
        nothing = await client.post("/runs", json={"agent": "echo", "session_id": "s1"})
        target = waiting["interrupts"][0]["id"]
        resumed = (
            await client.post("/runs", json={"agent": "refunds", "session_id": "s2", "targets": {target: "yes"}})
        ).json()
        listed = (await client.get("/sessions")).json()["sessions"]
        s1 = (await client.get("/sessions/s1")).json()
        deleted = await client.delete("/sessions/s1")
        gone = await client.get("/sessions/s1")
    assert [m["content"] for m in s1["messages"]] == ["one", "echo: one", "two", "echo: two"]
    assert s1["pending"] is False
    assert (waiting["status"], waiting["session_id"], pending["session_id"]) == ("interrupted", "s2", "s2")
    assert nothing.status_code == 409 and nothing.json()["error"]["code"] == "nothing_pending"
    assert (resumed["status"], resumed["text"]) == ("completed", "order 42: refunded")
    assert listed == ["s1", "s2"]
    assert deleted.status_code == 204
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "unknown_session"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"agent": "nope", "input": "x"}, 404, "unknown_agent"),
        ({"agent": "echo"}, 422, "empty_input"),
        ({"agent": "echo", "input": "x", "extra": 1}, 422, "invalid_request"),
        ({"agent": "echo", "input": [{"role": "user", "content": "x"}] * 3}, 422, "too_many_messages"),
        ({"agent": "echo", "input": "x" * 11}, 422, "message_too_long"),
        ({"agent": "echo", "input": "x", "checkpoint_id": "a\x00b"}, 422, "invalid_checkpoint_id"),
        ({"agent": "echo", "input": "x", "targets": {"i": 1}}, 422, "targets_without_resume"),
        ({"agent": "echo", "input": "x", "session_id": "s", "checkpoint_id": "c"}, 422, "checkpoint_with_session"),
    ],
)
async def test_bad_run_requests_get_a_4xx_that_says_what_was_expected(body: Any, status: int, code: str) -> None:
    limits = ServerLimits(max_messages=2, max_message_chars=10)
    async with asgi_client(app(limits=limits)) as client:
        answer = await client.post("/runs", json=body)
    error = answer.json()["error"]
    assert (answer.status_code, error["code"]) == (status, code)
    assert "expected" in error["message"] or code == "invalid_checkpoint_id"
    assert error["expected"] is not None and error["found"] is not None


async def test_malformed_json_is_a_400_that_shows_what_came() -> None:
    async with asgi_client(app()) as client:
        answer = await client.post("/runs", content=b'{"agent": ', headers={"content-type": "application/json"})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "malformed_json"
    assert answer.json()["error"]["found"] == "'{\"agent\": '"


async def test_a_taken_checkpoint_id_is_refused() -> None:
    async with asgi_client(app()) as client:
        await client.post("/runs", json={"agent": "refunds", "input": "x", "checkpoint_id": "taken"})
        answer = await client.post("/runs", json={"agent": "echo", "input": "x", "checkpoint_id": "taken"})
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "checkpoint_exists"


async def test_a_body_over_the_limit_is_a_413_by_length_or_as_it_streams() -> None:
    async with asgi_client(app(limits=ServerLimits(max_body_bytes=100))) as client:
        declared = await client.post("/runs", json={"agent": "echo", "input": "x" * 200})

        async def chunks() -> Any:
            for _ in range(5):
                yield b"x" * 30

        streamed = await client.post("/runs", content=chunks(), headers={"content-type": "application/json"})
    assert declared.status_code == 413
    assert declared.json()["error"]["message"].startswith("request body: expected at most 100 bytes, got ")
    assert streamed.status_code == 413 and streamed.json()["error"]["found"] == "more than 119 bytes"


async def test_the_bearer_token_is_required_except_for_health() -> None:
    async with asgi_client(app(auth_token="s3cret")) as client:
        missing = await client.get("/agents")
        wrong = await client.get("/agents", headers={"Authorization": "Bearer nope"})
        right = await client.get("/agents", headers={"Authorization": "Bearer s3cret"})
        health = await client.get("/health")
    assert (missing.status_code, missing.json()["error"]["code"]) == (401, "missing_token")
    assert missing.headers["www-authenticate"] == "Bearer"
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "wrong_token")
    assert "nope" not in wrong.text
    assert right.status_code == 200 and health.status_code == 200


async def test_cors_lets_the_listed_origins_in() -> None:
    async with asgi_client(app(cors=["http://ui.example"])) as client:
        allowed = await client.options(
            "/runs",
            headers={
                "Origin": "http://ui.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization,last-event-id",
            },
        )
        other = await client.get("/health", headers={"Origin": "http://evil.example"})
    assert allowed.status_code == 200
    assert allowed.headers["access-control-allow-origin"] == "http://ui.example"
    assert "access-control-allow-origin" not in other.headers


async def test_reconnecting_with_last_event_id_replays_what_came_after_it() -> None:
    async with asgi_client(app()) as client:
        first = await client.post("/runs", json={"agent": "echo", "input": "a b", "stream": True})
        frames = parse_sse(first.text)
        run_id = frames[0].data["run_id"]
        replay = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": frames[2].id})
        garbage = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "abc"})
        old_form = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "1.1"})
        future = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "999999-0"})
        unknown = await client.get("/runs/run-nope/events")
    assert [(f.id, f.event, f.data) for f in parse_sse(replay.text)] == [(f.id, f.event, f.data) for f in frames[3:]]
    assert (garbage.status_code, garbage.json()["error"]["code"]) == (400, "invalid_event_id")
    assert garbage.json()["error"]["message"] == (
        "Last-Event-ID: expected a record id such as '42-0' or '1733059200000-0', got 'abc'"
    )
    assert (old_form.status_code, old_form.json()["error"]["code"]) == (400, "invalid_event_id")
    assert (future.status_code, future.json()["error"]["code"]) == (400, "future_event_id")
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "unknown_run"


def _kept(server: Any, run_key: str) -> list[str]:
    """The ids of the records the app's event log keeps of ``run_key``."""
    return [record.stream_id for record in server.state.batonflow.backend.event_log.records(run_key)]


async def test_an_id_the_bounded_log_dropped_is_a_410() -> None:
    server = app(limits=ServerLimits(buffer_events=3))
    async with asgi_client(server) as client:
        body = {"agent": "echo", "input": "a b c d", "trace": True, "detached": True}  # its trace: more frames
        started = (await client.post("/runs", json=body)).json()
        run_id, run_key = started["run_id"], started["checkpoint_id"]
        await eventually(lambda: not run_tasks())
        kept = _kept(server, run_key)
        gone = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": "1-0"})
        rest = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": kept[0]})
    assert len(kept) == 3
    assert gone.status_code == 410 and gone.json()["error"]["code"] == "events_gone"
    assert [f.id for f in parse_sse(rest.text)] == kept[1:]


async def test_following_from_the_start_a_run_whose_log_dropped_its_start_is_a_410() -> None:
    server = app(limits=ServerLimits(buffer_events=2))
    async with asgi_client(server) as client:
        started = await client.post("/runs", json={"agent": "echo", "input": "a b c d", "detached": True})
        run_id, run_key = started.json()["run_id"], started.json()["checkpoint_id"]
        await eventually(lambda: not run_tasks())
        kept = _kept(server, run_key)
        gone = await client.get(f"/runs/{run_id}/events")
    assert gone.status_code == 410
    assert gone.json()["error"]["code"] == "events_gone"
    dropped = int(kept[0][:-2]) - 1
    assert gone.json()["error"]["message"] == (
        f"Last-Event-ID: events of {run_key!r}: expected a record id from {dropped}-0 on (the log keeps a run's "
        f"last 2 records; the oldest kept is {kept[0]!r}), got none (the records from the start)"
    )


async def test_a_detached_run_answers_202_and_is_followed_by_its_id() -> None:
    model = apps.Blocking()
    async with asgi_client(create_app([apps.blocking(model)])) as client:
        started = await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})
        run_id = started.json()["run_id"]
        running = (await client.get(f"/runs/{run_id}")).json()["status"]
        model.release.set()
        await eventually(lambda: not run_tasks())
        done = (await client.get(started.headers["location"])).json()
    assert started.status_code == 202 and running == "running"
    assert (done["status"], done["text"]) == ("completed", "released")


async def test_a_client_that_disconnects_cancels_its_run_and_leaves_no_task() -> None:
    model = apps.Blocking()
    server = create_app([apps.blocking(model)])
    async with serving(server) as url, httpx.AsyncClient(base_url=url) as client:
        async with client.stream("POST", "/runs", json={"agent": "slow", "input": "x", "stream": True}) as stream:
            async for line in stream.aiter_lines():
                if line.startswith("event: run"):
                    break
            await eventually(lambda: model.started == 1)
        await eventually(lambda: model.cancelled == 1)
        await eventually(lambda: not run_tasks())
        health = (await client.get("/health")).json()
    assert health["active_runs"] == 0


async def test_a_detached_stream_outlives_its_client_and_a_reconnect_gets_the_rest() -> None:
    model = apps.Blocking()
    server = create_app([apps.blocking(model)], limits=ServerLimits(heartbeat=0.02))
    async with serving(server) as url, httpx.AsyncClient(base_url=url) as client:
        body = {"agent": "slow", "input": "x", "stream": True, "detached": True}
        seen = []
        async with client.stream("POST", "/runs", json=body) as stream:
            run_id = stream.headers["x-run-id"]
            async for line in stream.aiter_lines():
                seen.append(line)
                if line.startswith(": "):  # a heartbeat while the model waits
                    break
        model.release.set()
        await eventually(lambda: not run_tasks())
        first_id = next(line[4:] for line in seen if line.startswith("id: "))  # the run frame's
        rest = await client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": first_id})
    assert model.cancelled == 0
    assert [f.event for f in parse_sse(rest.text)] == ["message_start", "delta", "message", "end"]
    assert parse_sse(rest.text)[-1].data["status"] == "completed"


async def test_cancel_stops_a_detached_run() -> None:
    model = apps.Blocking()
    async with asgi_client(create_app([apps.blocking(model)])) as client:
        run_id = (await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})).json()["run_id"]
        await eventually(lambda: model.started == 1)
        cancelled = (await client.post(f"/runs/{run_id}/cancel")).json()
    assert cancelled["status"] == "cancelled" and model.cancelled == 1 and not run_tasks()


async def test_too_many_runs_at_once_is_a_429() -> None:
    model = apps.Blocking()
    async with asgi_client(create_app([apps.blocking(model)], limits=ServerLimits(max_active_runs=1))) as client:
        await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})
        refused = await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})
        model.release.set()
        await eventually(lambda: not run_tasks())
    assert refused.status_code == 429 and refused.headers["retry-after"] == "1"


async def test_the_app_cancels_its_runs_when_it_shuts_down() -> None:
    model = apps.Blocking()
    server = create_app([apps.blocking(model)])
    async with serving(server) as url, httpx.AsyncClient(base_url=url) as client:
        await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})
        await eventually(lambda: model.started == 1)
    assert model.cancelled == 1 and not run_tasks()


class _Stalled(InProcessBackend):
    """A backend whose database does not answer (enqueueing hangs) or refuses (listing fails)."""

    async def submit(self, request: Any) -> str:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def paused(self, checkpoint_id: str | None = None) -> list[Any]:
        raise BackendUnavailableError("database at postgresql://db:5432/app: connection refused")


async def test_a_backend_that_does_not_answer_in_time_or_refuses_is_a_503_with_retry_after() -> None:
    store = MemoryCheckpointStore()
    backend = _Stalled({"echo": apps.echo()}, store)
    server = create_app(
        [apps.echo()], checkpoint_store=store, backend=backend, limits=ServerLimits(backend_timeout=0.2)
    )
    async with asgi_client(server) as client:
        stalled = await client.post("/runs", json={"agent": "echo", "input": "hi", "detached": True})
        refused = await client.get("/checkpoints")
        health = await client.get("/health")
    for answer in (stalled, refused):
        assert (answer.status_code, answer.json()["error"]["code"]) == (503, "backend_unavailable")
        assert answer.headers["retry-after"] == "2"
    assert stalled.json()["error"]["message"].startswith(
        "backend: expected an answer enqueueing the run, got none: no answer within 0.2 s"
    )
    assert "connection refused" in refused.json()["error"]["found"]
    assert health.json()["active_runs"] == 0  # nothing was started


def test_bad_configuration_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"ServerLimits.max_messages: expected an int >= 1, got 0"):
        ServerLimits(max_messages=0)
    with pytest.raises(UserError, match=r"ServerLimits.backend_timeout: expected a number of seconds > 0, got 0"):
        ServerLimits(backend_timeout=0)
    with pytest.raises(UserError, match=r"ServerLimits.backend_timeout: expected a number >= 0, got '10'"):
        ServerLimits(backend_timeout="10")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"agents: expected agents \(with a name and run\), got int"):
        create_app([1])  # type: ignore[list-item]
    with pytest.raises(UserError, match=r"agents: expected unique names, got 'echo' twice"):
        create_app([apps.echo(), apps.echo()])
    with pytest.raises(UserError, match=r"auth_token: expected a non-empty string or None, got ''"):
        create_app(apps.echo(), auth_token="")


async def test_the_openapi_document_is_published() -> None:
    async with asgi_client(app(auth_token="t")) as client:
        document = (await client.get("/openapi.json")).json()
    assert {"/runs", "/checkpoints/{checkpoint_id}/resume", "/v1/chat/completions"} <= set(document["paths"])
    assert document["paths"]["/runs"]["post"]["responses"]["422"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }


async def test_health_counts_the_runs_going() -> None:
    model = apps.Blocking()
    async with asgi_client(create_app([apps.blocking(model)])) as client:
        await client.post("/runs", json={"agent": "slow", "input": "x", "detached": True})
        await eventually(lambda: model.started == 1)
        busy = (await client.get("/health")).json()
        model.release.set()
        await eventually(lambda: not run_tasks())
    assert busy == {"status": "ok", "agents": 1, "flows": 0, "active_runs": 1, "active_evals": 0}
    await asyncio.sleep(0)


async def test_an_approval_is_answered_with_json_decisions_per_call_or_one_for_all() -> None:
    async with asgi_client(create_app([apps.approvals()])) as client:
        first = (await client.post("/runs", json={"agent": "support", "input": "refund 1 and 2"})).json()
        [interrupt] = first["interrupts"]
        url = f"/checkpoints/{first['checkpoint_id']}/resume"
        bad = await client.post(url, json={"targets": {interrupt["id"]: {"call_1": {"action": "maybe"}}}})
        decisions = {"call_1": {"action": "approve"}, "call_2": {"action": "reject", "comment": "needs a manager"}}
        resumed = (await client.post(url, json={"targets": {interrupt["id"]: decisions}})).json()
        second = (await client.post("/runs", json={"agent": "support", "input": "again"})).json()
        url = f"/checkpoints/{second['checkpoint_id']}/resume"
        all_approved = (await client.post(url, json={"targets": {second["interrupts"][0]["id"]: "approve"}})).json()
    assert interrupt["kind"] == "approval"
    assert [t["call_id"] for t in interrupt["info"]["tasks"]] == ["call_1", "call_2"]
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_decision"
    assert "one of ['approve', 'reject', 'skip']" in bad.json()["error"]["message"]
    assert resumed["status"] == "completed" and resumed["text"] == "refunded 1 / needs a manager"
    assert all_approved["text"] == "refunded 1 / refunded 2"


async def test_the_dev_ui_is_served_at_ui_without_the_token() -> None:
    async with asgi_client(app(auth_token="t")) as client:
        bare = await client.get("/ui")
        page = await client.get("/ui/")
        script = await client.get("/ui/ui.js")
    assert (bare.status_code, bare.headers["location"]) == (307, "/ui/")
    assert page.status_code == 200 and "<title>batonflow</title>" in page.text
    assert script.status_code == 200 and "Authorization" in script.text


async def test_a_client_that_leaves_before_its_json_answer_cancels_the_run() -> None:
    model = apps.Blocking()
    async with serving(create_app([apps.blocking(model)])) as url, httpx.AsyncClient(base_url=url) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.post("/runs", json={"agent": "slow", "input": "x"}, timeout=httpx.Timeout(5, read=0.3))
        await eventually(lambda: model.cancelled == 1)
        await eventually(lambda: not run_tasks())
    assert model.started == 1


async def test_a_client_that_reconnects_within_the_grace_keeps_its_run_and_one_that_does_not_loses_it() -> None:
    model = apps.Blocking()
    server = create_app([apps.blocking(model)], limits=ServerLimits(reconnect_grace=0.3, heartbeat=0.02))
    async with serving(server) as url, httpx.AsyncClient(base_url=url) as client:
        async with client.stream("POST", "/runs", json={"agent": "slow", "input": "x", "stream": True}) as stream:
            run_id = stream.headers["x-run-id"]
            first_id = None
            async for line in stream.aiter_lines():
                first_id = first_id or (line[4:] if line.startswith("id: ") else None)
                if line.startswith(": "):
                    break
        assert first_id is not None
        async with client.stream("GET", f"/runs/{run_id}/events", headers={"Last-Event-ID": first_id}) as again:
            assert again.status_code == 200
            async for line in again.aiter_lines():
                if line.startswith(": "):
                    break
            alive = model.cancelled == 0 and bool(run_tasks())
        await eventually(lambda: model.cancelled == 1)  # nobody came back this time
        await eventually(lambda: not run_tasks())
        ended = (await client.get(f"/runs/{run_id}")).json()
    assert alive
    assert ended["status"] == "cancelled"


def test_serving_in_process_imports_neither_dbos_nor_the_database_drivers() -> None:
    """The default backend and its event log live in ``batonflow.distributed``, whose extras are optional: an app
    made and run in process must not need them (``batonflow[server]`` without ``dbos``)."""
    code = (
        "import sys\n"
        "from batonflow.server import create_app\n"
        "from tests.server import apps\n"
        "create_app([apps.echo()])\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dbos', 'psycopg', 'redis', 'sqlalchemy', 'asyncpg'}))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), str(root)])}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
