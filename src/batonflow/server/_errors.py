"""The API's client errors: each a 4xx whose JSON body says what was expected and what was found.

Every refusal, from a handler, the validation of a body or the middleware, has one shape::

    {"error": {"code": "unknown_agent", "message": "...", "expected": "...", "found": "..."}}

so that a client can show the message and a program can branch on the code.
"""

from __future__ import annotations

from typing import Any

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from ._wire import JSONAnswer

__all__ = ["ApiError", "ErrorBody", "api_error", "error_body", "install_handlers", "shown"]


class ErrorDetail(BaseModel):
    code: str
    message: str
    expected: Any = None
    found: Any = None


class ErrorBody(BaseModel):
    """What every 4xx answer of the API holds."""

    error: ErrorDetail


class ApiError(Exception):
    """A request the API refuses: ``status`` (4xx), a stable ``code``, and what was ``expected`` and ``found``."""

    def __init__(
        self, status: int, code: str, message: str, *, expected: Any = None, found: Any = None, headers: Any = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.expected = expected
        self.found = found
        self.headers = headers


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to about ``limit`` characters: what an answer may echo of untrusted input."""
    text = repr(value[: limit + 1] if isinstance(value, str | bytes) else value)
    return text if len(text) <= limit else f"{text[:limit]}…"


def error_body(code: str, message: str, expected: Any = None, found: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "expected": expected, "found": found}}


def api_error(_: Request, error: Exception) -> JSONResponse:
    """The answer of an ``ApiError``: its status, its headers, and the API's error body."""
    assert isinstance(error, ApiError)
    body = error_body(error.code, error.message, error.expected, error.found)
    return JSONAnswer(body, status_code=error.status, headers=error.headers)


async def _validation_error(request: Request, error: Exception) -> JSONResponse:
    """Pydantic's findings, one line each; a body that is not JSON at all is a 400 of its own."""
    assert isinstance(error, RequestValidationError)
    problems = list(error.errors())
    if any(p.get("type") == "json_invalid" for p in problems):
        where = next(p for p in problems if p.get("type") == "json_invalid")
        why = where.get("ctx", {}).get("error", "text that is not JSON")
        text = (await request.body())[:60].decode("utf-8", "replace")
        body = error_body("malformed_json", f"request body: expected JSON, got {why}", "a JSON document", shown(text))
        return JSONAnswer(body, status_code=400)
    unicode = next((p for p in problems if p.get("type") == "string_unicode"), None)
    if unicode is not None:  # a lone surrogate, which a constrained string cannot measure: as the API says it
        where = _where(unicode)
        message = f"{where}: expected Unicode text, got a lone surrogate"
        body = error_body("invalid_text", message, "text without lone surrogates", shown(unicode.get("input")))
        return JSONAnswer(body, status_code=400)
    lines = []
    found: dict[str, Any] = {}
    for problem in problems:
        where = _where(problem)
        lines.append(f"{where}: {problem.get('msg', 'invalid')}")
        found[where] = shown(problem.get("input"))
    in_body = all(tuple(p.get("loc", ()))[:1] == ("body",) for p in problems)  # else a query's or a header's too
    message = f"{'request body' if in_body else 'request'}: expected the endpoint's schema, got " + "; ".join(lines)
    body = error_body("invalid_request", message, "a body matching the endpoint's schema (see /openapi.json)", found)
    return JSONAnswer(body, status_code=422)


def _where(problem: Any) -> str:
    return ".".join(str(part) for part in problem.get("loc", ()) if part != "body") or "body"


def _http_error(_: Request, error: Exception) -> JSONResponse:
    """Starlette's own refusals (no such route, wrong method) in the API's shape."""
    assert isinstance(error, StarletteHTTPException)
    codes = {404: "not_found", 405: "method_not_allowed"}
    code = codes.get(error.status_code, "http_error")
    body = error_body(code, str(error.detail), None, None)
    return JSONAnswer(body, status_code=error.status_code, headers=error.headers)


def install_handlers(app: Any) -> None:
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
