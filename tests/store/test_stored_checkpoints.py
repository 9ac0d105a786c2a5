"""Checkpoints written by earlier releases decode and resume to the end with today's code.

The bytes under ``fixtures/release-*/`` were written by ``fixtures/make_fixtures.py`` with the code of that
release and are never rewritten: a change that renames a registered type, drops a field or reshapes a state fails
here, the way it would fail for a user's stored runs.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import shutil
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from batonflow import Runner
from batonflow.adk import AgentEvent, collect_events
from batonflow.agents import Session
from batonflow.codec import decode
from batonflow.store import FileSessionStore, MemoryCheckpointStore

FIXTURES = Path(__file__).with_name("fixtures")
RELEASES = sorted(p for p in FIXTURES.glob("release-*") if p.is_dir())


def load_scenarios() -> ModuleType:
    # The scenarios are defined once, in the script that wrote the files; tests/ is not a package.
    name = "batonflow_checkpoint_fixtures"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURES / "make_fixtures.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


fixtures = load_scenarios()
SCENARIOS = {s.name: s for s in fixtures.SCENARIOS}


def manifest(release: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((release / "manifest.json").read_text())
    return data


CASES = [(release, name) for release in RELEASES for name in manifest(release)["checkpoints"]]


def no_errors(events: list[AgentEvent]) -> None:
    errors = [e.error for e in events if e.error is not None]
    if errors:
        raise errors[0]
    assert not any(e.action is not None and e.action.interrupted is not None for e in events), "interrupted again"


def last_text(events: list[AgentEvent]) -> str | None:
    texts = [e.message_output.message.content for e in events if e.message_output and e.message_output.message]
    return texts[-1] if texts else None


def test_there_are_fixtures_of_the_first_release() -> None:
    assert [r.name for r in RELEASES][:1] == ["release-0.1.0"]
    assert set(manifest(RELEASES[0])["checkpoints"]) == set(SCENARIOS)


# Every class name release 0.1.0 wrote into checkpoints; its fixtures hold each of them at least once.
NAMES_OF_0_1_0 = {
    *("Message", "ToolCall", "FunctionCall", "Usage", "ResponseMeta", "TextPart", "ImagePart", "AudioPart"),
    *("Checkpoint", "SessionEvent", "InterruptRecord", "AddressSegment", "RunStep", "ReactState", "ToolResult"),
    *("AgentAction", "TransferToAgentAction", "BreakLoopAction"),
    *("SequentialState", "LoopState", "ParallelState", "AgentToolState", "DeterministicTransferState"),
    *("plan_execute.Plan", "plan_execute.ExecutedStep", "react.FeedbackRequest"),
    *("hitl.HITLPending", "hitl.PendingTask", "hitl.HITLDecision", "hitl.Waiting"),
}


def class_names(data: bytes) -> set[str]:
    """The class names in a payload, read from the documented envelope: 9 header bytes, zlib when flag bit 0 is set."""
    body = data[9:]
    found: set[str] = set()

    def walk(tree: Any) -> None:
        if isinstance(tree, dict):
            if isinstance(tree.get("$c"), str):
                found.add(tree["$c"])
            for value in tree.values():
                walk(value)
        elif isinstance(tree, list):
            for value in tree:
                walk(value)

    walk(json.loads(zlib.decompress(body) if data[4] & 1 else body))
    return found


def test_the_fixtures_of_0_1_0_hold_every_class_it_wrote_into_checkpoints() -> None:
    release = FIXTURES / "release-0.1.0"
    found: set[str] = set()
    for path in release.glob("*.checkpoint"):
        found |= class_names(path.read_bytes())
    snapshot = json.loads((release / "sessions" / "ann.snapshot.json").read_text())["snapshot"]
    found |= class_names(base64.b64decode(snapshot["v"]))
    assert NAMES_OF_0_1_0 - found == set()


@pytest.mark.parametrize(("release", "name"), CASES, ids=[f"{r.name}:{n}" for r, n in CASES])
async def test_a_stored_checkpoint_decodes_and_resumes_to_the_end(release: Path, name: str) -> None:
    entry = manifest(release)["checkpoints"][name]
    data = (release / entry["file"]).read_bytes()
    assert decode(data) is not None  # the public codec reads it on its own

    scenario = SCENARIOS[name]
    desk = fixtures.Desk("resume")
    store = MemoryCheckpointStore()
    await store.set("stored", data)
    contexts = entry["interrupts"]
    targets = {c["id"]: scenario.decision(c) for c in contexts}
    events = await collect_events(scenario.runner(scenario.build(desk), store).resume("stored", targets=targets))

    no_errors(events)
    assert last_text(events) == scenario.answer
    assert desk.done == scenario.done
    for model in desk.models:
        model.assert_complete()
    seen = "\n".join(desk.seen())
    for text in scenario.seen:
        assert text in seen
    assert await store.get("stored") is None  # resumed to the end


@pytest.mark.parametrize("release", RELEASES, ids=[r.name for r in RELEASES])
async def test_a_stored_pending_conversation_resumes_with_the_callers_answer(release: Path, tmp_path: Path) -> None:
    entry = manifest(release)["session"]
    shutil.copytree(release / entry["directory"], tmp_path, dirs_exist_ok=True)
    store = FileSessionStore(tmp_path)
    session_id = entry["session_id"]
    try:
        before = await Session.load(store, session_id)
        assert before.is_pending and before.pending_reason == "Which order?"
        assert before.snapshot is not None and decode(before.snapshot) is not None

        desk = fixtures.Desk("resume")
        runner = Runner(fixtures.conversation(desk), session_store=store)
        [cause] = entry["interrupts"]
        events = await collect_events(
            runner.run([], session_id=session_id, targets={cause["id"]: fixtures.SESSION_REPLY})
        )

        no_errors(events)
        assert last_text(events) == "Order 7 is refunded."
        assert desk.done == ["refund 7"]
        for model in desk.models:
            model.assert_complete()
        assert desk.seen()[1:5] == ["hello, I am Ann", "Hello Ann.", "refund my order", ""]  # the saved history
        assert "order 7" in desk.seen()  # the answer became the feedback tool's result
        after = await Session.load(store, session_id)
        assert not after.is_pending and after.snapshot is None
        assert [m.content for m in after.messages] == [
            "hello, I am Ann",
            "Hello Ann.",
            "refund my order",
            "Which order?",
            "Order 7 is refunded.",
        ]
    finally:
        await store.close()


def test_every_stored_checkpoint_decodes_in_a_process_that_imported_only_batonflow() -> None:
    # The graph, flow and team packages load on first use; a worker that only resumes imports batonflow alone (and
    # the scenarios' own types, which import nothing more).
    files = [
        str(release / entry["file"]) for release, name in CASES for entry in [manifest(release)["checkpoints"][name]]
    ]
    sessions = [str(path) for release in RELEASES for path in sorted((release / "sessions").glob("*.snapshot.json"))]
    code = (
        "import base64, importlib.util, json, sys\n"
        "import batonflow\n"
        "from batonflow.store import decode\n"
        "script, files, sessions = json.loads(sys.argv[1])\n"
        "spec = importlib.util.spec_from_file_location('scenarios', script)\n"
        "sys.modules['scenarios'] = module = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(module)\n"
        "later = [m for m in ('batonflow.graph', 'batonflow.flow', 'batonflow.team') if m in sys.modules]\n"
        "assert not later, later\n"
        "for path in files:\n"
        "    assert decode(open(path, 'rb').read()) is not None, path\n"
        "for path in sessions:\n"
        "    snapshot = json.load(open(path))['snapshot']\n"
        "    assert decode(base64.b64decode(snapshot['v'])) is not None, path\n"
        "print(len(files) + len(sessions))\n"
    )
    arguments = json.dumps([str(FIXTURES / "make_fixtures.py"), files, sessions])
    out = subprocess.run([sys.executable, "-c", code, arguments], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == len(CASES) + len(RELEASES)
