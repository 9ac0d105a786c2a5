"""The name registry: which classes a payload may build, and how each is written.

The analogue of Go's ``gob.RegisterName``: a payload names a class by its registered name, never by import path,
and a class is rebuilt only through its constructor (dataclasses) or validator (pydantic), so decoding cannot run
anything a program did not register.
"""

from __future__ import annotations

import dataclasses
import enum
import importlib
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import AliasChoices, BaseModel, ValidationError
from pydantic_core import PydanticUndefined

from ..errors import UserError
from ..schema import (
    AddressSegment,
    AudioPart,
    FunctionCall,
    ImagePart,
    Message,
    ResponseMeta,
    RunStep,
    TextPart,
    ToolCall,
    Usage,
)
from ._fieldtypes import Spec, explain, field_specs, found_text
from ._wire import BUDGET, CLS, SHARED, TAG, PathError, key_segment

__all__ = [
    "BY_NAME",
    "BY_TYPE",
    "DEFERRED",
    "Entry",
    "entry_named",
    "register_builtin_types",
    "register_type",
    "registered_types",
]

T = TypeVar("T", bound=type)
Convert = Callable[[Any], Any]  # the tree converter an entry calls for its fields: encode or decode

_REQUIRED: Any = object()  # a field without default: must be in the payload
_ALWAYS: Any = object()  # a field whose default cannot be known in advance: always written


class _Never:
    """A type no value has: the default type of the fields that are always written."""


def _known_default(default: Any, factory: Any) -> Any:
    """The value a field takes when a payload leaves it out, if it can be known in advance.

    A default factory is trusted only when it is a class (``list``, ``dict``, a dataclass) whose two fresh
    instances are equal: ``time.monotonic_ns`` or ``uuid4`` give a new value per call, so such fields are always
    written."""
    if default is not dataclasses.MISSING and default is not PydanticUndefined:
        return default
    if factory is dataclasses.MISSING or factory is None:
        return _REQUIRED
    if not isinstance(factory, type):
        return _ALWAYS
    try:
        first, second = factory(), factory()
    except Exception:  # a class that needs arguments: nothing to compare with
        return _ALWAYS
    return first if type(first) is type(second) and first == second else _ALWAYS


class Entry:
    """How one registered class is written and read."""

    shared = False  # numbered in a payload and written once (_wire.SHARED); only dataclasses are

    def __init__(self, cls: type, name: str) -> None:
        self.cls = cls
        self.name = name

    def encode(self, obj: Any, enc: Convert) -> dict[str, Any]:
        raise NotImplementedError

    def decode(self, obj: dict[str, Any], dec: Convert) -> Any:
        raise NotImplementedError

    def mistyped(self, key: str, value: Any) -> PathError:
        raise NotImplementedError

    def rejected(self, exc: Exception) -> PathError:
        return PathError(f"type {self.name!r} rejected the data: {type(exc).__name__}: {exc}")


_NO_SPECS: dict[str, Spec] = {}  # pydantic models validate their fields themselves


class _FieldsEntry(Entry):
    """A class written as its fields; fields equal to their defaults are left out."""

    def __init__(self, cls: type, name: str, defaults: dict[str, Any]) -> None:
        super().__init__(cls, name)
        # (name, default, type of the default). Comparing types first keeps 0 from standing in for a False
        # default (equal, not the same value); fields without a known default get _Never, which no value has.
        self.plan = tuple((n, d, _Never if d is _REQUIRED or d is _ALWAYS else type(d)) for n, d in defaults.items())
        self.known = frozenset(defaults) | {CLS}
        self.width = len(self.known)  # the payload keys of an object that writes every field
        self.required = frozenset(n for n, d in defaults.items() if d is _REQUIRED)

    def encode(self, obj: Any, enc: Convert) -> dict[str, Any]:
        out: dict[str, Any] = {CLS: self.name}
        field_name = ""
        try:
            for field_name, default, default_type in self.plan:
                value = getattr(obj, field_name)
                t = type(value)
                if t is default_type and value == default:
                    continue
                out[field_name] = value if t is str or t is int or t is bool or value is None else enc(value)
        except PathError as exc:
            raise exc.at("." + field_name) from None
        return out

    def decode_fields(
        self, obj: dict[str, Any], dec: Convert, specs: dict[str, Spec] = _NO_SPECS, *, allow_extra: bool = False
    ) -> dict[str, Any]:
        """The constructor arguments in ``obj``, each checked against its spec (when ``specs`` are given)."""
        keys = obj.keys()
        if not (allow_extra or keys <= self.known):  # view comparisons: no set is built unless something is wrong
            raise PathError(f"unknown field {min(keys - self.known)!r} of type {self.name!r}")
        if not keys >= self.required:
            raise PathError(f"missing field {min(self.required - keys)!r} of type {self.name!r}")
        if len(keys) < self.width:  # what the object holds beyond its payload counts against the limit
            budget = BUDGET.get()
            if budget is not None:
                budget.left -= self.width - len(keys)
                if budget.left < 0:
                    raise budget.exceeded()
        values: dict[str, Any] = {}
        key = ""
        spec_of = specs.get
        try:
            for key, raw in obj.items():
                t = type(raw)
                value = raw if t is str or t is int or t is bool or t is float or raw is None else dec(raw)
                spec = spec_of(key)
                if spec is not None and type(value) not in spec[0] and (spec[1] is None or not spec[1](value)):
                    raise self.mistyped(key, value)
                values[key] = value
        except PathError as exc:
            raise exc.at(key_segment(key)) from None
        del values[CLS]
        return values


