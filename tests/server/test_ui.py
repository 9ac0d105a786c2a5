"""The dev UI at /ui, end to end in headless Chromium (Debian's ``chromium``, driven by Playwright, one browser for
the module) against a real uvicorn on loopback: a chat with streamed text, runs side by side each in a block of its
own, the run tree across a resume, what a run waits for, cards dismissed or gone stale, tokens, diagrams with the
running node and the state panel, and interrupts answered from the page that resume the run. Screenshots go to
``$BATONFLOW_ARTIFACTS`` (``build/ui-screenshots`` by default)."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from playwright.async_api import Browser, Page, async_playwright, expect

from batonflow import ChatModelAgent, MemoryCheckpointStore, Message, ReActAgent, tool
from batonflow.agents import human_approval
from batonflow.distributed import InProcessBackend
from batonflow.graph import Graph
from batonflow.schema import ResponseMeta, Usage, assistant
from batonflow.server import create_app
from batonflow.team import TeamAgent
from batonflow.testing import FunctionModel, tool_calls
from batonflow.tools import ToolInfo

from . import apps
from .conftest import serving
from .test_flows import ORDER
from .test_flows import engine as flow_engine
from .test_gaps import LossyLog

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("BATONFLOW_ARTIFACTS", ROOT / "build" / "ui-screenshots"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium for the module; each test opens a page of its own."""
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            await launched.close()


@asynccontextmanager
async def opened(browser: Browser, app: FastAPI | None = None) -> AsyncIterator[Page]:
    """The UI of an app with a token (``app``, or one of the test agents), open in Chromium, the token typed in."""
    if app is None:
        app = create_app([apps.echo(), apps.router(), apps.approvals()], auth_token="t0ken")
    async with serving(app) as url:
        page = await browser.new_page(viewport={"width": 1400, "height": 900})
        try:
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{url}/ui")
            await page.fill("#token", "t0ken")
            await page.dispatch_event("#token", "change")
            await expect(page.locator("#status")).to_have_text("ready")
            yield page
            assert errors == []
        finally:
            await page.close()


@pytest.fixture(scope="module")
def screenshots() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


async def shot(page: Page, folder: Path, name: str) -> None:
    await page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    assert (folder / f"{name}.png").stat().st_size > 0


async def send(page: Page, agent: str, text: str) -> None:
    await page.select_option("#agent", agent)
    await page.fill("#input", text)
    await page.click("#send")


async def test_a_chat_streams_the_answer_and_times_the_run(browser: Browser, screenshots: Path) -> None:
    async with opened(browser) as page:
        await send(page, "echo", "hello there world")
        await expect(page.locator(".bubble.agent .text")).to_have_text("echo: hello there world")
        await expect(page.locator("#status")).to_have_text("completed")
        await expect(page.locator("#timeline tbody tr").first).to_be_visible()
        await page.locator(".bubble.agent").click()
        await expect(page.locator("#inspector")).to_contain_text('"content": "echo: hello there world"')
        await expect(page.locator("#steps")).to_contain_text("no steps kept: history of run")
        await shot(page, screenshots, "chat")


async def test_a_transfer_is_drawn_in_the_tree_and_an_answer_from_the_page_resumes_the_run(
    browser: Browser, screenshots: Path
) -> None:
    async with opened(browser) as page:
        await send(page, "router", "refund order 42")
        await expect(page.locator(".note.transfer")).to_have_text("⇢ router transfers to refunds")
        nested = page.locator("#tree li:has(> .agent-name:text-is('router')) li > .agent-name:text-is('refunds')")
        await expect(nested).to_be_visible()
        answer = page.locator("#pending input[aria-label^='answer to']")
        await expect(answer).to_be_visible()
        await shot(page, screenshots, "transfer-and-question")
        await answer.fill("yes")
        await page.click("#pending button.answer")
        await expect(page.locator(".bubble.agent .text").last).to_have_text("order 42: refunded")
        await expect(page.locator("#pending")).to_have_text("nothing pending")


