"""Conversations across runs: ``Runner.run(..., session_id=...)``, and one run of a conversation at a time."""

from __future__ import annotations

import asyncio
import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

import batonflow
from batonflow import adk
from batonflow.adk import AgentEvent, ChatModelAgent, InterruptInfo, collect_events
from batonflow.agents import ConversationRunner, ReActAgent, Runner, Session
from batonflow.errors import ResumeConflictError, UserError
from batonflow.schema import Stream, assistant, user
from batonflow.store import MemoryCheckpointStore, MemorySessionStore, SessionData, SessionStore, SqliteSessionStore
from batonflow.testing import ScriptedModel, tool_calls
from batonflow.tools import Tool, ToolContext, tool

from .conftest import SessionPlace

CHILD = Path(__file__).with_name("conversation_child.py")


async def test_a_session_carries_the_conversation_into_the_next_run() -> None:
    model = ScriptedModel([assistant("Hi Ann."), assistant("Your name is Ann.")])
    runner = Runner(ChatModelAgent(name="a", instruction="Be kind.", model=model), session_store=MemorySessionStore())
    await collect_events(runner.query("I am Ann.", session_id="chat"))
    await collect_events(runner.query("What is my name?", session_id="chat"))
    assert [(m.role, m.content) for m in model.requests[1].messages] == [
        ("system", "Be kind."),
        ("user", "I am Ann."),
        ("assistant", "Hi Ann."),
        ("user", "What is my name?"),
    ]


async def test_the_session_keeps_the_prompt_and_the_final_answer_but_no_system_message(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    model = ScriptedModel([tool_calls(("noop", {})), assistant("done")])

    @tool(threaded=False)
    def noop() -> str:
        """Nothing."""
        return "ok"

    runner = Runner(ChatModelAgent(name="a", instruction="sys", model=model, tools=[noop]), session_store=store)
    await collect_events(runner.query("go", session_id="s1"))
    session = await Session.load(store, "s1")
    assert [(m.role, m.content) for m in session.messages] == [("user", "go"), ("assistant", "done")]
    await store.close()


async def test_the_window_limits_what_an_agent_is_fed() -> None:
    store = MemorySessionStore()
    model = ScriptedModel([assistant(f"answer {i}") for i in range(4)])
    runner = Runner(ChatModelAgent(name="a", model=model), session_store=store, session_window=2)
    for i in range(4):
        await collect_events(runner.query(f"question {i}", session_id="w"))
    assert [m.content for m in model.requests[3].messages] == ["question 2", "answer 2", "question 3"]


async def test_a_conversations_result_says_how_many_earlier_messages_the_window_left_out() -> None:
    model = ScriptedModel([assistant(f"answer {i}") for i in range(4)])
    runner = Runner(ChatModelAgent(name="a", model=model), session_store=MemorySessionStore(), session_window=2)
    results = [await runner.call(f"question {i}", session_id="w") for i in range(4)]
    assert [r.windowed for r in results] == [False, False, True, True]
    assert [r.session_id for r in results] == ["w"] * 4 and results[3].text == "answer 3"


async def test_the_default_window_feeds_the_last_eight_messages_and_none_feeds_them_all() -> None:
    fed = {}
    for window in (8, None):
        model = ScriptedModel([assistant(f"answer {i}") for i in range(6)])
        kwargs = {} if window == 8 else {"session_window": None}
        runner = Runner(ChatModelAgent(name="a", model=model), session_store=MemorySessionStore(), **kwargs)
        results = [await runner.call(f"question {i}", session_id="w") for i in range(6)]
        fed[window] = (len(model.requests[5].messages), results[5].windowed)
    assert fed == {8: (9, True), None: (11, False)}  # the prompt after 8 of 10 earlier messages, or after all 10


@pytest.mark.parametrize("window", [-1, 2.5, "8"])
def test_a_session_window_that_is_not_a_count_is_refused_when_the_runner_is_made(window: object) -> None:
    with pytest.raises(UserError) as caught:
        Runner(ChatModelAgent(name="a", model=ScriptedModel([])), session_window=window)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"session_window: expected None (the whole conversation) or a number of messages >= 0, got {window!r}"
    )


