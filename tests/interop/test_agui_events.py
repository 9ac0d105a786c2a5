"""``AguiTranslator``: a run's frames as AG-UI events, fed frame by frame (no server), each event checked against the
``ag-ui-protocol`` package's own models and the protocol's order."""

from __future__ import annotations

from typing import Any

from ag_ui.core import BaseEvent, CustomEvent, RunErrorEvent, RunFinishedEvent, StateDeltaEvent

from batonflow.interop import AguiTranslator

from .agui_checks import EVENTS, check_order, types


def translated(frames: list[tuple[str, dict[str, Any]]], end: dict[str, Any] | None, **state: Any) -> list[BaseEvent]:
    """The events of ``frames`` and ``end`` (a segment's outcome), each sent through the package's event union."""
    translator = AguiTranslator(thread_id="t", run_id="r", state=state)
    events = translator.started()
    for name, data in frames:
        events += translator.frame(name, data)
    if end is not None:
        events += translator.ended(end)
    return [EVENTS.validate_json(event.model_dump_json(by_alias=True)) for event in events]


def outcome(status: str, **fields: Any) -> dict[str, Any]:
    return {"segment_id": "t@turn-1", "status": status, "text": "", "interrupts": [], "error": None, **fields}


def said(seq: int, text: str, agent: str = "a", **message: Any) -> tuple[str, dict[str, Any]]:
    return "message", {"seq": seq, "agent": agent, "message": {"role": "assistant", "content": text, **message}}


def test_a_message_that_was_not_streamed_is_a_whole_text_message() -> None:
    events = translated([said(1, "hello")], outcome("completed", text="hello"))
    check_order(events)
    assert types(events)[2:7] == [
        "STEP_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "STEP_FINISHED",
    ]


def test_an_empty_answer_with_tool_calls_is_no_text_message_and_its_calls_have_no_args_when_they_have_none() -> None:
    call = {"id": "c1", "name": "now", "arguments": ""}
    events = translated([said(1, "", tool_calls=[call])], outcome("completed"))
    check_order(events)
    assert types(events)[3:5] == ["TOOL_CALL_START", "TOOL_CALL_END"]


def test_an_error_frame_ends_the_run_with_one_run_error_closing_the_text_and_step_under_way() -> None:
    frames = [
        ("message_start", {"seq": 1, "agent": "a", "role": "assistant"}),
        ("delta", {"seq": 1, "content": "hal"}),
        ("error", {"seq": 2, "agent": "a", "error": {"type": "ModelError", "message": "gone"}}),
        ("delta", {"seq": 1, "content": "f"}),
    ]
    events = translated(frames, outcome("failed", error="ModelError: gone"))
    check_order(events)
    assert types(events)[-3:] == ["TEXT_MESSAGE_END", "STEP_FINISHED", "RUN_ERROR"]
    assert isinstance(events[-1], RunErrorEvent) and events[-1].message == "ModelError: gone"


def test_a_failure_without_an_error_frame_is_a_run_error_from_the_outcome() -> None:
    events = translated([], outcome("failed", error="SegmentFailedError: the worker died"))
    assert isinstance(events[-1], RunErrorEvent)
    assert (events[-1].code, events[-1].message) == ("SegmentFailedError", "SegmentFailedError: the worker died")


def test_a_cancelled_run_finishes_with_the_cancelled_outcome() -> None:
    end = translated([], outcome("cancelled"))[-1]
    assert isinstance(end, RunFinishedEvent) and end.outcome is not None and end.outcome.type == "cancelled"


def test_an_interrupted_run_names_each_interrupt_its_kind_and_its_checkpoint() -> None:
    asked = {"id": "i1", "address": "agent:a;tool:t:c1", "kind": "approval", "info": "ship it?"}
    end = translated([], outcome("interrupted", interrupts=[asked]))[-1]
    assert isinstance(end, RunFinishedEvent) and end.outcome is not None and end.outcome.type == "interrupt"
    [interrupt] = end.outcome.interrupts
    assert (interrupt.id, interrupt.reason, interrupt.message) == ("i1", "approval", "ship it?")
    assert end.result == {
        "status": "interrupted",
        "session_id": "t",
        "segment_id": "t@turn-1",
        "checkpoint_id": "t",
        "interrupt_ids": ["i1"],
    }


