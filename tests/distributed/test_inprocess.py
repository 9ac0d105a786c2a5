"""The seam with its default backend: segments run in this process, a start interrupts, a resume finishes it, and
the same segment submitted twice runs once."""

from __future__ import annotations

import asyncio
import re

import pytest

from batonflow.adk import PendingCheckpoint, read_pending
from batonflow.distributed import (
    DurableBackend,
    InProcessBackend,
    SegmentRequest,
    request_digest,
    run_segment,
    segment_id,
)
from batonflow.errors import CheckpointNotFoundError, SegmentClaimedError, SegmentError, UnknownAgentError, UserError
from batonflow.schema import user
from batonflow.store import MemoryCheckpointStore

from .apps import agents


def _backend() -> tuple[InProcessBackend, MemoryCheckpointStore]:
    store = MemoryCheckpointStore()
    return InProcessBackend(agents(), store), store


async def test_a_start_interrupts_and_its_resume_finishes_the_run(tmp_path, monkeypatch) -> None:
    effects = tmp_path / "effects"
    monkeypatch.setenv("BATONFLOW_TEST_SIDE_EFFECTS", str(effects))
    backend, store = _backend()
    assert isinstance(backend, DurableBackend)
    start = await backend.submit(SegmentRequest(agent="shipper", checkpoint_id="c1", messages=(user("ship 7"),)))
    first = await backend.outcome(start)
    assert start == "c1@start"
    assert first.status == "interrupted" and len(first.interrupt_ids) == 1
    assert await store.get("c1") is not None
    resume = await backend.submit(
        SegmentRequest(agent="shipper", checkpoint_id="c1", targets={first.interrupt_ids[0]: "yes"})
    )
    second = await backend.outcome(resume)
    assert (second.segment_id, second.status, second.text) == (resume, "completed", "order 7: shipped")
    assert (second.agent, second.interrupts, second.error) == ("shipper", (), None)
    assert await store.get("c1") is None  # a resume that ran to its end deletes the checkpoint
    assert effects.read_text().count("shipped 7") == 1
    records = backend.event_log.records("c1")  # both segments' frames, each segment closed by its end
    assert [(r.segment_id, r.kind) for r in records if r.kind == "end"] == [(start, "end"), (resume, "end")]
    assert [r.data["event"] for r in records if r.segment_id == start and r.kind == "event"][:1] == ["run"]
    await backend.close()


async def test_the_same_segment_submitted_twice_runs_once(tmp_path, monkeypatch) -> None:
    effects = tmp_path / "effects"
    monkeypatch.setenv("BATONFLOW_TEST_SIDE_EFFECTS", str(effects))
    backend, _ = _backend()
    start = SegmentRequest(agent="shipper", checkpoint_id="c2", messages=(user("ship 7"),))
    assert await backend.submit(start) == await backend.submit(start)
    interrupt = (await backend.outcome("c2@start")).interrupt_ids[0]
    resume = SegmentRequest(agent="shipper", checkpoint_id="c2", targets={interrupt: "yes"})
    ids = await asyncio.gather(backend.submit(resume), backend.submit(resume))  # two concurrent resumes
    assert ids[0] == ids[1] != "c2@start"
    assert (await backend.outcome(ids[0])).status == "completed"
    assert await backend.submit(resume) == ids[0]  # a third, after the run ended: a retry of the winner
    other = SegmentRequest(agent="shipper", checkpoint_id="c2", targets={interrupt: "no"})
    with pytest.raises(SegmentClaimedError) as refused:  # another answer, after the run ended: told the winner
        await backend.submit(other)
    claim = refused.value.claim
    assert (claim.segment_id, claim.status, claim.ended, claim.agent) == (ids[0], "completed", True, "shipper")
    assert claim.request_digest == request_digest(resume) != request_digest(other)
    assert effects.read_text().count("shipped 7") == 1
    with pytest.raises(CheckpointNotFoundError):  # a run that ended without a pause: nothing to resume
        await backend.submit(SegmentRequest(agent="echo", checkpoint_id="never", targets={"x": 1}))
    await backend.close()


