"""What ``EventPrinter`` prints of a run: data as text, markup and control characters shown, never acted on."""

from __future__ import annotations

import io

from rich.console import Console

from batonflow import ChatModelAgent, Runner
from batonflow.cli._events import EventPrinter, plain
from batonflow.schema import assistant, user
from batonflow.testing import FunctionModel


def test_plain_shows_markup_and_control_characters_but_keeps_lines_and_tabs() -> None:
    assert plain("[/] [bold]a\x1b[2J\tb\nc\x07\x9b").plain == "[/] [bold]a\\x1b[2J\tb\nc\\x07\\x9b"


async def test_a_model_s_answer_with_markup_and_escapes_is_printed_as_text() -> None:
    model = FunctionModel(lambda messages, tools: assistant("[/] [red]done\x1b[2J"))
    agent = ChatModelAgent(name="[b]odd", description="Answers oddly.", model=model)
    out = io.StringIO()
    printer = EventPrinter(Console(file=out, width=120, force_terminal=False, highlight=False))
    await printer.show(Runner(agent, enable_streaming=True).run([user("x")]))
    assert out.getvalue() == "[b]odd› [/] [red]done\\x1b[2J\n"
