"""The demo: a customer-service team of agents, run on a real model.

A ``router`` hands each customer request to ``refund_agent``, ``complaint_agent`` or ``product_agent``; they
work on a small in-memory shop through tools (look up and refund orders, file complaints, search products).
Every event of each run is printed as it arrives, streamed text chunk by chunk, and the shop's changes at the
end show that the tools really ran.

A refund needs a person: ``issue_refund`` is a sensitive tool (``human_approval``), so a run that would refund
stops with the pending call, saved in the Runner's checkpoint store. The demo shows it, asks for a decision
(``[y/n]`` on a terminal) and resumes the run with it. Without a terminal (CI, a pipe) it approves the first
refund and rejects the later ones, so one run shows both outcomes.

It runs on the offline SmolLM2-135M model by default, so what it shows is what a 135M-parameter model does:
fluent but not always right. Three things keep it on track: the router's transfer is a forced tool call whose
``agent_name`` is an enum of the sub-agents, the router sees a few example routings, and each specialist is
told when to call its tool and when to answer (``ToolThenAnswer``). ``--model scripted`` replays the whole flow
without any model.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Annotated, Literal, TextIO, TypeAlias

from pydantic import Field

from .adk import (
    AgentEvent,
    AgentInput,
    AgentMiddleware,
    ChatModelAgent,
    FlowAgent,
    InterruptCtx,
    InterruptInfo,
    RunContext,
    Runner,
    agent_with_options,
    set_sub_agents,
)
from .agents import HITL, HITLDecision, HITLPending, PendingTask, human_approval
from .errors import UserError
from .models import ChatModel, ForcedTool, ModelSettings, ToolChoice, load_model
from .schema import (
    FunctionCall,
    Message,
    MessageStream,
    Stream,
    ToolCall,
    assistant,
    concat_messages,
    system,
    tool_message,
    user,
)
from .store import MemoryCheckpointStore
from .testing import FunctionModel
from .tools import ToolInfo, tool

__all__ = [
    "TURNS",
    "Approval",
    "Approver",
    "Shop",
    "ToolThenAnswer",
    "build_system",
    "print_events",
    "run_demo",
    "scripted_model",
]

TURNS = (
    "Order 1042 arrived damaged. Please refund it.",
    "I want to complain: the courier threw order 1043 over the fence.",
    "Do you sell headphones with noise cancelling?",
    "Please refund order 1044 too, the earbuds.",
)

ComplaintCategory = Literal["delivery", "product", "staff", "other"]
# Bounded free text: a small model's runaway string is cut where the bound says (llama.cpp's grammar enforces
# maxLength), instead of at max_tokens, which would leave the call's JSON unfinished.
Reason = Annotated[str, Field(max_length=80)]
Query = Annotated[str, Field(max_length=60)]

# -- the shop: what the tools read and change ------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Order:
    id: str
    items: list[str]
    amount: float
    status: Literal["shipped", "delivered", "refunded"]


@dataclass(slots=True, kw_only=True)
class Product:
    id: str
    name: str
    price: float
    specs: str


@dataclass(slots=True, kw_only=True)
class Refund:
    order_id: str
    amount: float
    reason: str


@dataclass(slots=True, kw_only=True)
class Complaint:
    ticket: str
    order_id: str
    category: ComplaintCategory
    text: str


def _sample_orders() -> dict[str, Order]:
    orders = [
        Order(id="1042", items=["X200 headphones"], amount=59.0, status="delivered"),
        Order(id="1043", items=["K3 kettle", "L7 desk lamp"], amount=74.5, status="delivered"),
        Order(id="1044", items=["X100 earbuds"], amount=29.0, status="shipped"),
    ]
    return {o.id: o for o in orders}


def _sample_products() -> dict[str, Product]:
    products = [
        Product(id="X200", name="X200 wireless headphones", price=59.0, specs="bluetooth 5.3, noise cancelling, 30 h"),
        Product(id="X100", name="X100 earbuds", price=29.0, specs="bluetooth 5.0, 6 h, no noise cancelling"),
        Product(id="K3", name="K3 kettle", price=34.5, specs="1.7 l, 2200 W, steel"),
        Product(id="L7", name="L7 desk lamp", price=40.0, specs="LED, 3 brightness levels, USB-C"),
    ]
    return {p.id: p for p in products}


@dataclass(slots=True, kw_only=True)
class Shop:
    """An in-memory shop. Its methods are the agents' tools: they answer in sentences a model can read, and
    turn bad input (an unknown order, a second refund) into an answer rather than an exception."""

    orders: dict[str, Order] = field(default_factory=_sample_orders)
    products: dict[str, Product] = field(default_factory=_sample_products)
    refunds: list[Refund] = field(default_factory=list)
    complaints: list[Complaint] = field(default_factory=list)

    def lookup_order(self, order_id: str) -> str:
        """Look up an order: its items, amount and status.

        Args:
            order_id: the order number, such as 1042
        """
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        return f"Order {order.id}: {', '.join(order.items)}; {order.amount:.2f} EUR; status {order.status}."

    def issue_refund(self, order_id: str, reason: Reason) -> str:
        """Refund an order in full.

        Args:
            order_id: the order number, such as 1042
            reason: why the customer wants the refund
        """
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        if order.status == "refunded":
            return f"Order {order.id} was already refunded; no second refund was issued."
        order.status = "refunded"
        self.refunds.append(Refund(order_id=order.id, amount=order.amount, reason=reason))
        return f"Refunded {order.amount:.2f} EUR for order {order.id} ({', '.join(order.items)})."

    def file_complaint(self, order_id: str, category: ComplaintCategory, text: Reason) -> str:
        """File a complaint about an order and return its ticket id.

        Args:
            order_id: the order number, such as 1043
            category: what the complaint is about
            text: the complaint in the customer's words
        """
        order = self._order(order_id)
        if order is None:
            return self._unknown_order(order_id)
        ticket = f"T-{1001 + len(self.complaints)}"
        self.complaints.append(Complaint(ticket=ticket, order_id=order.id, category=category, text=text))
        return f"Complaint filed as ticket {ticket} for order {order.id} ({category})."

    def search_products(self, query: Query) -> str:
        """Search the products by name and features.

        Args:
            query: words to look for, such as: noise cancelling headphones
        """
        words = {w for w in re.findall(r"[a-z0-9.]+", query.lower()) if len(w) > 2}

        def score(p: Product) -> int:
            return sum(w in f"{p.id} {p.name} {p.specs}".lower() for w in words)

        found = sorted((p for p in self.products.values() if score(p)), key=score, reverse=True)
        if not found:
            return f"No product matches {query}. We sell: {', '.join(p.name for p in self.products.values())}."
        return " ".join(f"{p.id}: {p.name}, {p.price:.2f} EUR ({p.specs})." for p in found[:3])

    def get_product(self, product_id: str) -> str:
        """Get one product's details.

        Args:
            product_id: the product id, such as X200
        """
        product = self.products.get(product_id.strip().upper())
        if product is None:
            return f"No product {product_id}: expected one of {', '.join(self.products)}."
        return f"{product.name} ({product.id}): {product.price:.2f} EUR; {product.specs}."

    def _order(self, order_id: str) -> Order | None:
        # The number wherever it is: small models write "#1042", ",1042" or "order 1042".
        number = re.search(r"\d+", order_id)
        return self.orders.get(number.group()) if number else None

    def _unknown_order(self, order_id: str) -> str:
        return f"No order {order_id}: expected an order number such as {', '.join(self.orders)}."


# -- the agents -----------------------------------------------------------------------------------------------


class ToolThenAnswer:
    """A model told when to call a tool: ``tool`` is forced until a tool has answered, then words, no tools.

    SmolLM2-135M cannot tell when to call a tool and when to answer, and llama.cpp's automatic tool choice
    (``chatml-function-calling``) constrains a text answer to nothing. So on the local model each specialist
    calls its main tool once, then answers; a turn takes at most two calls of each specialist's model.
    """

    def __init__(self, model: ChatModel, tool: str) -> None:
        self.model = model
        self.tool = tool
        self.model_name = model.model_name

    def _request(
        self, messages: Sequence[Message], tools: Sequence[ToolInfo] | None
    ) -> tuple[list[Message], list[ToolInfo] | None, ToolChoice | None]:
        messages = list(messages)
        if not messages or messages[-1].role != "tool":
            # The forced tool alone: a shorter prompt, which a small model follows better.
            forced = [t for t in tools or () if t.name == self.tool]
            return messages, forced or None, ForcedTool(self.tool) if forced else None
        # Time to answer. The tool's result goes in as plain text the agent said: the function-call transcript is
        # what a small model would echo back instead (measured: with it, SmolLM2 repeats the call's JSON).
        results: list[str] = []
        while messages and messages[-1].role == "tool":
            results.insert(0, messages.pop().content)
        if messages and messages[-1].tool_calls:
            messages.pop()
        return (
            [*messages, assistant(" ".join(results)), user("Thanks. Please sum that up in one sentence.")],
            None,
            None,
        )

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> Message:
        messages, tools, tool_choice = self._request(messages, tools)
        return await self.model.generate(messages, tools=tools, tool_choice=tool_choice, settings=settings)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolInfo] | None = None,
        tool_choice: ToolChoice | None = None,
        settings: ModelSettings | None = None,
    ) -> MessageStream:
        messages, tools, tool_choice = self._request(messages, tools)
        return self.model.stream(messages, tools=tools, tool_choice=tool_choice, settings=settings)


def _call(name: str, /, call_id: str = "", **arguments: str) -> Message:
    """An assistant message calling one tool."""
    function = FunctionCall(name=name, arguments=json.dumps(arguments))
    call = ToolCall(index=0, id=call_id or f"call_{name}", function=function)
    return assistant(tool_calls=[call])


ROUTING_EXAMPLES = (
    ("Please refund order 17.", "refund_agent"),
    ("I want to complain: my parcel was late.", "complaint_agent"),
    ("Do you sell kettles?", "product_agent"),
    ("The courier was rude to me.", "complaint_agent"),
)


def _with_routing_examples(instruction: str, input: AgentInput, ctx: RunContext) -> list[Message]:
    """The router's input with a few example routings before the request, as earlier turns of the chat.

    Without them SmolLM2 sends every request to the first agent of the enum; with them it routes the demo's
    requests (and most others) right. A larger model does not need them, and is not misled by them.
    """
    examples: list[Message] = []
    for number, (request, agent) in enumerate(ROUTING_EXAMPLES):
        call_id = f"example_{number}"
        result = tool_message(f"successfully transferred to agent [{agent}]", tool_call_id=call_id)
        examples += [user(request), _call("transfer_to_agent", call_id, agent_name=agent), result]
    return [system(instruction), *examples, *input.messages]


def build_system(
    model: ChatModel, shop: Shop, *, guided: bool = False, router_model: ChatModel | None = None
) -> FlowAgent:
    """The customer-service tree on ``model`` (the router on ``router_model`` if given), with tools over ``shop``.

    ``guided`` wraps each specialist's model in ``ToolThenAnswer`` (for small local models); a specialist's
    first tool is its main one. ``issue_refund`` waits for a person's approval (run it with a checkpoint store).
    """

    def specialist(
        name: str,
        description: str,
        instruction: str,
        functions: list[Callable[..., str]],
        middlewares: Sequence[AgentMiddleware] = (),
    ) -> FlowAgent:
        # threaded=False: the shop is plain memory, so its tools run on the event loop and a refund's
        # check-then-set cannot interleave with another call's.
        tools = [tool(threaded=False)(fn) for fn in functions]
        agent = ChatModelAgent(
            name=name,
            description=description,
            instruction=instruction,
            model=ToolThenAnswer(model, tools[0].info.name) if guided else model,
            tools=tools,
            model_settings=ModelSettings(max_tokens=120, temperature=0),
            max_iterations=4,
            middlewares=list(middlewares),
        )
        # A specialist answers; it does not hand the customer back to the router (no ping-pong between them).
        return agent_with_options(agent, disallow_transfer_to_parent=True)

    router = ChatModelAgent(
        name="router",
        description="Front desk: sends each customer request to the right agent.",
        instruction="You are the front desk of an online shop. Send the customer to the agent that can help.",
        model=router_model or model,
        tool_choice=ForcedTool("transfer_to_agent"),
        gen_model_input=_with_routing_examples,
        model_settings=ModelSettings(max_tokens=40, temperature=0),
        max_iterations=2,
    )
    refund = specialist(
        "refund_agent",
        "refunds and money back",
        "You refund orders. Call issue_refund with the order number, then tell the customer the result briefly.",
        [shop.issue_refund, shop.lookup_order],
        [human_approval(sensitive_tools={"issue_refund": "A refund pays money back: approve it?"})],
    )
    complaint = specialist(
        "complaint_agent",
        "complaints: late or damaged delivery, rude staff",
        "You file complaints. Call file_complaint, then give the customer the ticket id briefly.",
        [shop.file_complaint, shop.lookup_order],
    )
    product = specialist(
        "product_agent",
        "questions about products: features, prices, stock",
        "You answer product questions. Call search_products, then answer the customer briefly.",
        [shop.search_products, shop.get_product],
    )
    return set_sub_agents(router, [refund, complaint, product])


# -- the scripted model: the whole flow, replayed without a model ----------------------------------------------


def _scripted(messages: list[Message], tools: list[ToolInfo]) -> Message:
    """Answers as a capable model would: route by keywords, call the tools in order, then sum up."""
    request = next(m.content for m in reversed(messages) if m.role == "user")
    text = request.lower()
    names = {t.name for t in tools}
    results = {m.tool_name: m.content for m in messages if m.role == "tool"}
    order = re.search(r"\d{4}", request)
    order_id = order.group() if order else ""
    if "transfer_to_agent" in names:
        dest = "refund_agent" if "refund" in text else "complaint_agent" if "complain" in text else "product_agent"
        return _call("transfer_to_agent", agent_name=dest)
    if "issue_refund" in names and "lookup_order" not in results:
        return _call("lookup_order", order_id=order_id)
    if "issue_refund" in names and "issue_refund" not in results:
        return _call("issue_refund", order_id=order_id, reason=request)
    if "file_complaint" in names and "file_complaint" not in results:
        category = "delivery" if "courier" in text or "deliver" in text else "other"
        return _call("file_complaint", order_id=order_id, category=category, text=request)
    if "search_products" in names and "search_products" not in results:
        return _call("search_products", query=request)
    found = re.match(r"(\w+):", results.get("search_products", ""))
    if "get_product" in names and found and "get_product" not in results:
        return _call("get_product", product_id=found.group(1))
    last = next(m.content for m in reversed(messages) if m.role == "tool")
    return assistant(f"{last} Is there anything else I can do for you?")


def scripted_model() -> FunctionModel:
    """A deterministic stand-in for a model, for ``--model scripted`` and tests."""
    return FunctionModel(_scripted, model_name="scripted")


# -- printing the event stream --------------------------------------------------------------------------------


def _arguments(text: str) -> str:
    try:
        parsed = json.loads(text or "{}")
    except ValueError:
        return text  # what a small model wrote, shown as it is
    if not isinstance(parsed, dict):
        return text
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}" for key, value in parsed.items())


async def _print_message(event: AgentEvent, head: str, out: TextIO) -> Message | None:
    """Print an assistant message's text (chunk by chunk if streamed); the whole message, or None if it failed."""
    variant = event.message_output
    assert variant is not None
    if not variant.is_streaming:
        assert variant.message is not None
        if variant.message.content:
            print(f"{head}: {variant.message.content.strip()}", file=out)
        return variant.message
    assert variant.message_stream is not None
    chunks: list[Message] = []
    printing = False
    try:
        async with aclosing(variant.message_stream):
            async for chunk in variant.message_stream:
                chunks.append(chunk)
                if chunk.content and not printing:
                    printing = True
                    print(f"{head}: {chunk.content.lstrip()}", end="", file=out, flush=True)
                elif chunk.content:
                    print(chunk.content, end="", file=out, flush=True)
    except Exception:
        # The agent reads the same stream and reports the failure as an error event, printed next.
        print(" [stream failed]" if printing else "", file=out)
        return None
    if printing:
        print(file=out)
    return concat_messages(chunks) if chunks else None