async def test_a_pending_conversation_is_resumed_by_call_with_the_ids_its_result_gave() -> None:
    refunds: list[object] = []

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund once approved."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt({"approve": order_id})
        refunds.append(ctx.get_resume_context().data)
        return "refunded"

    model = ScriptedModel([tool_calls(("refund", {"order_id": 3})), assistant("Refund done.")])
    runner = Runner(ChatModelAgent(name="a", model=model, tools=[refund]), session_store=MemorySessionStore())
    waiting = await runner.call("refund 3", session_id="p")
    assert waiting.interrupted and waiting.session_id == "p" and waiting.checkpoint_id is None
    [interrupt_id] = waiting.interrupt_ids
    finished = await runner.call(session_id="p", targets={interrupt_id: "approved"})
    assert (finished.text, finished.interrupted, refunds) == ("Refund done.", False, ["approved"])


def test_call_sync_continues_a_conversation() -> None:
    model = ScriptedModel([assistant("Hi Ann."), assistant("Your name is Ann.")])
    runner = Runner(ChatModelAgent(name="a", model=model), session_store=MemorySessionStore())
    runner.call_sync("I am Ann.", session_id="chat")
    assert runner.call_sync("What is my name?", session_id="chat").text == "Your name is Ann."
    assert [m.content for m in model.requests[1].messages] == ["I am Ann.", "Hi Ann.", "What is my name?"]


async def test_a_conversation_shorter_than_the_windows_is_fed_whole() -> None:
    # Both windows are wider than the conversation: the Runner's (8) and the ReActAgent's own (8).
    model = ScriptedModel([assistant(f"answer {i}") for i in range(4)])
    runner = Runner(ReActAgent(name="r", model=model, model_retry=None), session_store=MemorySessionStore())
    for i in range(4):
        await collect_events(runner.query(f"question {i}", session_id="short"))
    fed = [m.content for m in model.requests[3].messages[1:]]
    assert fed == [text for i in range(3) for text in (f"question {i}", f"answer {i}")] + ["question 3"]