class _DataclassEntry(_FieldsEntry):
    def __init__(self, cls: type, name: str) -> None:
        defaults: dict[str, Any] = {}
        for f in dataclasses.fields(cls):
            default = _known_default(f.default, f.default_factory)
            # Private fields (``_joined``, ``_pending``) hold run-time machinery such as futures, and init=False
            # fields are derived in __post_init__: neither belongs in a payload.
            if f.name.startswith("_") or not f.init:
                if f.init and default is _REQUIRED:
                    raise UserError(f"cannot register {cls.__qualname__}: private field {f.name!r} has no default")
                continue
            defaults[f.name] = default
        super().__init__(cls, name, defaults)
        self.shared = name in SHARED
        self.frozen: bool = cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        # Resolved once, here; annotations naming a class defined later in its module resolve at the first decode.
        self.hints: dict[str, Any] = {}
        self.specs: dict[str, Spec] | None = None
        self._resolve(final=False)

    def _resolve(self, *, final: bool) -> dict[str, Spec]:
        try:
            self.hints, self.specs = field_specs(self.cls, (n for n, _, _ in self.plan))
        except Exception:  # a name that is not defined (yet): unchecked if it still is not at the first decode
            if final:
                self.specs = {}
        return self.specs or {}

    def decode(self, obj: dict[str, Any], dec: Convert) -> Any:
        specs = self.specs if self.specs is not None else self._resolve(final=True)
        values = self.decode_fields(obj, dec, specs)
        try:
            return self.cls(**values)
        except Exception as exc:  # __post_init__ checks are user code and may raise anything
            raise self.rejected(exc) from None

    def mistyped(self, key: str, value: Any) -> PathError:
        segments, expected, found = explain(self.hints[key], value, _wire_name)
        error = PathError(f"wrong type for {self.name}.{key}: expected {expected}, got {found_text(found)}")
        for segment in reversed(segments):
            error.at(segment)
        return error  # decode_fields adds the field's own segment


class _ModelEntry(_FieldsEntry):
    def __init__(self, cls: type[BaseModel], name: str) -> None:
        defaults: dict[str, Any] = {}
        # Payloads hold Python field names (stable, and never "$c"); validation may want the alias instead.
        self.keys: dict[str, str] = {}
        for field_name, info in cls.model_fields.items():
            defaults[field_name] = _known_default(info.default, info.default_factory)
            self.keys[field_name] = _validation_key(cls, field_name, info.validation_alias or info.alias)
        self.allow_extra = cls.model_config.get("extra") == "allow"
        super().__init__(cls, name, defaults)

    def encode(self, obj: Any, enc: Convert) -> dict[str, Any]:
        out = super().encode(obj, enc)
        for key, value in (obj.__pydantic_extra__ or {}).items():
            if key in (CLS, TAG):
                raise PathError(f"extra field {key!r} of type {self.name!r} collides with the codec's tags")
            try:
                out[key] = enc(value)
            except PathError as exc:
                raise exc.at(key_segment(key)) from None
        return out

    def decode(self, obj: dict[str, Any], dec: Convert) -> Any:
        values = self.decode_fields(obj, dec, allow_extra=self.allow_extra)
        model: type[BaseModel] = self.cls
        try:
            return model.model_validate({self.keys.get(k, k): v for k, v in values.items()})
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise PathError(f"type {self.name!r} rejected the data: {where}: {first['msg']}") from None
        except Exception as exc:  # validators are user code and may raise anything
            raise self.rejected(exc) from None


def _validation_key(cls: type, field_name: str, alias: Any) -> str:
    if alias is None or isinstance(alias, str):
        return alias or field_name
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    raise UserError(f"cannot register {cls.__qualname__}: field {field_name!r} has an alias path; use a plain alias")


