"""The values and calls of graph expressions: Solon's null, reads of plain data, and the functions and methods an
expression may call, each priced (by ``_work``) before it computes.

``read`` reads mappings, sequences and the fields of dataclasses, pydantic models and named tuples, never any other
attribute. ``FUNCTIONS`` are the few builtins an expression may call (``len``, ``min``, ``max``, ``str`` …), with
null given to them as None; ``METHODS`` are the methods an expression may call on a value (Java's ``contains`` and
``equals`` among them): ours, not the values' own.

Solon's null is ``Null``: a missing variable, or one that is ``None``, is equal to null only, neither greater nor
smaller than anything, false as a condition, and null again when read through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from jinja2.runtime import Undefined

from ._work import ATOMS, MAX_ITEMS, compare, fields_of, measure, refuse, size, spend

__all__ = [
    "FUNCTIONS",
    "MAX_INT_BITS",
    "MAX_RANGE",
    "MAX_ROUND_DIGITS",
    "METHODS",
    "Method",
    "Null",
    "a",
    "plain",
    "read",
    "text_of",
]

MAX_INT_BITS = 4096  # size of an integer "**" or "*" may build
MAX_RANGE = 10_000  # numbers in a range()
MAX_ROUND_DIGITS = 100  # round(x, n): |n|


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
        if type(key) is not str and type(key) not in ATOMS:
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


def number(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``int`` or ``float`` (a function or a filter): reading a number from text costs its length."""

    def convert(value: Any, *rest: Any) -> Any:
        if isinstance(value, str | bytes):
            spend(len(value), f"{name} of a text")
        return function(value, *rest)

    convert.__name__ = function.__name__
    return convert


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
    "int": number(int, "int()"),
    "float": number(float, "float()"),
    "str": _str,
    "bool": bool,
    "round": _round,
    "range": _range,
    "sum": _sum,
    "any": _each(any),
    "all": _each(all),
}
FUNCTIONS = {name: _with_plain_arguments(function) for name, function in _BUILTINS.items()}
FUNCTION_IDS = frozenset(id(function) for function in FUNCTIONS.values())

_TEXT = (str,)
_SIZED = (str, list, tuple, range, set, frozenset, Mapping)


def _get(target: Any, key: Any, default: Any = None) -> Any:
    if isinstance(target, Mapping):
        if type(key) is not str and type(key) not in ATOMS:
            measure(key, "a key to look up")
        return target.get(key, default)
    try:
        return target[key]
    except IndexError:
        return default


def _contains(target: Any, item: Any) -> bool:
    return bool(compare("in", item, target))


def _contains_key(target: Any, key: Any) -> bool:
    if type(key) is not str and type(key) not in ATOMS:
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
