"""The demo: the shop's tools, the printed event stream, the scripted replay, and a run on the real local model;
the team demo (``batonflow demo --team``) replayed and on the local model."""

from __future__ import annotations

import io
import json

import pytest

from batonflow.adk import (
    ChatModelAgent,
    Runner,
    RunStep,
    collect_events,
)
from batonflow.agents import HITL
from batonflow.cli import main
from batonflow.cli.demo import Approval, Shop, build_system, run_demo, run_team_demo, scripted_model
from batonflow.errors import UserError
from batonflow.models import ForcedTool, ToolThenAnswer
from batonflow.observe import ConsoleRenderer
from batonflow.schema import FunctionCall, Message, ToolCall, assistant
from batonflow.store import MemoryCheckpointStore
from batonflow.testing import FunctionModel
from batonflow.tools import ToolInfo

REFUND_PATH = (RunStep("router"), RunStep("refund_agent"))


class Terminal(io.StringIO):
    """Typed answers, as if from a terminal."""

    def isatty(self) -> bool:
        return True


async def scripted_output(stdin: io.StringIO | None = None, approve: Approval = "auto") -> str:
    out = io.StringIO()
    await run_demo("scripted", out=out, approve=approve, stdin=stdin or io.StringIO())
    return out.getvalue()


def shop_state(output: str) -> str:
    return output.split("== what the tools changed in the shop ==")[1]


def turn(output: str, number: int) -> str:
    return output.split(f"== turn {number} of 4 ==")[1].split("== ")[0]


# -- the shop's tools -----------------------------------------------------------------------------------------


def test_issue_refund_marks_the_order_refunded_and_records_the_refund() -> None:
    shop = Shop()

    answer = shop.issue_refund("1042", "arrived damaged")

    assert answer == "Refunded 59.00 EUR for order 1042 (X200 headphones)."
    assert shop.orders["1042"].status == "refunded"
    assert [(r.order_id, r.amount, r.reason) for r in shop.refunds] == [("1042", 59.0, "arrived damaged")]


def test_second_refund_of_an_order_is_refused_and_changes_nothing() -> None:
    shop = Shop()
    shop.issue_refund("1042", "arrived damaged")

    answer = shop.issue_refund("1042", "again")

    assert answer == "Order 1042 was already refunded; no second refund was issued."
    assert len(shop.refunds) == 1


def test_unknown_order_id_is_answered_with_the_order_numbers_that_exist() -> None:
    shop = Shop()

    assert shop.issue_refund("9999", "x") == "No order 9999: expected an order number such as 1042, 1043, 1044."
    assert shop.lookup_order("abc").startswith("No order abc:")
    assert shop.file_complaint("1", "delivery", "late").startswith("No order 1:")
    assert shop.refunds == []
    assert shop.complaints == []


@pytest.mark.parametrize("order_id", ["1044", " #1044 ", ",1044", "order 1044"])
def test_order_number_is_found_wherever_it_is_in_the_text(order_id: str) -> None:
    assert Shop().lookup_order(order_id) == "Order 1044: X100 earbuds; 29.00 EUR; status shipped."


def test_file_complaint_returns_a_new_ticket_id_each_time() -> None:
    shop = Shop()

    first = shop.file_complaint("1043", "delivery", "parcel thrown over the fence")
    second = shop.file_complaint("1042", "product", "left ear is quiet")

    assert first == "Complaint filed as ticket T-1001 for order 1043 (delivery)."
    assert second == "Complaint filed as ticket T-1002 for order 1042 (product)."
    assert [c.ticket for c in shop.complaints] == ["T-1001", "T-1002"]


def test_search_products_ranks_products_by_matching_words() -> None:
    answer = Shop().search_products("headphones with noise cancelling")

    assert answer.startswith("X200: X200 wireless headphones, 59.00 EUR")
    assert "K3" not in answer


def test_search_without_a_match_lists_what_the_shop_sells() -> None:
    answer = Shop().search_products("bicycle")

    assert answer == (
        "No product matches bicycle. We sell: X200 wireless headphones, X100 earbuds, K3 kettle, L7 desk lamp."
    )


def test_get_product_answers_details_or_the_ids_that_exist() -> None:
    shop = Shop()

    assert (
        shop.get_product("x200") == "X200 wireless headphones (X200): 59.00 EUR; bluetooth 5.3, noise cancelling, 30 h."
    )
    assert shop.get_product("Z9") == "No product Z9: expected one of X200, X100, K3, L7."


