"""``POST /agui/{agent}``: a batonflow agent behind the AG-UI protocol, so that AG-UI front ends can drive it.

The endpoint takes AG-UI's ``RunAgentInput`` (validated by the ``ag-ui-protocol`` package's own model) and answers
with the run's AG-UI events over SSE, encoded by the package's ``EventEncoder``. It runs nothing itself: the app
that mounts it is its ``AguiHost``, which submits the run's segment to its backend and reads the run's frames back
from its event log, as it does for its own runs (``batonflow.server`` is such a host: ``create_app(agui=True)``).
What is AG-UI's is here: an AG-UI thread is a batonflow conversation (its ``threadId`` the session id, so a thread
keeps its history and its pending run), the input's ``state`` the run's session values, and its ``resume`` entries
the answers to the interrupts the thread's last run paused on.
"""

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing
from typing import Any, Protocol

from ag_ui.core import Message as AguiMessage
from ag_ui.core import RunAgentInput, RunErrorEvent
from ag_ui.encoder import EventEncoder
from fastapi import APIRouter
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from ..distributed import EventRecord, SegmentRequest, body_of
from ..errors import UserError
from ..schema import Message
from ..store import check_session_id
from ._agui_events import AguiTranslator

__all__ = ["AguiHost", "agui_router"]


class AguiHost(Protocol):
    """What the AG-UI endpoint needs of the app that mounts it: its checks and refusals (answered in the app's own
    error body), its conversations, and its runs."""

    def check_agent(self, name: str) -> None:
        """Refuse an agent the app does not serve (its 404)."""

    def check(self, body: BaseModel, *nested: str) -> None:
        """Refuse a body whose text or ``nested`` values the app cannot keep."""

    def messages(self, given: Sequence[tuple[str, str]]) -> list[Message]:
        """``(role, text)`` pairs as the run's input messages, within the app's limits."""
        ...

    async def known(self, session_id: str) -> bool:
        """Whether the conversation ``session_id`` is stored already."""
        ...

    async def resume_targets(self, session_id: str, targets: Mapping[str, Any]) -> dict[str, Any]:
        """``targets`` checked against the interrupts the conversation's pending run waits on (refused when it has
        none, or when they answer none of them)."""
        ...

    async def start(self, request: SegmentRequest) -> AsyncGenerator[EventRecord, None]:
        """Submit ``request``'s segment (refused when the app cannot take it now); its records, up to its ``end``.
        Closing them lets the run go: it is cancelled when nobody else follows it."""
        ...

    def refuse(self, status: int, code: str, message: str, *, expected: Any, found: Any) -> Exception:
        """The app's refusal of a request: raised by the endpoint."""
        ...


def agui_router(host: AguiHost) -> APIRouter:
    """The router of ``POST /agui/{agent}`` on ``host``: an AG-UI ``RunAgentInput`` in, the run's AG-UI events out
    (``text/event-stream``)."""

    async def run_agent(agent: str, body: RunAgentInput) -> StreamingResponse:
        """Run ``agent`` on an AG-UI thread: a turn on the thread's new messages, or (with ``resume``) the answer to
        its pending run's interrupts; the run's AG-UI events as SSE."""
        request = await _segment(host, agent, body)
        records = await host.start(request)
        # The state the client has: the run's, when it starts one; a resumed run's delta takes it to the run's.
        state = body.state if isinstance(body.state, dict) else {}
        translator = AguiTranslator(thread_id=body.thread_id, run_id=body.run_id, state=state)
        encoder = EventEncoder()
        return StreamingResponse(
            _events(records, translator, encoder),
            media_type=encoder.get_content_type(),
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )

    router = APIRouter(tags=["ag-ui"])
    router.add_api_route("/agui/{agent}", run_agent, methods=["POST"], response_class=StreamingResponse)
    return router