async def test_an_approval_from_the_page_with_edited_arguments_resumes_the_run(
    browser: Browser, screenshots: Path
) -> None:
    async with opened(browser) as page:
        await send(page, "support", "refund orders 1 and 2")
        arguments = page.locator("#pending textarea[aria-label='arguments of call_2']")
        await expect(arguments).to_be_visible()
        await arguments.fill('{"order_id": 3}')
        await page.select_option("#pending select[aria-label='decision on call_1']", "reject")
        await shot(page, screenshots, "approval")
        await page.click("#pending button.answer")
        await expect(page.locator(".bubble.agent .text").last).to_contain_text("refunded 3")
        await expect(page.locator("#status")).to_have_text("completed")
        await shot(page, screenshots, "approved")


async def test_lost_records_and_a_lost_end_are_shown_not_skipped(browser: Browser, screenshots: Path) -> None:
    log = LossyLog(lambda kind, data: kind == "end" or data.get("event") == "message")
    store = MemoryCheckpointStore()
    agents = {"echo": apps.echo()}
    backend = InProcessBackend(agents, store, events=log)
    async with opened(browser, create_app(agents, checkpoint_store=store, backend=backend, auth_token="t0ken")) as page:
        await send(page, "echo", "hello")
        await expect(page.locator(".note.error")).to_contain_text("1 event record(s) lost (")
        await expect(page.locator("#status")).to_contain_text(
            "completed (its end record was lost: the event log has no end record)"
        )
        await shot(page, screenshots, "lost-records")


def base(page: Page) -> str:
    return page.url.partition("/ui")[0]


async def approve_elsewhere(page: Page, decision: str = "approve") -> None:
    """Answer every pending approval over HTTP, as another client would (with ``decision``)."""
    async with httpx.AsyncClient(base_url=base(page), headers={"Authorization": "Bearer t0ken"}) as client:
        for entry in (await client.get("/checkpoints")).json()["checkpoints"]:
            targets = {interrupt["id"]: decision for interrupt in entry["interrupts"]}
            quoted = quote(entry["checkpoint_id"], safe="")
            answer = await client.post(f"/checkpoints/{quoted}/resume", json={"targets": targets})
            assert answer.json()["status"] == "completed"


def counted() -> ChatModelAgent:
    """Answers with a usage report (on the last chunk, when streamed), as a provider does."""

    def answer(messages: list[Message], tools: list[ToolInfo]) -> Message:
        message = assistant("counted")
        usage = Usage(prompt_tokens=5, completion_tokens=2, total_tokens=7)
        message.response_meta = ResponseMeta(finish_reason="stop", usage=usage)
        return message

    return ChatModelAgent(name="counted", description="Reports its tokens.", model=FunctionModel(answer))


def bulky() -> ReActAgent:
    """Asks for the approval of a call with a very long argument."""

    @tool
    def publish(text: str) -> str:
        """Publish a text.

        Args:
            text: what to publish
        """
        return "published"

    def decide(messages: list[Message], tools: list[ToolInfo]) -> Message:
        done = any(m.role == "tool" for m in messages)
        return assistant("done") if done else tool_calls(("publish", {"text": 'say "hi" ' * 600}))

    hitl = human_approval(sensitive_tools=["publish"])
    return ReActAgent(
        name="bulky", description="Long.", model=FunctionModel(decide), tools=[publish], middlewares=[hitl]
    )


async def test_a_resume_runs_beside_a_streaming_run_and_neither_is_cancelled(
    browser: Browser, screenshots: Path
) -> None:
    model = apps.Blocking()
    app = create_app([apps.approvals(), apps.blocking(model)], auth_token="t0ken")
    async with opened(browser, app) as page:
        await send(page, "support", "refund orders 1 and 2")
        await expect(page.locator("#pending button.answer")).to_be_visible()
        await send(page, "slow", "take your time")
        slow = page.locator(".run", has=page.locator(".run-head strong", has_text="slow"))
        await expect(slow.locator(".run-status")).to_contain_text("running")
        await expect(page.locator("#diagram g.node.running[data-id='slow']")).to_be_visible()
        await page.click("#pending button.answer")
        resumed = page.locator(".run", has=page.locator(".run-title", has_text="resume of"))
        await expect(resumed.locator(".bubble.agent .text")).to_have_text("refunded 1 / refunded 2")
        await expect(resumed.locator(".run-status")).to_have_text("completed")
        await expect(slow.locator(".run-status")).to_contain_text("running")
        await shot(page, screenshots, "resume-beside-a-streaming-run")
        model.release.set()
        await expect(slow.locator(".bubble.agent .text")).to_have_text("released")
        await expect(slow.locator(".run-status")).to_have_text("completed")
        assert (model.started, model.cancelled) == (1, 0)


