"""A team member: any ``Agent`` with the profile the supervisor and the protocols read (capabilities, input modes,
and free-form ``meta``, such as the market's ``base_price``).

A member's role is its agent's ``description``. As in Solon, every profile can handle text and counts as an
``assistant``; what is given adds to that.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..adk import Agent, Language
from ..errors import UserError
from ._texts import phrase

__all__ = ["Member", "compact_json"]


def compact_json(value: Any) -> str:
    """JSON as Solon's ``ONode.toJson`` writes it: no spaces, characters as they are."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _merged(base: str, extra: Iterable[str], what: str, name: str) -> tuple[str, ...]:
    found = [base]
    for item in extra:
        if not isinstance(item, str) or not item:
            raise UserError(f"member '{name}': expected {what} to be non-empty strings, got {item!r}")
        if item not in found:
            found.append(item)
    return tuple(found)


class Member:
    """``agent`` with its team profile; see the module doc."""

    __slots__ = ("agent", "capabilities", "input_modes", "meta")

    def __init__(
        self,
        agent: Agent,
        *,
        capabilities: Sequence[str] = (),
        input_modes: Sequence[str] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        name = getattr(agent, "name", None)
        if not isinstance(name, str) or not name or not callable(getattr(agent, "run", None)):
            raise UserError(f"Member expects an Agent with a non-empty name, got {agent!r}")
        if isinstance(capabilities, str) or isinstance(input_modes, str):
            raise UserError(f"member '{name}': capabilities and input_modes are lists of strings, got a string")
        self.agent = agent
        self.capabilities = _merged("assistant", capabilities, "capabilities", name)
        self.input_modes = _merged("text", input_modes, "input modes", name)
        self.meta: dict[str, Any] = dict(meta or {})

    def __repr__(self) -> str:
        return f"Member({self.name!r}, capabilities={list(self.capabilities)!r})"

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def role(self) -> str:
        return self.agent.description or ""

    def supports(self, mode: str) -> bool:
        return any(m.lower() == mode.lower() for m in self.input_modes)

    def metadata(self) -> dict[str, Any]:
        """The member as the supervisor's prompt lists it."""
        data: dict[str, Any] = {"name": self.name}
        if self.role:
            data["role"] = self.role
        data["capabilities"] = list(self.capabilities)
        data["inputModes"] = list(self.input_modes)
        return data

    def profile_text(self, language: Language) -> str:
        """Solon's ``AgentProfile.toFormatString``: the identity a member reads in its instruction."""
        modes = self.input_modes
        if "image" not in modes and "text" in modes and len(modes) == 1:
            segments = [phrase("member.text_only", language)]
        else:
            segments = [phrase("member.input_modes", language) + ", ".join(modes)]
        segments.append(phrase("member.capabilities", language) + ", ".join(self.capabilities))
        return " | ".join(segments)