async def _segment(host: AguiHost, agent: str, body: RunAgentInput) -> SegmentRequest:
    """The segment an AG-UI input asks for, once the host's checks pass: the thread's turn, or its resume."""
    host.check_agent(agent)
    host.check(body, "state", "forwarded_props", "resume")
    try:
        thread = check_session_id(body.thread_id)
    except UserError as error:
        raise host.refuse(
            422,
            "invalid_thread_id",
            f"threadId: expected an id the session store takes (the thread is a conversation), got one it refuses: "
            f"{error}",
            expected="a session id",
            found=body.thread_id,
        ) from None
    state = body.state if body.state is not None else {}
    if not isinstance(state, dict):
        raise host.refuse(
            422,
            "invalid_state",
            f"state: expected an object (the run's session values), got {type(state).__name__}",
            expected="a JSON object",
            found=type(state).__name__,
        )
    if body.resume:
        return SegmentRequest(
            agent=agent,
            session_id=thread,
            targets=await host.resume_targets(thread, _targets(host, body)),
            stream=True,  # a resumed run's session values are its checkpoint's
        )
    messages = host.messages(_texts(body.messages, await host.known(thread)))
    if not messages:
        raise host.refuse(
            422,
            "empty_input",
            "messages: expected a new user message (or resume entries), got none",
            expected="a user message after the thread's last answer",
            found=len(body.messages),
        )
    return SegmentRequest(agent=agent, session_id=thread, messages=tuple(messages), session_values=state, stream=True)


def _targets(host: AguiHost, body: RunAgentInput) -> dict[str, Any]:
    """The resume entries as batonflow's targets: interrupt id to the payload it resumes with."""
    entries = body.resume or []
    cancelled = [e.interrupt_id for e in entries if e.status != "resolved"]
    if cancelled:
        raise host.refuse(
            422,
            "cancelled_interrupt",
            f"resume: expected entries of status 'resolved' (a batonflow interrupt is answered, not withdrawn; "
            f"start another thread to leave it), got 'cancelled' for {cancelled}",
            expected="status 'resolved'",
            found=cancelled,
        )
    return {e.interrupt_id: e.payload for e in entries}


def _texts(messages: Sequence[AguiMessage], known: bool) -> list[tuple[str, str]]:
    """The thread's messages as ``(role, text)``: all of them for a thread batonflow has not seen, else (its
    session keeps the rest) those after the last answer or tool result. Tool results, activities and reasoning of
    the client's have no place in a batonflow run (its agents call their own tools), nor has an empty answer."""
    given = list(messages)
    if known:
        last = max((i for i, m in enumerate(given) if m.role in ("assistant", "tool")), default=-1)
        given = given[last + 1 :]
    kept: list[tuple[str, str]] = []
    for message in given:
        if message.role not in ("user", "assistant", "system", "developer"):
            continue
        content = getattr(message, "content", None)
        if isinstance(content, list):
            text = "".join(str(getattr(part, "text", "")) for part in content if getattr(part, "type", "") == "text")
        else:
            text = content or ""
        if text or message.role == "user":
            kept.append(("system" if message.role == "developer" else message.role, text))
    return kept


async def _events(
    records: AsyncGenerator[EventRecord, None], translator: AguiTranslator, encoder: EventEncoder
) -> AsyncGenerator[str, None]:
    """The run's records as encoded AG-UI events, up to its end (closing the records when the client goes away)."""
    async with aclosing(records):
        for event in translator.started():
            yield encoder.encode(event)
        async for record in records:
            if record.kind == "end":
                events = translator.ended(record.data)
            else:
                events = translator.frame(str(record.data["event"]), body_of(record.data))
            for event in events:
                yield encoder.encode(event)
            if record.kind == "end":
                return
    if not translator.finished:  # the records ended without the run's end: never a stream left open
        translator.finished = True
        yield encoder.encode(RunErrorEvent(message="the run's events ended before its end", code="EventsEnded"))
