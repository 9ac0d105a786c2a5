"""What a model is told about a tool: its name, what it does, and the JSON Schema of its arguments."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ..errors import UserError

__all__ = ["ToolInfo"]

# The rule OpenAI-compatible APIs enforce on function names; checking it here fails at definition time
# instead of at the first model call.
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _empty_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}}


@dataclass(slots=True, kw_only=True, frozen=True)
class ToolInfo:
    """A tool's description for a model.

    ``parameters`` is a JSON Schema object: ``{"type": "object", "properties": {...}, "required": [...]}``.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=_empty_parameters)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise UserError(
                f"Invalid tool name: expected 1 to 64 characters from a-z, A-Z, 0-9, '_' and '-', got {self.name!r}"
            )
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise UserError(
                f'Invalid parameters for tool [{self.name}]: expected a JSON Schema with "type": "object", '
                f"got {self.parameters!r}"
            )
