"""The A2A endpoint as it is served: ``batonflow serve --a2a`` builds the app with it, and without the ``a2a-sdk``
package ``a2a=True`` says which extra to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx

from batonflow.cli import make_app

ROOT = Path(__file__).resolve().parents[2]


async def test_serve_with_a2a_serves_the_endpoint_and_the_card() -> None:
    app = make_app("tests.interop.agui_checks:echo", "memory", None, a2a=True)
    plain = make_app("tests.interop.agui_checks:echo", "memory", None)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "message/send",
        "params": {"message": {"messageId": "m1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}},
    }
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://app") as http:
        card = await http.get("/a2a/echo/.well-known/agent-card.json")
        answer = await http.post("/a2a/echo", json=body)  # A2A 0.3's method name, as older clients send it
    assert card.json()["name"] == "echo"
    result = answer.json()["result"]
    assert result["status"]["state"] == "completed"
    assert result["status"]["message"]["parts"][0]["text"] == "echo: hi"
    assert "/a2a/{agent}" not in plain.openapi()["paths"]


def test_without_the_package_a2a_is_a_user_error_naming_the_extra() -> None:
    code = (
        "import sys; sys.modules['a2a'] = None\n"
        "from batonflow.errors import UserError\n"
        "from batonflow.server import create_app\n"
        "from batonflow import ChatModelAgent\n"
        "from batonflow.testing import ScriptedModel\n"
        "agent = ChatModelAgent(name='a', description='answers', model=ScriptedModel([]))\n"
        "create_app([agent])\n"
        "try:\n"
        "    create_app([agent], a2a=True)\n"
        "except UserError as error:\n"
        "    print(error)\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "a2a=True: expected the a2a-sdk package (the A2A endpoint speaks through it), found none: "
        "pip install 'batonflow[a2a]'\n"
    )
