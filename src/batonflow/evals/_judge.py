"""An LLM judge: a rubric, the request and the answer put to any ``ChatModel``, and its verdict read back.

The judge is an agent like any other: a ``ChatModelAgent`` run by a ``Runner``, so that it takes the library's one
model step (retries, tracing, the model's own settings) rather than calling the model by hand. It asks for
``{"score": 0..1, "pass": true|false, "reason": "..."}`` (through the model's structured output where it has one),
and reads the answer with the library's reader of model JSON: the first JSON object in the text, so that a verdict
in a code fence or after a sentence still counts. A model that fails, or answers anything else, is a
``JudgeError`` that says what was expected and what was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..adk import ChatModelAgent, Runner
from ..errors import ModelJSONError, UserError
from ..models import ChatModel, JSONSchemaFormat, ModelSettings
from ..tools import check_model_json, decode_model_json
from ._set import JudgeError

__all__ = ["JUDGE_INSTRUCTION", "JudgeVerdict", "LLMJudge"]

JUDGE_INSTRUCTION = (
    "You are a strict grader. You read a customer's request, an assistant's answer and one rubric, and decide "
    "whether the answer meets the rubric. Reply with one JSON object only."
)

_VERDICT_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "pass": {"type": "boolean"},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["score", "pass", "reason"],
}


@dataclass(slots=True, frozen=True, kw_only=True)
class JudgeVerdict:
    """What the judge said of one answer: ``score`` from 0 to 1, whether it ``passed``, and why."""

    score: float
    passed: bool
    reason: str


class LLMJudge:
    """Grades answers against rubrics on ``model``. ``instruction`` is the judge's system prompt; ``threshold``, when
    given, decides a pass by the score (score ≥ threshold) instead of the judge's own ``pass``. One judge serves any
    number of concurrent grades."""

    def __init__(
        self,
        model: ChatModel,
        *,
        instruction: str = JUDGE_INSTRUCTION,
        threshold: float | None = None,
        max_tokens: int = 200,
    ) -> None:
        if threshold is not None and not 0 <= threshold <= 1:
            raise UserError(f"threshold: expected None or a number from 0 to 1, got {threshold!r}")
        self.model = model
        self.threshold = threshold
        self._agent = ChatModelAgent(
            name="judge",
            description="grades an answer against a rubric",
            instruction=instruction.replace("{", "{{").replace("}", "}}"),  # a template over session values
            model=model,
            max_iterations=1,
            model_settings=ModelSettings(
                temperature=0,
                max_tokens=max_tokens,
                response_format=JSONSchemaFormat(_VERDICT_SCHEMA, name="verdict"),
            ),
        )
        self._runner = Runner(self._agent)

    @property
    def model_name(self) -> str:
        return str(getattr(self.model, "model_name", type(self.model).__name__))

    async def grade(self, rubric: str, *, request: str, answer: str) -> JudgeVerdict:
        """The judge's verdict on ``answer`` to ``request`` under ``rubric``; ``JudgeError`` when it gives none."""
        prompt = (
            f"Request:\n{request}\n\nAnswer:\n{answer}\n\nRubric:\n{rubric}\n\n"
            'Reply with {"score": a number from 0 to 1, "pass": true or false, "reason": one short sentence}.'
        )
        try:
            result = await self._runner.call(prompt, metrics=False)
        except Exception as error:  # the model's failure, whatever its type: the run raised it
            raise JudgeError(
                f"judge on {self.model_name}: expected a verdict, got a failed model call ({type(error).__name__}: "
                f"{error})"
            ) from error
        if result.interrupted:  # a judge has no tools, so nothing should stop it
            raise JudgeError(f"judge on {self.model_name}: expected a verdict, got a run that stopped to wait")
        verdict = parse_verdict(result.text, model=self.model_name)
        if self.threshold is None:
            return verdict
        return JudgeVerdict(score=verdict.score, passed=verdict.score >= self.threshold, reason=verdict.reason)


def parse_verdict(text: str, *, model: str = "judge") -> JudgeVerdict:
    """The verdict in a judge's answer: its first JSON object, with a ``score`` from 0 to 1, a boolean ``pass`` and
    a ``reason``; ``JudgeError`` otherwise."""
    shown = repr(text if len(text) <= 200 else text[:199] + "…")
    start = text.find("{")
    if start < 0:
        raise JudgeError(f"judge on {model}: expected a JSON verdict, got {shown}")
    try:
        check_model_json(text)
        value, _ = decode_model_json(text, start)
    except ModelJSONError as error:
        raise JudgeError(f"judge on {model}: expected a JSON verdict, got {shown} ({error})") from None
    if not isinstance(value, dict):
        raise JudgeError(f"judge on {model}: expected a JSON object, got {shown}")
    score, passed, reason = value.get("score"), value.get("pass"), value.get("reason", "")
    if isinstance(score, bool) or not isinstance(score, int | float) or not 0 <= score <= 1:
        raise JudgeError(f"judge on {model}: expected score, a number from 0 to 1, got {score!r} in {shown}")
    if not isinstance(passed, bool):
        raise JudgeError(f"judge on {model}: expected pass, true or false, got {passed!r} in {shown}")
    if not isinstance(reason, str):
        raise JudgeError(f"judge on {model}: expected reason, a text, got {reason!r} in {shown}")
    return JudgeVerdict(score=float(score), passed=passed, reason=reason)