async def print_event(event: AgentEvent, out: TextIO) -> None:
    """One event as lines of ``out``: ``[run path] agent ...``."""
    path = " → ".join(str(step) for step in event.run_path) or event.agent_name
    head = f"[{path}] {event.agent_name}"
    variant = event.message_output
    if variant is not None and variant.role == "assistant":
        message = await _print_message(event, head, out)
        for call in message.tool_calls if message else ():
            print(f"{head} calls {call.function.name}({_arguments(call.function.arguments)})", file=out)
    elif variant is not None and variant.role == "tool":
        transfer = event.action.transfer_to_agent if event.action else None
        if transfer is not None:
            print(f"{head} → transfer to {transfer.dest_agent_name}", file=out)
        else:
            try:
                result = (await variant.get_message()).content  # a streaming tool's chunks, joined
            except Exception:
                result = "[stream failed]"  # the agent reports why in an error event
            print(f"{head} ← {variant.tool_name}: {result}", file=out)
    interrupted = event.action.interrupted if event.action is not None else None
    if isinstance(interrupted, InterruptInfo):
        for cause in interrupted.interrupt_contexts:
            if isinstance(cause.info, HITLPending):
                for task in cause.info.tasks:
                    print(f"{head} waits for approval: {_task(task)} ({task.comment})", file=out)
            else:
                print(f"{head} interrupted: {cause.info}", file=out)
    if event.error is not None:
        print(f"{head} error: {type(event.error).__name__}: {event.error}", file=out)


