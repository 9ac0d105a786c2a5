"""Per-agent history policies: which messages of the run an agent sees after a transfer, and in what form.

The flow agent's default, the whole history in Eino's "For context:" form, suits a router and a few specialists. A
specialist deep in a long run may need less (the current turn, its own work, the last few messages), and a run
whose tools read untrusted text needs other agents' words fenced as quoted data. Every policy here hands the model a
transcript a strict provider accepts: each assistant tool call is followed by its result, and each tool result
follows its call.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import UserError
from ..schema import Message
from ._history import HistoryEntry, HistoryRewriter, default_history_rewriter, fenced_history_rewriter

__all__ = ["HistoryPolicy", "pair_tool_calls"]


@dataclass(frozen=True, slots=True)
class HistoryPolicy:
    """Which messages an agent is given after a transfer. Make one with a class method:

    - ``HistoryPolicy.full()``: the user's input and every agent's messages (the flow agent's default);
    - ``HistoryPolicy.current_turn()``: from the user's latest message on, earlier turns of the conversation left out;
    - ``HistoryPolicy.own()``: the user's input and this agent's own messages, other agents' left out;
    - ``HistoryPolicy.last(n)``: the last ``n`` messages, and the user's latest message if they leave it out;
    - ``HistoryPolicy.custom(function)``: ``function(entries)`` builds the messages, as a history rewriter does.

    The agent's own messages are kept as they are; other agents' messages become "For context:" user messages, or
    fenced quotes with ``fenced=True``. Give a policy to ``set_sub_agents(..., history={name: policy})`` or
    ``agent_with_options(..., history=policy)``.
    """

    kind: str
    count: int = 0
    fenced: bool = False
    function: HistoryRewriter | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise UserError(f"HistoryPolicy: expected a kind among {sorted(_KINDS)}, got {self.kind!r}")

    @classmethod
    def full(cls, *, fenced: bool = False) -> HistoryPolicy:
        return cls("full", fenced=fenced)

    @classmethod
    def current_turn(cls, *, fenced: bool = False) -> HistoryPolicy:
        return cls("current_turn", fenced=fenced)

    @classmethod
    def own(cls) -> HistoryPolicy:
        return cls("own")

    @classmethod
    def last(cls, n: int, *, fenced: bool = False) -> HistoryPolicy:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UserError(f"HistoryPolicy.last: expected a number of messages of at least 1, got {n!r}")
        return cls("last", count=n, fenced=fenced)

    @classmethod
    def custom(cls, function: HistoryRewriter) -> HistoryPolicy:
        if not callable(function):
            raise UserError(
                f"HistoryPolicy.custom: expected a function of the history entries, got {type(function).__name__}"
            )
        return cls("custom", function=function)

    def rewriter(self, agent_name: str) -> HistoryRewriter:
        """This policy as the history rewriter of the agent named ``agent_name``."""
        if self.function is not None:
            return _custom(self.function)
        show = (fenced_history_rewriter if self.fenced else default_history_rewriter)(agent_name)

        def rewrite(entries: list[HistoryEntry]) -> list[Message]:
            if self.kind == "own":
                entries = [e for e in entries if e.is_user_input or e.agent_name == agent_name]
            elif self.kind == "current_turn":
                entries = entries[_latest_input(entries) or 0 :]
            elif self.kind == "last":
                entries = _last(entries, self.count)
            return pair_tool_calls(show(entries))

        return rewrite


_KINDS = frozenset({"full", "current_turn", "own", "last", "custom"})


def as_history_policy(value: object, where: str) -> HistoryPolicy:
    """``value`` as a policy: a policy, or a function taken as ``HistoryPolicy.custom``."""
    if isinstance(value, HistoryPolicy):
        return value
    if callable(value):
        return HistoryPolicy.custom(value)
    raise UserError(f"{where}: expected a HistoryPolicy or a function of the history entries, got {value!r}")


def _custom(function: HistoryRewriter) -> HistoryRewriter:
    async def rewrite(entries: list[HistoryEntry]) -> list[Message]:
        messages = function(entries)
        if inspect.isawaitable(messages):
            messages = await messages
        return pair_tool_calls(list(messages))

    return rewrite


def _latest_input(entries: list[HistoryEntry]) -> int | None:
    found = [i for i, e in enumerate(entries) if e.is_user_input and e.message.role == "user"]
    return found[-1] if found else None


def _last(entries: list[HistoryEntry], n: int) -> list[HistoryEntry]:
    """The last ``n`` entries, the cut moved back so that it does not fall between tool calls and their results,
    with the user's latest message in front when the window leaves it out."""
    start = max(len(entries) - n, 0)
    while start > 0 and entries[start].message.role == "tool":
        start -= 1
    latest = _latest_input(entries)
    if latest is not None and latest < start:
        return [entries[latest], *entries[start:]]
    return entries[start:]


def pair_tool_calls(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every tool call next to its result: a tool result that does not follow its call goes, and
    so does a call that has no result after it (an assistant message left with nothing goes too)."""
    kept: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if message.role == "tool":
            continue  # not right after the assistant message that called it
        if message.role != "assistant" or not message.tool_calls:
            kept.append(message)
            continue
        results: list[Message] = []
        ids = {call.id for call in message.tool_calls}
        while i < len(messages) and messages[i].role == "tool":
            result = messages[i]
            i += 1
            if result.tool_call_id in ids:
                ids.discard(result.tool_call_id)
                results.append(result)
        if ids:
            calls = [call for call in message.tool_calls if call.id not in ids]
            message = replace(message, tool_calls=calls)
            if not calls and not message.content and not message.parts:
                continue
        kept.append(message)
        kept.extend(results)
    return kept
