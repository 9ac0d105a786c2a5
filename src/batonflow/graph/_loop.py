"""What a loop node iterates: a list, a context variable, or a stepper (``"a...b"``, ``"a:b:step"``, end-exclusive
like ``range``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ._errors import LoopError

__all__ = ["Peekable", "loop_items", "stepper"]


def stepper(text: str, *, graph_id: str, node_id: str) -> range:
    """``"1...9"`` is ``range(1, 9)``; ``"1:10:2"`` is ``range(1, 10, 2)``; the step must be positive."""
    ellipsis = text.find("...")
    try:
        if ellipsis > 0:
            start, end, step = int(text[:ellipsis]), int(text[ellipsis + 3 :]), 1
        else:
            terms = text.split(":", 2)
            if len(terms) != 3:
                raise LoopError(
                    f"the stepper {text!r} must be 'start...end' or 'start:end:step'",
                    graph_id=graph_id,
                    node_id=node_id,
                    field="meta.$in",
                )
            start, end, step = (int(term) for term in terms)
    except ValueError:
        raise LoopError(
            f"the stepper {text!r} needs whole numbers", graph_id=graph_id, node_id=node_id, field="meta.$in"
        ) from None
    if step <= 0:
        raise LoopError(
            f"the stepper {text!r} needs a positive step, got {step}",
            graph_id=graph_id,
            node_id=node_id,
            field="meta.$in",
        )
    return range(start, end, step)


def loop_items(source: Any, variables: Mapping[str, Any], *, graph_id: str, node_id: str) -> Iterator[Any]:
    """The iterator a loop node walks, from its ``$in``."""
    if isinstance(source, list):
        return iter(list(source))
    if ":" in source or "..." in source:
        return iter(stepper(source, graph_id=graph_id, node_id=node_id))
    value = variables.get(source)
    # As the original, text and mappings are not collections to walk (a string of characters is seldom meant).
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable | Iterator):
        raise LoopError(
            f"the '$in' variable {source!r} is not a collection, got {type(value).__name__} {value!r:.60}",
            graph_id=graph_id,
            node_id=node_id,
            field="meta.$in",
        )
    return iter(value)


class Peekable:
    """An iterator that can say whether it has more, as the loop's join needs to know."""

    __slots__ = ("_ahead", "_has", "_it")

    def __init__(self, it: Iterator[Any]) -> None:
        self._it = it
        self._ahead: Any = None
        self._has = False
        self._fill()

    def _fill(self) -> None:
        try:
            self._ahead = next(self._it)
            self._has = True
        except StopIteration:
            self._has = False

    def has_next(self) -> bool:
        return self._has

    def next(self) -> Any:
        value = self._ahead
        self._fill()
        return value