def _task(task: PendingTask) -> str:
    return f"{task.tool_name}({_arguments(task.arguments)})"


async def print_events(events: Stream[AgentEvent], out: TextIO) -> list[InterruptCtx]:
    """Print every event of a run as it arrives; the interrupts the run stopped at, if it did."""
    stopped: list[InterruptCtx] = []
    async with aclosing(events):
        async for event in events:
            await print_event(event, out)
            interrupted = event.action.interrupted if event.action is not None else None
            if isinstance(interrupted, InterruptInfo):
                stopped = interrupted.interrupt_contexts
    return stopped


def print_changes(shop: Shop, out: TextIO) -> None:
    print("\n== what the tools changed in the shop ==", file=out)
    for refund in shop.refunds:
        print(f"refund issued: order {refund.order_id}, {refund.amount:.2f} EUR (reason: {refund.reason})", file=out)
    for c in shop.complaints:
        print(f"ticket filed:  {c.ticket} for order {c.order_id} [{c.category}]: {c.text}", file=out)
    if not shop.refunds and not shop.complaints:
        print("nothing: no refund issued, no complaint filed", file=out)
    print(f"orders now:    {', '.join(f'{o.id} {o.status}' for o in shop.orders.values())}", file=out)


# -- approvals --------------------------------------------------------------------------------------------------

