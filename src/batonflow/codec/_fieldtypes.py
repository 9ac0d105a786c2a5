"""Field type checks for decoding: each registered dataclass's annotations, compiled once into small checkers.

A payload with a valid checksum can still hold ``tool_calls=7``; built as it is, such an object breaks far from
the codec with a ``TypeError``. So decoding checks each field a payload gives against its annotation, as resolved
by ``typing.get_type_hints`` when the class is registered. A check is a ``Spec``: the exact types accepted at a
glance (``type(value) in exact``, one set lookup) and, for the rest, a ``deep`` function (container elements,
subclasses, literals), or None for a field that takes anything. Containers of exact types are checked with
``set(map(type, items)) <= exact``, at C speed. Pydantic models validate themselves, so only dataclasses get specs.

What is checked: None, bool, int (bool too), float (int too), str and every other class by ``isinstance``;
``Literal``; unions and ``Optional``; ``list``/``set``/``frozenset``/``tuple`` of X, fixed tuples, ``dict`` and
``Mapping`` of K to V, and the ``collections.abc`` containers by ``isinstance``. ``Any``, type variables and
forms the codec cannot build anyway (callables, ``type[X]``) pass unchecked.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Spec", "accepts", "explain", "field_specs", "found_text"]

Check = Callable[[Any], bool]
Spec = tuple[frozenset[type], Check | None] | None  # None: anything goes
Names = Callable[[type], str]  # how a class is named in messages: its wire name when it has one

_NONE = type(None)
_ITEMS = {list: list, set: set, frozenset: frozenset}
_UNCHECKED = {collections.abc.Callable, type}


def field_specs(cls: type, names: Iterable[str]) -> tuple[dict[str, Any], dict[str, Spec]]:
    """The annotation and the spec of each field in ``names`` that has a check; raises what ``get_type_hints``
    raises for annotations that do not resolve (yet)."""
    hints = typing.get_type_hints(cls)
    specs = {name: compile_hint(hints[name]) for name in names if name in hints}
    return hints, {name: spec for name, spec in specs.items() if spec is not None}


def accepts(spec: Spec, value: Any) -> bool:
    if spec is None:
        return True
    exact, deep = spec
    return type(value) in exact or (deep is not None and deep(value))


def _all(items: Iterable[Any], spec: Spec) -> bool:
    if spec is None:
        return True
    exact, deep = spec
    if set(map(type, items)) <= exact:
        return True
    return deep is not None and all(type(x) in exact or deep(x) for x in items)


def compile_hint(hint: Any) -> Spec:
    if hint is Any or hint is object or isinstance(hint, typing.TypeVar):
        return None
    if hint is None or hint is _NONE:
        return frozenset({_NONE}), None
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Annotated:
        return compile_hint(args[0])
    if isinstance(hint, typing.NewType):
        return compile_hint(hint.__supertype__)
    if origin is typing.Literal:
        kinds, values = frozenset(map(type, args)), frozenset(args)
        return frozenset(), lambda v: type(v) in kinds and v in values
    if origin is typing.Union or origin is types.UnionType:
        return _union([compile_hint(a) for a in args])
    if origin is None:
        return _class(hint) if isinstance(hint, type) else None
    if origin in _UNCHECKED:
        return None
    if origin is tuple:
        return _tuple(args)
    if origin is dict or origin is collections.abc.Mapping or origin is collections.abc.MutableMapping:
        return _mapping(origin, args)
    if origin in _ITEMS:
        return _items(origin, compile_hint(args[0]) if args else None)
    if isinstance(origin, type) and issubclass(origin, collections.abc.Iterable) and len(args) == 1:
        item = compile_hint(args[0])
        return frozenset(), lambda v: isinstance(v, origin) and not isinstance(v, str | bytes) and _all(v, item)
    return _class(origin) if isinstance(origin, type) else None


def _class(cls: type) -> Spec:
    if cls is bool:
        return frozenset({bool}), None
    if cls is int:  # bool is a subclass of int, as type checkers see it too
        return frozenset({int, bool}), lambda v: isinstance(v, int)
    if cls is float:  # PEP 484: an int is acceptable where a float is expected
        return frozenset({float, int, bool}), lambda v: isinstance(v, int | float)
    if cls in _ITEMS or cls is dict or cls is tuple:
        return frozenset({cls}), None
    try:
        isinstance(None, cls)
    except TypeError:  # a protocol that is not runtime-checkable: isinstance cannot tell
        return None
    return frozenset({cls}), lambda v: isinstance(v, cls)


def _union(specs: list[Spec]) -> Spec:
    if any(s is None for s in specs):
        return None
    exact = frozenset().union(*(s[0] for s in specs if s is not None))
    deeps = [s[1] for s in specs if s is not None and s[1] is not None]
    if not deeps:
        return exact, None
    if len(deeps) == 1:
        return exact, deeps[0]
    return exact, lambda v: any(d(v) for d in deeps)


def _items(kind: type[Iterable[Any]], item: Spec) -> Spec:
    if item is None:
        return frozenset({kind}), None
    return frozenset(), lambda v: type(v) is kind and _all(v, item)


def _tuple(args: tuple[Any, ...]) -> Spec:
    if not args or (len(args) == 2 and args[1] is Ellipsis):
        return _items(tuple, compile_hint(args[0]) if args else None)
    if args == ((),):  # tuple[()]: the empty tuple
        return frozenset(), lambda v: v == ()
    specs = [compile_hint(a) for a in args]
    return (
        frozenset(),
        lambda v: (
            type(v) is tuple and len(v) == len(specs) and all(accepts(s, x) for s, x in zip(specs, v, strict=True))
        ),
    )


def _mapping(origin: Any, args: tuple[Any, ...]) -> Spec:
    key, value = (compile_hint(args[0]), compile_hint(args[1])) if args else (None, None)
    if key is None and value is None:
        return frozenset({dict}), None if origin is dict else lambda v: isinstance(v, origin)
    return frozenset(), lambda v: isinstance(v, origin) and _all(v.keys(), key) and _all(v.values(), value)


# -- the error of a field that does not fit ------------------------------------------------------------------------


def explain(hint: Any, value: Any, names: Names) -> tuple[list[str], str, Any]:
    """Where inside ``value`` it stops fitting ``hint`` (path segments, outermost first), what was expected
    there, and what was found. Only called once a check has failed."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        fitting = [a for a in args if _container_fits(a, value)]
        if len(fitting) == 1:  # the value is the right container, with a wrong element: point at it
            return explain(fitting[0], value, names)
    elif _container_fits(hint, value) and args:
        if origin is dict or origin is collections.abc.Mapping or origin is collections.abc.MutableMapping:
            return _explain_mapping(hint, value, names)
        fixed = origin is tuple and not (len(args) == 2 and args[1] is Ellipsis)
        for i, item in enumerate(value):
            item_hint = args[i] if fixed else args[0]
            if not accepts(compile_hint(item_hint), item):
                segments, expected, found = explain(item_hint, item, names)
                return [f"[{i}]", *segments], expected, found
    return [], describe(hint, names), value


