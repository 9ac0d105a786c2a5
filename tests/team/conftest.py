"""Helpers of the team tests: members that answer from a script, and the run paths of a result."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from batonflow import ChatModelAgent, RunResult, set_language
from batonflow.schema import assistant
from batonflow.testing import ScriptedModel


def member(name: str, *answers: str, description: str = "") -> ChatModelAgent:
    """A member whose model answers ``answers`` in turn."""
    return ChatModelAgent(
        name=name,
        description=description or f"the {name}",
        model=ScriptedModel([assistant(text) for text in answers]),
    )


def paths(result: RunResult) -> list[list[str]]:
    return [[str(step) for step in event.run_path] for event in result.events]


@pytest.fixture(autouse=True)
def english() -> Iterator[None]:
    set_language("en")
    yield
    set_language("en")