async def test_a_different_start_under_a_used_checkpoint_id_is_refused_and_the_same_one_attaches() -> None:
    backend, _ = _backend()
    first = SegmentRequest(agent="echo", checkpoint_id="c3", messages=(user("one"),))
    again = SegmentRequest(agent="echo", checkpoint_id="c3", messages=(user("one"),))  # another run id: a retry
    sid = await backend.submit(first)
    assert (await backend.outcome(sid)).text == "echo: one"
    assert await backend.submit(again) == sid
    with pytest.raises(SegmentClaimedError) as refused:
        await backend.submit(SegmentRequest(agent="echo", checkpoint_id="c3", messages=(user("two"),)))
    assert (refused.value.claim.segment_id, refused.value.claim.status) == ("c3@start", "completed")
    assert (await backend.outcome(sid)).text == "echo: one"
    await backend.close()


def test_a_request_digest_is_of_what_it_asks_not_how_it_is_watched() -> None:
    base = SegmentRequest(agent="echo", checkpoint_id="c", messages=(user("hi"),))
    watched = SegmentRequest(agent="echo", checkpoint_id="c", messages=(user("hi"),), stream=True, trace=True)
    assert request_digest(base) == request_digest(watched) and base.run_id != watched.run_id
    assert re.fullmatch(r"[0-9a-f]{64}", request_digest(base))
    changed = [
        SegmentRequest(agent="echo", checkpoint_id="c", messages=(user("ho"),)),
        SegmentRequest(agent="shipper", checkpoint_id="c", messages=(user("hi"),)),
        SegmentRequest(agent="echo", checkpoint_id="d", messages=(user("hi"),)),
        SegmentRequest(agent="echo", checkpoint_id="c", messages=(user("hi"),), session_values={"k": 1}),
        SegmentRequest(agent="echo", session_id="c", messages=(user("hi"),)),
    ]
    assert len({request_digest(r) for r in [base, *changed]}) == 6


async def test_a_segment_id_names_the_checkpoint_generation() -> None:
    assert segment_id("c", None) == "c@start"
    assert segment_id("c", b"one") == segment_id("c", b"one") != segment_id("c", b"two")
    assert segment_id("c", b"one").startswith("c@") and len(segment_id("c", b"one")) == len("c@") + 24


async def test_a_resume_of_no_checkpoint_is_refused_before_anything_runs() -> None:
    backend, _ = _backend()
    with pytest.raises(CheckpointNotFoundError, match=r"expected a pending checkpoint 'gone' in the \w+, found none"):
        await backend.submit(SegmentRequest(agent="shipper", checkpoint_id="gone"))


async def test_an_unknown_agent_is_a_typed_error_naming_the_agents_served() -> None:
    backend, _ = _backend()
    sid = await backend.submit(SegmentRequest(agent="nobody", checkpoint_id="c3", messages=(user("hi"),)))
    with pytest.raises(
        UnknownAgentError,
        match=re.escape(f"expected an agent among {sorted(agents())}, got 'nobody'"),
    ):
        await backend.outcome(sid)


async def test_a_run_that_cannot_start_ends_failed_with_the_reason() -> None:
    backend, store = _backend()
    await store.set("c4", b"a pending run")
    sid = await backend.submit(SegmentRequest(agent="echo", checkpoint_id="c4", messages=(user("hi"),)))
    outcome = await backend.outcome(sid)
    assert outcome.status == "failed" and outcome.error is not None
    assert outcome.error.startswith("CheckpointExistsError: checkpoint[c4] holds a pending run")


