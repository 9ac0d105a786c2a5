"""Graph conditions as sandboxed expressions, written in Jinja2's syntax or in the Java style of Solon's flows.

A condition in a graph file is text that someone other than the application's author may have written (a designer
tool's export, a shared YAML file), evaluated over the flow's variables. It is compiled once by the sandbox of
``_sandbox`` and never becomes Python code of its own. Before Jinja2 sees it, a token-aware rewrite turns the
operators of Solon's conditions (Java's ``&&``, ``||``, ``!``, ``null``; SnEL's ``AND``, ``OR``, ``NOT``, ``IN``,
``LIKE``; ``?.``; ``1L``) into Jinja2's and leaves string literals alone; what cannot be rewritten that way (Java's
ternary, an assignment) is refused with the form to write instead. The parsed expression is then checked, node by
node, against what the sandbox allows, so that a reach outside it is an error at compile time, naming what was
found, rather than a surprise when a branch first takes it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from jinja2 import Template, nodes
from jinja2.exceptions import TemplateSyntaxError, UndefinedError
from jinja2.parser import Parser

from ..errors import UserError
from ._calls import FUNCTIONS, METHODS, Null, plain
from ._sandbox import SANDBOX
from ._work import Refused, budget, refuse

__all__ = ["Expression", "ExpressionError", "ExpressionLimitError", "compile_expression"]

MAX_SOURCE = 4096  # characters in one expression
MAX_NESTING = 32  # brackets, and Java "!"s, inside one another
MAX_DEPTH = 64  # levels of the parsed expression


class ExpressionError(UserError):
    """An expression that cannot be compiled or evaluated: bad syntax, a reach outside the sandbox, a limit passed,
    or an operation its values do not support. ``graph_id`` and ``node_id`` say where it was written (empty when it
    was compiled on its own), ``file`` the graph file it was read from (set by ``Graph.load``) and ``source`` is its
    text; the message says what was expected and what was found."""

    def __init__(self, message: str, *, source: str, graph_id: str = "", node_id: str = "") -> None:
        place = ", ".join(
            part for part in (f"graph {graph_id!r}" if graph_id else "", f"node {node_id!r}" if node_id else "") if part
        )
        super().__init__(f"{place}: {message}" if place else message)
        self.graph_id = graph_id
        self.node_id = node_id
        self.source = source
        self.file = ""


class ExpressionLimitError(ExpressionError):
    """An expression that passed one of the sandbox's limits: on its text (``MAX_SOURCE``, ``MAX_NESTING``,
    ``MAX_DEPTH``), on what one operation may build (``MAX_ITEMS``, ``MAX_INT_BITS``, ``MAX_RANGE``,
    ``MAX_ROUND_DIGITS``) or on the work of one evaluation (``MAX_WORK``); ``limit`` is the limit's name."""

    def __init__(self, message: str, *, source: str, graph_id: str = "", node_id: str = "", limit: str) -> None:
        super().__init__(message, source=source, graph_id=graph_id, node_id=node_id)
        self.limit = limit


# --- Java and SnEL operators -> Jinja2 ------------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<text>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
    |(?P<number>\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)(?:[lLfFdD](?!\w))?
    |(?P<name>[^\W\d]\w*)
    |(?P<op>&&|\|\||!=|==|<=|>=|\?\.|\?:|\*\*|//|.)""",
    re.VERBOSE | re.DOTALL,
)
_WORDS = {"null": "none", "AND": "and", "OR": "or", "IN": "in", "LIKE": " is like "}
_OPERATORS = {"&&": " and ", "||": " or ", "?.": "."}
_HINTS = {
    "?": "Java's ternary 'c ? a : b' is written 'a if c else b'",
    "?:": "SnEL's 'a ?: b' is written 'a if a != null else b'",
    "=": "a comparison is written '==' (and keyword arguments are not supported)",
    "~": "text is joined with '+'",
}
_OPEN, _CLOSE = "([{", ")]}"

Token = tuple[str, str]


