"""serial: frozen records to plain JSON data and back, by their field types.

Every record aotcheck writes (the cache's metadata, the fuzzer's database, key-variation
results, keydiff's reports, the regression command's records) is a frozen dataclass whose
fields are typed; this module is the one place that turns one into JSON data and back::

    >>> from dataclasses import dataclass
    >>> from enum import Enum
    >>> class Kind(Enum):
    ...     FRESH = "fresh"
    >>> @dataclass(frozen=True)
    ... class Out:
    ...     kind: Kind
    ...     source: int | None = None
    ...     shape: tuple[int, ...] = ()
    >>> to_data(Out(Kind.FRESH, None, (2, 3)))
    {'kind': 'fresh', 'source': None, 'shape': [2, 3]}
    >>> from_data(Out, {'kind': 'fresh', 'shape': [2, 3]})
    Out(kind=<Kind.FRESH: 'fresh'>, source=None, shape=(2, 3))

An Enum is written as its value, ``None`` as ``null``, a tuple or frozenset as a list (a
frozenset sorted), a nested record as an object; reading rebuilds each by the field's type, and
a field the data lacks takes its default (so a record may gain a defaulted field without a
schema bump). A value that does not fit its type is a ``SerialError`` naming the field.
"""

import dataclasses
import enum
import functools
import json
import types
import typing


class SerialError(ValueError):
    """Data that does not fit the record it is read as (names the field and the type)."""


def to_data(obj):
    """``obj`` as JSON data: records as objects, Enums as their values, tuples as lists."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (tuple, list)):
        return [to_data(x) for x in obj]
    if isinstance(obj, frozenset):
        return sorted((to_data(x) for x in obj), key=repr)
    if isinstance(obj, dict):
        return {str(k.value if isinstance(k, enum.Enum) else k): to_data(v) for k, v in obj.items()}
    return obj


def from_data(hint, data, where: str = ""):
    """``data`` read as ``hint`` (a record class, an Enum, ``X | None``, ``tuple[X, ...]``,
    ``dict[str, X]``, ``frozenset[X]``, or a plain type)."""
    if dataclasses.is_dataclass(hint):
        return _record(hint, data, where or hint.__name__)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if data is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        return from_data(rest[0], data, where) if len(rest) == 1 else _union(rest, data, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(data)
        except ValueError:
            raise SerialError(f"{where}: {data!r} is no {hint.__name__} "
                              f"({', '.join(repr(m.value) for m in hint)})") from None
    if origin is tuple:
        return _tuple(args, data, where)
    if origin is frozenset:
        return frozenset(from_data(args[0], x, where) for x in _sequence(data, where))
    if origin is dict:
        if not isinstance(data, dict):
            raise SerialError(f"{where}: expected an object, got {type(data).__name__}")
        return {from_data(args[0], k, where) if args else k: from_data(args[1], v, f"{where}[{k}]")
                if args else v for k, v in data.items()}
    return deep_tuple(data)


def _record(cls, data, where: str):
    if not isinstance(data, dict):
        raise SerialError(f"{where}: expected an object for {cls.__name__}, got {type(data).__name__}")
    hints = _hints(cls)
    return cls(**{f.name: from_data(hints[f.name], data[f.name], f"{where}.{f.name}")
                  for f in dataclasses.fields(cls) if f.init and f.name in data})


def _union(options, data, where: str):
    """``data`` read as the first record of ``options`` whose fields it fits (every key one of
    its fields, every field without a default present); plain data as it is."""
    if not isinstance(data, dict):
        return deep_tuple(data)
    for cls in (o for o in options if dataclasses.is_dataclass(o)):
        names = {f.name for f in dataclasses.fields(cls)}
        needed = {f.name for f in dataclasses.fields(cls) if f.default is dataclasses.MISSING
                  and f.default_factory is dataclasses.MISSING}
        if set(data) <= names and needed <= set(data):
            return _record(cls, data, where)
    raise SerialError(f"{where}: fits none of {', '.join(getattr(o, '__name__', str(o)) for o in options)}")


def _tuple(args, data, where: str):
    items = _sequence(data, where)
    if not args:
        return deep_tuple(items)
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(from_data(args[0], x, f"{where}[{i}]") for i, x in enumerate(items))
    if len(args) != len(items):
        raise SerialError(f"{where}: expected {len(args)} items, got {len(items)}")
    return tuple(from_data(a, x, f"{where}[{i}]") for i, (a, x) in enumerate(zip(args, items)))


def _sequence(data, where: str) -> list:
    if not isinstance(data, (list, tuple)):
        raise SerialError(f"{where}: expected a list, got {type(data).__name__}")
    return list(data)


@functools.lru_cache(maxsize=None)
def _hints(cls) -> dict:
    return typing.get_type_hints(cls)


def deep_tuple(v):
    """Lists, at any depth, as tuples (JSON has no tuple)."""
    return tuple(deep_tuple(x) for x in v) if isinstance(v, list) else v


def dumps(obj) -> str:
    """``obj`` as JSON text, keys sorted (equal records give equal text)."""
    return json.dumps(to_data(obj), sort_keys=True)


def loads(cls, text: str, schema: int | None = None):
    """A ``cls`` from ``dumps`` text; with ``schema``, the data's ``schema`` field must equal it."""
    data = json.loads(text)
    if schema is not None and (not isinstance(data, dict) or data.get("schema") != schema):
        got = data.get("schema") if isinstance(data, dict) else None
        raise SerialError(f"{cls.__name__}: schema {got} != {schema}")
    return from_data(cls, data)