async def test_after_a_resume_the_run_tree_keeps_the_segments_before_the_interrupt(
    browser: Browser, screenshots: Path
) -> None:
    async with opened(browser) as page:
        await send(page, "router", "refund order 42")
        await page.locator("#pending input[aria-label^='answer to']").fill("yes")
        await page.click("#pending button.answer")
        await expect(page.locator(".bubble.agent .text").last).to_have_text("order 42: refunded")
        events = page.locator("#tree li.event")
        await expect(events.filter(has_text="transfer → refunds")).to_be_visible()
        await expect(events.filter(has_text="interrupt: waits for an answer")).to_be_visible()
        await expect(events.filter(has_text="resumed: run ")).to_be_visible()
        await expect(events.filter(has_text="order 42: refunded")).to_be_visible()
        texts = await events.all_text_contents()
        assert texts[:2] == ["#1 calls transfer_to_agent", "#2 transfer → refunds"]  # the segment before, kept
        assert texts[2].startswith("resumed: run ")
        await shot(page, screenshots, "tree-after-resume")


async def test_a_reloaded_page_reads_the_whole_run_again_every_segment_in_order(
    browser: Browser, screenshots: Path
) -> None:
    async with opened(browser) as page:
        await send(page, "router", "refund order 42")
        await page.locator("#pending input[aria-label^='answer to']").fill("yes")
        await page.click("#pending button.answer")
        await expect(page.locator("#status")).to_have_text("completed")
        live = await page.locator("#tree li.event").all_text_contents()
        await page.reload()  # the address names the run; the token is kept for the tab
        await expect(page.locator("#status")).to_have_text("completed")
        events = page.locator("#tree li.event")
        await expect(events.filter(has_text="order 42: refunded")).to_be_visible()
        assert await events.all_text_contents() == live  # the segment before the interrupt, then the resumed one
        assert live[:2] == ["#1 calls transfer_to_agent", "#2 transfer → refunds"]
        assert live[2].startswith("resumed: run ") and "#4 interrupt: waits for an answer" in live
        titles = [re.compile("^replay of ckpt-[0-9a-f]{32}$"), re.compile("^resume of ckpt-[0-9a-f]{32}$")]
        await expect(page.locator(".run-title")).to_have_text(titles)  # a block per segment, named by the run
        await expect(page.locator(".bubble.agent .text").last).to_have_text("order 42: refunded")
        await shot(page, screenshots, "tree-after-reload")


async def test_a_page_opened_on_an_unknown_run_says_so(browser: Browser, screenshots: Path) -> None:
    async with opened(browser) as page:
        url = f"{base(page)}/ui#run=nobody%40start"
        await page.goto("about:blank")
        await page.goto(url)  # a page of its own, opened on that run (the tab's token is kept)
        await expect(page.locator("#status")).to_have_text(
            "run: expected the id of a run of this server's backend (running, or one that ended), got 'nobody@start'"
        )
        await expect(page.locator("#tree")).to_have_text("no run yet")


async def test_what_a_run_waits_for_is_a_readable_bounded_line(browser: Browser, screenshots: Path) -> None:
    app = create_app([apps.router(), apps.approvals(), bulky()], auth_token="t0ken")
    async with opened(browser, app) as page:
        await send(page, "support", "refund orders 1 and 2")
        waits = page.locator(".note.waits")
        await expect(waits).to_have_text("? support waits for approval of pay_back(order_id=1), pay_back(order_id=2)")
        await send(page, "router", "refund order 42")
        await expect(waits.last).to_have_text("? refunds waits for an answer to approve_refund=42")
        await send(page, "bulky", "publish it")
        await expect(waits).to_have_count(3)
        long = await waits.last.text_content()
        assert long is not None
        assert long.startswith('? bulky waits for approval of publish(text=say "hi" say "hi"')  # no escaped JSON
        assert "…" in long and "\\" not in long and len(long) < 300
        await shot(page, screenshots, "waits")


