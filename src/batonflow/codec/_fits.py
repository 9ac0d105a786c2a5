"""What the encoder remembers of the shared objects it wrote or decoding built, and how it tells they are unchanged.

For the latest ``size`` shared objects (``_wire.SHARED``: messages and recorded events) the cache keeps the
value tree the object was written as or read from, the JSON text of that tree once it was needed, and the object's
field values at that moment. ``Numbering.fits`` then says whether writing the object now would give that very tree,
comparing values and their types all the way down: a message changed in place, however deep, does not fit, and is
written afresh. The quick way: while an object holds the very values it held when it last fitted, only the values
that can change inside (containers and mutable objects) are compared again.

The cache holds the objects themselves, so an id in it always names the object it was stored for.
"""

from __future__ import annotations

import math
import operator
import types
import typing
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ._registry import BY_TYPE, Entry, _DataclassEntry, _EnumEntry
from ._wire import CLS, REF, TAG

__all__ = ["CACHE_SIZE", "OBJ", "TEXT", "TREE", "Cached", "EncodeCache", "Numbering", "cache", "remember"]

CACHE_SIZE = 20_000
"""A size for ``encode_cache`` that holds the messages and recorded events of a conversation of some 5,000
tool-calling turns, or of several shorter ones. An entry costs a few hundred bytes beside the object."""

_ABSENT: Any = object()
_SCALARS = frozenset({str, int, float, bool, type(None)})


# What is remembered of one shared object, as a list (made at C speed, for every object decoding builds):
# the object; the tree it fits; the tree's JSON text once needed (decoding keeps trees only); the object's field
# values when it last fitted (the very objects); the positions of those that can change inside (None: to be found
# when first needed). While the object holds the same values, the others still fit.
Cached = list[Any]
OBJ, TREE, TEXT, VALUES, DEEP = range(5)


class EncodeCache:
    """What ``encode`` remembers of the messages and recorded events it wrote, or that ``decode`` built: the latest
    ``size`` of them, the first remembered going first. ``hits`` counts those written again from what was
    remembered, ``misses`` those written afresh; ``clear()`` forgets them all and resets the counts. The one instance is
    ``batonflow.codec.encode_cache``.

    Off by default (``size`` 0): it pays where a process encodes the same live objects again (a second encoding of an
    unchanged checkpoint costs some 40% less), not in the runtime's resume, where every checkpoint is decoded anew
    first. There, making the text of each decoded tree costs what encoding it afresh does, and at 2,000 turns keeping
    20,000 objects alive makes decoding the next checkpoint slower (benchmarks/growth.py; docs/architecture.md).
    Set ``encode_cache.size = CACHE_SIZE`` (or another count) to turn it on.

    It holds the objects themselves (so an id in it always names the object it was stored for), which keeps them
    alive until they are dropped. Each step is one operation on an ``OrderedDict``,
    atomic under the GIL, so threads that encode at the same time may lose an entry to each other but never see a
    wrong one.
    """

    def __init__(self, size: int = 0) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self.entries: OrderedDict[int, Cached] = OrderedDict()

    def __repr__(self) -> str:
        return f"EncodeCache(size={self.size}, held={len(self)}, hits={self.hits}, misses={self.misses})"

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, obj: Any) -> Cached | None:
        if not self.entries:
            return None
        found = self.entries.get(id(obj))
        return found if found is not None and found[OBJ] is obj else None

    def put(self, obj: Any, entry: Entry, tree: Any, text: str | None = None) -> None:
        """Remember ``obj``, which fits ``tree`` now."""
        if not self.size:
            return
        entries = self.entries
        key = id(obj)
        entries.pop(key, None)
        entries[key] = [obj, tree, text, getter(entry)(obj), None]
        self.trim()

    def trim(self) -> None:
        entries = self.entries
        while len(entries) > self.size:
            try:
                entries.popitem(last=False)
            except KeyError:  # emptied by another thread meanwhile
                break

    def clear(self) -> None:
        """Forget every object, and count from zero again."""
        self.entries.clear()
        self.hits = self.misses = 0


cache = EncodeCache()


def remember(objects: list[Any], trees: list[Any], root: Any) -> None:
    """Keep what decoding a payload built: the next payload that holds these objects writes them from their trees.
    The root is left out: it is written afresh every time anyway.

    A shared object fits the tree it was just built from: decoding hands each scalar of the tree to the class's
    constructor as it is, and the constructors of the shared classes keep what they are given (the tests check
    both). Its fields were checked against their annotations too, so a field annotated as immutable holds an
    immutable value: only the others need checking later (``static_deep``).
    """
    if not cache.size:
        return
    entries = cache.entries
    kinds: dict[type, tuple[Callable[[Any], tuple[Any, ...]], tuple[int, ...] | None]] = {}
    for obj, tree in zip(objects, trees, strict=True):
        kind = kinds.get(type(obj))
        if kind is None:
            entry = BY_TYPE[type(obj)]
            kind = kinds[type(obj)] = (getter(entry), static_deep(entry))
        entries[id(obj)] = [obj, tree, None, kind[0](obj), kind[1]]
    found = entries.get(id(root))
    if found is not None and found[OBJ] is root:
        del entries[id(root)]
    cache.trim()


