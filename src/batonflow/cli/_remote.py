"""``batonflow checkpoints``: the pending checkpoints of a running ``batonflow serve``, through its HTTP API (the
server keeps the index of them; stores cannot list what they hold)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import UserError

__all__ = ["Remote", "parse_answers", "segment"]


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


def parse_answers(answers: list[str], every: str | None, interrupts: list[dict[str, Any]]) -> dict[str, Any]:
    """``ID=VALUE`` pairs (VALUE as JSON when it is JSON) as resume targets; ``every`` answers each interrupt."""
    targets: dict[str, Any] = {}
    if every is not None:
        targets = {i["id"]: _value(every) for i in interrupts}
    for pair in answers:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--answer: expected INTERRUPT_ID=VALUE, got {pair!r}")
        targets[key] = _value(value)
    return targets


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