async def test_a_card_can_be_dismissed_and_one_answered_elsewhere_goes_away(
    browser: Browser, screenshots: Path
) -> None:
    async with opened(browser) as page:
        await send(page, "support", "refund orders 1 and 2")
        card = page.locator("#pending .card")
        await expect(card).to_have_count(1)
        await page.click("#pending button.dismiss")
        await expect(page.locator("#pending")).to_contain_text("nothing pending")
        await page.evaluate("refreshSide()")  # the list read again: the card still waits, and stays dismissed
        await expect(page.locator("#pending button.restore")).to_have_text("show 1 dismissed")
        await expect(card).to_have_count(0)
        await page.click("#pending button.restore")
        await expect(card).to_have_count(1)
        await approve_elsewhere(page)
        await expect(page.locator("#pending")).to_have_text("nothing pending")


async def test_a_card_answered_elsewhere_meanwhile_is_marked_stale(browser: Browser, screenshots: Path) -> None:
    async with opened(browser) as page:
        await page.evaluate("clearInterval(polling)")  # no reading of the list again: the card stays as it was
        await send(page, "support", "refund orders 1 and 2")
        await expect(page.locator("#pending button.answer")).to_be_visible()
        await approve_elsewhere(page, "reject")  # another answer won: the page's approval is refused (409)
        await page.click("#pending button.answer")
        await expect(page.locator("#pending .card.stale")).to_contain_text("stale: ")
        await expect(page.locator("#pending button.answer")).to_be_disabled()
        await shot(page, screenshots, "stale-card")
        await page.click("#pending button.dismiss")
        await expect(page.locator("#pending")).to_have_text("nothing pending")  # gone, not kept to show again


async def test_a_streamed_run_shows_the_tokens_its_model_reported(browser: Browser, screenshots: Path) -> None:
    async with opened(browser, create_app([counted()], auth_token="t0ken")) as page:
        await send(page, "counted", "how much")
        await expect(page.locator(".run-tokens")).to_have_text("7 tokens")
        await expect(page.locator("#timeline tbody tr", has_text="run")).to_contain_text("7")


def keeper() -> ChatModelAgent:
    """Keeps its answer in the run's session values (``output_key``)."""
    model = FunctionModel(lambda messages, tools: assistant(f"kept: {messages[-1].content}"))
    return ChatModelAgent(name="keeper", description="Keeps its answer.", model=model, output_key="answer")


async def test_the_state_panel_shows_the_values_of_a_run_without_a_session_or_says_it_has_none(
    browser: Browser, screenshots: Path
) -> None:
    supervisor = FunctionModel(lambda messages, tools: assistant("done"))
    team = TeamAgent(name="crew", model=supervisor, members=[apps.echo(), apps.refunds()])
    app = create_app([keeper(), team, apps.router()], auth_token="t0ken")
    async with opened(browser, app) as page:
        state = page.locator("#state")
        await send(page, "keeper", "the blue one")
        await expect(page.locator("#status")).to_have_text("completed")
        await expect(state.locator("tr", has_text="answer")).to_contain_text("kept: the blue one")
        await send(page, "crew", "hello")
        await expect(page.locator(".run-status").last).to_have_text("completed")
        await expect(state.locator("th")).to_have_text(["__crew"])  # the team's trace, kept as a session value
        await expect(state.locator("td")).to_contain_text('{"team_name": "crew", "prompt": ')
        await shot(page, screenshots, "state-of-a-team-run")
        await send(page, "router", "refund order 42")
        await expect(page.locator(".run-status").last).to_have_text("interrupted")
        await expect(state).to_have_text("this run holds no values: its agents set none")
        await page.locator(".run", has=page.locator(".run-head strong", has_text="keeper")).click()
        await expect(state.locator("tr", has_text="answer")).to_contain_text("kept: the blue one")
        await page.reload()  # the run the address names read again: its state too
        await expect(page.locator("#status")).to_have_text("completed")
        await expect(state.locator("tr", has_text="answer")).to_contain_text("kept: the blue one")