def _tokens(source: str) -> list[Token]:
    """(kind, text) for each token; a Java number suffix (``1L``, ``2.5D``) is dropped."""
    return [
        ("number", match.group("number")) if match.group("number") else (match.lastgroup or "op", match.group())
        for match in _TOKEN.finditer(source)
    ]


def _significant(tokens: list[Token], i: int, end: int) -> int:
    while i < end and tokens[i][0] == "space":
        i += 1
    return i


def _after_group(tokens: list[Token], i: int, end: int) -> int:
    """The index after the bracket group that opens at ``i`` (``end`` if it never closes)."""
    depth = 0
    for j in range(i, end):
        kind, text = tokens[j]
        if kind == "op" and text in _OPEN:
            depth += 1
        elif kind == "op" and text in _CLOSE:
            depth -= 1
            if depth == 0:
                return j + 1
    return end


def _operand_end(tokens: list[Token], i: int, end: int) -> int:
    """Where the operand of a Java ``!`` that ends at ``i`` stops: a unary chain, a primary and its postfixes."""
    i = _significant(tokens, i, end)
    while i < end and (tokens[i] in (("op", "!"), ("op", "-"), ("op", "+"), ("name", "NOT"))):
        i = _significant(tokens, i + 1, end)
    if i < end and tokens[i][0] == "op" and tokens[i][1] in _OPEN:
        i = _after_group(tokens, i, end)
    elif i < end and tokens[i][0] in ("name", "number", "text"):
        i += 1
    else:
        return i
    while (j := _significant(tokens, i, end)) < end:
        kind, text = tokens[j]
        if kind == "op" and text in (".", "?.", "|"):
            k = _significant(tokens, j + 1, end)
            if k >= end or tokens[k][0] not in ("name", "number"):
                return i
            i = k + 1
        elif kind == "op" and text in ("(", "["):
            i = _after_group(tokens, j, end)
        else:
            return i
    return i


def _java_to_jinja(tokens: list[Token], start: int, end: int, nesting: int = 0) -> str:
    """The Jinja2 text of ``tokens[start:end]``, Java's and SnEL's operators rewritten, literals left alone."""
    if nesting > MAX_NESTING:
        refuse(f"expected at most {MAX_NESTING} levels of brackets and '!' (MAX_NESTING), found more", "MAX_NESTING")
    out: list[str] = []
    previous = ""
    i = start
    while i < end:
        kind, text = tokens[i]
        j = _significant(tokens, i + 1, end)
        following = tokens[j] if j < end else ("", "")
        attribute = previous in (".", "?.", "|")
        if kind == "op" and text in _HINTS:
            refuse(f"expected an expression, found {text!r}: {_HINTS[text]}")
        if (kind, text) == ("op", "!") or ((kind, text) == ("name", "NOT") and not attribute):
            if text == "NOT" and following == ("name", "IN"):
                out.append("not")
            elif text == "NOT" and following == ("name", "LIKE"):
                out.append(" is not like ")
                i = _significant(tokens, i + 1, end)
            else:
                stop = _operand_end(tokens, i + 1, end)
                out.append(f"(not {_java_to_jinja(tokens, i + 1, stop, nesting + 1)})")
                i, previous = stop, ")"
                continue
        elif kind == "name" and not attribute:
            out.append(_WORDS.get(text, text))
        elif kind == "op":
            out.append(_OPERATORS.get(text, text))
        else:
            out.append(text)
        if kind != "space":
            previous = text
        i += 1
    return "".join(out)


def _nesting(tokens: list[Token]) -> int:
    depth = deepest = 0
    for kind, text in tokens:
        if kind == "op" and text in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        elif kind == "op" and text in _CLOSE:
            depth -= 1
    return deepest


# --- What the parsed expression may contain -------------------------------------------------------------------