async def test_an_interrupted_run_leaves_the_session_pending_and_an_empty_prompt_resumes_it() -> None:
    refunds: list[int] = []

    @tool(threaded=False)
    def refund(order_id: int, ctx: ToolContext) -> str:
        """Refund once approved."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt({"approve": order_id})
        refunds.append(order_id)
        return "refunded"

    store = MemorySessionStore()
    model = ScriptedModel([tool_calls(("refund", {"order_id": 3})), assistant("Refund done.")])
    runner = Runner(ChatModelAgent(name="a", model=model, tools=[refund]), session_store=store)
    events = await collect_events(runner.query("refund 3", session_id="p"))
    assert isinstance(events[-1].action.interrupted, InterruptInfo)  # type: ignore[union-attr]
    session = await Session.load(store, "p")
    assert session.is_pending
    assert session.pending_reason == "{'approve': 3}"
    assert session.snapshot is not None

    resumed = await collect_events(runner.run([], session_id="p"))
    assert resumed[-1].message_output.message.content == "Refund done."  # type: ignore[union-attr]
    assert refunds == [3]
    session = await Session.load(store, "p")
    assert not session.is_pending
    assert session.snapshot is None
    assert [(m.role, m.content) for m in session.messages] == [("user", "refund 3"), ("assistant", "Refund done.")]


async def test_an_empty_prompt_without_a_pending_run_is_a_user_error() -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])), session_store=MemorySessionStore())
    with pytest.raises(UserError, match="nothing to resume"):
        await runner.run([], session_id="idle").collect()


def test_a_session_id_needs_a_session_store() -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])))
    with pytest.raises(UserError, match="expected Runner\\(\\.\\.\\., session_store=\\.\\.\\.\\)"):
        runner.query("x", session_id="s")


def test_batonflow_runner_is_the_conversation_runner_on_the_runtime_runner() -> None:
    assert batonflow.Runner is Runner is ConversationRunner is batonflow.ConversationRunner
    assert issubclass(Runner, adk.Runner)
    assert "session_store" not in adk.Runner.__init__.__code__.co_varnames  # the runtime knows no conversations


def test_the_conversation_runner_takes_every_option_of_the_runtime_runner_with_its_default() -> None:
    runtime = inspect.signature(adk.Runner.__init__).parameters
    conversation = inspect.signature(ConversationRunner.__init__).parameters
    for name, parameter in runtime.items():
        assert name in conversation, name
        assert (conversation[name].kind, conversation[name].default) == (parameter.kind, parameter.default), name
    assert set(conversation) - set(runtime) == {"session_store", "session_window"}


async def test_history_part_events_reaches_the_runtime_through_batonflow_runner() -> None:
    runner = batonflow.Runner(ChatModelAgent(name="a", model=ScriptedModel([assistant("hi")])), history_part_events=0)
    assert runner.history_part_events == 0
    with pytest.raises(UserError, match="history_part_events: expected an int of 0 or more, got -1"):
        batonflow.Runner(ChatModelAgent(name="a", model=ScriptedModel([])), history_part_events=-1)
    assert (await runner.call("hello")).text == "hi"


def test_a_session_id_with_a_checkpoint_id_is_a_user_error() -> None:
    runner = Runner(
        ChatModelAgent(name="a", model=ScriptedModel([])),
        session_store=MemorySessionStore(),
        checkpoint_store=MemoryCheckpointStore(),
    )
    with pytest.raises(UserError, match="keeps its pending run in the session store"):
        runner.query("x", session_id="s", checkpoint_id="c")
    with pytest.raises(UserError, match="keeps its pending run in the session store"):
        runner.run([], session_id="s", checkpoint_store=MemoryCheckpointStore())


@pytest.mark.parametrize(
    ("session_id", "message"),
    [
        ("", "must be a non-empty string"),
        ("x" * 1_000_000, "must be at most 256 bytes of UTF-8"),
        ("\ud800", "must be valid Unicode text, got a lone surrogate at index 0"),
        ("a\x00b", "must not contain NUL characters"),
    ],
)
def test_a_bad_session_id_is_refused_when_the_runner_is_called(session_id: str, message: str) -> None:
    runner = Runner(ChatModelAgent(name="a", model=ScriptedModel([])), session_store=MemorySessionStore())
    for call in (lambda: runner.query("x", session_id=session_id), lambda: runner.run([], session_id=session_id)):
        with pytest.raises(UserError, match=f"^a session id {message}") as caught:
            call()  # at the call, before a stream exists
        assert len(str(caught.value)) < 200


def test_a_session_store_that_is_not_one_is_a_user_error() -> None:
    with pytest.raises(UserError, match="session_store: expected a SessionStore, got dict"):
        Runner(ChatModelAgent(name="a", model=ScriptedModel([])), session_store={})  # type: ignore[arg-type]


# -- one run of a conversation at a time -------------------------------------------------------------------------------


class Refunds:
    """A refund tool that waits for an approval (an interrupt), then records the refund and, on the way out, waits
    until ``finish`` is set: so the worker that resumes it holds the conversation while others try."""

    def __init__(self) -> None:
        self.made: list[int] = []
        self.entered = asyncio.Event()
        self.finish = asyncio.Event()

    def tool(self) -> Tool:
        @tool(threaded=False)
        async def refund(order_id: int, ctx: ToolContext) -> str:
            """Refund an order once a person approved it."""
            if not ctx.get_interrupt_state().was_interrupted:
                ctx.interrupt({"approve": order_id})
            self.made.append(order_id)
            self.entered.set()
            await asyncio.wait_for(self.finish.wait(), timeout=30)
            return "refunded"

        return refund

    def worker(self, store: SessionStore) -> Runner:
        """A worker of its own: its own agent, model and runner on ``store``."""
        agent = ChatModelAgent(name="a", model=ScriptedModel([assistant("Refund done.")]), tools=[self.tool()])
        return Runner(agent, session_store=store)


async def leave_pending(refunds: Refunds, store: SessionStore, session_id: str = "p") -> None:
    agent = ChatModelAgent(
        name="a", model=ScriptedModel([tool_calls(("refund", {"order_id": 3}))]), tools=[refunds.tool()]
    )
    events = await collect_events(Runner(agent, session_store=store).query("refund 3", session_id=session_id))
    assert isinstance(events[-1].action.interrupted, InterruptInfo)  # type: ignore[union-attr]


async def test_two_concurrent_resumes_of_a_pending_conversation_run_the_tool_once(session_place: SessionPlace) -> None:
    refunds = Refunds()
    stores = [session_place.open() for _ in range(3)]  # one per worker (the same one for memory)
    try:
        await leave_pending(refunds, stores[0])

        async def resume(runner: Runner) -> list[AgentEvent] | ResumeConflictError:
            try:
                return await collect_events(runner.run([], session_id="p"))
            except ResumeConflictError as error:
                refunds.finish.set()  # the loser has tried: the winner may finish
                return error

        results = await asyncio.wait_for(
            asyncio.gather(resume(refunds.worker(stores[1])), resume(refunds.worker(stores[2]))), timeout=60
        )
        [conflict] = [r for r in results if isinstance(r, ResumeConflictError)]
        [events] = [r for r in results if not isinstance(r, ResumeConflictError)]
        # The refusal names the holder, its age and how to break its lease should it be dead.
        assert conflict.lease is not None and conflict.lease.expires_in > 0
        assert str(conflict) == (
            f"session 'p' is being run or resumed by another runner: its lease is held by {conflict.lease.owner!r} "
            f"for {conflict.lease.held_for:.1f} s and lapses in {conflict.lease.expires_in:.1f} s unless renewed; "
            f"if that runner is gone, break it with Runner.break_session_lease('p', {conflict.lease.owner!r})"
        )
        assert events[-1].message_output.message.content == "Refund done."  # type: ignore[union-attr]
        assert refunds.made == [3]
        session = await Session.load(stores[0], "p")
        assert not session.is_pending and session.snapshot is None
        # A resume that comes after the winner finds nothing left to resume: the refund is not made again.
        with pytest.raises(UserError, match="nothing to resume"):
            await refunds.worker(stores[1]).run([], session_id="p").collect()
        assert refunds.made == [3]
    finally:
        for store in stores:
            await store.close()


async def test_a_new_prompt_while_the_conversation_is_resumed_is_a_conflict() -> None:
    refunds, store = Refunds(), MemorySessionStore()
    await leave_pending(refunds, store)
    resuming = asyncio.create_task(collect_events(refunds.worker(store).run([], session_id="p")))
    await asyncio.wait_for(refunds.entered.wait(), timeout=30)
    with pytest.raises(ResumeConflictError):
        await refunds.worker(store).query("and order 4?", session_id="p").collect()
    refunds.finish.set()
    await resuming
    session = await Session.load(store, "p")
    assert [m.content for m in session.messages] == ["refund 3", "Refund done."]


async def test_the_lease_is_released_when_the_caller_stops_reading_early() -> None:
    refunds, store = Refunds(), MemorySessionStore()
    refunds.finish.set()
    await leave_pending(refunds, store)
    runner = refunds.worker(store)
    stream = runner.run([], session_id="p")
    async for _event in stream:
        break
    await stream.aclose()
    assert await store.claim("p", "someone-else", 30)


async def test_a_caller_that_stops_at_the_interrupt_leaves_the_conversation_pending() -> None:
    refunds, store = Refunds(), MemorySessionStore()
    agent = ChatModelAgent(
        name="a", model=ScriptedModel([tool_calls(("refund", {"order_id": 3}))]), tools=[refunds.tool()]
    )
    stream: Stream[AgentEvent] = Runner(agent, session_store=store).query("refund 3", session_id="p")
    async for event in stream:
        if event.action is not None and isinstance(event.action.interrupted, InterruptInfo):
            break
    await stream.aclose()
    session = await Session.load(store, "p")
    assert session.is_pending and session.snapshot is not None
    assert [m.content for m in session.messages] == ["refund 3"]


async def test_a_resume_refused_for_its_data_keeps_the_conversation_pending() -> None:
    @tool(threaded=False)
    def approve(ctx: ToolContext) -> str:
        """Wait for a yes or no."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("yes or no?")
        answer = ctx.get_resume_context().data
        if answer not in ("yes", "no"):
            raise UserError(f"expected yes or no, got {answer!r}")
        return answer

    store = MemorySessionStore()
    model = ScriptedModel([tool_calls(("approve", {})), assistant("Approved.")])
    runner = Runner(ChatModelAgent(name="a", model=model, tools=[approve]), session_store=store)
    events = await collect_events(runner.query("approve it", session_id="p"))
    [cause] = events[-1].action.interrupted.interrupt_contexts  # type: ignore[union-attr]
    refused = await collect_events(runner.run([], session_id="p", targets={cause.id: "maybe"}))
    assert isinstance(refused[-1].error, UserError)
    session = await Session.load(store, "p")
    assert (session.is_pending, session.pending_reason) == (True, "yes or no?")
    resumed = await collect_events(runner.run([], session_id="p", targets={cause.id: "yes"}))
    assert resumed[-1].message_output.message.content == "Approved."  # type: ignore[union-attr]


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        str(CHILD),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _line(process: asyncio.subprocess.Process) -> str:
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), timeout=60)
    if not line:
        assert process.stderr is not None
        pytest.fail(f"child process ended early:\n{(await process.stderr.read()).decode(errors='replace')}")
    return line.decode().strip()


