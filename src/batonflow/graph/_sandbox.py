"""The sandbox that graph expressions run in: Jinja2's immutable sandbox, narrowed to plain data.

Jinja2's ``ImmutableSandboxedEnvironment`` already keeps templates from Python's internals; a condition needs much
less than a template, so this one allows less: reads of plain data only (mappings, sequences, the fields of
dataclasses, pydantic models and named tuples, never any other attribute), the functions of ``FUNCTIONS`` and the
methods of ``METHODS`` (Java's ``contains``/``equals`` among them, ours, not the values' own), a few filters and
tests, and ``**``, ``*``, ``+`` and ``%`` checked before they compute.

Expressions hold no loops, but one operation may still do much work: ``[[0] * 1000] * 1000`` is a million items
that share one list, and comparing, converting or taking the ``max`` of such a value walks all of them. So every
operation whose work grows with its values is priced before it runs, by the values' size: their items and
characters, nested ones included and a shared one counted each time it is reached (``size``, which stops counting
past what it may spend). The price comes out of a budget of ``MAX_WORK`` per evaluation, and what an operation
builds (a text, a list, a literal) may hold at most ``MAX_ITEMS``. Comparisons, and list, tuple and mapping literals,
are compiled into calls to ``compare`` and ``built`` for this (``_Compiler``); plain numbers pass through at once.

Solon's null is ``Null``: a missing variable, or one that is ``None``, is equal to null only, neither greater nor
smaller than anything, false as a condition, and null again when read through.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections import Counter
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, NoReturn

from jinja2.compiler import CodeGenerator, Frame
from jinja2.filters import FILTERS
from jinja2.nodes import Compare, Dict, List, Tuple
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.tests import TESTS
from pydantic import BaseModel

__all__ = [
    "FUNCTIONS",
    "MAX_WORK",
    "METHODS",
    "SANDBOX",
    "Null",
    "Refused",
    "a",
    "budget",
    "plain",
    "read",
    "refuse",
    "size",
]

MAX_ITEMS = 1_000_000  # items and characters, nested ones included, in a value an operation builds
MAX_INT_BITS = 4096  # size of an integer "**" or "*" may build
MAX_RANGE = 10_000  # numbers in a range()
MAX_ROUND_DIGITS = 100  # round(x, n): |n|
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


class Null(Undefined):
    """Solon's null, for a missing variable or a ``None`` value: equal to null only, neither greater nor smaller
    than anything (Solon's comparisons with null are false), false as a condition."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return other is None or isinstance(other, Undefined)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(None)

    # Solon's ordered comparisons with null are false, whichever side it is on.
    def __lt__(self, other: object) -> bool:  # type: ignore[override]
        return False

    def __le__(self, other: object) -> bool:  # type: ignore[override]
        return False

    def __gt__(self, other: object) -> bool:  # type: ignore[override]
        return False

    def __ge__(self, other: object) -> bool:  # type: ignore[override]
        return False


def a(kind: type) -> str:
    """``a 'list'``, ``an 'int'``: a type named in a message."""
    return f"{'an' if kind.__name__[:1].lower() in 'aeiou' else 'a'} {kind.__name__!r}"


def plain(value: Any) -> Any:
    """``value`` as Python sees it: None for null."""
    return None if isinstance(value, Undefined) else value


# --- What operations cost -------------------------------------------------------------------------------------

_ATOMS = frozenset({int, float, bool, complex, type(None)})
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
    if kind in _ATOMS:
        return 1
    if (kind is list or kind is tuple) and len(value) <= cap:  # the common case, at C speed: numbers or texts
        kinds = set(map(type, value))
        if kinds <= _ATOMS:
            return len(value)
        if kinds <= _TEXTS:
            return len(value) + sum(map(len, value))
    total = 0
    path: set[int] = set()  # the containers being counted, around the one popped: a value that holds itself
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, times = pending.pop()
        if item is _LEFT:
            path.discard(times)
            continue
        children: Any
        if isinstance(item, (list, tuple, set, frozenset)):
            children = item
        elif isinstance(item, Mapping):
            if total + 2 * len(item) * times > cap:
                return cap + 1
            children = (*item.keys(), *item.values())
        elif isinstance(item, str | bytes | range):
            total += len(item) * times
            continue
        elif names := fields_of(item.__class__):
            children = tuple(getattr(item, name) for name in names)
        else:
            continue
        total += len(children) * times
        if total > cap:
            return total
        kinds = set(map(type, children))
        if kinds <= _ATOMS:
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
                if kind in _ATOMS:
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
            if type(left) in _ATOMS:
                spend(len(right), "a search in a list")
            elif type(left) is str and (cost := len(right) * (len(left) + 1)) <= _current().left:
                spend(cost, "a search in a list")  # each comparison reads the text at most
            else:
                measure(right, "a search in a list")
        elif isinstance(right, (str, bytes)):
            spend(len(right), "a search in a text")
        elif isinstance(right, (Mapping, set, frozenset)):
            if type(left) not in _ATOMS and type(left) is not str:
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
    if type(left) not in _ATOMS or type(right) not in _ATOMS:
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


# --- Reading plain data ---------------------------------------------------------------------------------------


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


_ABSENT = object()


def read(obj: Any, key: Any, *, attribute: bool, methods: bool = True) -> Any:
    """``obj.key`` (``attribute``) or ``obj[key]`` over plain data, as Solon reads it: a mapping's missing key, an
    index out of range and anything read through null are null. With ``methods``, an attribute that is none of
    these but names one of ``METHODS`` is that method of ``obj``."""
    methods = methods and attribute
    if obj is None or isinstance(obj, Undefined):
        return Null(name=str(key)) if obj is None else obj
    value: Any
    if isinstance(obj, Mapping):
        if type(key) is not str and type(key) not in _ATOMS:
            measure(key, "a key to look up")  # a tuple is hashed item by item, at every read
        # get(), never [key]: a defaultdict would add the key it is asked for, and reading must write nothing.
        value = obj.get(key, _ABSENT)
        if value is _ABSENT:
            return Method(key, obj) if methods and key in METHODS else Null(name=str(key))
    elif isinstance(obj, str | list | tuple | range) and isinstance(key, int):
        try:
            value = obj[key]
        except IndexError:
            return Null(name=str(key))
    elif isinstance(key, str) and key in fields_of(obj.__class__):
        value = getattr(obj, key)
    elif isinstance(key, str) and methods and key in METHODS:
        return Method(key, obj)
    else:
        what = f"attribute {key!r}" if attribute else f"item {key!r}"
        refuse(
            "expected plain data (a mapping, a list or tuple, the fields of a dataclass, a pydantic model or a named"
            f" tuple), found {what} of {a(type(obj))} value"
        )
    return Null(name=str(key)) if value is None else value


# --- Functions and methods ------------------------------------------------------------------------------------


def _range(*bounds: int) -> range:
    numbers = range(*bounds)
    try:
        found = f"{len(numbers)} numbers" if len(numbers) > MAX_RANGE else ""
    except OverflowError:
        found = "more numbers than a machine word counts"
    if found:
        refuse(
            f"expected a range of at most {MAX_RANGE} numbers (MAX_RANGE), found range({', '.join(map(str, bounds))})"
            f" of {found}",
            "MAX_RANGE",
        )
    return numbers


def _round(number: Any, digits: int | None = None) -> Any:
    if isinstance(digits, int) and abs(digits) > MAX_ROUND_DIGITS:
        refuse(
            f"expected round() to at most {MAX_ROUND_DIGITS} digits (MAX_ROUND_DIGITS), found {digits}",
            "MAX_ROUND_DIGITS",
        )
    return round(number, digits)


def _sum(values: Any) -> Any:
    measure(values, "sum() of a value")
    return sum(values)


def _extreme(function: Callable[..., Any]) -> Callable[..., Any]:
    """``min`` or ``max``, paid for by the size of what it compares."""

    def extreme(*values: Any) -> Any:
        measure(values[0] if len(values) == 1 else values, f"{function.__name__}() of a value")
        return function(*values)

    extreme.__name__ = function.__name__
    return extreme


def _each(function: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``any`` or ``all``: one truth test an item."""

    def each(values: Any) -> Any:
        spend(len(values) if hasattr(values, "__len__") else 1, f"{function.__name__}() of a value")
        return function(values)

    each.__name__ = function.__name__
    return each


def text_of(value: Any, what: str = "str() of a value") -> str:
    """``str(value)``, paid for, and at most ``MAX_ITEMS`` characters: every item it holds is written."""
    if type(value) is str:
        return value
    measure(value, what, most=MAX_ITEMS)
    text = str(value)
    if len(text) > MAX_ITEMS:
        refuse(f"expected {what} of at most {MAX_ITEMS} characters (MAX_ITEMS), found one of {len(text)}", "MAX_ITEMS")
    return text


def _number(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``int`` or ``float`` (a function or a filter): reading a number from text costs its length."""

    def number(value: Any, *rest: Any) -> Any:
        if isinstance(value, str | bytes):
            spend(len(value), f"{name} of a text")
        return function(value, *rest)

    number.__name__ = function.__name__
    return number


def _str(*args: Any) -> str:
    return text_of(args[0]) if len(args) == 1 else str(*args)  # str()'s own error for the others


def _with_plain_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return function(*(plain(arg) for arg in args))

    call.__name__ = function.__name__
    return call


_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len,
    "min": _extreme(min),
    "max": _extreme(max),
    "abs": abs,
    "int": _number(int, "int()"),
    "float": _number(float, "float()"),
    "str": _str,
    "bool": bool,
    "round": _round,
    "range": _range,
    "sum": _sum,
    "any": _each(any),
    "all": _each(all),
}
FUNCTIONS = {name: _with_plain_arguments(function) for name, function in _BUILTINS.items()}
_FUNCTION_IDS = frozenset(id(function) for function in FUNCTIONS.values())

_TEXT = (str,)
_SIZED = (str, list, tuple, range, set, frozenset, Mapping)


def _get(target: Any, key: Any, default: Any = None) -> Any:
    if isinstance(target, Mapping):
        if type(key) is not str and type(key) not in _ATOMS:
            measure(key, "a key to look up")
        return target.get(key, default)
    try:
        return target[key]
    except IndexError:
        return default


def _contains(target: Any, item: Any) -> bool:
    return bool(compare("in", item, target))


def _contains_key(target: Any, key: Any) -> bool:
    if type(key) is not str and type(key) not in _ATOMS:
        measure(key, "a key to look up")
    return key in target


def _text_method(function: Callable[..., Any]) -> Callable[..., Any]:
    """A method of text: it reads the text and its arguments (prefixes), and what it builds is at most
    ``MAX_ITEMS``."""

    def method(target: str, *args: Any) -> Any:
        spend(len(target) + sum(size(arg, MAX_ITEMS) for arg in args), f"{function.__name__}() of a text")
        if len(target) > MAX_ITEMS and function in (str.lower, str.upper, str.strip):
            refuse(
                f"expected {function.__name__}() of a text of at most {MAX_ITEMS} characters (MAX_ITEMS), found one"
                f" of {len(target)}",
                "MAX_ITEMS",
            )
        return function(target, *args)

    return method


def _listed(function: Callable[[Any], list[Any]]) -> Callable[[Any], list[Any]]:
    """``keys()``, ``values()``, ``items()``: a new list of one entry an item of the mapping."""

    def listing(target: Any) -> list[Any]:
        if len(target) > MAX_ITEMS:
            refuse(f"expected a mapping of at most {MAX_ITEMS} keys (MAX_ITEMS), found {len(target)}", "MAX_ITEMS")
        spend(len(target), "a list of a mapping's entries")
        return function(target)

    return listing


# name -> (the kinds of value it is a method of, in words, and what it does)
METHODS: dict[str, tuple[tuple[type, ...], str, Callable[..., Any]]] = {
    "contains": (_SIZED, "text, lists, sets and mappings", _contains),
    "containsKey": ((Mapping,), "mappings", _contains_key),
    "equals": ((object,), "any value", lambda target, other: compare("eq", target, other)),
    "length": (_SIZED, "text, lists, sets and mappings", len),
    "size": (_SIZED, "text, lists, sets and mappings", len),
    "isEmpty": (_SIZED, "text, lists, sets and mappings", lambda target: len(target) == 0),
    "startsWith": (_TEXT, "text", _text_method(str.startswith)),
    "startswith": (_TEXT, "text", _text_method(str.startswith)),
    "endsWith": (_TEXT, "text", _text_method(str.endswith)),
    "endswith": (_TEXT, "text", _text_method(str.endswith)),
    "lower": (_TEXT, "text", _text_method(str.lower)),
    "toLowerCase": (_TEXT, "text", _text_method(str.lower)),
    "upper": (_TEXT, "text", _text_method(str.upper)),
    "toUpperCase": (_TEXT, "text", _text_method(str.upper)),
    "trim": (_TEXT, "text", _text_method(str.strip)),
    "strip": (_TEXT, "text", _text_method(str.strip)),
    "get": ((Mapping, list, tuple, range), "mappings, lists and tuples", _get),
    "keys": ((Mapping,), "mappings", _listed(lambda target: list(target.keys()))),
    "values": ((Mapping,), "mappings", _listed(lambda target: list(target.values()))),
    "items": ((Mapping,), "mappings", _listed(lambda target: [list(pair) for pair in target.items()])),
}


class Method:
    """One of ``METHODS`` taken from a value (``tags.contains``), ready to be called."""

    __slots__ = ("name", "target")

    def __init__(self, name: str, target: Any) -> None:
        self.name = name
        self.target = target

    def __call__(self, *args: Any) -> Any:
        kinds, words, function = METHODS[self.name]
        if not isinstance(self.target, kinds):
            refuse(f"expected {self.name}() on {words}, found it on {a(type(self.target))} value")
        return function(self.target, *(plain(arg) for arg in args))


def _is_none(value: Any) -> bool:
    return value is None or isinstance(value, Undefined)


def _is_like(value: Any, part: Any) -> bool:
    """SnEL's ``LIKE``: the text contains the other; false when either is null."""
    if _is_none(value) or _is_none(part):
        return False
    return bool(compare("in", text_of(part, "LIKE of a value"), text_of(value, "LIKE of a value")))


def _text_filter(name: str) -> Callable[..., str]:
    """``string``, ``lower``, ``upper``, ``trim``: the value as text (paid for, bounded), then the filter."""
    function = FILTERS[name]

    def text_filter(value: Any, *args: Any) -> str:
        text = text_of(value, f"the filter {name!r} of a value")
        spend(len(text), f"the filter {name!r} of a text")
        return str(function(text, *args))

    return text_filter


def _comparing(op: str) -> Callable[[Any, Any], Any]:
    def test(value: Any, other: Any) -> Any:
        return compare(op, value, other)

    return test


_PRICED_FILTERS: dict[str, Callable[..., Any]] = {
    "string": _text_filter("string"),
    "lower": _text_filter("lower"),
    "upper": _text_filter("upper"),
    "trim": _text_filter("trim"),
    "int": _number(FILTERS["int"], "the filter 'int'"),
    "float": _number(FILTERS["float"], "the filter 'float'"),
}
_PRICED_TESTS: dict[str, Callable[..., Any]] = {
    "eq": _comparing("eq"),
    "ne": _comparing("ne"),
    "lt": _comparing("lt"),
    "le": _comparing("lteq"),
    "gt": _comparing("gt"),
    "ge": _comparing("gteq"),
    "in": lambda value, container: compare("in", value, container),
    "like": _is_like,
}


_FILTER_NAMES = "abs count d default first float int last length lower string trim upper"
_TEST_NAMES = "boolean defined eq false float ge gt in integer le lt mapping ne number sequence string true undefined"


# --- The sandbox ----------------------------------------------------------------------------------------------


def _sequence(value: Any) -> bool:
    return isinstance(value, str | bytes | list | tuple)


def _check_operation(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would pass a limit, before it is computed."""
    if operator == "-":
        if isinstance(left, set | frozenset) and isinstance(right, set | frozenset):
            spend(len(left) + len(right), "a difference of sets")
        return  # numbers, or Jinja2's own error for null
    if isinstance(left, Undefined) or isinstance(right, Undefined):
        refuse(f"expected a value on both sides of {operator!r}, found null")
    if type(left) in _ATOMS and type(right) in _ATOMS and operator not in ("**", "*"):
        return
    both_ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and both_ints and right > 0 and abs(left) > 1:
        bits = right * math.log2(abs(left))
        if bits > MAX_INT_BITS:
            refuse(
                f"expected a power of at most {MAX_INT_BITS} bits (MAX_INT_BITS), found {left} ** {right} (about"
                f" {bits:.0f} bits)",
                "MAX_INT_BITS",
            )
    elif operator == "*" and both_ints and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
        refuse(f"expected a product of at most {MAX_INT_BITS} bits (MAX_INT_BITS), found a larger one", "MAX_INT_BITS")
    elif operator == "*" and (
        (_sequence(left) and isinstance(right, int)) or (_sequence(right) and isinstance(left, int))
    ):
        sequence, times = (left, right) if _sequence(left) else (right, left)
        items = len(sequence) * times
        if items > MAX_ITEMS:
            refuse(
                f"expected a repetition of at most {MAX_ITEMS} characters or items (MAX_ITEMS), found one of {items}",
                "MAX_ITEMS",
            )
        if times > 0 and not isinstance(sequence, str | bytes):
            # What the items hold is repeated too: [[0] * 1000] * 1000 is a million items.
            each = size(sequence, MAX_ITEMS // times + 1)
            spend(min(each, MAX_ITEMS), "a repetition")
            if each * times > MAX_ITEMS:
                refuse(
                    f"expected a repetition of at most {MAX_ITEMS} items and characters, nested ones included"
                    f" (MAX_ITEMS), found one of at least {each * times}",
                    "MAX_ITEMS",
                )
        spend(max(items, 0), "a repetition")
    elif operator == "+" and _sequence(left) and _sequence(right):
        items = len(left) + len(right)
        if items > MAX_ITEMS:
            refuse(
                f"expected a sum of at most {MAX_ITEMS} characters or items (MAX_ITEMS), found one of {items}",
                "MAX_ITEMS",
            )
        if not isinstance(left, str | bytes):
            held = measure(left, "a sum", most=MAX_ITEMS)
            measure(right, "a sum", most=MAX_ITEMS - held)
        else:
            spend(items, "a sum of texts")
    elif operator == "%" and isinstance(left, str | bytes):
        refuse("expected numbers on both sides of '%', found text on the left (formatting text with % is not allowed)")


class _Compiler(CodeGenerator):
    """Jinja2's code generator, with comparisons compiled into ``compare`` (a chain into ``compare_chain``, its
    operands computed lazily, as Python's chain does) and list, tuple and mapping literals into ``built``."""

    def visit_Compare(self, node: Compare, frame: Frame) -> None:
        if len(node.ops) == 1:
            self.write(f"environment.compare({node.ops[0].op!r}, ")
            self.visit(node.expr, frame)
            self.write(", ")
            self.visit(node.ops[0].expr, frame)
            self.write(")")
            return
        self.write("environment.compare_chain(")
        self.visit(node.expr, frame)
        for operand in node.ops:
            self.write(f", {operand.op!r}, lambda: ")
            self.visit(operand.expr, frame)
        self.write(")")

    def visit_List(self, node: List, frame: Frame) -> None:
        self.write("environment.built(")
        super().visit_List(node, frame)
        self.write(")")

    def visit_Tuple(self, node: Tuple, frame: Frame) -> None:
        self.write("environment.built(")
        super().visit_Tuple(node, frame)
        self.write(")")

    def visit_Dict(self, node: Dict, frame: Frame) -> None:
        self.write("environment.built(")
        super().visit_Dict(node, frame)
        self.write(")")


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox, narrowed to plain data, ``FUNCTIONS``, ``METHODS`` and operations paid for."""

    intercepted_binops = frozenset({"+", "-", "*", "**", "%"})
    code_generator_class = _Compiler
    compare = staticmethod(compare)
    compare_chain = staticmethod(compare_chain)
    built = staticmethod(built)

    def __init__(self) -> None:
        # optimized=False: nothing of an expression is computed at compile time, outside the limits.
        super().__init__(undefined=Null, optimized=False, autoescape=False)
        self.globals = dict(FUNCTIONS)
        self.filters = {name: _PRICED_FILTERS.get(name, FILTERS[name]) for name in _FILTER_NAMES.split()}
        self.tests = {name: _PRICED_TESTS.get(name, TESTS[name]) for name in _TEST_NAMES.split()} | {
            "none": _is_none,
            "like": _is_like,
        }

    def getattr(self, obj: Any, attribute: str) -> Any:
        return read(obj, attribute, attribute=True)

    def getitem(self, obj: Any, argument: Any) -> Any:
        return read(obj, argument, attribute=False)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        _check_operation(operator, left, right)
        return self.binop_table[operator](left, right)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, Method) or id(obj) in _FUNCTION_IDS:
            return obj(*args, **kwargs)
        found = "null" if isinstance(obj, Undefined) else f"{a(type(obj))} value"
        refuse(f"expected a call to one of the functions {', '.join(FUNCTIONS)} or a method, found a call to {found}")


SANDBOX = _Sandbox()
