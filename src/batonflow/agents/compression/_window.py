"""Where a compression may cut a transcript, and what keeps the result valid for strict providers.

The messages a run starts from — its system prompt, the conversation history it was fed and the current prompt —
are its first chain (Solon tags them ``_first``, "初心"): never compressed, cut or shortened. What follows is the
variable part, where a cut never separates an assistant message from the results of its tool calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ...schema import Message
from ._summary import is_summary

__all__ = [
    "atomic_range",
    "first_end",
    "group_start",
    "is_first",
    "is_thought",
    "mark_first",
    "valid_groups",
]

# In ``extra``, which checkpoints keep and providers never see, as the summary's tag.
_FIRST_TAG = "first"


def mark_first(messages: Sequence[Message]) -> list[Message]:
    """``messages`` tagged as the first chain (new messages: the originals may be shared)."""
    return [m if is_first(m) else replace(m, extra={**m.extra, _FIRST_TAG: True}) for m in messages]


def is_first(message: Message) -> bool:
    return message.extra.get(_FIRST_TAG) is True


def first_end(messages: Sequence[Message]) -> int:
    """Where the first chain ends: after its last tagged message. A transcript without tags (a checkpoint made
    before they were set) keeps what comes before the first assistant message or summary."""
    for i in range(len(messages) - 1, -1, -1):
        if is_first(messages[i]):
            return i + 1
    for i, message in enumerate(messages):
        if message.role == "assistant" or is_summary(message):
            return i
    return len(messages)


def is_thought(message: Message) -> bool:
    """An assistant message that says something and calls nothing: a thought worth keeping with what follows."""
    return message.role == "assistant" and not message.tool_calls and bool(message.text.strip())


def _calls_tools(message: Message) -> bool:
    return message.role == "assistant" and bool(message.tool_calls)


def group_start(messages: Sequence[Message], index: int, floor: int) -> int:
    """``index``, moved back to the assistant message whose call a tool result there answers (not below
    ``floor``): a cut never opens on a result."""
    if not floor < index < len(messages) or messages[index].role != "tool":
        return index
    wanted = messages[index].tool_call_id
    for i in range(index - 1, floor - 1, -1):
        message = messages[i]
        if _calls_tools(message) and (not wanted or any(c.id == wanted for c in message.tool_calls)):
            return i
        if message.role != "tool":
            break
    return index


def atomic_range(messages: Sequence[Message], index: int, floor: int) -> tuple[int, int]:
    """The messages that go together with the one at ``index``: an assistant message with tool calls and the
    results after it (from a result, back to its call)."""
    start = index
    if messages[index].role == "tool":
        start = group_start(messages, index, floor)
        if start == index:
            return index, index + 1
    end = start + 1
    if _calls_tools(messages[start]):
        while end < len(messages) and messages[end].role == "tool":
            end += 1
    return start, end


def valid_groups(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as strict providers accept them: every assistant message with tool calls followed by exactly
    one result for each call (else it goes, with its results), no result elsewhere, no empty assistant message."""
    kept: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        if _calls_tools(message):
            j = i + 1
            while j < len(messages) and messages[j].role == "tool":
                j += 1
            matched = _matched_results(message, messages[i + 1 : j])
            if matched is not None:
                kept.append(message)
                kept.extend(matched)
            i = j
            continue
        i += 1
        if message.role == "tool":
            continue
        if message.role == "assistant" and not message.text.strip() and not message.parts:
            continue
        kept.append(message)
    return kept


def _matched_results(call: Message, results: Sequence[Message]) -> list[Message] | None:
    """One result per call, in the calls' order; None when a call has none (or two)."""
    ids = [c.id for c in call.tool_calls]
    if all(ids):
        if len(set(ids)) != len(ids):
            return None
        by_id: dict[str, Message] = {}
        for result in results:
            if result.tool_call_id in ids:
                if result.tool_call_id in by_id:
                    return None
                by_id[result.tool_call_id] = result
        return [by_id[i] for i in ids] if len(by_id) == len(ids) else None
    # Calls without ids (some providers give none): results pair with them by order and name.
    if any(ids) or len(results) != len(ids):
        return None
    pairs = zip(call.tool_calls, results, strict=True)
    if any(r.tool_call_id or (r.tool_name and r.tool_name != c.function.name) for c, r in pairs):
        return None
    return list(results)