async def test_agents_teams_and_flows_are_drawn_with_the_run_marked_and_its_state(
    browser: Browser, screenshots: Path
) -> None:
    supervisor = FunctionModel(lambda messages, tools: assistant("done"))
    team = TeamAgent(name="crew", model=supervisor, members=[apps.echo(), apps.refunds()])
    flows = [Graph.from_yaml(ORDER)]
    app = create_app([apps.router(), team], flows=flows, flow_engine=flow_engine(), auth_token="t0ken")
    async with opened(browser, app) as page:
        diagram = page.locator("#diagram")
        await page.select_option("#agent", "crew")
        await expect(diagram).to_contain_text("team crew · HIERARCHICAL")
        await expect(diagram.locator("g.node[data-id='echo']")).to_be_visible()
        await send(page, "router", "refund order 42")
        await expect(diagram.locator("g.node.visited[data-id='refunds']")).to_be_visible()
        await expect(diagram.locator("g.node.visited[data-id='router']")).to_be_visible()
        await expect(diagram.locator("path.link")).to_have_count(1)
        await shot(page, screenshots, "agent-diagram")
        await page.fill("input[aria-label='variables of order']", '{"amount": 150}')
        await page.click("#flows button:text-is('run')")
        await expect(page.locator("#status")).to_have_text("flow order: completed")
        await expect(diagram.locator("g.node.last[data-id='end']")).to_be_visible()
        await expect(diagram.locator("g.node")).to_have_count(5)
        await expect(page.locator("#state tr", has_text="visited")).to_contain_text('["review","pay"]')
        await expect(page.locator("#state tr", has_text="amount")).to_contain_text("150")
        await shot(page, screenshots, "flow-diagram-and-state")


async def test_a_kept_runs_steps_show_the_state_after_each_and_fork_a_new_run(
    browser: Browser, screenshots: Path
) -> None:
    from tests.history.agents import refund_agent

    ledger: list[str] = []
    app = create_app([refund_agent(ledger), apps.echo()], auth_token="t0ken", keep_history=True)
    async with opened(browser, app) as page:
        await send(page, "support", "7")
        await expect(page.locator("#status")).to_have_text("completed")
        steps = page.locator("#steps tr.step")
        await expect(steps).to_have_count(3)
        await expect(steps.nth(1)).to_contain_text('lookup({"order_id": 7}) -> order 7: 30')

        await steps.nth(1).click()
        await expect(page.locator("#inspector")).to_contain_text('"content": "order 7: 30"')
        await expect(page.locator("#state")).to_contain_text("looked_up")
        await expect(steps.nth(1)).to_have_class(re.compile("chosen"))

        await steps.nth(2).click()
        await expect(page.locator("#fork")).to_contain_text("after step 2")  # the form of step 2, not step 1's
        await page.fill("#fork input[aria-label^='session values']", "{not json")
        await page.click("#fork button.fork")
        await expect(page.locator("#status")).to_contain_text("the session values are not JSON")
        await page.fill("#fork input[aria-label^='session values']", '{"note": "from the page"}')
        await page.fill("#fork input[aria-label^='message']", "9")
        await shot(page, screenshots, "steps-and-fork")
        await page.click("#fork button.fork")
        await expect(page.locator(".run .run-title").last).to_have_text(re.compile(r"^fork of ckpt-\w+ after step 2$"))
        await expect(page.locator(".bubble.agent .text").last).to_have_text("Refund done: order 9: 30")
        await expect(page.locator("#status")).to_have_text("completed")
        assert ledger[-3:] == ["model", "lookup 9", "model"]
        await expect(steps.nth(1)).to_contain_text("order 9: 30")  # the fork's own steps: it keeps its history too
        await steps.nth(2).click()
        await expect(page.locator("#state")).to_contain_text("from the page")

        await send(page, "echo", "hi")
        await expect(page.locator("#status")).to_have_text("completed")
        await expect(steps).to_have_count(1)
        await expect(steps.first).to_contain_text("echo: hi")
