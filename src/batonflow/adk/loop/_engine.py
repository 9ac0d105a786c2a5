"""The loop engine: model step → route → tool step, until an answer, a failure or an interrupt.

``run_loop`` is the one loop every model-driven agent with tools runs on. It owns the order of things — the
middlewares' hooks, the turn budget, the retry of a failed model call a middleware asked for, the interrupt
event with the loop's state — and leaves every decision where Eino and Solon differ to the ``LoopPolicy``.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable
from contextlib import aclosing
from typing import assert_never

from ...errors import RunError
from ...schema import Message
from ...tools import InterruptSignal
from .._context import RunContext
from .._events import AgentEvent, AgentInput, event_from_message
from .._interrupt import interrupted_action
from ._outcomes import Answer, AskAgain, CallTools, Fail, Interrupt, Outcome, Retry, Routed
from ._policy import AgentSetup, LoopPolicy, ModelRequest
from ._state import ReactState
from ._tool_step import tool_step

__all__ = ["run_loop"]

MAX_MODEL_RETRIES = 10
"""How often in one turn the middlewares may ask for a failed model call again, whatever they say."""


async def run_loop(
    setup: AgentSetup, policy: LoopPolicy, start: AgentInput | ReactState, ctx: RunContext, *, streaming: bool
) -> AsyncGenerator[AgentEvent, None]:
    """Run a loop to its end: a new one on ``start``'s input, or the saved one ``start`` is (a resume)."""
    if isinstance(start, ReactState):
        state = start
        state.tools = list(setup.infos)
    else:
        try:
            state = await _new_state(setup, policy, start, ctx)
        except Exception as error:
            yield AgentEvent(error=error)
            return
    failures = 0  # failed model calls of this turn, for the on_model_error hooks
    while True:
        outcome: Outcome | None = None
        if state.pending is None:
            outcome = policy.before_turn(state) if not failures else None
            if outcome is None:
                sent, tools = await _begin_turn(state, setup, policy, ctx)
                try:
                    if streaming:
                        reply = await setup.step.stream(sent, tools, ctx)
                        assert reply is not None
                        yield reply.event
                        message = await reply.message()
                        outcome = policy.route(message, state, setup)
                    else:
                        message = await setup.step.generate(sent, tools, ctx)
                        outcome = policy.route(message, state, setup)
                        if outcome.show:
                            yield event_from_message(message)
                except Exception as error:
                    failures += 1
                    outcome = await _after_failure(error, failures, state, setup, ctx, streaming)
                else:
                    failures = 0
                    outcome = await _taken(outcome, message, state, setup, policy, ctx)
        if state.pending is not None and outcome is None:
            async with aclosing(tool_step(state, setup, policy, ctx)) as round_items:
                async for item in round_items:
                    if isinstance(item, AgentEvent):
                        yield item
                    else:
                        outcome = item
        match outcome:
            case None | AskAgain() | CallTools():
                continue
            case Retry():
                state.remaining += 1  # the failed call is not a turn
                state.turn -= 1
                continue
            case Answer() | Fail() | Interrupt():
                for event in _last_events(outcome, state, policy, ctx):
                    yield event
                for hook in setup.after_agent if isinstance(outcome, Answer) else ():
                    await _maybe(hook(state, ctx))
                return
            case _:
                assert_never(outcome)


async def _begin_turn(state: ReactState, setup: AgentSetup, policy: LoopPolicy, ctx: RunContext) -> ModelRequest:
    """A model call is made: it counts as a turn, the ``before_chat_model`` hooks run, and the policy says what
    the model is sent."""
    state.remaining -= 1
    state.turn += 1
    for hook in setup.before_model:
        await _maybe(hook(state, ctx))
    return policy.request(state)


async def _new_state(setup: AgentSetup, policy: LoopPolicy, input: AgentInput, ctx: RunContext) -> ReactState:
    visits = ctx.session.visits
    visit = visits[ctx.address] = visits.get(ctx.address, 0) + 1
    state = ReactState(messages=await policy.model_input(setup, input, ctx), remaining=setup.max_turns, visit=visit)
    state.tools = list(setup.infos)
    for hook in setup.before_agent:
        await _maybe(hook(state, ctx))
    return state