def test_tools_schemas_come_from_the_shop_methods() -> None:
    tree = build_system(scripted_model(), Shop())
    refund = next(a for a in tree.walk() if a.name == "refund_agent").agent
    assert isinstance(refund, ChatModelAgent)

    infos = {t.info.name: t.info for t in refund.tools}

    assert list(infos) == ["issue_refund", "lookup_order"]
    assert infos["issue_refund"].parameters["required"] == ["order_id", "reason"]
    # Bounded, so that a small model's runaway text ends as valid JSON (llama.cpp's grammar enforces maxLength).
    assert infos["issue_refund"].parameters["properties"]["reason"]["maxLength"] == 80


# -- the scripted replay --------------------------------------------------------------------------------------


async def test_scripted_demo_prints_the_model_it_runs_on_first() -> None:
    output = await scripted_output()

    assert output.splitlines()[0] == "batonflow demo: customer service on model scripted (scripted)"


async def test_scripted_demo_routes_each_request_to_its_specialist() -> None:
    output = await scripted_output()

    for number, agent in [(1, "refund_agent"), (2, "complaint_agent"), (3, "product_agent"), (4, "refund_agent")]:
        text = turn(output, number)
        assert '[router] router calls transfer_to_agent(agent_name="' + agent + '")' in text
        assert f"[router] router → transfer to {agent}" in text
        assert f"[router → {agent}] {agent}: " in text  # the specialist's final answer


async def test_scripted_demo_prints_tool_calls_with_arguments_and_their_results() -> None:
    output = await scripted_output()

    first = turn(output, 1)
    assert '[router → refund_agent] refund_agent calls lookup_order(order_id="1042")' in first
    assert "[router → refund_agent] refund_agent ← issue_refund: Refunded 59.00 EUR for order 1042" in first
    assert 'calls file_complaint(order_id="1043", category="delivery"' in turn(output, 2)
    assert 'product_agent calls get_product(product_id="X200")' in turn(output, 3)


async def test_scripted_demo_stops_a_refund_for_approval_before_it_runs() -> None:
    first = turn(await scripted_output(), 1)

    waiting = first.index(
        '[router → refund_agent] refund_agent waits for approval: issue_refund(order_id="1042", '
        'reason="Order 1042 arrived damaged. Please refund it.") (A refund pays money back: approve it?)\n'
        'approve issue_refund(order_id="1042", reason="Order 1042 arrived damaged. Please refund it.")? [y/n] '
    )
    assert waiting < first.index("refund_agent ← issue_refund:")
    assert "lookup_order" in first[:waiting]  # not sensitive: it ran without asking


async def test_without_a_terminal_the_first_refund_is_approved_and_the_later_one_rejected() -> None:
    output = await scripted_output()

    first, last = turn(output, 1), turn(output, 4)
    assert "[y/n] y  (stdin is not a terminal: the first refund is approved, later ones rejected)\n" in first
    assert "→ approved by the user\n" in first
    assert (
        "refund_agent ← issue_refund: Refunded 59.00 EUR for order 1042 (X200 headphones). (Note: approved by the user)"
    ) in first
    assert 'waits for approval: issue_refund(order_id="1044"' in last
    assert "[y/n] n  (stdin is not a terminal" in last
    assert "→ rejected by the user\n" in last
    # The rejection's comment is the call's result and, for the only sensitive call, the answer (Solon's HITL).
    assert "refund_agent ← issue_refund: rejected by the user" in last
    assert "[router → refund_agent] refund_agent: rejected by the user" in last


async def test_the_shop_state_shows_the_refund_only_for_the_approved_order() -> None:
    state = shop_state(await scripted_output())

    assert state.count("refund issued:") == 1
    assert "refund issued: order 1042, 59.00 EUR" in state
    assert "ticket filed:  T-1001 for order 1043 [delivery]" in state
    assert "orders now:    1042 refunded, 1043 delivered, 1044 shipped\n" in state
    assert state.split("== the approvals ==\n")[1].splitlines()[:2] == [
        'approved: issue_refund(order_id="1042", reason="Order 1042 arrived damaged. Please refund it.")',
        'rejected: issue_refund(order_id="1044", reason="Please refund order 1044 too, the earbuds.")',
    ]


