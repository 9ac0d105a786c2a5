"""``batonflow checkpoints``: list, show and resume the checkpoints runs left waiting, on a server (``--url``) or,
for ``resume --target``, here on the store they were saved in."""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..errors import UserError
from ._options import Token, Url

if TYPE_CHECKING:
    from ._remote import Answers

__all__ = ["checkpoints"]

checkpoints = typer.Typer(
    help="The pending checkpoints of a running server (batonflow serve); resume --target resumes one here.",
    no_args_is_help=True,
)


CheckpointId = Annotated[str, typer.Argument(help="the checkpoint's id (any text: it is sent quoted)")]
SessionFlag = Annotated[
    bool,
    typer.Option("--session", help="the conversation of this id waiting, not the checkpoint (both may be listed)"),
]


@checkpoints.command("list")
def list_checkpoints(url: Url = "http://127.0.0.1:8000", token: Token = None) -> None:
    """The checkpoints the server's runs left waiting, with their interrupts."""
    from ._events import plain
    from ._remote import Remote

    found = Remote(url, token).call("GET", "/checkpoints")["checkpoints"]
    table = Table("checkpoint", "agent", "session", "interrupts (id: info)")
    for entry in found:
        asked = "\n".join(f"{i['id']}: {json.dumps(i['info'], ensure_ascii=False)}" for i in entry["interrupts"])
        # What the server sent is data: cells as Text, so that an id such as "[/]" is printed, not read as markup.
        cells = (entry["checkpoint_id"], entry["agent"], entry["session_id"] or "", asked)
        table.add_row(*(plain(str(cell)) for cell in cells))
    Console(highlight=False, width=200).print(table if found else "no pending checkpoints")


def _checkpoint_path(checkpoint_id: str, session: bool, tail: str = "") -> str:
    from ..store import check_checkpoint_id
    from ._remote import segment

    check_checkpoint_id(checkpoint_id)  # an empty id would name /checkpoints itself
    return f"/checkpoints/{segment(checkpoint_id)}{tail}" + ("?session=true" if session else "")


@checkpoints.command()
def show(
    checkpoint_id: CheckpointId,
    session: SessionFlag = False,
    url: Url = "http://127.0.0.1:8000",
    token: Token = None,
) -> None:
    """One pending checkpoint, as JSON."""
    from ._remote import Remote

    typer.echo(json.dumps(Remote(url, token).call("GET", _checkpoint_path(checkpoint_id, session)), indent=2))


AnswerOption = Annotated[
    list[str] | None,
    typer.Option("--answer", metavar="ID=VALUE", help="answer a question (ctx.ask) with VALUE, as JSON when it is"),
]
AllOption = Annotated[str | None, typer.Option("--all", help="answer every interrupt with this VALUE")]
ApproveOption = Annotated[
    list[str] | None,
    typer.Option("--approve", metavar="ID[:CALL_ID]", help="approve the calls an approval waits for, or one"),
]
RejectOption = Annotated[
    list[str] | None, typer.Option("--reject", metavar="ID[:CALL_ID]", help="reject them (the model is told)")
]
SkipOption = Annotated[
    list[str] | None, typer.Option("--skip", metavar="ID[:CALL_ID]", help="skip them (the model is told)")
]
EditOption = Annotated[
    list[str] | None,
    typer.Option("--edit", metavar="ID[:CALL_ID]=JSON", help="approve with these arguments changed, a JSON object"),
]
CommentOption = Annotated[
    list[str] | None,
    typer.Option(
        "--comment",
        metavar="[ID=]TEXT",
        help="the comment of every decision given, or of the one given to ID (the model reads it in the result)",
    ),
]
AgentOption = Annotated[
    str | None,
    typer.Option(
        "--agent", help="the agent whose run it is, for a checkpoint the server did not make (batonflow run's)"
    ),
]
TargetOption = Annotated[
    str | None,
    typer.Option("--target", metavar="MODULE:ATTR", help="resume here, not on a server: the agents, with --store"),
]
StoreOption = Annotated[
    str, typer.Option("--store", help="with --target: where the checkpoint is, sqlite:PATH or postgres:URL")
]


@checkpoints.command()
def resume(
    ctx: typer.Context,
    checkpoint_id: CheckpointId,
    answer: AnswerOption = None,
    every: AllOption = None,
    approve: ApproveOption = None,
    reject: RejectOption = None,
    skip: SkipOption = None,
    edit: EditOption = None,
    comment: CommentOption = None,
    agent: AgentOption = None,
    target: TargetOption = None,
    store: StoreOption = "memory",
    session: SessionFlag = False,
    url: Url = "http://127.0.0.1:8000",
    token: Token = None,
) -> int:
    """Resume a pending checkpoint with answers; prints how the run ended and its answer.

    Exits 0 when the run answers, 1 when it fails (with the reason), 3 when it waits again.
    """
    from ._agent_run import agent_run
    from ._remote import Answers

    answers = Answers(
        answers=answer or [],
        every=every,
        approve=approve or [],
        reject=reject or [],
        skip=skip or [],
        edit=edit or [],
        comment=comment or [],
    )
    if (agent is not None or target is not None) and every is not None:
        raise UserError(
            "--all: expected a checkpoint the server made (it knows the interrupts), got --agent or --target: "
            "answer each interrupt by its id"
        )
    if target is not None:
        code = asyncio.run(agent_run(ctx, target, agent, store).resume(checkpoint_id, answers.targets()))
    else:
        code = _resume_remote(url, token, checkpoint_id, answers, agent, session)
    if code:
        raise typer.Exit(code)
    return 0


def _resume_remote(
    url: str, token: str | None, checkpoint_id: str, answers: Answers, agent: str | None, session: bool
) -> int:
    """Resume on the server at ``url``; prints how the run ended (why, when it failed) and returns the exit code."""
    from ._remote import Remote

    body: dict[str, object]
    if agent is None:
        pending = Remote(url, token).call("GET", _checkpoint_path(checkpoint_id, session))
        body = {"targets": answers.targets(pending["interrupts"])}
    else:
        body = {"targets": answers.targets(), "agent": agent}
    ended = Remote(url, token).call("POST", _checkpoint_path(checkpoint_id, session, "/resume"), body)
    status = ended["status"]
    if status not in ("completed", "interrupted"):
        error = ended.get("error") or {}
        reason = f"{error.get('type', 'Error')}: {error.get('message', '')}" if error else "no reason given"
        raise UserError(f"checkpoint {checkpoint_id!r}: expected the resumed run to end, got {status} ({reason})")
    typer.echo(f"{status}: {ended['text']}" if ended["text"] else status)
    if status == "completed":
        return 0
    for interrupt in ended["interrupts"]:
        typer.echo(f"  waiting {interrupt['id']}: {json.dumps(interrupt['info'], ensure_ascii=False)}")
    return 3
