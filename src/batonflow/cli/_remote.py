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
    approvals' decisions (``--approve``, ``--reject``, ``--skip``, ``--edit ID=JSON``, with ``--comment``)."""

    answers: Sequence[str] = ()
    every: str | None = None
    approve: Sequence[str] = ()
    reject: Sequence[str] = ()
    skip: Sequence[str] = ()
    edit: Sequence[str] = ()
    comment: str | None = None

    def targets(self, interrupts: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
        """The resume targets: interrupt id to answer. A decision is sent per call of the approval when
        ``interrupts`` (the server's listing) say which calls it waits for, else as one decision for all of them."""
        known = {i["id"]: i for i in interrupts}
        every = {} if self.every is None else dict.fromkeys(known, _value(self.every))
        given: dict[str, Any] = {}
        answers = [(key, _value(value)) for key, value in map(_pair("--answer", "INTERRUPT_ID=VALUE"), self.answers)]
        for key, value in [*answers, *self._decisions()]:
            if key in given:
                raise UserError(f"interrupt {key!r}: expected one answer, got two ({given[key]!r} and {value!r})")
            given[key] = _per_call(value, known[key]) if key in known and isinstance(value, Decision) else value
        return {key: dict(value) if isinstance(value, Decision) else value for key, value in {**every, **given}.items()}

    def _decisions(self) -> list[tuple[str, Decision]]:
        decided: list[tuple[str, Decision]] = []
        for action, ids in (("approve", self.approve), ("reject", self.reject), ("skip", self.skip)):
            decided += [(key, self._decision(action)) for key in ids]
        for key, text in map(_pair("--edit", "INTERRUPT_ID={JSON object of arguments}"), self.edit):
            arguments = _value(text)
            if not isinstance(arguments, dict):
                raise UserError(f"--edit {key}: expected a JSON object of the call's arguments, got {text!r}")
            decided.append((key, self._decision("approve", modified_args=arguments)))
        if self.comment is not None and not decided:
            raise UserError("--comment: expected with --approve, --reject, --skip or --edit, got none of them")
        return decided

    def _decision(self, action: str, **more: Any) -> Decision:
        return Decision(action=action, **({"comment": self.comment} if self.comment is not None else {}), **more)


class Decision(dict[str, Any]):
    """One decision on an approval, in its JSON form (``{"action": ..., "comment"?, "modified_args"?}``)."""


def _per_call(decision: Decision, interrupt: Mapping[str, Any]) -> Any:
    """``decision`` for each call an approval waits for (the form a server's index checks); as is, for a question."""
    if interrupt.get("kind") != "approval":
        return decision
    return {task["call_id"]: dict(decision) for task in interrupt["info"]["tasks"]}


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