async def test_at_a_terminal_the_person_decides_each_refund() -> None:
    output = await scripted_output(Terminal("n\ny\n"))

    assert "? [y/n] → rejected by the user" in turn(output, 1)  # the terminal echoes what was typed
    assert "? [y/n] → approved by the user" in turn(output, 4)
    assert "orders now:    1042 delivered, 1043 delivered, 1044 refunded" in shop_state(output)


async def test_ask_repeats_the_question_until_it_gets_y_or_n_and_rejects_when_input_ends() -> None:
    output = await scripted_output(io.StringIO("maybe\nYes\n"), approve="ask")

    first = turn(output, 1)
    assert first.count("[y/n] ") == 2
    assert "[y/n] maybe\n" in first and "[y/n] Yes\n→ approved by the user" in first
    assert "[y/n] n  (no more input)\n→ rejected by the user" in turn(output, 4)


@pytest.mark.parametrize(
    ("approve", "orders"),
    [("yes", "1042 refunded, 1043 delivered, 1044 refunded"), ("no", "1042 delivered, 1043 delivered, 1044 shipped")],
)
async def test_approve_yes_or_no_decides_every_refund_alike(approve: Approval, orders: str) -> None:
    output = await scripted_output(Terminal(), approve=approve)

    assert output.count(f"[y/n] {approve[0]}  (--approve {approve})") == 2
    assert f"orders now:    {orders}" in shop_state(output)


async def test_unknown_approval_mode_is_a_user_error() -> None:
    with pytest.raises(UserError, match="approve: expected one of auto, ask, yes, no, got 'maybe'"):
        await run_demo("scripted", out=io.StringIO(), approve="maybe", stdin=io.StringIO())  # type: ignore[arg-type]


async def test_scripted_demo_prints_the_time_of_each_turn() -> None:
    output = await scripted_output()

    assert [line.split(":")[0] for line in output.splitlines() if line.startswith("(turn ")] == [
        "(turn 1",
        "(turn 2",
        "(turn 3",
        "(turn 4",
    ]


async def test_unknown_model_provider_is_a_user_error_that_mentions_scripted() -> None:
    with pytest.raises(UserError, match="'scripted'"):
        await run_demo("nonsense:x", out=io.StringIO(), stdin=io.StringIO())


async def test_unreachable_model_is_printed_as_error_events_and_the_demo_finishes() -> None:
    out = io.StringIO()

    await run_demo(
        "openai-compatible:http://127.0.0.1:9/v1#none", out=out, turns=["Refund order 1042."], stdin=io.StringIO()
    )

    output = out.getvalue()
    assert "[router] router error: ModelConnectionError" in output
    assert "nothing: no refund issued, no complaint filed" in output


# -- guiding a small model ------------------------------------------------------------------------------------


async def print_events_of(runner: Runner, text: str) -> str:
    out = io.StringIO()
    await ConsoleRenderer(out).print_events(runner.query(text))
    return out.getvalue()


async def test_guided_specialist_is_forced_to_its_main_tool_then_answers_without_tools() -> None:
    def fn(messages: list[Message], tools: list[ToolInfo]) -> Message:
        if not tools:
            return assistant("Done.")
        name = tools[0].name
        args = {"agent_name": "refund_agent"} if name == "transfer_to_agent" else {"order_id": "1042", "reason": "x"}
        return assistant(
            tool_calls=[ToolCall(index=0, id=name, function=FunctionCall(name=name, arguments=json.dumps(args)))]
        )

    model = FunctionModel(fn)
    shop = Shop()
    runner = Runner(build_system(model, shop, guided=True), checkpoint_store=MemoryCheckpointStore())

    events = await collect_events(runner.query("Refund order 1042.", checkpoint_id="c"))
    [waiting] = events[-1].action.interrupted.interrupt_contexts  # type: ignore[union-attr]
    assert shop.refunds == []
    await collect_events(runner.resume("c", targets={waiting.id: {"issue_refund": HITL.approve()}}))

    assert [(r.tool_choice, [t.name for t in r.tools]) for r in model.requests] == [
        (ForcedTool("transfer_to_agent"), ["transfer_to_agent"]),
        (ForcedTool("issue_refund"), ["issue_refund"]),
        (None, []),
    ]
    assert [r.order_id for r in shop.refunds] == ["1042"]


