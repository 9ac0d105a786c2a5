"""Shared objects: written once per payload, and their text re-used from one payload to the next.

A checkpoint holds each message of the conversation twice, in the session's recorded events and in the loop
state's transcript, and the checkpoint of turn N+1 holds every message of turn N again. So version 2 of the
codec numbers the objects of the classes in ``_wire.SHARED`` (messages and recorded events) in the order their
writing ends, an object's fields before the object, as the decoder builds them; an object met again in the same
payload is written as ``{"$t": "ref", "v": <number>}``. A payload without references is written as version 1, byte
for byte as before.

Writing a shared object it remembers (``_fits``: one it wrote or that decoding built, once the cache has a size),
the encoder re-uses the text of its tree when the object still fits that tree exactly, and writes it afresh
otherwise. So a checkpoint whose old messages are unchanged costs a check per object, not an encoding.
"""

from __future__ import annotations

import json
import math
import re
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from ._fits import TEXT, TREE, Numbering, cache
from ._registry import BY_TYPE, Entry, _DataclassEntry
from ._tree import to_tree
from ._wire import CLS, REF, TAG, WRITER, PathError, key_segment

__all__ = ["SharedObjects", "ascii_text", "dumps", "write_body"]

_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
# From this many on, items of a list that are objects written before, at one step from each other, are written as
# one run, {"$t": "run", "v": [first, count, step]}: a loop's transcript refers to the history's messages so.
_RUN = 3


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# One encoder for every call: json.dumps with options builds a new one each time, which costs more than writing a
# message. c_make_encoder is the C encoder json.dumps itself uses; where there is none, json.dumps it is.
_ENCODER = (
    c_make_encoder(None, _not_json, encode_basestring, None, ":", ",", False, False, False)
    if c_make_encoder is not None
    else None
)


def dumps(tree: Any) -> str:
    """The JSON text of a value tree, as the codec writes it: no whitespace, non-ASCII characters as they are,
    no NaN or infinity (``ValueError``)."""
    if _ENCODER is not None:
        return "".join(_ENCODER(tree, 0))
    return json.dumps(tree, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)


class SharedObjects:
    """The shared objects of a chain of payloads, in the order of their numbers: a payload encoded or decoded with
    them may refer to every object of the payloads before it, and numbers its own after theirs.

    So a history saved in parts, each part a payload of its own, writes each message once across all of them, and
    the payload that holds the rest of a checkpoint refers to the messages of the parts instead of writing them
    again. Keeps the objects alive (their ids are what the encoder looks them up by); an object must not change
    once it is here, since a later payload refers to it as it was written.
    """

    __slots__ = ("numbers", "objects")

    def __init__(self) -> None:
        self.numbers: dict[int, int] = {}
        self.objects: list[Any] = []

    def __len__(self) -> int:
        return len(self.objects)

    def truncate(self, count: int) -> None:
        """Forget every object from number ``count`` on (a payload that failed, or one not to be continued)."""
        numbers = self.numbers
        for dropped in self.objects[count:]:
            del numbers[id(dropped)]
        del self.objects[count:]

    def adopt(self, start: int) -> None:
        """Number the objects from ``start`` on, appended to ``objects`` by a decoder."""
        numbers = self.numbers
        for i in range(start, len(self.objects)):
            numbers[id(self.objects[i])] = i


def write_body(obj: Any, shared: SharedObjects | None = None, *, extend: bool = True) -> tuple[str, bool]:
    """The JSON text of ``obj``'s value tree, with shared objects written once, and whether it refers to one.
    With ``shared``, the objects there are referred to, and ``obj``'s own are added to them when ``extend``."""
    writer = Writer(shared)
    mark = len(shared) if shared is not None else 0
    token = WRITER.set(writer)
    done = False
    try:
        writer.root(obj)
        done = True
    finally:
        WRITER.reset(token)
        if shared is not None and not (done and extend):
            shared.truncate(mark)
    return "".join(writer.out), writer.refs > 0


def ascii_text(text: str) -> str:
    """``text`` with every non-ASCII character escaped, as ``json.dumps(..., ensure_ascii=True)`` writes it: for
    text holding lone surrogates, which UTF-8 cannot encode. Such characters can only be inside strings."""
    return _NON_ASCII.sub(lambda m: encode_basestring_ascii(m.group())[1:-1], text)


