"""The public faces of batonflow.trace and of batonflow.observe, which re-exports it for applications."""

import batonflow.observe
import batonflow.trace


def test_public_names_of_the_trace_package() -> None:
    assert sorted(batonflow.trace.__all__) == [
        "ActionEnd",
        "ActionStart",
        "AgentEnd",
        "AgentStart",
        "ContextSize",
        "HITLDecided",
        "HITLPending",
        "Metrics",
        "NodeEnd",
        "NodeStart",
        "OpenAction",
        "OpenReason",
        "PlanEvent",
        "ReasonEnd",
        "ReasonStart",
        "RunEnd",
        "RunMetrics",
        "RunStart",
        "RunTrace",
        "SupervisorDelta",
        "TeamEnd",
        "TeamStart",
        "ToolCallEnd",
        "ToolCallStart",
        "TraceCallback",
        "TraceEvent",
        "TraceScope",
        "current_scope",
    ]
    assert all(hasattr(batonflow.trace, name) for name in batonflow.trace.__all__)


def test_observe_keeps_every_name_it_had_and_they_are_the_trace_packages() -> None:
    names = set(batonflow.observe.__all__) - {"ConsoleRenderer", "OpenTelemetryTracer"}
    assert len(names) == 22
    for name in names:
        assert getattr(batonflow.observe, name) is getattr(batonflow.trace, name)
