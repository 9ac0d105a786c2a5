"""What an expression's operations may cost: the budget of one evaluation and the price of each operation.

Expressions hold no loops, but one operation may still do much work: ``[[0] * 1000] * 1000`` is a million items
that share one list, and comparing, converting or taking the ``max`` of such a value walks all of them. So every
operation whose work grows with its values is priced before it runs, by the values' size (``size``: their items
and characters, nested ones included and a shared one counted each time it is reached, counted no further than
what may be spent). The price comes out of a budget of ``MAX_WORK`` per evaluation (``budget``, ``spend``,
``measure``), and what an operation builds may hold at most ``MAX_ITEMS`` (``built``). ``compare`` and
``compare_chain`` are the comparisons the sandbox compiles expressions to.
"""

from __future__ import annotations

import dataclasses
import operator
from collections import Counter
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, NoReturn

from pydantic import BaseModel

__all__ = [
    "ATOMS",
    "MAX_ITEMS",
    "MAX_WORK",
    "Refused",
    "budget",
    "built",
    "compare",
    "compare_chain",
    "fields_of",
    "measure",
    "refuse",
    "size",
    "spend",
]

MAX_ITEMS = 1_000_000  # items and characters, nested ones included, in a value an operation builds
MAX_WORK = 5_000_000  # items and characters one evaluation's operations may walk, all told


class Refused(Exception):
    """Raised inside the sandbox when an expression asks for what it may not have; becomes an ``ExpressionError``
    (an ``ExpressionLimitError`` when ``limit`` names the limit it passed)."""

    def __init__(self, detail: str, limit: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.limit = limit


def refuse(detail: str, limit: str = "") -> NoReturn:
    raise Refused(detail, limit)


ATOMS = frozenset({int, float, bool, complex, type(None)})
"""The types whose values cost 1 to read and to compare."""
_TEXTS = frozenset({str, bytes})


def size(value: Any, cap: int) -> int:
    """The items and characters in ``value``: a text's characters; a collection's items, and what they hold in
    turn, a value that is shared counted each time it is reached (as ``str()`` or ``==`` would reach it); a number
    is 1. Counting stops once it passes ``cap`` (it then returns more than ``cap``), so it costs at most that.

    A shared value is counted once with how often it is reached (``[[0] * 1000] * 1000`` is one list reached a
    thousand times), and items that are all numbers or all text are counted at C speed, so the count costs little
    more than the distinct containers it reaches."""
    kind = type(value)
    if kind is str or kind is bytes:
        return len(value)
    if kind in ATOMS:
        return 1
    if (kind is list or kind is tuple) and len(value) <= cap:  # the common case, at C speed: numbers or texts
        kinds = set(map(type, value))
        if kinds <= ATOMS:
            return len(value)
        if kinds <= _TEXTS:
            return len(value) + sum(map(len, value))
    return _walked(value, cap)


def _children(item: Any) -> Any:
    """What ``item`` holds, as a sequence; its length when it holds characters or numbers only; None for an atom."""
    if isinstance(item, (list, tuple, set, frozenset)):
        return item
    if isinstance(item, Mapping):
        return (*item.keys(), *item.values())
    if isinstance(item, str | bytes | range):
        return len(item)
    names = fields_of(item.__class__)
    return tuple(getattr(item, name) for name in names) if names else None


def _walked(value: Any, cap: int) -> int:
    """``size`` of a value that holds containers: walked without recursion, each distinct container once per way
    it is reached."""
    total = 0
    path: set[int] = set()  # the containers being counted, around the one popped: a value that holds itself
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, times = pending.pop()
        if item is _LEFT:
            path.discard(times)
            continue
        if isinstance(item, Mapping) and total + 2 * len(item) * times > cap:
            return cap + 1
        children = _children(item)
        if children is None or isinstance(children, int):
            total += (children or 0) * times
            continue
        total += len(children) * times
        if total > cap:
            return total
        kinds = set(map(type, children))
        if kinds <= ATOMS:
            continue
        if kinds <= _TEXTS:
            total += sum(map(len, children)) * times
        else:
            distinct = dict(zip(map(id, children), children, strict=True))
            reached: Mapping[int, int] | None = None
            if len(distinct) == 1:  # [x] * n
                reached = dict.fromkeys(distinct, len(children))
            elif len(distinct) < len(children):
                reached = Counter(map(id, children))
            path.add(id(item))
            pending.append((_LEFT, id(item)))
            for key, child in distinct.items():
                kind = type(child)
                if kind in ATOMS:
                    continue
                if key in path:
                    return cap + 1  # it holds itself: reached without end
                count = times * (reached[key] if reached is not None else 1)
                if kind is str or kind is bytes:
                    total += len(child) * count
                else:
                    pending.append((child, count))
        if total > cap:
            return total
    return total


_LEFT = object()  # in size()'s pending list: the container of this id is counted


class _Budget:
    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


_BUDGET: ContextVar[_Budget | None] = ContextVar("batonflow_expression_budget", default=None)


class budget:
    """``with budget():``: one evaluation, whose operations share ``MAX_WORK``."""

    __slots__ = ("_token",)

    def __enter__(self) -> None:
        self._token = _BUDGET.set(_Budget(MAX_WORK))

    def __exit__(self, *exc: object) -> None:
        _BUDGET.reset(self._token)


def _current() -> _Budget:
    # An operation outside an evaluation (a filter called on its own) has a budget of its own.
    return _BUDGET.get() or _Budget(MAX_WORK)


def _over_budget(what: str) -> NoReturn:
    refuse(
        f"expected at most {MAX_WORK} items and characters walked in one evaluation (MAX_WORK), found {what} that"
        " would walk more",
        "MAX_WORK",
    )


def spend(units: int, what: str) -> None:
    """Take ``units`` from the evaluation's budget, or refuse ``what`` if they are more than it has left."""
    account = _current()
    if units > account.left:
        _over_budget(what)
    account.left -= units


def measure(value: Any, what: str, *, most: int = MAX_WORK) -> int:
    """``size(value)``, paid for from the budget; refused if it is more than the budget has left, or (``most``)
    than an operation may build."""
    account = _current()
    cap = min(account.left, most)
    found = size(value, cap)
    if found > account.left:
        _over_budget(what)
    account.left -= found
    if found > most:
        refuse(
            f"expected {what} of at most {most} items and characters, nested ones included (MAX_ITEMS), found more",
            "MAX_ITEMS",
        )
    return found


def built(value: Any) -> Any:
    """A list, tuple or mapping an expression writes: at most ``MAX_ITEMS``, what it holds included."""
    measure(value, "a literal", most=MAX_ITEMS)
    return value


_COMPARISONS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": operator.eq,
    "ne": operator.ne,
    "gt": operator.gt,
    "gteq": operator.ge,
    "lt": operator.lt,
    "lteq": operator.le,
    "in": lambda item, container: item in container,
    "notin": lambda item, container: item not in container,
}
_CONTAINERS = (list, tuple, set, frozenset, Mapping)