class Writer(Numbering):
    """One payload being written: its text so far, and the shared objects written out.

    ``root`` writes the value itself, descending through containers and registered dataclasses to reach the
    shared objects; below a shared object (and for everything else) it goes through ``to_tree``, which hands the
    shared objects it meets to ``shared_tree``.
    """

    __slots__ = ("out",)

    def __init__(self, shared: SharedObjects | None = None) -> None:
        super().__init__()
        if shared is not None:  # numbered where the chain numbers them, so that its objects are referred to
            self.numbers = shared.numbers
            self.order = shared.objects
        self.out: list[str] = []

    def shared_tree(self, obj: Any, entry: Entry) -> Any:
        """The tree of a shared object inside a value tree: a reference, the remembered tree, or a new one."""
        number = self.numbers.get(id(obj))
        if number is not None:
            self.refs += 1
            return {TAG: REF, "v": number}
        cached = self.reuse(obj, entry)
        if cached is not None:
            return cached[TREE]
        tree = entry.encode(obj, to_tree)
        self.number(obj)
        cache.misses += 1
        cache.put(obj, entry, tree)
        return tree

    # -- writing -----------------------------------------------------------------------------------------------

    def root(self, obj: Any) -> None:
        entry = BY_TYPE.get(type(obj))
        if entry is not None and entry.shared:  # a lone message: nothing to share it with, nothing to remember
            tree = entry.encode(obj, to_tree)
            self.number(obj)
            self.out.append(dumps(tree))
        else:
            self.put(obj)

    def put(self, value: Any) -> None:
        t = type(value)
        out = self.out
        if t is str:
            out.append(encode_basestring(value))
        elif t is int:
            out.append(int.__repr__(value))
        elif t is bool:
            out.append("true" if value else "false")
        elif value is None:
            out.append("null")
        elif t is float and math.isfinite(value):
            out.append(float.__repr__(value))
        elif t is list:
            self._put_items(value, "[", "]")
        elif t is tuple:
            self._put_items(value, '{"$t":"tuple","v":[', "]}")
        elif t is dict and TAG not in value and CLS not in value and all(type(k) is str for k in value):
            self._put_dict(value)
        else:
            entry = BY_TYPE.get(t)
            if entry is not None and entry.shared:
                self._put_shared(value, entry)
            elif type(entry) is _DataclassEntry:
                self._put_fields(value, entry)
            else:  # everything else as its value tree, shared objects inside it included
                out.append(dumps(to_tree(value)))

    def _put_items(self, items: list[Any] | tuple[Any, ...], opening: str, closing: str) -> None:
        out = self.out
        out.append(opening)
        numbers = self.numbers
        count = len(items)
        i = 0
        try:
            while i < count:
                if i:
                    out.append(",")
                item = items[i]
                number = numbers.get(id(item)) if numbers else None
                if number is not None and i + _RUN <= count:
                    end = self._run_end(items, i, number)
                    if end - i >= _RUN:  # a transcript of messages written before: one run of references
                        step = numbers[id(items[i + 1])] - number
                        out.append(f'{{"$t":"run","v":[{number},{end - i},{step}]}}')
                        self.refs += end - i
                        i = end
                        continue
                self.put(item)
                i += 1
        except PathError as exc:
            raise exc.at(f"[{i}]") from None
        out.append(closing)

    def _run_end(self, items: list[Any] | tuple[Any, ...], start: int, number: int) -> int:
        """Where the run of references starting at ``items[start]`` (object ``number``) ends: the items after it
        that are objects written before, numbered at one step from each other."""
        numbers = self.numbers
        following = numbers.get(id(items[start + 1]))
        if following is None or following <= number:
            return start + 1
        step = following - number
        end, expected = start + 2, following + step
        while end < len(items) and numbers.get(id(items[end])) == expected:
            end += 1
            expected += step
        return end

    def _put_dict(self, d: dict[str, Any]) -> None:
        out = self.out
        out.append("{")
        key = ""
        try:
            for i, (key, value) in enumerate(d.items()):
                out.append(f"{',' if i else ''}{encode_basestring(key)}:")
                self.put(value)
        except PathError as exc:
            raise exc.at(key_segment(key)) from None
        out.append("}")

    def _put_fields(self, obj: Any, entry: _DataclassEntry) -> None:
        out = self.out
        out.append(f'{{"$c":{encode_basestring(entry.name)}')
        name = ""
        try:
            for name, default, default_type in entry.plan:
                value = getattr(obj, name)
                if type(value) is default_type and value == default:
                    continue
                out.append(f",{encode_basestring(name)}:")
                self.put(value)
        except PathError as exc:
            raise exc.at("." + name) from None
        out.append("}")

    def _put_shared(self, obj: Any, entry: Entry) -> None:
        number = self.numbers.get(id(obj))
        if number is not None:
            self.refs += 1
            self.out.append(f'{{"$t":"ref","v":{number}}}')
            return
        cached = self.reuse(obj, entry)
        if cached is not None:
            text = cached[TEXT]
            if text is None:
                text = cached[TEXT] = dumps(cached[TREE])
            self.out.append(text)
            return
        tree = entry.encode(obj, to_tree)
        self.number(obj)
        cache.misses += 1
        text = dumps(tree)
        cache.put(obj, entry, tree, text)
        self.out.append(text)