# -- field values, and which can change ------------------------------------------------------------------------

_GETTERS: dict[Entry, Callable[[Any], tuple[Any, ...]]] = {}
_STATIC_DEEP: dict[Entry, tuple[int, ...] | None] = {}


def getter(entry: Entry) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving an object's field values, in plan order, as one tuple (at C speed)."""
    found = _GETTERS.get(entry)
    if found is None:
        names = [name for name, _, _ in entry.plan]  # type: ignore[attr-defined]
        if len(names) == 1:  # attrgetter of one name gives the value itself
            single = operator.attrgetter(names[0])
            found = lambda obj: (single(obj),)  # noqa: E731
        else:
            found = operator.attrgetter(*names)
        _GETTERS[entry] = found
    return found


def immutable(value: Any) -> bool:
    """Whether nothing can change inside ``value`` while it stays the same object: builtin scalars, and tuples,
    frozensets and frozen dataclasses (such as the steps of a run path) of them."""
    t = type(value)
    if t in _SCALARS:
        return True
    if t is tuple or t is frozenset:
        return all(map(immutable, value))
    entry = BY_TYPE.get(t)
    return type(entry) is _DataclassEntry and entry.frozen and all(map(immutable, getter(entry)(value)))


def deep_positions(values: tuple[Any, ...]) -> tuple[int, ...]:
    """The positions of the values that can change inside."""
    return tuple([i for i, value in enumerate(values) if type(value) not in _SCALARS and not immutable(value)])


def static_deep(entry: Entry) -> tuple[int, ...] | None:
    """The positions of the fields whose annotation admits a value that can change inside, for objects whose fields
    were checked against their annotations (decoded ones); None when the annotations are not all known."""
    if entry in _STATIC_DEEP:
        return _STATIC_DEEP[entry]
    hints: dict[str, Any] = getattr(entry, "hints", {})
    names = [name for name, _, _ in entry.plan]  # type: ignore[attr-defined]
    deep = tuple(i for i, name in enumerate(names) if not _immutable_hint(hints.get(name, Any), set()))
    found = deep if getattr(entry, "specs", None) is not None and all(name in hints for name in names) else None
    _STATIC_DEEP[entry] = found
    return found


def _immutable_hint(hint: Any, seen: set[type]) -> bool:
    if hint in _SCALARS or hint is None:
        return True
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return True
    if origin is typing.Union or origin is types.UnionType:
        return all(_immutable_hint(a, seen) for a in args)
    if origin is tuple or origin is frozenset:
        return bool(args) and all(a is Ellipsis or _immutable_hint(a, seen) for a in args) and args != ((),)
    entry = BY_TYPE.get(hint) if isinstance(hint, type) else None
    if type(entry) is not _DataclassEntry or not entry.frozen or hint in seen:
        return False
    seen.add(hint)
    return all(_immutable_hint(entry.hints.get(name, Any), seen) for name, _, _ in entry.plan)


# -- the check -----------------------------------------------------------------------------------------------------