_NODES: tuple[type[nodes.Node], ...] = (
    nodes.Const,
    nodes.Name,
    nodes.Tuple,
    nodes.List,
    nodes.Dict,
    nodes.Pair,
    nodes.Getattr,
    nodes.Getitem,
    nodes.Call,
    nodes.Filter,
    nodes.Test,
    nodes.CondExpr,
    nodes.And,
    nodes.Or,
    nodes.Not,
    nodes.Neg,
    nodes.Pos,
    nodes.Compare,
    nodes.Operand,
    nodes.Add,
    nodes.Sub,
    nodes.Mul,
    nodes.Div,
    nodes.FloorDiv,
    nodes.Mod,
    nodes.Pow,
)
_NODE_WORDS: dict[type[nodes.Node], str] = {
    nodes.Slice: "a slice (use get() or an index)",
    nodes.Concat: "'~' (text is joined with '+')",
}


def _private(name: object) -> bool:
    return isinstance(name, str) and name.startswith("__")


def _name_of(node: nodes.Node) -> object:
    """The name a node reads: a variable's, an attribute's, or a constant item's."""
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        return node.attr
    if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
        return node.arg.value
    return None


def _walk(node: nodes.Node, depth: int = 0) -> Iterator[tuple[nodes.Node, int]]:
    yield node, depth
    if depth < MAX_DEPTH:
        for child in node.iter_child_nodes():
            yield from _walk(child, depth + 1)


def _check_call(node: nodes.Call) -> None:
    if node.kwargs or node.dyn_args is not None or node.dyn_kwargs is not None:
        refuse("expected positional arguments, found '*' or '**' arguments")
    target = node.node
    if isinstance(target, nodes.Name) and target.name not in FUNCTIONS:
        refuse(f"expected a call to one of the functions {', '.join(FUNCTIONS)}, found {target.name}()")
    if isinstance(target, nodes.Getattr) and target.attr not in METHODS:
        getter = re.fullmatch(r"(?:get|is)([A-Z]\w*)", target.attr)
        hint = (
            f" (a Java getter is read as a field: .{getter.group(1)[0].lower()}{getter.group(1)[1:]})" if getter else ""
        )
        refuse(f"expected one of the methods {', '.join(METHODS)}, found .{target.attr}(){hint}")
    if not isinstance(target, nodes.Name | nodes.Getattr):
        refuse("expected a call to a function by its name or to a method, found a call to another value")


def _check(tree: nodes.Node) -> None:
    """Refuse what the sandbox does not allow, naming it, before anything is compiled."""
    for node, depth in _walk(tree):
        if depth >= MAX_DEPTH:
            refuse(f"expected at most {MAX_DEPTH} levels of operations (MAX_DEPTH), found more", "MAX_DEPTH")
        if not isinstance(node, _NODES):
            refuse(
                f"expected an expression the sandbox allows, found {_NODE_WORDS.get(type(node), type(node).__name__)}"
            )
        if _private(_name_of(node)):
            name = _name_of(node)
            refuse(f"expected plain data, found the name {name!r} (names that start with '__' are not allowed)")
        if isinstance(node, nodes.Call):
            _check_call(node)
        if isinstance(node, nodes.Filter | nodes.Test):
            table = SANDBOX.filters if isinstance(node, nodes.Filter) else SANDBOX.tests
            what = "filter" if isinstance(node, nodes.Filter) else "test"
            if node.name not in table:
                refuse(f"expected one of the {what}s {', '.join(sorted(table))}, found the {what} {node.name!r}")
            if node.kwargs or node.dyn_args is not None or node.dyn_kwargs is not None:
                refuse(f"expected positional arguments to the {what} {node.name!r}, found others")


# --- Compiling and evaluating ---------------------------------------------------------------------------------


