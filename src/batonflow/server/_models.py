"""The request bodies of the API, validated by pydantic; their JSON Schemas are what ``/openapi.json`` publishes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["InputMessage", "ResumeRequest", "RunRequest"]

_ID = Field(default=None, min_length=1, max_length=256)


class InputMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system"] = "user"
    content: str


class RunOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    stream: bool = Field(default=False, description="answer with an SSE stream of the run's events, not one JSON body")
    trace: bool = Field(default=False, description="with stream: send the run's trace events too (event 'trace')")
    detached: bool = Field(
        default=False,
        description="keep running when the client goes away; without stream, answer 202 at once with the run id",
    )


class RunRequest(RunOptions):
    """Start a run of ``agent`` on ``input`` (a text, or messages), alone or as a turn of conversation
    ``session_id``."""

    agent: str = Field(min_length=1, max_length=256, description="the name of an agent from GET /agents")
    input: str | list[InputMessage] = Field(default="", description="the prompt: one user text, or messages")
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="continue this conversation (no input: resume its pending run, with targets)",
    )
    checkpoint_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="save an interrupted run under this id (one is made when omitted)",
    )
    session_values: dict[str, Any] | None = Field(default=None, description="values the run's tools can read")
    targets: dict[str, Any] | None = Field(default=None, description="with a session and no input: resume answers")


class ResumeRequest(RunOptions):
    """Resume a pending checkpoint: ``targets`` maps interrupt ids to the answer each gets."""

    targets: dict[str, Any] = Field(default_factory=dict, description="interrupt id -> the data it resumes with")
    agent: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="the agent whose run it is, for a checkpoint this server did not make",
    )