class Numbering:
    """The shared objects of one payload written out so far, by id, with their numbers, and the check of a
    remembered tree against an object, which numbers the shared objects inside as writing them would."""

    __slots__ = ("numbers", "order", "refs")

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}
        self.order: list[Any] = []  # keeps the numbered objects, and so their ids, alive while the payload is written
        self.refs = 0  # references written so far

    def number(self, obj: Any) -> None:
        self.numbers[id(obj)] = len(self.order)
        self.order.append(obj)

    def reuse(self, obj: Any, entry: Entry) -> Cached | None:
        """The cache entry of ``obj`` if its tree is what writing ``obj`` now would give; ``obj`` and what it holds
        are numbered then. If not, nothing is: writing the object afresh numbers what it holds again."""
        cached = cache.get(obj)
        if cached is None:
            return None
        mark, refs = len(self.order), self.refs
        if self._fits_object(obj, entry, cached[TREE], cached):
            self.number(obj)
            cache.hits += 1
            return cached
        for dropped in self.order[mark:]:
            del self.numbers[id(dropped)]
        del self.order[mark:]
        self.refs = refs
        return None

    def fits(self, value: Any, tree: Any) -> bool:
        """Whether ``to_tree(value)`` would now give ``tree``, with the same types all the way down (so the same
        JSON text). Anything unusual is a no."""
        t = type(value)
        if t is str:
            return tree is value or (type(tree) is str and tree == value)
        check = _BUILTIN_FITS.get(t)
        if check is not None:
            return check(self, value, tree)
        entry = BY_TYPE.get(t)
        if entry is None or type(tree) is not dict:
            return False
        if entry.shared:
            return self._fits_shared(value, entry, tree)
        if type(entry) is _DataclassEntry:
            return self._fits_fields(value, entry, tree)
        if type(entry) is _EnumEntry:
            return len(tree) == 2 and tree.get(CLS) == entry.name and self.fits(value.value, tree.get("v", _ABSENT))
        return False  # pydantic models (extras, validators): written afresh

    def _fits_list(self, value: list[Any], tree: Any) -> bool:
        return type(tree) is list and len(tree) == len(value) and all(map(self.fits, value, tree))

    def _fits_tuple(self, value: tuple[Any, ...], tree: Any) -> bool:
        if type(tree) is not dict or len(tree) != 2 or tree.get(TAG) != "tuple":
            return False
        items = tree.get("v")
        return type(items) is list and len(items) == len(value) and all(map(self.fits, value, items))

    def _fits_dict(self, value: dict[Any, Any], tree: Any) -> bool:
        if type(tree) is not dict or len(tree) != len(value) or TAG in tree or CLS in tree:
            return False
        for (key, item), (tree_key, tree_item) in zip(value.items(), tree.items(), strict=True):
            if key is not tree_key and (type(key) is not str or key != tree_key):
                return False
            if not self.fits(item, tree_item):
                return False
        return True

    def _fits_shared(self, value: Any, entry: Entry, tree: dict[str, Any]) -> bool:
        number = self.numbers.get(id(value))
        if tree.get(TAG) == REF:
            ref = tree.get("v")
            if number is None or type(ref) is not int or ref != number or len(tree) != 2:
                return False
            self.refs += 1
            return True
        if number is not None or not self._fits_object(value, entry, tree, cache.get(value)):
            return False
        self.number(value)
        cache.hits += 1
        return True

    def _fits_object(self, obj: Any, entry: Entry, tree: Any, cached: Cached | None) -> bool:
        """``_fits_fields``, the quick way when ``cached`` remembers ``obj`` fitting this very tree."""
        if cached is None or cached[TREE] is not tree:
            return self._fits_fields(obj, entry, tree)
        values = getter(entry)(obj)
        if all(map(operator.is_, values, cached[VALUES])):
            deep = cached[DEEP]
            if deep is None:
                deep = cached[DEEP] = deep_positions(values)
            return self._fits_deep(values, deep, entry, tree)
        if not self._fits_fields(obj, entry, tree):
            return False
        cached[VALUES], cached[DEEP] = values, None
        return True

    def _fits_fields(self, obj: Any, entry: Entry, tree: Any) -> bool:
        if type(tree) is not dict or tree.get(CLS) != entry.name or not isinstance(entry, _DataclassEntry):
            return False
        written = 1
        get = tree.get
        for name, default, default_type in entry.plan:
            value = getattr(obj, name)
            sub = get(name, _ABSENT)
            if type(value) is default_type and value == default:
                if sub is not _ABSENT:
                    return False
                continue
            if sub is _ABSENT:
                return False
            written += 1
            if not (sub is value and type(value) is str) and not self.fits(value, sub):
                return False
        return written == len(tree)

    def _fits_deep(self, values: tuple[Any, ...], deep: tuple[int, ...], entry: Entry, tree: Any) -> bool:
        """``_fits_fields`` for an object whose fields hold the values they held when it last fitted ``tree``: only
        the fields at ``deep`` can have changed, inside."""
        plan = entry.plan  # type: ignore[attr-defined]
        for i in deep:
            name, default, default_type = plan[i]
            value = values[i]
            sub = tree.get(name, _ABSENT)
            if type(value) is default_type and value == default:
                if sub is not _ABSENT:
                    return False
            elif sub is _ABSENT or not self.fits(value, sub):
                return False
        return True


def _fits_float(_: Numbering, value: float, tree: Any) -> bool:
    # The same value and sign give the same text; NaN and the infinities are tagged, and written afresh.
    return type(tree) is float and tree == value and math.copysign(1.0, tree) == math.copysign(1.0, value)


_BUILTIN_FITS: dict[type, Callable[[Numbering, Any, Any], bool]] = {
    int: lambda _, value, tree: type(tree) is int and tree == value,
    bool: lambda _, value, tree: tree is value,
    type(None): lambda _, value, tree: tree is None,
    float: _fits_float,
    list: Numbering._fits_list,
    tuple: Numbering._fits_tuple,
    dict: Numbering._fits_dict,
}
