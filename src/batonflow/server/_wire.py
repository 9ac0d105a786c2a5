"""JSON on the wire: text that UTF-8 can carry, and the answers made of it. What the API sends for each event is
a frame, made where the run runs (``batonflow.distributed``); the functions the server shows values with are
re-exported here."""

from __future__ import annotations

import json
from typing import Any

from fastapi.responses import JSONResponse

from ..distributed import error_json, json_text, jsonable, message_json

__all__ = [
    "JSONAnswer",
    "error_json",
    "json_text",
    "jsonable",
    "message_json",
]


class JSONAnswer(JSONResponse):
    """The API's JSON answers: FastAPI's, but a body with a lone surrogate is escaped (``json_text``), not a 500."""

    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, allow_nan=False, separators=(",", ":")).encode("ascii")