async def _send(process: asyncio.subprocess.Process, text: str) -> None:
    assert process.stdin is not None
    process.stdin.write(f"{text}\n".encode())
    await process.stdin.drain()


async def test_two_processes_resuming_one_pending_conversation_on_sqlite_run_the_tool_once(tmp_path: Path) -> None:
    path, ledger = tmp_path / "sessions.db", tmp_path / "ledger"
    async with SqliteSessionStore(path) as store:
        await leave_pending(Refunds(), store, "chat-7")
    children = [await _spawn(str(path), "chat-7", str(ledger)) for _ in range(2)]
    try:
        assert [await _line(child) for child in children] == ["ready", "ready"]
        await asyncio.gather(*(_send(child, "go") for child in children))
        first = {child: await _line(child) for child in children}
        assert sorted(line.split(":")[0] for line in first.values()) == ["conflict", "in tool"]
        [winner] = [child for child, line in first.items() if line == "in tool"]
        [loser] = [child for child, line in first.items() if line != "in tool"]
        assert first[loser].startswith(
            "conflict: session 'chat-7' is being run or resumed by another runner: its lease is held by "
        )
        await _send(winner, "finish")
        assert await _line(winner) == "done: Refund done."
        for child in children:
            assert await asyncio.wait_for(child.wait(), timeout=60) == 0
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()
    assert ledger.read_text() == "refund 3\n"
    async with SqliteSessionStore(path) as store:
        session = await Session.load(store, "chat-7")
    assert not session.is_pending
    assert [m.content for m in session.messages] == ["refund 3", "Refund done."]