class _EnumEntry(Entry):
    # By value, not by name: a value survives renaming its member, and combined Flag members have no name to look up.
    def encode(self, obj: Any, enc: Convert) -> dict[str, Any]:
        try:
            return {CLS: self.name, "v": enc(obj.value)}
        except PathError as exc:
            raise exc.at(".value") from None

    def decode(self, obj: dict[str, Any], dec: Convert) -> Any:
        if obj.keys() != {CLS, "v"}:
            raise PathError(
                f"malformed member of enum {self.name!r}: expected the keys '$c' and 'v', got {sorted(obj)}"
            )
        value = dec(obj["v"])
        try:
            return self.cls(value)
        except (ValueError, TypeError):
            raise PathError(f"{value!r} is not a member of enum {self.name!r}") from None


BY_TYPE: dict[type, Entry] = {}
BY_NAME: dict[str, Entry] = {}

# The wire names of types registered by packages that ``import batonflow`` does not load (they load when first
# used), with the package that registers them: a payload naming one imports that package, so that a checkpoint
# holding a graph's, a flow's or a team's state decodes in a process that imported only batonflow. Only these
# fixed packages are ever imported for a payload.
DEFERRED: dict[str, str] = {
    "FlowChatSession": "batonflow.flow",
    "FlowContext": "batonflow.graph",
    "FlowNodeRecord": "batonflow.graph",
    "FlowNodeType": "batonflow.graph",
    "GraphState": "batonflow.graph",
    "team.TeamMetrics": "batonflow.team",
    "team.TeamRecord": "batonflow.team",
    "team.TeamState": "batonflow.team",
    "team.TeamTrace": "batonflow.team",
}


def entry_named(name: str) -> Entry | None:
    """The entry payloads call ``name``, its package imported first when it is one of the ``DEFERRED``."""
    entry = BY_NAME.get(name)
    if entry is None and name in DEFERRED:
        importlib.import_module(DEFERRED[name])
        entry = BY_NAME.get(name)
    return entry


def _wire_name(cls: type) -> str:
    entry = BY_TYPE.get(cls)
    return cls.__qualname__ if entry is None else entry.name


def register_type(cls: T, name: str | None = None) -> T:
    """Let the codec write and read ``cls``: a dataclass, a pydantic ``BaseModel`` or an ``Enum``.

    ``name`` is what payloads call the class (default: its ``__qualname__``); keep it stable across releases, since
    stored checkpoints refer to it. Registering a class again is a no-op; a name taken by another class, or a
    second name for the same class, is a ``UserError``. Returns ``cls``, so it also works as a class decorator.
    """
    if not isinstance(cls, type):
        raise UserError(f"register_type expects a class, got {cls!r}")
    existing = BY_TYPE.get(cls)
    if existing is not None:
        if name is None or name == existing.name:
            return cls
        raise UserError(
            f"cannot register {cls.__qualname__} as {name!r}: it is already registered as {existing.name!r}"
        )
    name = cls.__qualname__ if name is None else name
    if not isinstance(name, str) or not name:
        raise UserError(f"register_type expects a non-empty name, got {name!r}")
    taken = BY_NAME.get(name)
    if taken is not None:
        raise UserError(
            f"cannot register {cls.__module__}.{cls.__qualname__} as {name!r}: the name is taken by "
            f"{taken.cls.__module__}.{taken.cls.__qualname__}; pass another name to register_type"
        )
    entry: Entry
    if issubclass(cls, enum.Enum):
        entry = _EnumEntry(cls, name)
    elif dataclasses.is_dataclass(cls):
        entry = _DataclassEntry(cls, name)
    elif issubclass(cls, BaseModel):
        entry = _ModelEntry(cls, name)
    else:
        raise UserError(f"register_type expects a dataclass, a pydantic BaseModel or an Enum, got {cls.__qualname__}")
    BY_TYPE[cls] = entry
    BY_NAME[name] = entry
    return cls


def registered_types() -> dict[str, type]:
    """Every registered class by the name payloads call it: what a checkpoint may hold (the ``DEFERRED`` packages
    imported first)."""
    for package in sorted(set(DEFERRED.values())):
        importlib.import_module(package)
    return {name: entry.cls for name, entry in BY_NAME.items()}


def _register_schema_types() -> None:
    # The schema's types sit below the codec, so it registers them; every other checkpointed type registers
    # itself in its own module, with the name stored checkpoints use.
    register_type(Message, name="Message")
    register_type(ToolCall, name="ToolCall")
    register_type(FunctionCall, name="FunctionCall")
    register_type(Usage, name="Usage")
    register_type(ResponseMeta, name="ResponseMeta")
    register_type(TextPart, name="TextPart")
    register_type(ImagePart, name="ImagePart")
    register_type(AudioPart, name="AudioPart")
    register_type(RunStep, name="RunStep")
    register_type(AddressSegment, name="AddressSegment")


def register_builtin_types() -> None:
    """Kept for callers of earlier releases; there is nothing left for it to do.

    batonflow's own types register when their modules are imported, and importing any part of batonflow imports
    them all.
    """
    _register_schema_types()


_register_schema_types()
