"""The LLM judge: a rubric graded on any chat model through the Runner; a verdict read from its JSON, and a
``JudgeError`` for a model that fails or answers anything else."""

from __future__ import annotations

import pytest

from batonflow.errors import RunError, UserError
from batonflow.evals import JudgeError, JudgeVerdict, LLMJudge, parse_verdict
from batonflow.models import JSONSchemaFormat
from batonflow.schema import Message, assistant
from batonflow.testing import FunctionModel, ScriptedModel
from batonflow.tools import ToolInfo


async def test_the_judge_puts_request_answer_and_rubric_to_its_model_and_reads_the_verdict() -> None:
    model = ScriptedModel([assistant('{"score": 0.9, "pass": true, "reason": "polite and right"}')])
    judge = LLMJudge(model)

    verdict = await judge.grade("The answer is polite.", request="Refund 1042", answer="Done, sorry for the trouble.")

    assert verdict == JudgeVerdict(score=0.9, passed=True, reason="polite and right")
    (request,) = model.requests
    system, prompt = request.messages
    assert system.role == "system" and "strict grader" in system.content
    assert prompt.content.startswith(
        "Request:\nRefund 1042\n\nAnswer:\nDone, sorry for the trouble.\n\nRubric:\nThe answer is polite."
    )
    assert request.settings is not None and request.settings.temperature == 0
    assert isinstance(request.settings.response_format, JSONSchemaFormat)
    model.assert_complete()


async def test_a_threshold_decides_the_pass_by_the_score() -> None:
    model = ScriptedModel([assistant('{"score": 0.6, "pass": true, "reason": "meh"}')])

    verdict = await LLMJudge(model, threshold=0.7).grade("r", request="q", answer="a")

    assert (verdict.score, verdict.passed) == (0.6, False)


def test_a_verdict_in_a_fence_or_after_prose_still_reads() -> None:
    text = 'Here is my verdict:\n```json\n{"score": 1, "pass": true, "reason": "ok"}\n```'
    assert parse_verdict(text) == JudgeVerdict(score=1.0, passed=True, reason="ok")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("It looks fine to me.", "judge on j: expected a JSON verdict, got 'It looks fine to me.'"),
        ('{"score": 0.5, "pass": tru', 'judge on j: expected a JSON verdict, got \'{"score": 0.5, "pass": tru\' ('),
        ('{"score": 7, "pass": true, "reason": ""}', "judge on j: expected score, a number from 0 to 1, got 7 in"),
        ('{"score": true, "pass": true}', "judge on j: expected score, a number from 0 to 1, got True in"),
        ('{"score": 0.5, "pass": "yes", "reason": ""}', "judge on j: expected pass, true or false, got 'yes' in"),
        ('{"score": 0.5, "pass": false, "reason": 3}', "judge on j: expected reason, a text, got 3 in"),
        ('{"verdict": "pass"}', "judge on j: expected score, a number from 0 to 1, got None in"),
    ],
)
def test_garbage_is_a_judge_error_saying_what_was_expected(text: str, message: str) -> None:
    with pytest.raises(JudgeError) as caught:
        parse_verdict(text, model="j")
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, RunError)


async def test_a_judge_that_answers_garbage_is_a_judge_error() -> None:
    judge = LLMJudge(ScriptedModel([assistant("PASS!!!")], model_name="tiny"))

    with pytest.raises(JudgeError, match=r"^judge on tiny: expected a JSON verdict, got 'PASS!!!'$"):
        await judge.grade("r", request="q", answer="a")


def _down(messages: list[Message], tools: list[ToolInfo]) -> Message:
    raise ConnectionError("the judge's server is down")


async def test_a_judge_whose_model_fails_is_a_judge_error() -> None:
    judge = LLMJudge(FunctionModel(_down, model_name="remote"))

    with pytest.raises(
        JudgeError,
        match=r"judge on remote: expected a verdict, got a failed model call \(ConnectionError: the judge's server is down\)",
    ) as caught:
        await judge.grade("r", request="q", answer="a")
    assert isinstance(caught.value.__cause__, ConnectionError)


def test_a_threshold_outside_0_to_1_is_refused() -> None:
    with pytest.raises(UserError, match="threshold: expected None or a number from 0 to 1, got 2"):
        LLMJudge(ScriptedModel([]), threshold=2)
