"""A stand-in for the sandboxed expression engine, until it lands: comparisons, ``and``/``or``/``not``, names and
literals, read through a whitelist of syntax nodes (nothing is evaluated that is not in it)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from ._errors import GraphError

__all__ = ["Expression", "compile_expression"]

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}


class Expression:
    def __init__(self, source: str, tree: ast.expr) -> None:
        self.source = source
        self._tree = tree

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        return _value(self._tree, variables)

    def test(self, variables: Mapping[str, Any]) -> bool:
        return bool(self.evaluate(variables))


def compile_expression(source: str, *, graph_id: str = "", node_id: str = "") -> Expression:
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError as exc:
        raise GraphError(f"invalid expression {source!r}: {exc.msg}", graph_id=graph_id, node_id=node_id) from None
    for part in ast.walk(tree):
        allowed = (ast.BoolOp, ast.UnaryOp, ast.Compare, ast.Name, ast.Constant, ast.Load, ast.And, ast.Or, ast.Not)
        if not isinstance(part, allowed) and type(part) not in _COMPARE:
            raise GraphError(
                f"expression {source!r} uses {type(part).__name__}, which is not allowed",
                graph_id=graph_id,
                node_id=node_id,
            )
    return Expression(source, tree)


def _value(node: ast.expr, variables: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return variables.get(node.id)
    if isinstance(node, ast.UnaryOp):
        return not _value(node.operand, variables)
    if isinstance(node, ast.BoolOp):
        values = (_value(v, variables) for v in node.values)
        return all(values) if isinstance(node.op, ast.And) else any(values)
    assert isinstance(node, ast.Compare)
    left = _value(node.left, variables)
    for op, comparator in zip(node.ops, node.comparators, strict=True):
        right = _value(comparator, variables)
        if not _COMPARE[type(op)](left, right):
            return False
        left = right
    return True