Approval: TypeAlias = Literal["auto", "ask", "yes", "no"]


class Approver:
    """Decides the demo's pending refunds, as the person at the terminal or by a rule.

    ``ask`` asks ``[y/n]`` on ``stdin``; ``yes`` and ``no`` decide every refund alike; ``auto`` asks when ``stdin``
    is a terminal, and otherwise (CI, a pipe) approves the first refund and rejects the later ones, so that one
    run shows both outcomes.
    """

    def __init__(self, mode: Approval, *, stdin: TextIO, out: TextIO) -> None:
        if mode not in ("auto", "ask", "yes", "no"):
            raise UserError(f"approve: expected one of auto, ask, yes, no, got {mode!r}")
        self.mode = "ask" if mode == "auto" and stdin.isatty() else mode
        self.stdin = stdin
        self.out = out
        self.decided: list[tuple[PendingTask, HITLDecision]] = []

    def decide(self, task: PendingTask) -> HITLDecision:
        prompt = f"approve {_task(task)}? [y/n] "
        if self.mode == "ask":
            approved = self._ask(prompt)
        else:
            approved = self.mode == "yes" or (self.mode == "auto" and not self.decided)
            why = "stdin is not a terminal: the first refund is approved, later ones rejected"
            rule = why if self.mode == "auto" else f"--approve {self.mode}"
            print(f"{prompt}{'y' if approved else 'n'}  ({rule})", file=self.out)
        decision = HITL.approve("approved by the user") if approved else HITL.reject("rejected by the user")
        print(f"→ {decision.comment}", file=self.out, flush=True)
        self.decided.append((task, decision))
        return decision

    def _ask(self, prompt: str) -> bool:
        while True:
            print(prompt, end="", file=self.out, flush=True)
            line = self.stdin.readline()
            if not line:
                print("n  (no more input)", file=self.out)
                return False
            if not self.stdin.isatty():
                print(line.strip(), file=self.out)  # what a terminal would have echoed
            answer = line.strip().lower()
            if answer in ("y", "yes", "n", "no"):
                return answer.startswith("y")

    def targets(self, stopped: Sequence[InterruptCtx]) -> dict[str, dict[str, HITLDecision]]:
        """The resume's targets for the approvals a run stopped at: a decision for each pending call."""
        return {
            cause.id: {task.call_id: self.decide(task) for task in cause.info.tasks}
            for cause in stopped
            if isinstance(cause.info, HITLPending)
        }

    def print_decisions(self) -> None:
        if self.decided:
            print("\n== the approvals ==", file=self.out)
        for task, decision in self.decided:
            print(f"{'approved' if decision.action == 'approve' else 'rejected'}: {_task(task)}", file=self.out)


