"""``batonflow checkpoints``: the pending checkpoints of a running ``batonflow serve``, through its HTTP API (the
server keeps the index of them; stores cannot list what they hold)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import UserError

__all__ = ["Answers", "Remote", "segment"]


def segment(value: str) -> str:
    """``value`` as one segment of a URL path: every reserved character quoted (``/``, ``?``, ``#``, ``%``), and
    ``.`` and ``..`` too, which URL parsers resolve away. An id is data: ``../runs/x/cancel?`` names a checkpoint,
    never another endpoint."""
    quoted = quote(value, safe="")
    return quoted.replace(".", "%2E") if quoted in (".", "..") else quoted


class Remote:
    """A client of the server at ``url``, with its bearer ``token``."""

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=60.0)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            answer = self._client.request(method, path, json=body)
        except httpx.HTTPError as error:
            raise UserError(f"cannot reach {self.url}: {error} (is `batonflow serve` running there? --url)") from None
        finally:
            self._client.close()
        if answer.status_code >= 400:
            try:
                message = answer.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = answer.text[:200]
            raise UserError(f"{method} {path}: {answer.status_code}: {message}")
        return answer.json()


@dataclass(frozen=True, slots=True, kw_only=True)
class Answers:
    """What ``checkpoints resume`` was told to answer: ``--answer ID=VALUE`` pairs and ``--all VALUE``, and the
    approvals' decisions (``--approve``, ``--reject``, ``--skip``, ``--edit ID=JSON``, with ``--comment``).

    A decision's ``ID`` is an approval's interrupt id (every call it waits for) or ``ID:CALL_ID`` (that call only:
    the others keep waiting, or take the decision given to the whole ``ID``). A ``--comment`` is ``TEXT`` for every
    decision given or ``ID=TEXT`` for the one given to ``ID`` (as written in the decision's option).
    """

    answers: Sequence[str] = ()
    every: str | None = None
    approve: Sequence[str] = ()
    reject: Sequence[str] = ()
    skip: Sequence[str] = ()
    edit: Sequence[str] = ()
    comment: Sequence[str] = ()

    def targets(self, interrupts: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The resume targets: interrupt id to answer. A decision is sent per call of the approval when
        ``interrupts`` (the server's listing) say which calls it waits for, else as one decision for all of them."""
        known = {i["id"]: i for i in interrupts}
        every = {} if self.every is None else dict.fromkeys(known, _value(self.every))
        given: dict[str, Any] = {}
        answers = [(key, _value(value)) for key, value in map(_pair("--answer", "INTERRUPT_ID=VALUE"), self.answers)]
        for key, value in [*answers, *self._by_interrupt(known).items()]:
            if key in given:
                raise UserError(f"interrupt {key!r}: expected one answer, got two ({given[key]!r} and {value!r})")
            given[key] = value
        return {**every, **given}

    def _by_interrupt(self, known: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
        """The decisions as answers: one per interrupt, a decision or a mapping of its call ids to decisions."""
        grouped: dict[str, dict[str | None, Decision]] = {}
        for key, decision in self._decisions():
            interrupt, _, named = key.partition(":")
            calls, call = grouped.setdefault(interrupt, {}), named or None
            if call in calls:
                raise UserError(f"interrupt {key!r}: expected one answer, got two ({calls[call]!r} and {decision!r})")
            calls[call] = decision
        return {key: _answer(key, calls, known.get(key)) for key, calls in grouped.items()}

    def _decisions(self) -> list[tuple[str, Decision]]:
        decided: list[tuple[str, dict[str, Any]]] = []
        for action, ids in (("approve", self.approve), ("reject", self.reject), ("skip", self.skip)):
            decided += [(key, {"action": action}) for key in ids]
        for key, text in map(_pair("--edit", "INTERRUPT_ID={JSON object of arguments}"), self.edit):
            arguments = _value(text)
            if not isinstance(arguments, dict):
                raise UserError(f"--edit {key}: expected a JSON object of the call's arguments, got {text!r}")
            decided.append((key, {"action": "approve", "modified_args": arguments}))
        if self.comment and not decided:
            raise UserError("--comment: expected with --approve, --reject, --skip or --edit, got none of them")
        comments = self._comments({key for key, _ in decided})
        return [(key, Decision(fields, **_comment(comments.get(key, comments.get(None))))) for key, fields in decided]

    def _comments(self, decided: set[str]) -> dict[str | None, str]:
        """The comments by the decision they are for (``None``: every decision without one of its own)."""
        comments: dict[str | None, str] = {}
        for text in self.comment:
            key, sep, rest = text.partition("=")
            target, comment = (key, rest) if sep and key in decided else (None, text)
            if target in comments:
                whose = "every decision" if target is None else f"{target!r}"
                raise UserError(
                    f"--comment: expected one comment for {whose}, got two ({comments[target]!r} and {comment!r}); "
                    f"ID=TEXT is for one decision, ID as given to --approve, --reject, --skip or --edit"
                )
            comments[target] = comment
        return comments


class Decision(dict[str, Any]):
    """One decision on an approval, in its JSON form (``{"action": ..., "comment"?, "modified_args"?}``)."""


def _comment(text: str | None) -> dict[str, str]:
    return {} if text is None else {"comment": text}


def _answer(interrupt: str, calls: Mapping[str | None, Decision], listed: Mapping[str, Any] | None) -> Any:
    """The answer to ``interrupt`` from its decisions by call id (``None``: the whole approval), as the server's
    index checks it when ``listed`` says which calls the approval waits for."""
    whole = calls.get(None)
    named = {call: dict(decision) for call, decision in calls.items() if call is not None}
    if listed is None or listed.get("kind") != "approval":
        if whole is not None and named:
            raise UserError(
                f"interrupt {interrupt!r}: expected a decision for the whole approval or for its calls, got both "
                f"(only a server's listing says which calls the whole decision is for)"
            )
        return dict(whole) if whole is not None else named
    pending = [task["call_id"] for task in listed["info"]["tasks"]]
    unknown = sorted(set(named) - set(pending))
    if unknown:
        raise UserError(f"interrupt {interrupt!r}: expected calls of {pending}, got {unknown}")
    rest = {} if whole is None else {call: dict(whole) for call in pending}
    return {**rest, **named}


def _pair(option: str, form: str) -> Callable[[str], tuple[str, str]]:
    def split(pair: str) -> tuple[str, str]:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"{option}: expected {form}, got {pair!r}")
        return key, value

    return split


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