async def test_cancel_stops_a_segment_its_outcome_says_so_and_an_unknown_id_is_refused() -> None:
    backend, _ = _backend()
    sid = await backend.submit(SegmentRequest(agent="echo", checkpoint_id="c5", messages=(user("hi"),)))
    await backend.cancel(sid)
    assert (await backend.outcome(sid)).status == "cancelled"
    last = await backend.last("c5")  # its followers get its end all the same
    assert last is not None and (last.kind, last.data["status"]) == ("end", "cancelled")
    with pytest.raises(SegmentError, match=r"expected the id of a segment submitted to this backend \(running"):
        await backend.outcome("c9@start")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"agent": "", "checkpoint_id": "c"}, r"SegmentRequest.agent: expected a non-empty agent name, got ''"),
        ({"agent": "a", "checkpoint_id": "c", "messages": ("hi",)}, r"expected Messages, got \['str'\]"),
        (
            {"agent": "a", "checkpoint_id": "c", "messages": (user("hi"),), "targets": {"x": 1}},
            r"expected messages \(a start\) or targets \(a resume\), got both",
        ),
        (
            {"agent": "a", "checkpoint_id": "c", "run_id": "ABC"},
            r"SegmentRequest.run_id: expected 32 lowercase hex digits, got 'ABC'",
        ),
    ],
)
def test_a_bad_request_says_what_was_expected(fields: dict[str, object], message: str) -> None:
    with pytest.raises(UserError, match=message):
        SegmentRequest(**fields)  # type: ignore[arg-type]


def test_a_payload_of_the_wrong_shape_is_refused() -> None:
    expected = (
        "expected agent, checkpoint_id, messages and targets (and session_id, session_values, run_id, stream, "
        "trace), got "
    )
    with pytest.raises(UserError, match=re.escape(f"{expected}['agent']")):
        SegmentRequest.from_payload({"agent": "a"})
    extra = {"agent": "a", "checkpoint_id": "c", "messages": [], "targets": {}, "surprise": 1}
    with pytest.raises(UserError, match=re.escape(f"{expected}['agent', 'checkpoint_id', 'messages', 'surprise'")):
        SegmentRequest.from_payload(extra)
    older = {"agent": "a", "checkpoint_id": "c", "messages": [user("hi")], "targets": {}}  # before conversations
    read = SegmentRequest.from_payload(older)
    assert (read.agent, read.checkpoint_id, read.messages, read.session_id) == ("a", "c", (user("hi"),), None)
    request = SegmentRequest(agent="a", checkpoint_id="c", messages=(user("hi"),))
    assert SegmentRequest.from_payload(request.payload()) == request
    with pytest.raises(
        UserError, match=re.escape(f"{expected}['agent', 'checkpoint_id', 'messages', 'run_id', 'runid'")
    ):
        SegmentRequest.from_payload({**request.payload(), "runid": "x"})


def test_a_start_keeps_its_run_id_through_the_queue_and_an_old_payload_gets_a_fresh_one() -> None:
    request = SegmentRequest(agent="a", checkpoint_id="c", messages=(user("hi"),))
    again = SegmentRequest(agent="a", checkpoint_id="c", messages=(user("hi"),))
    assert len(request.run_id) == 32 and request.run_id != again.run_id  # one per request
    assert SegmentRequest.from_payload(request.payload()).run_id == request.run_id  # the same on every retry
    old = {k: v for k, v in request.payload().items() if k != "run_id"}
    assert len(SegmentRequest.from_payload(old).run_id) == 32


async def test_a_start_run_again_after_it_saved_its_checkpoint_reports_its_pause() -> None:
    """Its worker died between saving the checkpoint and recording the outcome: the start runs again, finds the
    checkpoint its own earlier run saved (the same run id), and reports the pause instead of failing on it."""
    store = MemoryCheckpointStore()
    start = SegmentRequest(agent="shipper", checkpoint_id="c9", messages=(user("ship 7"),))
    first = await run_segment(agents(), store, start, sid="c9@start")
    again = await run_segment(agents(), store, start, sid="c9@start")
    assert first.status == again.status == "interrupted" and again.interrupt_ids == first.interrupt_ids
    other = SegmentRequest(agent="shipper", checkpoint_id="c9", messages=(user("ship 7"),))  # another run's start
    refused = await run_segment(agents(), store, other, sid="c9@start")
    assert refused.status == "failed" and refused.error is not None
    assert refused.error.startswith("CheckpointExistsError: checkpoint[c9] holds a pending run")
    assert await read_pending(store, "c9") == PendingCheckpoint(run_id=start.run_id, interrupt_ids=first.interrupt_ids)
    assert await read_pending(store, "nothing-here") is None