def _container_fits(hint: Any, value: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin is None or origin is typing.Literal or not isinstance(origin, type):
        return False
    return type(value) is origin or (origin not in _ITEMS and origin not in (dict, tuple) and isinstance(value, origin))


def _explain_mapping(hint: Any, value: Any, names: Names) -> tuple[list[str], str, Any]:
    key_hint, value_hint = typing.get_args(hint)
    key_spec, value_spec = compile_hint(key_hint), compile_hint(value_hint)
    for k, v in value.items():
        if not accepts(key_spec, k):
            return [f"[key {k!r}]"], describe(key_hint, names), k
        if not accepts(value_spec, v):
            segments, expected, found = explain(value_hint, v, names)
            return [f"[{k!r}]", *segments], expected, found
    return [], describe(hint, names), value


def describe(hint: Any, names: Names) -> str:
    """``list[ToolCall]``, ``str | None``, ``Literal['user', 'tool']``: an annotation as a reader writes it."""
    if hint is None or hint is _NONE:
        return "None"
    if hint is Any:
        return "Any"
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(describe(a, names) for a in args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(map(repr, args))}]"
    if origin is typing.Annotated:
        return describe(args[0], names)
    if origin is not None:
        inner = ", ".join("..." if a is Ellipsis else describe(a, names) for a in args)
        return f"{describe(origin, names)}[{inner}]"
    return names(hint) if isinstance(hint, type) else repr(hint)


def found_text(value: Any) -> str:
    """``int 7``, ``str 'x'``, ``list of 3``: what a payload held instead."""
    name = type(value).__qualname__
    if value is None:
        return "None"
    if isinstance(value, bool | int | float):
        return f"{name} {value!r}"
    if isinstance(value, str | bytes):
        text = repr(value)
        return f"{name} {text if len(text) <= 40 else text[:37] + '...'}"
    if isinstance(value, list | tuple | set | frozenset | dict):
        return f"{name} of {len(value)}"
    return name
