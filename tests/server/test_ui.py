"""The dev UI at /ui, end to end in headless Chromium (Debian's ``chromium``, driven by Playwright) against a real
uvicorn on loopback: a chat with streamed text, a transfer drawn in the run tree, and interrupts answered from the
page that resume the run. Screenshots go to ``$BATONFLOW_ARTIFACTS`` (``build/ui-screenshots`` by default)."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from fastapi import FastAPI
from playwright.async_api import Page, async_playwright, expect

from batonflow import MemoryCheckpointStore
from batonflow.distributed import InProcessBackend
from batonflow.server import create_app

from . import apps
from .conftest import serving
from .test_gaps import LossyLog

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("BATONFLOW_ARTIFACTS", ROOT / "build" / "ui-screenshots"))
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@asynccontextmanager
async def opened(app: FastAPI | None = None) -> AsyncIterator[Page]:
    """The UI of an app with a token (``app``, or one of the test agents), open in Chromium, the token typed in."""
    if app is None:
        app = create_app([apps.echo(), apps.router(), apps.approvals()], auth_token="t0ken")
    async with serving(app) as url, async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1400, "height": 900})
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))
            await page.goto(f"{url}/ui")
            await page.fill("#token", "t0ken")
            await page.dispatch_event("#token", "change")
            await expect(page.locator("#status")).to_have_text("ready")
            yield page
            assert errors == []
        finally:
            await browser.close()


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


async def test_a_chat_streams_the_answer_and_times_the_run(screenshots: Path) -> None:
    async with opened() as page:
        await send(page, "echo", "hello there world")
        await expect(page.locator(".bubble.agent .text")).to_have_text("echo: hello there world")
        await expect(page.locator("#status")).to_have_text("completed")
        await expect(page.locator("#timeline tbody tr").first).to_be_visible()
        await page.locator(".bubble.agent").click()
        await expect(page.locator("#inspector")).to_contain_text('"content": "echo: hello there world"')
        await shot(page, screenshots, "chat")


async def test_a_transfer_is_drawn_in_the_tree_and_an_answer_from_the_page_resumes_the_run(screenshots: Path) -> None:
    async with opened() as page:
        await send(page, "router", "refund order 42")
        await expect(page.locator(".note.transfer")).to_have_text("⇢ router transfers to refunds")
        nested = page.locator("#tree li:has(> .agent-name:text-is('router')) li > .agent-name:text-is('refunds')")
        await expect(nested).to_be_visible()
        answer = page.locator("#pending input[aria-label^='answer to']")
        await expect(answer).to_be_visible()
        await shot(page, screenshots, "transfer-and-question")
        await answer.fill("yes")
        await page.click("#pending button")
        await expect(page.locator(".bubble.agent .text").last).to_have_text("order 42: refunded")
        await expect(page.locator("#pending")).to_have_text("nothing pending")


async def test_an_approval_from_the_page_with_edited_arguments_resumes_the_run(screenshots: Path) -> None:
    async with opened() as page:
        await send(page, "support", "refund orders 1 and 2")
        arguments = page.locator("#pending textarea[aria-label='arguments of call_2']")
        await expect(arguments).to_be_visible()
        await arguments.fill('{"order_id": 3}')
        await page.select_option("#pending select[aria-label='decision on call_1']", "reject")
        await shot(page, screenshots, "approval")
        await page.click("#pending button")
        await expect(page.locator(".bubble.agent .text").last).to_contain_text("refunded 3")
        await expect(page.locator("#status")).to_have_text("completed")
        await shot(page, screenshots, "approved")


async def test_lost_records_and_a_lost_end_are_shown_not_skipped(screenshots: Path) -> None:
    log = LossyLog(lambda kind, data: kind == "end" or data.get("event") == "message")
    store = MemoryCheckpointStore()
    agents = {"echo": apps.echo()}
    backend = InProcessBackend(agents, store, events=log)
    async with opened(create_app(agents, checkpoint_store=store, backend=backend, auth_token="t0ken")) as page:
        await send(page, "echo", "hello")
        await expect(page.locator(".note.error")).to_contain_text("1 event record(s) lost (")
        await expect(page.locator("#status")).to_contain_text(
            "completed (its end record was lost: the event log has no end record)"
        )
        await shot(page, screenshots, "lost-records")
