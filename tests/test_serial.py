"""aotcheck.engine.serial: records to JSON data and back by their field types; a property test
fills every field of each record with a value of its type and reads it back equal."""
from __future__ import annotations

import dataclasses
import doctest
import enum
import json
import types
import typing

import pytest
from hypothesis import given, settings, strategies as st

from aotcheck.engine import serial


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclasses.dataclass(frozen=True)
class Inner:
    n: int
    colour: Colour = Colour.RED


@dataclasses.dataclass(frozen=True)
class Outer:
    name: str
    inner: Inner
    maybe: int | None = None
    many: tuple[Inner, ...] = ()
    pair: tuple[int, str] = (0, "")
    tags: frozenset[str] = frozenset()
    table: dict[str, Inner] = dataclasses.field(default_factory=dict)
    raw: tuple = ()
    kind: Colour | None = None


def strategy_for(hint) -> st.SearchStrategy:
    """A strategy for any value of ``hint`` (records field by field, every field drawn)."""
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return st.builds(hint, **{f.name: strategy_for(hints[f.name])
                                  for f in dataclasses.fields(hint) if f.init})
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return st.one_of(*[st.none() if a is type(None) else strategy_for(a) for a in args])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return st.sampled_from(list(hint))
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return st.lists(strategy_for(args[0]), max_size=3).map(tuple)
        return st.tuples(*map(strategy_for, args)) if args else \
            st.lists(st.integers(), max_size=3).map(tuple)
    if origin is frozenset:
        return st.frozensets(strategy_for(args[0]), max_size=3)
    if origin is dict:
        return st.dictionaries(st.text(max_size=4), strategy_for(args[1]), max_size=3)
    if hint is tuple:
        return st.lists(st.integers(), max_size=3).map(tuple)
    return {int: st.integers(-5, 2**40), str: st.text(max_size=8), bool: st.booleans(),
            float: st.floats(allow_nan=False, allow_infinity=False)}[hint]


@given(strategy_for(Outer))
@settings(max_examples=200, deadline=None)
def test_every_field_round_trips_through_json_text(rec):
    assert serial.loads(Outer, serial.dumps(rec)) == rec
    assert serial.from_data(Outer, json.loads(json.dumps(serial.to_data(rec)))) == rec


def test_a_missing_field_takes_its_default_and_a_bad_value_names_the_field():
    assert serial.from_data(Outer, {"name": "x", "inner": {"n": 1}}) == Outer("x", Inner(1))
    with pytest.raises(serial.SerialError, match=r"Outer\.inner\.colour: 'green' is no Colour"):
        serial.from_data(Outer, {"name": "x", "inner": {"n": 1, "colour": "green"}})
    with pytest.raises(serial.SerialError, match=r"Outer\.pair: expected 2 items, got 1"):
        serial.from_data(Outer, {"name": "x", "inner": {"n": 1}, "pair": [1]})
    with pytest.raises(serial.SerialError, match="schema 1 != 2"):
        serial.loads(Outer, json.dumps({"schema": 1}), schema=2)


def test_the_doctest_runs():
    failures, tried = doctest.testmod(serial)
    assert tried and not failures
