"""A model URI is accepted wherever a model is expected (resolved by ``load_model``, nothing loaded until the first
call), and anything that is neither a model nor a string is refused when the agent is made."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from batonflow import ChatModelAgent, ReActAgent, SimpleAgent
from batonflow.adk import new_executor, new_planner, new_replanner
from batonflow.errors import UserError
from batonflow.models import ChatModel, as_model
from batonflow.models.local import LlamaCppChatModel
from batonflow.schema import assistant
from batonflow.team import TeamAgent
from batonflow.testing import ScriptedModel

URI = "openai-compatible:http://127.0.0.1:9/v1#tiny"

MAKERS: dict[str, Callable[[Any], Any]] = {
    "ChatModelAgent 'a' model": lambda model: ChatModelAgent(name="a", model=model),
    "ReActAgent 'a' model": lambda model: ReActAgent(name="a", model=model),
    "SimpleAgent 'a' model": lambda model: SimpleAgent(name="a", model=model),
    "TeamAgent 'a' model": lambda model: TeamAgent(name="a", model=model, members=[_member()]),
    "planner 'planner' model": lambda model: new_planner(model=model),
    "ChatModelAgent 'executor' model": lambda model: new_executor(model=model),
    "replanner 'replanner' model": lambda model: new_replanner(model=model),
}


def _member() -> ChatModelAgent:
    return ChatModelAgent(name="m", description="a member", model=ScriptedModel([assistant("ok")]))


@pytest.mark.parametrize("make", MAKERS.values(), ids=list(MAKERS))
def test_a_model_uri_is_resolved_where_a_model_is_expected(make: Callable[[Any], Any]) -> None:
    model = make(URI).model
    assert isinstance(model, ChatModel)
    assert model.model_name == "tiny"


def test_a_local_model_uri_is_accepted_without_loading_the_weights() -> None:
    agent = ChatModelAgent(name="a", model="local:smollm2")
    assert isinstance(agent.model, LlamaCppChatModel)
    assert agent.model.model_name.startswith("SmolLM2")
    assert agent.model._llama is None  # loaded on the first call, not when the agent is made


@pytest.mark.parametrize(("where", "make"), MAKERS.items(), ids=list(MAKERS))
def test_what_is_neither_a_model_nor_a_uri_is_refused_when_the_agent_is_made(
    where: str, make: Callable[[Any], Any]
) -> None:
    with pytest.raises(TypeError) as caught:
        make(42)
    assert str(caught.value) == (
        f"{where}: expected a ChatModel or a model URI such as 'local:smollm2' or 'openai:gpt-4o-mini', got int"
    )


def test_a_string_that_is_no_model_uri_is_refused_when_the_agent_is_made() -> None:
    with pytest.raises(UserError, match="model URI"):
        ChatModelAgent(name="a", model="gpt-4o")


def test_a_model_is_kept_as_it_is() -> None:
    model = ScriptedModel([assistant("hi")])
    assert as_model(model, "here") is model
    assert ChatModelAgent(name="a", model=model).model is model


def test_a_model_class_is_refused_for_an_instance() -> None:
    with pytest.raises(TypeError, match=r"expected a ChatModel or a model URI .*, got type"):
        ChatModelAgent(name="a", model=ScriptedModel)
