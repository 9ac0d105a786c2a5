"""The sandbox that graph expressions run in: Jinja2's immutable sandbox, narrowed to plain data.

Jinja2's ``ImmutableSandboxedEnvironment`` already keeps templates from Python's internals; a condition needs much
less than a template, so this one allows less: reads of plain data only (mappings, sequences, the fields of
dataclasses, pydantic models and named tuples, never any other attribute), the functions of ``FUNCTIONS`` and the
methods of ``METHODS`` (Java's ``contains``/``equals`` among them, ours, not the values' own), a few filters and
tests, and ``**``, ``*``, ``+`` and ``%`` checked before they compute. Expressions hold no loops, so bounding what
one operation may build bounds an evaluation's time and memory too.

Solon's null is ``Null``: a missing variable, or one that is ``None``, is equal to null only, neither greater nor
smaller than anything, false as a condition, and null again when read through.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, NoReturn

from jinja2.filters import FILTERS
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.tests import TESTS
from pydantic import BaseModel

__all__ = ["FUNCTIONS", "METHODS", "SANDBOX", "Null", "Refused", "a", "plain", "read", "refuse"]

MAX_ITEMS = 1_000_000  # characters or items a "*" or "+" may build
MAX_INT_BITS = 4096  # size of an integer "**" or "*" may build
MAX_RANGE = 10_000  # numbers in a range()
MAX_ROUND_DIGITS = 100  # round(x, n): |n|


class Refused(Exception):
    """Raised inside the sandbox when an expression asks for what it may not have; becomes an ``ExpressionError``."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def refuse(detail: str) -> NoReturn:
    raise Refused(detail)


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
        size = f"{len(numbers)} numbers" if len(numbers) > MAX_RANGE else ""
    except OverflowError:
        size = "more numbers than a machine word counts"
    if size:
        refuse(f"expected a range of at most {MAX_RANGE} numbers, found range({', '.join(map(str, bounds))}) of {size}")
    return numbers


def _round(number: Any, digits: int | None = None) -> Any:
    if isinstance(digits, int) and abs(digits) > MAX_ROUND_DIGITS:
        refuse(f"expected round() to at most {MAX_ROUND_DIGITS} digits, found {digits}")
    return round(number, digits)


def _sum(values: Any) -> Any:
    return sum(values)


def _with_plain_arguments(function: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any) -> Any:
        return function(*(plain(arg) for arg in args))

    call.__name__ = function.__name__
    return call


_BUILTINS: dict[str, Callable[..., Any]] = {
    "len": len,
    "min": min,
    "max": max,
    "abs": abs,
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "round": _round,
    "range": _range,
    "sum": _sum,
    "any": any,
    "all": all,
}
FUNCTIONS = {name: _with_plain_arguments(function) for name, function in _BUILTINS.items()}
_FUNCTION_IDS = frozenset(id(function) for function in FUNCTIONS.values())

_TEXT = (str,)
_SIZED = (str, list, tuple, range, set, frozenset, Mapping)


def _get(target: Any, key: Any, default: Any = None) -> Any:
    if isinstance(target, Mapping):
        return target.get(key, default)
    try:
        return target[key]
    except IndexError:
        return default


# name -> (the kinds of value it is a method of, in words, and what it does)
METHODS: dict[str, tuple[tuple[type, ...], str, Callable[..., Any]]] = {
    "contains": (_SIZED, "text, lists, sets and mappings", lambda target, item: item in target),
    "containsKey": ((Mapping,), "mappings", lambda target, key: key in target),
    "equals": ((object,), "any value", lambda target, other: target == other),
    "length": (_SIZED, "text, lists, sets and mappings", len),
    "size": (_SIZED, "text, lists, sets and mappings", len),
    "isEmpty": (_SIZED, "text, lists, sets and mappings", lambda target: len(target) == 0),
    "startsWith": (_TEXT, "text", str.startswith),
    "startswith": (_TEXT, "text", str.startswith),
    "endsWith": (_TEXT, "text", str.endswith),
    "endswith": (_TEXT, "text", str.endswith),
    "lower": (_TEXT, "text", str.lower),
    "toLowerCase": (_TEXT, "text", str.lower),
    "upper": (_TEXT, "text", str.upper),
    "toUpperCase": (_TEXT, "text", str.upper),
    "trim": (_TEXT, "text", str.strip),
    "strip": (_TEXT, "text", str.strip),
    "get": ((Mapping, list, tuple, range), "mappings, lists and tuples", _get),
    "keys": ((Mapping,), "mappings", lambda target: list(target.keys())),
    "values": ((Mapping,), "mappings", lambda target: list(target.values())),
    "items": ((Mapping,), "mappings", lambda target: [list(pair) for pair in target.items()]),
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
    return not (_is_none(value) or _is_none(part)) and str(part) in str(value)


_FILTER_NAMES = "abs count d default first float int last length lower string trim upper"
_TEST_NAMES = "boolean defined eq false float ge gt in integer le lt mapping ne number sequence string true undefined"


# --- The sandbox ----------------------------------------------------------------------------------------------


def _sequence(value: Any) -> bool:
    return isinstance(value, str | bytes | list | tuple)


def _check_operation(operator: str, left: Any, right: Any) -> None:
    """Refuse an operation whose result would pass a limit, before it is computed."""
    if isinstance(left, Undefined) or isinstance(right, Undefined):
        refuse(f"expected a value on both sides of {operator!r}, found null")
    both_ints = isinstance(left, int) and isinstance(right, int)
    if operator == "**" and both_ints and right > 0 and abs(left) > 1:
        bits = right * math.log2(abs(left))
        if bits > MAX_INT_BITS:
            refuse(f"expected a power of at most {MAX_INT_BITS} bits, found {left} ** {right} (about {bits:.0f} bits)")
    elif operator == "*" and both_ints and left.bit_length() + right.bit_length() > MAX_INT_BITS + 1:
        refuse(f"expected a product of at most {MAX_INT_BITS} bits, found a larger one")
    elif operator == "*" and (
        (_sequence(left) and isinstance(right, int)) or (_sequence(right) and isinstance(left, int))
    ):
        size = len(left) * right if _sequence(left) else len(right) * left
        if size > MAX_ITEMS:
            refuse(f"expected a repetition of at most {MAX_ITEMS} characters or items, found one of {size}")
    elif operator == "+" and _sequence(left) and _sequence(right) and len(left) + len(right) > MAX_ITEMS:
        refuse(f"expected a sum of at most {MAX_ITEMS} characters or items, found one of {len(left) + len(right)}")
    elif operator == "%" and isinstance(left, str | bytes):
        refuse("expected numbers on both sides of '%', found text on the left (formatting text with % is not allowed)")


class _Sandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox, narrowed to plain data, ``FUNCTIONS``, ``METHODS`` and bounded operations."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self) -> None:
        # optimized=False: nothing of an expression is computed at compile time, outside the limits.
        super().__init__(undefined=Null, optimized=False, autoescape=False)
        self.globals = dict(FUNCTIONS)
        self.filters = {name: FILTERS[name] for name in _FILTER_NAMES.split()}
        self.tests = {name: TESTS[name] for name in _TEST_NAMES.split()} | {"none": _is_none, "like": _is_like}

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
