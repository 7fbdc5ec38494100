"""JSON <-> dataclass conversion for the wire types (internal).

Every wire type derives from :class:`Wire`. Decoding is driven by the dataclass field types:
nested wire types, lists, dicts and ``Optional`` are followed; keys a class does not declare go
to its ``extra`` dict, so fields the service adds later never break parsing. Encoding drops
``None`` fields (the service reads an absent field and ``null`` alike) and merges ``extra``.

Integers are never passed through ``float``: Python's ``json`` reads and writes them exactly,
and a float given for an integer field (which would lose u64 precision) is rejected.
"""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Dict, Type, TypeVar, Union

W = TypeVar("W", bound="Wire")

_NONE = type(None)
_HINTS: Dict[type, Dict[str, Any]] = {}


def _field_types(cls: type) -> Dict[str, Any]:
    """The resolved type of every init field except ``extra`` (cached per class)."""
    hints = _HINTS.get(cls)
    if hints is None:
        resolved = typing.get_type_hints(cls)
        hints = {f.name: resolved[f.name] for f in dataclasses.fields(cls) if f.init and f.name != "extra"}
        _HINTS[cls] = hints
    return hints


def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) is Union:
        args = [a for a in typing.get_args(tp) if a is not _NONE]
        if len(args) == 1:
            return args[0]
    return tp


def _decode(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    tp = _unwrap_optional(tp)
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is list and isinstance(value, list):
        return [_decode(args[0], v) for v in value] if args else value
    if origin is dict and isinstance(value, dict):
        return {k: _decode(args[1], v) for k, v in value.items()} if args else value
    if isinstance(tp, type) and issubclass(tp, Wire):
        return tp.from_wire(value)
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _check_int(name: str, tp: Any, value: Any) -> None:
    """Rejects a float where the field holds integers (u64 ids and hashes must stay exact)."""
    tp = _unwrap_optional(tp)
    if typing.get_origin(tp) is list:
        item = _unwrap_optional(typing.get_args(tp)[0]) if typing.get_args(tp) else Any
        if item is int and isinstance(value, (list, tuple)) and any(isinstance(v, float) for v in value):
            raise TypeError(f"{name}: expected integers, got a float (floats lose 64-bit precision)")
    elif tp is int and isinstance(value, float):
        raise TypeError(f"{name}: expected an integer, got the float {value!r} (floats lose 64-bit precision)")


def encode(value: Any) -> Any:
    """A JSON-ready value: wire objects become dicts, tuples lists; ``None`` fields are dropped."""
    if isinstance(value, Wire):
        return value.to_dict()
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else str(k)): encode(v) for k, v in value.items() if v is not None}
    return value


class Wire:
    """Base of every request and response dataclass."""

    extra: Dict[str, Any]

    @classmethod
    def from_dict(cls: Type[W], data: Dict[str, Any]) -> W:
        """Builds the object from a decoded JSON object; unknown keys go to ``extra``."""
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__}: expected a JSON object, got {type(data).__name__}")
        types = _field_types(cls)
        known: Dict[str, Any] = {}
        extra: Dict[str, Any] = {}
        for key, value in data.items():
            if key in types:
                known[key] = _decode(types[key], value)
            else:
                extra[key] = value
        try:
            obj = cls(**known)
        except TypeError as err:
            raise ValueError(f"{cls.__name__}: {err}") from None
        if extra:
            if not hasattr(obj, "extra"):
                raise ValueError(f"{cls.__name__}: unexpected fields {sorted(extra)}")
            obj.extra.update(extra)
        return obj

    @classmethod
    def from_wire(cls: Type[W], value: Any) -> W:
        """Decodes one JSON value of this type (overridden by types that are not plain objects)."""
        return cls.from_dict(value)

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object the service reads: ``None`` fields omitted, ``extra`` merged (fields win)."""
        types = _field_types(type(self))
        out: Dict[str, Any] = {}
        for name, tp in types.items():
            value = getattr(self, name)
            if value is None:
                continue
            _check_int(name, tp, value)
            out[name] = encode(value)
        for key, value in getattr(self, "extra", {}).items():
            out.setdefault(key, encode(value))
        return out