async def test_router_runs_on_its_own_model_when_given_one() -> None:
    model, router_model = scripted_model(), scripted_model()
    runner = Runner(build_system(model, Shop(), router_model=router_model), enable_streaming=True)

    await print_events_of(runner, "Refund order 1042.")

    assert [r.tool_choice for r in router_model.requests] == [ForcedTool("transfer_to_agent")]
    assert all(r.tool_choice is None for r in model.requests)
    assert [t.name for t in model.requests[0].tools] == ["issue_refund", "lookup_order"]


def test_guided_model_keeps_the_name_of_the_model_it_wraps() -> None:
    assert ToolThenAnswer(scripted_model(), "issue_refund").model_name == "scripted"


# -- the real local model -------------------------------------------------------------------------------------


@pytest.mark.real_server
async def test_demo_on_local_smollm2_completes_and_routes_with_a_transfer() -> None:
    out = io.StringIO()

    await run_demo("local:smollm2", out=out, stdin=io.StringIO())

    output = out.getvalue()
    assert output.startswith("batonflow demo: customer service on model local:smollm2 (SmolLM2-135M-Instruct")
    assert "[router] router → transfer to " in output
    assert "4 turns in " in output


# -- the team demo --------------------------------------------------------------------------------------------


def test_team_demo_replayed_prints_each_decision_and_member_then_what_the_team_did(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--team", "--model", "scripted"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[:4] == [
        "batonflow demo --team: a research team on model scripted (scripted)",
        "members: researcher, writer, reviewer; protocol hierarchical",
        "",
        "user: Write a short paragraph about honey bees.",
    ]
    assert lines[4:12] == [
        "[team_agent → supervisor] supervisor: researcher",
        "[team_agent → researcher] researcher: 1. Bees pollinate crops. 2. Bees make honey from nectar.",
        "[team_agent → supervisor] supervisor: next: writer",
        "[team_agent → writer] writer: Honey bees pollinate crops and make honey from nectar.",
        "[team_agent → supervisor] supervisor: route to reviewer",
        "[team_agent → reviewer] reviewer: APPROVED: Honey bees pollinate crops and make honey from nectar.",
        "[team_agent → supervisor] supervisor: [TEAM_AGENT_FINISH] Honey bees pollinate crops and make honey "
        "from nectar.",
        "[team_agent] team_agent: Honey bees pollinate crops and make honey from nectar.",
    ]
    summary = lines[lines.index("== what the team did ==") + 1 :]
    assert [line.split(":")[0] for line in summary[:3]] == ["researcher", "writer", "reviewer"]
    assert summary[0].startswith("researcher: 10 words in ")
    assert summary[3:5] == [
        "supervisor decisions: 4",
        "answer: Honey bees pollinate crops and make honey from nectar.",
    ]
    assert summary[-1].startswith("the team worked ")


async def test_team_demo_on_an_unreachable_model_sums_up_the_supervisors_failure() -> None:
    out = io.StringIO()

    trace = await run_team_demo("openai-compatible:http://127.0.0.1:9/v1#none", out=out)

    output = out.getvalue()
    assert "protocol hierarchical" in output  # a model that is not local supervises the team itself
    summary = output.split("== what the team did ==\n")[1].splitlines()
    assert summary[0].startswith("supervisor noted: Runtime Error: model 'none' request failed: connection to ")
    assert summary[1:3] == ["supervisor decisions: 1", "answer: "]
    assert [record.source for record in trace.records] == ["supervisor"]


def test_team_demo_with_an_unknown_model_provider_returns_1_mentioning_scripted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["demo", "--team", "--model", "nonsense:x"]) == 1
    assert "'scripted'" in capsys.readouterr().err


@pytest.mark.real_server
def test_team_demo_on_local_smollm2_runs_the_three_members_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--team"]) == 0

    output = capsys.readouterr().out
    assert output.startswith("batonflow demo --team: a research team on model local:smollm2 (SmolLM2-135M-Instruct")
    assert "protocol sequential" in output
    spoke = [line.split("] ")[1].split(":")[0] for line in output.splitlines() if line.startswith("[team_agent →")]
    assert spoke == ["researcher", "writer", "reviewer"]  # streamed as they wrote, in the protocol's order
    summary = output.split("== what the team did ==\n")[1].splitlines()
    assert [line.split(":")[0] for line in summary[:3]] == ["researcher", "writer", "reviewer"]
    answer = next(line for line in summary if line.startswith("answer: "))
    assert "bee" in answer.lower()  # on topic; what it says is not checked
