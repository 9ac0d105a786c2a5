"""A team's settings as its protocol and supervisor read them, and its member map (ordered, names compared
case-insensitively, as Solon's ``IgnoreCaseMap``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ..errors import UserError
from ..graph import GraphSpec
from ._member import Member

__all__ = ["MemberMap", "TeamConfig"]


class MemberMap:
    """The members by name, in the order they were added; lookups ignore case and return the registered name."""

    __slots__ = ("_by_key",)

    def __init__(self) -> None:
        self._by_key: dict[str, Member] = {}

    def add(self, member: Member, *, team: str) -> None:
        key = member.name.lower()
        if key in self._by_key:
            raise UserError(
                f"team '{team}': expected unique member names (case-insensitive), got '{member.name}' and "
                f"'{self._by_key[key].name}'"
            )
        self._by_key[key] = member

    def get(self, name: str | None) -> Member | None:
        return self._by_key.get(name.lower()) if name else None

    def canonical(self, name: str | None) -> str | None:
        member = self.get(name)
        return member.name if member is not None else None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._by_key

    def __iter__(self) -> Iterator[Member]:
        return iter(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)

    def names(self) -> list[str]:
        return [member.name for member in self._by_key.values()]

    def first(self) -> str | None:
        return next(iter(self._by_key.values())).name if self._by_key else None


@dataclass(slots=True, kw_only=True)
class TeamConfig:
    """What a ``TeamAgent`` was made with, normalised."""

    name: str
    members: MemberMap
    finish_marker: str
    max_turns: int
    max_retries: int
    session_window: int
    record_window: int
    feedback: bool
    role: str | None
    instruction: str | None
    output_key: str | None
    graph_adjuster: Callable[[GraphSpec], None] | None = None
    trace_key: str = field(default="")