def test_tokens_are_the_run_s_usage() -> None:
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    end = translated([], outcome("completed", usage=usage))[-1]
    assert isinstance(end, RunFinishedEvent) and end.usage is not None
    assert [(u.input_tokens, u.output_tokens, u.total_tokens) for u in end.usage] == [(7, 3, 10)]


def test_the_state_delta_is_a_json_patch_of_nested_objects_with_keys_escaped() -> None:
    before = {"a/b": 1, "gone": True, "deep": {"x": 1, "y": {"z": 1}}, "list": [1]}
    after = {"a/b": 2, "deep": {"x": 1, "y": {"z": 2, "~w": 0}}, "list": [1, 2]}
    events = translated([("state", {"run_id": "t@turn-1", "values": after, "more": 0})], None, **before)
    delta = next(e for e in events if isinstance(e, StateDeltaEvent))
    assert [op.model_dump(exclude_none=True) for op in delta.delta] == [
        {"op": "remove", "path": "/gone"},
        {"op": "replace", "path": "/a~1b", "value": 2},
        {"op": "replace", "path": "/deep/y/z", "value": 2},
        {"op": "add", "path": "/deep/y/~0w", "value": 0},
        {"op": "replace", "path": "/list", "value": [1, 2]},
    ]


def test_unchanged_state_sends_no_delta_and_a_gap_is_said_as_a_custom_event() -> None:
    frames = [("state", {"values": {"k": 1}}), ("gap", {"first": 3, "last": 4})]
    events = translated(frames, outcome("completed"), k=1)
    assert not any(isinstance(e, StateDeltaEvent) for e in events)
    gap = next(e for e in events if isinstance(e, CustomEvent))
    assert (gap.name, gap.value) == ("batonflow.gap", {"first": 3, "last": 4})


def test_nothing_is_sent_after_the_run_has_ended() -> None:
    translator = AguiTranslator(thread_id="t", run_id="r")
    assert translator.ended(outcome("completed"))
    assert translator.frame(*said(1, "late")) == []
    assert translator.ended(outcome("completed")) == []


def test_streamed_reasoning_is_a_reasoning_message_ended_before_the_text_starts() -> None:
    frames = [
        ("message_start", {"seq": 1, "agent": "a", "role": "assistant"}),
        ("delta", {"seq": 1, "content": "", "reasoning": "think"}),
        ("delta", {"seq": 1, "content": "", "reasoning": "ing"}),
        ("delta", {"seq": 1, "content": "answer"}),
        said(1, "answer", reasoning="thinking"),
    ]
    events = translated(frames, outcome("completed"))
    check_order(events)
    assert types(events)[3:11] == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
    ]


def test_reasoning_not_streamed_is_sent_whole_before_the_text_and_closed_when_a_run_fails_mid_thought() -> None:
    whole = translated([said(1, "answer", reasoning="because")], outcome("completed"))
    check_order(whole)
    assert types(whole)[3:9] == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
        "TEXT_MESSAGE_START",
    ]
    frames = [
        ("message_start", {"seq": 1, "agent": "a", "role": "assistant"}),
        ("delta", {"seq": 1, "content": "", "reasoning": "hm"}),
    ]
    cut = translated(frames, outcome("failed", error="ModelError: gone"))
    check_order(cut)
    assert types(cut)[-4:] == ["REASONING_MESSAGE_END", "REASONING_END", "STEP_FINISHED", "RUN_ERROR"]


def test_an_approval_of_one_call_names_that_call_and_says_its_comment() -> None:
    task = {"call_id": "c7", "tool_name": "pay", "arguments": "{}", "comment": "pay 10 euros?"}
    asked = {"id": "i1", "address": "agent:a", "kind": "approval", "info": {"tasks": [task]}}
    end = translated([], outcome("interrupted", interrupts=[asked]))[-1]
    assert isinstance(end, RunFinishedEvent) and end.outcome is not None and end.outcome.type == "interrupt"
    [interrupt] = end.outcome.interrupts
    assert (interrupt.reason, interrupt.message, interrupt.tool_call_id) == ("approval", "pay 10 euros?", "c7")
