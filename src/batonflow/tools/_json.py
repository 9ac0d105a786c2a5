"""Reading JSON that a model wrote: tool arguments, structured answers, text-style actions.

What a model writes is hostile input. Python's parser recurses once per level, so ``"[" * 100000`` ends in a
``RecursionError`` (an untyped crash of the run), and an error report built over megabytes of text costs seconds on
the event loop and grows every transcript and checkpoint. Every place in batonflow that parses a model's JSON goes
through here, so that the same limits hold everywhere and break the same way: a ``ModelJSONError`` whose text the
model can read, which the caller turns into its own error (a ``ToolArgumentsError``, a retry of the answer).

The limits are checked before parsing, on the text: its length, then how deeply its brackets nest outside strings.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from ..errors import ModelJSONError
from .feedback import describe_json_text

__all__ = ["MAX_JSON_CHARS", "MAX_JSON_DEPTH", "check_model_json", "decode_model_json", "parse_model_json"]

MAX_JSON_CHARS = 1_000_000
"""The longest JSON text read from a model, in characters: well above what a model writes in one reply."""
MAX_JSON_DEPTH = 100
"""The deepest nesting of arrays and objects read from a model; pydantic's own parser stops near 200."""

# A string (an unterminated one runs to the end, so that no quote is tried twice) or a run of characters that are
# neither quotes nor brackets: what is left after removing both is the brackets outside strings.
_NOT_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"?|[^"\[\]{}]+', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_DECODER = json.JSONDecoder()


def check_model_json(text: str, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise ``ModelJSONError`` if ``text`` is longer than ``max_chars`` or nests deeper than ``max_depth``.

    For a parser of your own (pydantic's ``model_validate_json``, say): the limits without the parsing.
    """
    if len(text) > max_chars:
        raise ModelJSONError(
            f"expected at most {max_chars:,} characters of JSON, got {len(text):,}",
            reason="too_long",
            limit=max_chars,
            found=len(text),
        )
    # Fewer opening brackets than the limit cannot nest deeper than it: the usual case costs two counts.
    if text.count("[") + text.count("{") <= max_depth:
        return
    brackets = _NOT_BRACKETS.sub("", text)
    depth = max(accumulate(map(_STEP.__getitem__, brackets)), default=0)
    if depth > max_depth:
        raise ModelJSONError(
            f"expected JSON nested at most {max_depth} levels deep, got {depth:,} levels",
            reason="too_deep",
            limit=max_depth,
            found=depth,
        )


def parse_model_json(text: str, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value ``text`` holds, or a ``ModelJSONError`` the model can read (invalid, too long, too deep)."""
    check_model_json(text, max_chars=max_chars, max_depth=max_depth)
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _invalid(text, error.msg) from None
    except (ValueError, RecursionError) as error:  # an integer past Python's digit limit; a very deep call stack
        raise _invalid(text, str(error)) from None


def decode_model_json(text: str, start: int = 0) -> tuple[Any, int]:
    """The JSON value that begins at ``start`` in ``text`` (more text may follow), and where it ends: a
    ``json.JSONDecoder.raw_decode`` whose errors are ``ModelJSONError``s.

    For text that holds several values, read one after another: check the whole text once, with
    ``check_model_json``, before the first call (checking the rest of the text on every call would be quadratic).
    """
    try:
        return _DECODER.raw_decode(text, start)
    except json.JSONDecodeError as error:
        raise _invalid(text[start : start + 201], error.msg) from None
    except (ValueError, RecursionError) as error:
        raise _invalid(text[start : start + 201], str(error)) from None


def _invalid(text: str, detail: str) -> ModelJSONError:
    return ModelJSONError(f"expected JSON, got {describe_json_text(text)} ({detail})", reason="invalid", detail=detail)