@lru_cache(maxsize=1024)
def _compile(source: str) -> Template | Refused:
    """The compiled program for ``source``, or why it was refused; failures are cached as well as programs."""
    try:
        if not source.strip():
            refuse("expected an expression, found an empty text")
        tokens = _tokens(source)
        if _nesting(tokens) > MAX_NESTING:
            refuse(
                f"expected at most {MAX_NESTING} levels of brackets (MAX_NESTING), found {_nesting(tokens)}",
                "MAX_NESTING",
            )
        text = _java_to_jinja(tokens, 0, len(tokens))
        parser = Parser(SANDBOX, text, state="variable")
        tree = parser.parse_expression()
        if not parser.stream.eos:
            refuse(f"expected the end of the expression, found {parser.stream.current.value!r}")
        _check(tree)
        tree.set_environment(SANDBOX)
        return SANDBOX.from_string(nodes.Template([nodes.Assign(nodes.Name("result", "store"), tree)]))
    except Refused as refused:
        return refused
    except TemplateSyntaxError as error:
        found = re.sub(r"unexpected '?end of (?:template|print statement)'?", "it ends too early", error.message or "")
        return Refused(f"expected an expression, found a syntax error: {found.rstrip('.')}")
    except RecursionError:
        return Refused(f"expected at most {MAX_DEPTH} levels of operations (MAX_DEPTH), found more", "MAX_DEPTH")


def _shown(source: str) -> str:
    """``source`` quoted for a message, cut short if long."""
    return repr(source if len(source) <= 80 else source[:79] + "…")


@dataclasses.dataclass(frozen=True, slots=True)
class Expression:
    """A compiled expression: evaluate it over a flow's variables as often as needed, from any number of tasks (it
    holds no state of its own). ``test`` is its truthiness, for a condition."""

    source: str
    graph_id: str = ""
    node_id: str = ""
    _program: Template = dataclasses.field(kw_only=True, repr=False, compare=False)

    def evaluate(self, variables: Mapping[str, Any]) -> Any:
        """The expression's value over ``variables``; null is None."""
        try:
            # A scope of our own, so the context is read and never written; the functions under the variables.
            scope = FUNCTIONS | {name: Null(name=name) if value is None else value for name, value in variables.items()}
            context = self._program.new_context(scope, shared=True)
            with budget():
                for _ in self._program.root_render_func(context):
                    pass
            return plain(context.vars["result"])
        except Refused as refused:
            raise self._error(refused.detail, refused.limit) from None
        except UndefinedError as error:
            raise self._error(f"expected a value, found null ({error.message})") from None
        except RecursionError:
            raise self._error("expected values nested less deeply, found a recursion too deep to follow") from None
        except Exception as error:
            raise self._error(f"could not evaluate it: {type(error).__name__}: {error}") from error

    def test(self, variables: Mapping[str, Any]) -> bool:
        """Whether the expression holds over ``variables``: its value's truthiness (null is false)."""
        value = self.evaluate(variables)
        try:
            return bool(value)
        except Exception as error:
            raise self._error(f"expected a value that is true or false, found {type(value).__name__!r}") from error

    def _error(self, detail: str, limit: str = "") -> ExpressionError:
        return _failure(detail, limit, source=self.source, graph_id=self.graph_id, node_id=self.node_id)


def _failure(detail: str, limit: str, *, source: str, graph_id: str, node_id: str) -> ExpressionError:
    message = f"expression {_shown(source)}: {detail}"
    if limit:
        return ExpressionLimitError(message, source=source, graph_id=graph_id, node_id=node_id, limit=limit)
    return ExpressionError(message, source=source, graph_id=graph_id, node_id=node_id)


def compile_expression(source: str, *, graph_id: str = "", node_id: str = "") -> Expression:
    """Compile ``source`` (compiled once per text, however many nodes use it) into an ``Expression``; an
    ``ExpressionError`` naming ``graph_id`` and ``node_id`` if it is not an expression the sandbox allows."""
    if not isinstance(source, str):
        raise ExpressionError(
            f"expected an expression as text, found a {type(source).__name__} ({source!r}); quote it in YAML",
            source=repr(source),
            graph_id=graph_id,
            node_id=node_id,
        )
    compiled = (
        _compile(source)
        if len(source) <= MAX_SOURCE
        else Refused(f"expected at most {MAX_SOURCE} characters (MAX_SOURCE), found {len(source)}", "MAX_SOURCE")
    )
    if isinstance(compiled, Refused):
        raise _failure(compiled.detail, compiled.limit, source=source, graph_id=graph_id, node_id=node_id)
    return Expression(source, graph_id, node_id, _program=compiled)
