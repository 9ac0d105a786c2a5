"""The AG-UI endpoint on a real server: a client that hangs up cancels its run, ``batonflow serve --agui`` builds the
app with it, and without the ``ag-ui-protocol`` package ``agui=True`` says which extra to install."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
from tests.server.conftest import serving

from batonflow.cli import make_app
from batonflow.server import create_app

from .agui_checks import Blocking, blocking, parsed, run_input

ROOT = Path(__file__).resolve().parents[2]
WAIT = 30.0  # a deadline for what a test waits for, never a claim about how long it takes


async def test_a_client_that_hangs_up_cancels_its_run() -> None:
    model = Blocking()
    app = create_app([blocking(model)], agui=True)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as http:
        async with http.stream("POST", "/agui/slow", json=run_input("thread-1", "run-1", "wait")) as answer:
            assert answer.status_code == 200
            await asyncio.wait_for(model.started.wait(), WAIT)
        await asyncio.wait_for(model.cancelled.wait(), WAIT)
        health = (await http.get("/health")).json()
    assert model.cancelled.is_set()
    assert health["active_runs"] == 0


async def test_a_second_run_on_a_thread_whose_run_goes_on_is_a_409() -> None:
    model = Blocking()
    app = create_app([blocking(model)], agui=True)
    body = run_input("thread-3", "run-1", "wait")
    async with (
        serving(app) as url,
        httpx.AsyncClient(base_url=url) as http,
        http.stream("POST", "/agui/slow", json=body) as answer,
    ):
        await asyncio.wait_for(model.started.wait(), WAIT)
        second = await http.post("/agui/slow", json=run_input("thread-3", "run-2", "again"))
        assert answer.status_code == 200
    assert second.status_code == 409
    assert second.json()["error"]["code"] == "run_in_progress"


async def test_serve_with_agui_serves_the_endpoint() -> None:
    app = make_app("tests.interop.agui_checks:echo", "memory", None, agui=True)
    plain = make_app("tests.interop.agui_checks:echo", "memory", None)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        answer = await http.post("/agui/echo", json=run_input("thread-2", "run-1", "hi"))
    assert parsed(answer.text)[-1].model_dump()["result"]["text"] == "echo: hi"
    assert "/agui/{agent}" not in plain.openapi()["paths"]


def test_without_the_package_agui_is_a_user_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['ag_ui'] = None\n"
        "from batonflow.errors import UserError\n"
        "from batonflow.server import create_app\n"
        "from batonflow import ChatModelAgent\n"
        "from batonflow.testing import ScriptedModel\n"
        "agent = ChatModelAgent(name='a', description='answers', model=ScriptedModel([]))\n"
        "create_app([agent])\n"
        "try:\n"
        "    create_app([agent], agui=True)\n"
        "except UserError as error:\n"
        "    print(error)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "agui=True: expected the ag-ui-protocol package (the AG-UI endpoint speaks through it), found none: "
        "pip install 'batonflow[agui]'\n"
    )
