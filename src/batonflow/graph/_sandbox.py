"""The sandbox that graph expressions run in: Jinja2's immutable sandbox, narrowed to plain data.

Jinja2's ``ImmutableSandboxedEnvironment`` already keeps templates from Python's internals; a condition needs much
less than a template, so this one allows less: reads of plain data only, the functions of ``FUNCTIONS`` and the
methods of ``METHODS`` (``_calls``), a few filters and tests, and ``**``, ``*``, ``+`` and ``%`` checked before they
compute. Every operation whose work grows with its values is priced before it runs, out of one evaluation's budget
(``_work``): comparisons, and list, tuple and mapping literals, are compiled into calls to ``compare`` and ``built``
for this (``_Compiler``); plain numbers pass through at once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from jinja2.compiler import CodeGenerator, Frame
from jinja2.filters import FILTERS
from jinja2.nodes import Compare, Dict, List, Tuple
from jinja2.runtime import Context, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.tests import TESTS

from ._calls import FUNCTION_IDS, FUNCTIONS, MAX_INT_BITS, Method, Null, a, number, read, text_of
from ._work import (
    ATOMS,
    MAX_ITEMS,
    built,
    compare,
    compare_chain,
    measure,
    refuse,
    size,
    spend,
)

__all__ = ["SANDBOX"]


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
    "int": number(FILTERS["int"], "the filter 'int'"),
    "float": number(FILTERS["float"], "the filter 'float'"),
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
    if type(left) in ATOMS and type(right) in ATOMS and operator not in ("**", "*"):
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
        if isinstance(obj, Method) or id(obj) in FUNCTION_IDS:
            return obj(*args, **kwargs)
        found = "null" if isinstance(obj, Undefined) else f"{a(type(obj))} value"
        refuse(f"expected a call to one of the functions {', '.join(FUNCTIONS)} or a method, found a call to {found}")


SANDBOX = _Sandbox()