# -- the demo -------------------------------------------------------------------------------------------------


def _load_model(uri: str) -> ChatModel:
    try:
        return load_model(uri)
    except UserError as error:
        raise UserError(f"{error} (the demo also takes 'scripted', a replay without any model)") from error


async def run_demo(
    model_uri: str,
    *,
    out: TextIO,
    turns: Sequence[str] = TURNS,
    approve: Approval = "auto",
    stdin: TextIO | None = None,
) -> None:
    """Run each of ``turns`` as its own run of the customer-service tree on ``model_uri``, printing as it goes.

    A run that stops for a refund's approval is resumed with the decision of ``approve`` (see ``Approver``; it
    reads ``stdin``, ``sys.stdin`` by default). Raises ``UserError`` for a model URI that cannot work; failures
    during the runs are printed as error events.
    """
    approver = Approver(approve, stdin=stdin or sys.stdin, out=out)
    model = scripted_model() if model_uri == "scripted" else _load_model(model_uri)
    local = model_uri.startswith("local:")
    # llama.cpp keeps the last prompt of a loaded model in its cache: with a model of its own, the router's long
    # prompt (instruction, agents, example routings) is read on the first turn only; measured on 2 busy cores,
    # its later calls went from 6-8 s to about 1 s.
    router_model = _load_model(model_uri) if local else model
    shop = Shop()
    runner = Runner(
        # On llama.cpp models (SmolLM2 by default) the specialists are told when to call their tool.
        build_system(model, shop, guided=local, router_model=router_model),
        enable_streaming=True,
        skip_transfer_messages=True,  # the specialist sees the request, not the router's transfer call
        checkpoint_store=MemoryCheckpointStore(),  # where a run waiting for an approval is kept
    )
    print(f"batonflow demo: customer service on model {model_uri} ({model.model_name})", file=out)
    print("agents: router → refund_agent | complaint_agent | product_agent", file=out)
    total = 0.0
    for number, text in enumerate(turns, 1):
        print(f"\n== turn {number} of {len(turns)} ==\nuser: {text}", file=out, flush=True)
        checkpoint_id = f"turn-{number}"
        events = runner.query(text, checkpoint_id=checkpoint_id)
        running = 0.0  # the agents' time, without the time a person takes to decide
        while True:
            started = time.perf_counter()
            stopped = await print_events(events, out)
            running += time.perf_counter() - started
            targets = approver.targets(stopped)
            if not targets:
                break
            events = runner.resume(checkpoint_id, targets=targets)
        print(f"(turn {number}: {running:.2f} s)", file=out, flush=True)
        total += running
    print_changes(shop, out)
    approver.print_decisions()
    print(f"\n{len(turns)} turns in {total:.2f} s", file=out)