def _price_comparison(op: str, left: Any, right: Any) -> None:
    """Pay for comparing ``left`` with ``right`` (``op`` as Jinja2 names it) before it is done."""
    if op in ("in", "notin"):
        if isinstance(right, (list, tuple)):
            if type(left) in ATOMS:
                spend(len(right), "a search in a list")
            elif type(left) is str and (cost := len(right) * (len(left) + 1)) <= _current().left:
                spend(cost, "a search in a list")  # each comparison reads the text at most
            else:
                measure(right, "a search in a list")
        elif isinstance(right, (str, bytes)):
            spend(len(right), "a search in a text")
        elif isinstance(right, (Mapping, set, frozenset)):
            if type(left) not in ATOMS and type(left) is not str:
                measure(left, "a key to look up")
        elif isinstance(right, range) and type(left) not in (int, bool):
            spend(len(right), "a search in a range")
    elif isinstance(left, str) and isinstance(right, str):
        spend(min(len(left), len(right)), "a comparison of texts")
    elif isinstance(left, _CONTAINERS) and isinstance(right, _CONTAINERS):
        # Comparing stops at the shorter side: count the smaller-looking one first, and the other up to that.
        first, second = (left, right) if len(left) <= len(right) else (right, left)
        account = _current()
        counted = size(first, account.left)
        if counted <= account.left:
            counted += size(second, min(counted, account.left - counted))
        if counted > account.left:
            _over_budget("a comparison")
        account.left -= counted


def compare(op: str, left: Any, right: Any) -> Any:
    """``left <op> right``, paid for first; numbers go straight through."""
    if type(left) not in ATOMS or type(right) not in ATOMS:
        _price_comparison(op, left, right)
    return _COMPARISONS[op](left, right)


def compare_chain(left: Any, *steps: Any) -> Any:
    """``a < b < c``: each comparison paid for, each operand computed once and only if it is reached."""
    result: Any = True
    for op, operand in zip(steps[::2], steps[1::2], strict=True):
        right = operand()
        result = compare(op, left, right)
        if not result:
            return result
        left = right
    return result


@lru_cache(maxsize=256)
def fields_of(kind: type[object]) -> frozenset[str]:
    """The public fields of a dataclass, a pydantic model or a named tuple; nothing for any other type."""
    if dataclasses.is_dataclass(kind):
        names = [field.name for field in dataclasses.fields(kind)]
    elif issubclass(kind, BaseModel):
        names = list(kind.model_fields)
    elif issubclass(kind, tuple) and hasattr(kind, "_fields"):
        names = list(kind._fields)
    else:
        names = []
    return frozenset(name for name in names if not name.startswith("_"))