def _last_events(
    outcome: Answer | Fail | Interrupt, state: ReactState, policy: LoopPolicy, ctx: RunContext
) -> list[AgentEvent]:
    """The last events of a run: its answer (saved as its output), its error, or its interrupt."""
    match outcome:
        case Answer(message=answer, said=said):
            assert answer is not None
            policy.save_output(answer, ctx)
            if said:
                return []
            state.messages.append(answer)
            return [event_from_message(answer)]
        case Fail(error=error):
            return [AgentEvent(error=error)]
        case Interrupt(signals=signals):
            said_first = [event_from_message(m) for m in policy.interrupt_messages(signals)]
            return [*said_first, _interrupt_event(state, signals, ctx)]
        case _:
            assert_never(outcome)


async def _taken(
    outcome: Outcome, message: Message, state: ReactState, setup: AgentSetup, policy: LoopPolicy, ctx: RunContext
) -> Outcome | None:
    """The model's message goes into the transcript as the routing says; None to go on to the tool step.

    The ``after_chat_model`` hooks then see it there. A hook that replaces it (drops a tool call, adds one, turns
    the calls into an answer) changes what the loop does: as in Eino, the loop acts on the transcript's last
    message as the hooks left it. An answer that is the model's own comes back as ``Answer(message, said=True)``:
    it is in the transcript and the caller has seen it."""
    match outcome:
        case AskAgain(feedback=feedback, keep=keep):
            if keep:
                state.messages.append(message)
            state.messages.extend(feedback)
            return outcome
        case CallTools(message=acting):
            state.messages.append(acting)
        case Answer():
            state.messages.append(message)
        case Fail() | Retry() | Interrupt():
            return outcome
        case _:
            assert_never(outcome)
    if setup.after_model:
        placed = state.messages[-1]
        for hook in setup.after_model:
            await _maybe(hook(state, ctx))
        if not state.messages or state.messages[-1] is not placed:
            outcome, message = _routed_again(state, setup, policy)
            if isinstance(outcome, (AskAgain, Fail)):
                return outcome
    if isinstance(outcome, CallTools):
        state.pending, state.completed = outcome.message, {}
        return None
    return Answer(message, said=True) if outcome.message is None else outcome


def _routed_again(state: ReactState, setup: AgentSetup, policy: LoopPolicy) -> tuple[Routed | Fail, Message]:
    """What the transcript's last message means once a middleware replaced the model's, and that message; the
    transcript is left as the routing says (an unreadable message dropped, feedback appended)."""
    if not state.messages:
        return Fail(RunError("no messages left in state after model call")), Message(role="assistant")
    last = state.messages[-1]
    outcome = policy.route(last, state, setup)
    match outcome:
        case CallTools(message=acting):
            state.messages[-1] = acting
        case AskAgain(feedback=feedback, keep=keep):
            if not keep:
                state.messages.pop()
            state.messages.extend(feedback)
        case Answer():
            pass
        case _:
            assert_never(outcome)
    return outcome, last


async def _after_failure(
    error: Exception, failures: int, state: ReactState, setup: AgentSetup, ctx: RunContext, streaming: bool
) -> Retry | Fail:
    """A failed model call is made again if a middleware asks (every hook is asked; never more than
    ``MAX_MODEL_RETRIES`` times a turn), unless it was streamed: its stream reached the caller."""
    if not setup.model_error or streaming or failures > MAX_MODEL_RETRIES:
        return Fail(error)
    again = False
    for hook in setup.model_error:
        answer = hook(state, error, failures, ctx)
        if inspect.isawaitable(answer):
            answer = await answer
        again = bool(answer) or again
    return Retry() if again else Fail(error)


def _interrupt_event(state: ReactState, signals: list[InterruptSignal], ctx: RunContext) -> AgentEvent:
    """The agent's interrupt: a composite of the round's signals, saving a copy of the loop state."""
    saved = ReactState(
        messages=list(state.messages),
        remaining=state.remaining,
        pending=state.pending,
        completed=dict(state.completed),
        turn=state.turn,
        corrections=state.corrections,
        visit=state.visit,
    )
    signal = InterruptSignal(
        None, address=ctx.address, state=saved, subs=tuple(signals), id=ctx.interrupt_id(ctx.address)
    )
    return AgentEvent(action=interrupted_action(signal, signals[0].info))


async def _maybe(result: Awaitable[None] | None) -> None:
    if result is not None:
        await result
