"""The request bodies of the API, validated by pydantic; their JSON Schemas are what ``/openapi.json`` publishes."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._errors import ApiError, shown

__all__ = ["InputMessage", "ResumeRequest", "RunRequest", "check_body"]

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


_SURROGATE = re.compile("[\ud800-\udfff]")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def check_body(body: BaseModel, *, nested: Collection[str] = (), max_depth: int) -> None:
    """Refuse, with a 400 that names the field, text anywhere in ``body`` that is not Unicode (a lone surrogate,
    which JSON's ``"\\ud800"`` carries but neither UTF-8 nor a store can), and a value of the fields ``nested``
    nested more than ``max_depth`` levels deep (which the stores' codec, recursive, may fail to write later, when
    the run saves its state). Walked with a stack: a body as deep as its parser allows is no recursion here."""
    fields = {**{name: getattr(body, name) for name in type(body).model_fields}, **(body.model_extra or {})}
    stack: list[tuple[Any, str, int, bool]] = [(value, name, 0, name in nested) for name, value in fields.items()]
    while stack:
        value, where, level, bounded = stack.pop()
        if isinstance(value, str):
            _check_text(value, where)
            continue
        if isinstance(value, BaseModel):
            items: Any = ((name, getattr(value, name)) for name in type(value).model_fields)
        elif isinstance(value, dict):
            items = value.items()
        elif isinstance(value, list | tuple):
            items = ((i, item) for i, item in enumerate(value))
        else:
            continue
        if bounded and level >= max_depth:
            field = where.split(".", 1)[0].split("[", 1)[0]
            at = where if len(where) <= 80 else f"{where[:80]}…"
            raise ApiError(
                400,
                "value_too_deep",
                f"{field}: expected values nested at most {max_depth} levels deep (ServerLimits.max_value_depth), "
                f"got more at {at}",
                expected=f"<= {max_depth} levels",
                found=f"more than {max_depth} levels",
            )
        for key, item in items:
            if isinstance(key, str):
                _check_text(key, f"{where} (a key)")
                inner = f"{where}.{key}" if _NAME.fullmatch(key) else f"{where}[{shown(key, 40)}]"
            else:
                inner = f"{where}[{key}]"
            stack.append((item, inner, level + 1, bounded))


def _check_text(text: str, where: str) -> None:
    if text.isascii():
        return
    found = _SURROGATE.search(text)
    if found is not None:
        raise ApiError(
            400,
            "invalid_text",
            f"{where}: expected Unicode text, got a lone surrogate ({found.group()!r}) at index {found.start()}",
            expected="text without lone surrogates (U+D800 to U+DFFF alone)",
            found=shown(text),
        )
