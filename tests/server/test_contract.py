"""The HTTP contract, held on every backend: the in-process one (the default) and DBOS with a real worker process
and Redis events. The same requests get the same statuses and answers of the same shape: a run as JSON, as SSE
and replayed after ``Last-Event-ID``, cancelled, interrupted and resumed, listed while it waits, a conversation's
turns, and the errors (an unknown agent, run or checkpoint, a bad event id, a resume of a run being resumed)."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from tests.distributed.apps import agents
from tests.distributed.conftest import REDIS_URL, Cluster, Worker, cluster, worker  # noqa: F401 (fixtures)

from batonflow.server import create_app
from batonflow.store import SqliteCheckpointStore, SqliteSessionStore

from .conftest import asgi_client, eventually, parse_sse

SUMMARY = {"run_id", "agent", "status", "text", "checkpoint_id", "session_id", "interrupts", "error", "usage"}
RECORD_ID = re.compile(r"\d+-\d+")
WAIT = 20.0  # a guard against a hang, not a measure


class Api:
    """A client of the app of one backend, the app, and the file its tools note their side effects in."""

    def __init__(self, client: httpx.AsyncClient, effects: Path, kind: str, app: FastAPI) -> None:
        self.client = client
        self.effects = effects
        self.kind = kind
        self.app = app

    @asynccontextmanager
    async def served(self) -> AsyncIterator[httpx.AsyncClient]:
        """A client of the app on a real uvicorn on loopback (whose lifespan the fixture holds already)."""
        server = uvicorn.Server(uvicorn.Config(self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
        task = asyncio.create_task(server.serve())
        await eventually(lambda: server.started or task.done(), within=WAIT)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=WAIT) as client:
                yield client
        finally:
            server.should_exit = True
            await task

    def count(self, needle: str) -> int:
        return self.effects.read_text().count(needle) if self.effects.exists() else 0

    async def wait_for_effect(self, needle: str, times: int = 1) -> None:
        deadline = time.monotonic() + WAIT
        while self.count(needle) < times:
            assert time.monotonic() < deadline, f"no side effect {needle!r} within {WAIT} s"
            await asyncio.sleep(0.02)


@pytest.fixture(params=["inprocess", "dbos"])
async def api(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Api]:
    if request.param == "inprocess":
        effects = tmp_path / "effects"
        monkeypatch.setenv("BATONFLOW_TEST_SIDE_EFFECTS", str(effects))
        app = create_app(agents())
    else:
        from batonflow.distributed import DBOSBackend, RedisEventLog

        found: Cluster = request.getfixturevalue("cluster")
        request.getfixturevalue("worker")
        effects = found.effects
        store, sessions = SqliteCheckpointStore(found.store_path), SqliteSessionStore(found.store_path)
        backend = DBOSBackend(
            store, database_url=found.database_url, events=RedisEventLog(REDIS_URL), sessions=sessions
        )
        app = create_app(agents(), checkpoint_store=store, session_store=sessions, backend=backend)
    async with app.router.lifespan_context(app), asgi_client(app, timeout=WAIT) as client:
        yield Api(client, effects, request.param, app)


def _id() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


async def test_a_run_answers_its_summary_and_events_as_json(api: Api) -> None:
    answer = await api.client.post("/runs", json={"agent": "echo", "input": "hello"})
    body = answer.json()
    assert answer.status_code == 200
    assert set(body) == SUMMARY | {"events"}
    assert (body["status"], body["text"], body["agent"], body["error"]) == ("completed", "echo: hello", "echo", None)
    assert body["run_id"] == f"{body['checkpoint_id']}@start" and body["session_id"] is None
    assert [e["message"]["content"] for e in body["events"]] == ["echo: hello"]
    assert (await api.client.get(f"/runs/{body['run_id']}")).json() == {k: v for k, v in body.items() if k != "events"}


async def test_a_streamed_run_is_replayed_after_its_last_event_id(api: Api) -> None:
    answer = await api.client.post("/runs", json={"agent": "echo", "input": "a b", "stream": True})
    frames = parse_sse(answer.text)
    run_id = answer.headers["x-run-id"]
    assert frames[0].event == "run" and frames[0].data["run_id"] == run_id
    assert frames[-1].event == "end" and set(frames[-1].data) == SUMMARY
    assert frames[-1].data["status"] == "completed" and frames[-1].data["text"] == "echo: a b"
    assert "".join(f.data["content"] for f in frames if f.event == "delta") == "echo: a b"
    assert all(RECORD_ID.fullmatch(f.id) for f in frames)  # the log's record ids, one scheme on every backend
    again = parse_sse((await api.client.get(f"/runs/{run_id}/events")).text)
    after = parse_sse((await api.client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": frames[1].id})).text)
    assert [(f.id, f.event, f.data) for f in again] == [(f.id, f.event, f.data) for f in frames]
    assert [(f.id, f.event, f.data) for f in after] == [(f.id, f.event, f.data) for f in frames[2:]]


async def test_a_bad_or_future_last_event_id_is_a_400_that_says_why(api: Api) -> None:
    run_id = (await api.client.post("/runs", json={"agent": "echo", "input": "x"})).json()["run_id"]
    answers = {
        given: await api.client.get(f"/runs/{run_id}/events", headers={"Last-Event-ID": given})
        for given in ("abc", "7.2", "9223372036854775808-0", "9223372036854775807-0")
    }
    codes = {given: (a.status_code, a.json()["error"]["code"]) for given, a in answers.items()}
    assert codes == {
        "abc": (400, "invalid_event_id"),
        "7.2": (400, "invalid_event_id"),  # an earlier release's in-process form: refused, and why is said
        "9223372036854775808-0": (400, "invalid_event_id"),
        "9223372036854775807-0": (400, "future_event_id"),
    }
    assert answers["7.2"].json()["error"]["message"] == (
        "Last-Event-ID: expected a record id such as '42-0' or '1733059200000-0', got '7.2'"
    )


async def test_a_detached_run_is_cancelled_and_says_so_everywhere(api: Api) -> None:
    started = await api.client.post("/runs", json={"agent": "waiter", "input": "wait", "detached": True})
    run_id = started.json()["run_id"]
    assert started.status_code == 202 and set(started.json()) == SUMMARY and started.json()["status"] == "running"
    assert started.headers["location"] == f"/runs/{run_id}"
    await api.wait_for_effect("waiting")
    assert (await api.client.get(f"/runs/{run_id}")).json()["status"] == "running"
    cancelled = await api.client.post(f"/runs/{run_id}/cancel")
    assert cancelled.status_code == 200 and set(cancelled.json()) == SUMMARY
    assert cancelled.json()["status"] == "cancelled"
    frames = parse_sse((await api.client.get(f"/runs/{run_id}/events")).text)
    assert frames[-1].event == "end" and frames[-1].data["status"] == "cancelled"


async def test_an_interrupted_run_is_listed_with_its_interrupts_and_resumed_without_naming_its_agent(
    api: Api,
) -> None:
    checkpoint_id = _id()
    paused = (
        await api.client.post("/runs", json={"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id})
    ).json()
    assert paused["status"] == "interrupted" and [i["kind"] for i in paused["interrupts"]] == ["question"]
    assert paused["interrupts"] == [  # one shape on every backend, in the answer and in the listing
        {
            "id": paused["interrupts"][0]["id"],
            "address": "agent:shipper;tool:ship:call_1",
            "kind": "question",
            "info": {"approve_shipment": 7},
        }
    ]
    listed = [
        c for c in (await api.client.get("/checkpoints")).json()["checkpoints"] if c["checkpoint_id"] == checkpoint_id
    ]
    assert len(listed) == 1
    entry = listed[0]
    assert set(entry) == {"checkpoint_id", "agent", "session_id", "run_id", "created", "interrupts"}
    assert (entry["agent"], entry["run_id"], entry["session_id"]) == ("shipper", paused["run_id"], None)
    assert entry["interrupts"] == paused["interrupts"]
    assert (await api.client.get(f"/checkpoints/{checkpoint_id}")).json() == entry
    assert (await api.client.get(f"/runs/{paused['run_id']}")).json()["interrupts"] == paused["interrupts"]

    resumed = await api.client.post(
        f"/checkpoints/{checkpoint_id}/resume", json={"targets": {entry["interrupts"][0]["id"]: "yes"}}
    )
    assert resumed.status_code == 200 and set(resumed.json()) == SUMMARY | {"events"}
    assert (resumed.json()["status"], resumed.json()["text"]) == ("completed", "order 7: shipped")
    assert resumed.json()["run_id"] != paused["run_id"] and resumed.json()["run_id"].startswith(f"{checkpoint_id}@")
    left = [
        c for c in (await api.client.get("/checkpoints")).json()["checkpoints"] if c["checkpoint_id"] == checkpoint_id
    ]
    gone = await api.client.get(f"/checkpoints/{checkpoint_id}")
    assert left == [] and (gone.status_code, gone.json()["error"]["code"]) == (404, "unknown_checkpoint")


async def test_a_resumed_run_s_events_with_history_are_every_segment_in_order(api: Api) -> None:
    checkpoint_id = _id()
    body = {"agent": "shipper", "input": "ship", "checkpoint_id": checkpoint_id}
    paused = (await api.client.post("/runs", json=body)).json()
    key = paused["interrupts"][0]["id"]
    resume = f"/checkpoints/{checkpoint_id}/resume"
    resumed = (await api.client.post(resume, json={"targets": {key: "yes"}})).json()
    before = parse_sse((await api.client.get(f"/runs/{paused['run_id']}/events")).text)
    after = parse_sse((await api.client.get(f"/runs/{resumed['run_id']}/events")).text)
    whole = parse_sse((await api.client.get(f"/runs/{resumed['run_id']}/events?history=true")).text)
    assert [(f.id, f.event, f.data) for f in whole] == [(f.id, f.event, f.data) for f in before + after]
    heads = [(f.event, f.data["run_id"]) for f in whole if f.event in ("run", "end")]
    assert heads == [
        ("run", paused["run_id"]),
        ("end", paused["run_id"]),
        ("run", resumed["run_id"]),
        ("end", resumed["run_id"]),
    ]
    assert [f.data["status"] for f in whole if f.event == "end"] == ["interrupted", "completed"]
    first = parse_sse((await api.client.get(f"/runs/{paused['run_id']}/events?history=true")).text)
    assert [(f.id, f.event) for f in first] == [(f.id, f.event) for f in before]  # nothing of the later segment
    bad = await api.client.get(f"/runs/{resumed['run_id']}/events?history=maybe")
    assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_request")
    assert bad.json()["error"]["message"] == (
        "request: expected the endpoint's schema, got query.history: Input should be a valid boolean, "
        "unable to interpret input"
    )


async def test_resumes_of_one_pause_have_one_winner_a_retry_attaches_and_another_answer_is_a_409_naming_it(
    api: Api,
) -> None:
    checkpoint_id = _id()
    paused = (
        await api.client.post("/runs", json={"agent": "stepper", "input": "go", "checkpoint_id": checkpoint_id})
    ).json()
    key = paused["interrupts"][0]["id"]
    resume = f"/checkpoints/{checkpoint_id}/resume"
    first = await api.client.post(resume, json={"targets": {key: "yes"}, "detached": True})
    other = await api.client.post(resume, json={"targets": {key: "no"}})
    listed = [c["checkpoint_id"] for c in (await api.client.get("/checkpoints")).json()["checkpoints"]]
    retry = await api.client.post(resume, json={"targets": {key: "yes"}})  # the winner's request again: its answer
    late = await api.client.post(resume, json={"targets": {key: "no"}})  # another answer once the winner ended
    winner = first.json()["run_id"]
    assert first.status_code == 202 and checkpoint_id not in listed  # a run being resumed no longer waits
    assert (other.status_code, other.json()["error"]["code"]) == (409, "resume_conflict")
    told = other.json()["error"]["found"]
    assert set(told) == {"run_id", "request_digest", "status", "accepted_at", "ended", "agent"}
    assert (told["run_id"], told["status"], told["ended"], told["agent"]) == (winner, "running", False, "stepper")
    assert isinstance(told["accepted_at"], float) and len(told["request_digest"]) == 64
    assert winner in other.json()["error"]["message"]
    assert (retry.status_code, retry.json()["run_id"], retry.json()["text"]) == (200, winner, "6 steps done")
    assert (late.status_code, late.json()["error"]["code"]) == (409, "resume_conflict")
    ended = late.json()["error"]["found"]
    assert (ended["run_id"], ended["status"], ended["ended"]) == (winner, "completed", True)
    assert ended["request_digest"] == told["request_digest"]
    assert (await api.client.get(f"/runs/{winner}")).json()["text"] == "6 steps done"


async def test_a_used_checkpoint_id_with_new_input_is_a_409_and_the_same_input_its_answer(api: Api) -> None:
    checkpoint_id = _id()
    run = {"agent": "echo", "input": "one", "checkpoint_id": checkpoint_id}
    first = await api.client.post("/runs", json=run)
    other = await api.client.post("/runs", json={**run, "input": "two"})
    same = await api.client.post("/runs", json=run)
    assert first.json()["text"] == "echo: one"
    assert (other.status_code, other.json()["error"]["code"]) == (409, "checkpoint_exists")
    found = other.json()["error"]["found"]
    assert (found["run_id"], found["status"], found["ended"]) == (f"{checkpoint_id}@start", "completed", True)
    assert (same.status_code, same.json()["run_id"], same.json()["text"]) == (200, first.json()["run_id"], "echo: one")


async def test_an_idempotency_key_answers_a_retry_with_the_same_run_and_refuses_another_body(api: Api) -> None:
    key = {"Idempotency-Key": f"order-{uuid.uuid4().hex}"}
    body = {"agent": "waiter", "input": "wait", "detached": True}
    waited = api.count("waiting")  # the module's earlier runs' (the file is the cluster's)
    first = await api.client.post("/runs", json=body, headers=key)
    again = await api.client.post("/runs", json=body, headers=key)
    other = await api.client.post("/runs", json={**body, "input": "other"}, headers=key)
    run_id = first.json()["run_id"]
    assert (first.status_code, again.status_code, again.json()["run_id"]) == (202, 202, run_id)
    assert re.fullmatch(r"idem-[0-9a-f]{32}@start", run_id)
    assert (other.status_code, other.json()["error"]["code"]) == (422, "idempotency_key_reused")
    assert other.json()["error"]["found"]["run_id"] == run_id
    await api.wait_for_effect("waiting", waited + 1)
    cancelled = await api.client.post(f"/runs/{run_id}/cancel")
    assert cancelled.json()["status"] == "cancelled"
    assert api.count("waiting") == waited + 1  # one run, for two requests
    retried = await api.client.post("/runs", json=body, headers=key)  # after it ended: still that run
    assert (retried.status_code, retried.json()["run_id"]) == (202, run_id)


async def test_an_idempotency_key_with_a_session_or_a_checkpoint_id_is_a_400_that_says_why(api: Api) -> None:
    key = {"Idempotency-Key": "k-1"}
    session = await api.client.post("/runs", json={"agent": "echo", "input": "x", "session_id": "s-1"}, headers=key)
    named = await api.client.post("/runs", json={"agent": "echo", "input": "x", "checkpoint_id": "c-1"}, headers=key)
    blank = await api.client.post("/runs", json={"agent": "echo", "input": "x"}, headers={"Idempotency-Key": ""})
    assert [(a.status_code, a.json()["error"]["code"]) for a in (session, named, blank)] == [
        (400, "idempotency_key_with_session_id"),
        (400, "idempotency_key_with_checkpoint_id"),
        (400, "invalid_idempotency_key"),
    ]
    assert "a conversation's turn is named by where the conversation stands" in session.json()["error"]["message"]


async def test_readiness_is_reported_check_by_check(api: Api) -> None:
    answer = await api.client.get("/health/ready")
    assert (answer.status_code, answer.json()["status"]) == (200, "ready")
    checks = answer.json()["checks"]
    if api.kind == "inprocess":
        assert checks == {}  # nothing to wait for: it runs its runs itself
    else:
        assert set(checks) == {"database", "schema", "workers"} and all(c["ok"] for c in checks.values())
        assert checks["workers"]["detail"].startswith(("1 worker", "2 worker"))


async def test_a_client_that_hangs_up_on_a_streamed_run_cancels_it(api: Api) -> None:
    waited, cancelled = api.count("waiting"), api.count("cancelled")
    async with api.served() as client:
        body = {"agent": "waiter", "input": "wait", "stream": True}
        async with client.stream("POST", "/runs", json=body) as stream:
            run_id = stream.headers["x-run-id"]
            await api.wait_for_effect("waiting", waited + 1)
        deadline = time.monotonic() + WAIT
        while (await client.get(f"/runs/{run_id}")).json()["status"] == "running":
            assert time.monotonic() < deadline, f"the run went on {WAIT} s after its client hung up"
            await asyncio.sleep(0.05)
        assert (await client.get(f"/runs/{run_id}")).json()["status"] == "cancelled"
    await api.wait_for_effect("cancelled", cancelled + 1)  # the agent was stopped where it ran


async def test_a_conversations_turns_continue_it_and_each_is_a_run(api: Api) -> None:
    session_id = f"chat-{uuid.uuid4().hex[:8]}"
    turns = [
        await api.client.post("/runs", json={"agent": "echo", "session_id": session_id, "input": said})
        for said in ("hello", "again")
    ]
    bodies = [turn.json() for turn in turns]
    assert [t.status_code for t in turns] == [200, 200]
    assert [b["text"] for b in bodies] == ["echo: hello", "echo: again"]
    assert all(b["run_id"].startswith(f"{session_id}@turn-") and b["session_id"] == session_id for b in bodies)
    assert bodies[0]["run_id"] != bodies[1]["run_id"] and bodies[0]["checkpoint_id"] is None
    read = (await api.client.get(f"/sessions/{session_id}")).json()
    assert [m["content"] for m in read["messages"]] == ["hello", "echo: hello", "again", "echo: again"]
    assert (await api.client.get("/sessions")).json()["sessions"][-1] == session_id


async def test_unknown_agents_runs_and_checkpoints_are_404s_of_one_shape(api: Api) -> None:
    agent = await api.client.post("/runs", json={"agent": "nobody", "input": "x"})
    run = await api.client.get("/runs/nothing@start")
    events = await api.client.get("/runs/nothing@start/events")
    cancel = await api.client.post("/runs/nothing@start/cancel")
    checkpoint = await api.client.post("/checkpoints/nothing-here/resume", json={"targets": {}})
    named = await api.client.post("/checkpoints/nothing-here/resume", json={"agent": "shipper", "targets": {}})
    assert [(a.status_code, a.json()["error"]["code"]) for a in (agent, run, events, cancel, checkpoint, named)] == [
        (404, "unknown_agent"),
        (404, "unknown_run"),
        (404, "unknown_run"),
        (404, "unknown_run"),
        (404, "unknown_checkpoint"),
        (404, "unknown_checkpoint"),
    ]
    assert checkpoint.json()["error"]["message"] == (
        "checkpoint: expected a pending checkpoint, got 'nothing-here': no run waits on it; name its agent to resume it"
    )


async def test_a_conversation_waiting_for_an_answer_is_listed_and_resumed_as_one(api: Api) -> None:
    session_id = f"ship-{uuid.uuid4().hex[:8]}"
    paused = (
        await api.client.post("/runs", json={"agent": "shipper", "session_id": session_id, "input": "ship"})
    ).json()
    assert paused["status"] == "interrupted" and paused["session_id"] == session_id
    listed = [c for c in (await api.client.get("/checkpoints")).json()["checkpoints"] if c["session_id"] == session_id]
    assert [(c["checkpoint_id"], c["agent"], c["run_id"]) for c in listed] == [
        (session_id, "shipper", paused["run_id"])
    ]
    assert listed[0]["interrupts"] == paused["interrupts"]
    assert (await api.client.get(f"/checkpoints/{session_id}?session=true")).json() == listed[0]
    resumed = await api.client.post(
        f"/checkpoints/{session_id}/resume?session=true", json={"targets": {paused["interrupts"][0]["id"]: "yes"}}
    )
    assert resumed.status_code == 200 and resumed.json()["text"] == "order 7: shipped"
    after = [c for c in (await api.client.get("/checkpoints")).json()["checkpoints"] if c["session_id"] == session_id]
    assert after == []
