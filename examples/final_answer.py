"""The final answer: ``Runner.call`` runs to the end and returns a ``RunResult`` instead of the events.

``result.text`` and ``result.message`` are the answer, ``result.events`` every event, ``result.session_values``
what the run's tools and agents left in the session, ``result.interrupt_ids`` the ids to resume by when it stopped
for an answer, ``result.metrics`` tokens, calls and durations. ``call_sync`` is the same for code without an event
loop (in a notebook, ``await runner.call(...)``); an error that ended the run is raised.
"""

from batonflow import ChatModelAgent, MemoryCheckpointStore, Runner, ToolContext, tool
from batonflow.schema import ResponseMeta, Usage, assistant
from batonflow.testing import ScriptedModel, tool_calls


@tool
def refund(order_id: int, ctx: ToolContext) -> str:
    """Refund an order once a human approved it.

    Args:
        order_id: the order number
    """
    ctx.add_session_value("refunded", order_id)
    return "refunded" if ctx.ask({"approve_refund": order_id}) == "yes" else "not refunded"


def main() -> None:
    answer = assistant("Order 42 is refunded.")
    answer.response_meta = ResponseMeta(usage=Usage(prompt_tokens=30, completion_tokens=6, total_tokens=36))
    model = ScriptedModel([tool_calls(("refund", {"order_id": 42})), answer])
    runner = Runner(
        ChatModelAgent(name="refunds", model=model, tools=[refund]), checkpoint_store=MemoryCheckpointStore()
    )

    result = runner.call_sync("Refund order 42 please", checkpoint_id="run-2")
    if result.interrupted:  # an approval is pending
        print("interrupted; resume by", len(result.interrupt_ids), "id(s) at checkpoint", result.checkpoint_id)
        result = runner.call_resume_sync("run-2", targets=dict.fromkeys(result.interrupt_ids, "yes"))
    print("text:", result.text)
    print("session values:", result.session_values)
    assert result.metrics is not None
    print("tokens:", result.metrics.total.total_tokens, "model calls:", result.metrics.total.model_calls)


main()
