"""How much of a prompt a message takes: the offline token estimate, and cutting texts down to a budget."""

from __future__ import annotations

import math

from ...adk import get_language
from ...schema import Message, TextPart

__all__ = ["cut_middle", "estimate_tokens", "trim_marker", "truncate_tokens"]

_MESSAGE_OVERHEAD = 4  # role and separators, as chat templates frame each message
_MEDIA_PART_TOKENS = 85  # an image at low detail on OpenAI; a guess for other media


def estimate_tokens(message: Message) -> int:
    """A cheap, offline estimate of the tokens ``message`` takes in a prompt (the interceptor's default).

    About four ASCII characters make a token; any other character counts as one (CJK text runs close to a token a
    character). Tool calls count their names and arguments, each image or audio part 85 tokens, and every message
    4 tokens for its framing. It errs on the high side for non-English text, which is the safe side here.
    """
    tokens = _MESSAGE_OVERHEAD + _MEDIA_PART_TOKENS * sum(1 for p in message.parts if not isinstance(p, TextPart))
    tokens += _text_tokens(message.text)
    for call in message.tool_calls:
        tokens += _text_tokens(call.function.name) + _text_tokens(call.function.arguments)
    return tokens


def _text_tokens(text: str) -> int:
    ascii_chars = len(text.encode("ascii", "ignore"))
    return math.ceil(ascii_chars / 4) + len(text) - ascii_chars


# Solon's marker for a message cut down to its head and tail (ContextCompressionInterceptor.truncateTextToTokens).
_TRIMMED = {
    "en": "\n... [Content too large, truncated: this single message exceeded the context budget, so the middle was "
    "left out and only the head and tail kept. To see all of it, fetch it again page by page] ...\n",
    "zh": "\n... [内容过大已截断：单条消息超过上下文预算，省略中间部分，仅保留首尾。如需完整内容，请用分页方式重新获取] ...\n",
}


def trim_marker() -> str:
    """What stands in for the middle of a message that was cut, in the active language."""
    return _TRIMMED[get_language()]


def cut_middle(text: str, keep: int) -> str:
    """``text`` with all but ``keep`` characters of its middle replaced by the trim marker."""
    keep = max(0, keep)
    head = (keep + 1) // 2
    tail = keep - head
    return f"{text[:head]}{trim_marker()}{text[len(text) - tail :]}"


def truncate_tokens(text: str, limit: int) -> str:
    """The start of ``text`` that fits in ``limit`` estimated tokens."""
    tokens = _text_tokens(text)
    if tokens <= limit:
        return text
    keep = len(text) * limit // tokens
    while keep > 0 and _text_tokens(text[:keep]) > limit:
        keep -= max(1, keep // 20)
    return text[:keep].rstrip()
