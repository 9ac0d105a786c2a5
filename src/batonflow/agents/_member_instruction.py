"""The instruction a team gives a member for its turn, as Solon's ``injectAgentInstruction`` does.

The team sends it as a tagged system message of the member's input (``member_instruction``), which any agent reads.
``ReActAgent`` and ``SimpleAgent`` build a system prompt of their own and drop the input's system messages; they
append the tagged ones to that prompt instead, as Solon appends the protocol's text to the member's buffer.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..schema import Message

__all__ = ["member_instruction", "member_instructions"]

_TAG = "batonflow.member_instruction"


def member_instruction(text: str) -> Message:
    """A system message that ``ReActAgent`` and ``SimpleAgent`` append to their system prompt."""
    return Message(role="system", content=text, extra={_TAG: True})


def member_instructions(messages: Sequence[Message]) -> str:
    """The text of the tagged system messages in ``messages``, joined as they come."""
    return "".join(m.content for m in messages if m.role == "system" and m.extra.get(_TAG) is True)