class CountingStore:
    """A session store that counts the messages its ``get`` hands back, over all its reads."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.read = 0

    async def get(self, session_id: str, *, last: int | None = None) -> SessionData | None:
        data = await self.inner.get(session_id, last=last)
        self.read += 0 if data is None else len(data.messages)
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_a_turn_reads_its_window_whatever_the_length_of_the_conversation(session_store: SessionStore) -> None:
    history = [m for t in range(300) for m in (user(f"question {t}"), assistant(f"answer {t}"))]
    await session_store.append_messages("long", history)
    counting = CountingStore(session_store)
    model = ScriptedModel([assistant("answer 300"), assistant("answer 301")])
    runner = Runner(ChatModelAgent(name="a", model=model), session_store=counting, session_window=8)  # type: ignore[arg-type]
    await collect_events(runner.query("question 300", session_id="long"))
    assert counting.read == 9  # the window, and one more to know that older messages were left out
    assert [m.content for m in model.requests[0].messages] == [m.content for m in history[-8:]] + ["question 300"]
    await collect_events(runner.query("question 301", session_id="long"))
    assert counting.read == 18
    stored = await Session.load(session_store, "long")
    assert [m.content for m in stored.messages[-4:]] == ["question 300", "answer 300", "question 301", "answer 301"]
    assert len(stored.messages) == 604  # each turn appended its question and answer, nothing else


async def test_resuming_a_pending_conversation_reads_no_window() -> None:
    @tool(threaded=False)
    def approve(ctx: ToolContext) -> str:
        """Wait for approval."""
        if not ctx.get_interrupt_state().was_interrupted:
            ctx.interrupt("approve?")
        return "approved"

    inner = MemorySessionStore()
    await inner.append_messages("p", [m for t in range(50) for m in (user(f"q{t}"), assistant(f"a{t}"))])
    counting = CountingStore(inner)
    model = ScriptedModel([tool_calls(("approve", {})), assistant("done")])
    agent = ChatModelAgent(name="a", model=model, tools=[approve])
    runner = Runner(agent, session_store=counting, session_window=4)  # type: ignore[arg-type]
    await collect_events(runner.query("refund me", session_id="p"))
    assert counting.read == 5
    events = await collect_events(runner.run([], session_id="p"))
    assert events[-1].message_output is not None and events[-1].message_output.message.content == "done"
    assert counting.read == 6  # the resume read the state, with the one message a read brings along
