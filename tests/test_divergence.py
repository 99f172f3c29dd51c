"""The divergence record (``aotcheck/check/divergence.py``): its sentences, its invariants, and its
JSON round trip."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, strategies as st

from aotcheck.check import divergence
from aotcheck.check.divergence import (APART, SHARED, Check, Divergence, Role, Subject, problem_from_json,
                                       problem_to_json)

D = Divergence


@pytest.mark.parametrize("record, sentence", [
    (D(Check.COMPILED_RAISED, error="RuntimeError: boom"), "compiled raised RuntimeError: boom"),
    (D(Check.EAGER_RAISED, error="ValueError"), "eager raised ValueError but compiled did not"),
    (D(Check.STRUCTURE, expected="A", actual="B"), "output structure: eager A vs compiled B"),
    (D(Check.VALUE, Subject.output(1), expected="3", actual="4"), "output 1: eager 3, compiled 4"),
    (D(Check.VALUE, Subject.argument(0), expected="int", actual="Tensor"),
     "argument 0 after the call: eager int, compiled Tensor"),
    (D(Check.STORAGE_BYTES, Subject.output(0), expected="0", actual="16"),
     "output 0 storage bytes: eager 0, compiled 16"),
    (D(Check.STORAGE_OFFSET, Subject.argument(2), expected="1", actual="0"),
     "argument 2 after the call storage_offset: eager 1, compiled 0"),
    (D(Check.SHARING, Subject.output(0), other=Subject.argument(1), expected=SHARED, actual=APART),
     "out0 and arg1 share a storage in eager only"),
    (D(Check.SHARING, Subject.output(1), other=Subject.output(2), expected=APART, actual=SHARED),
     "out1 and out2 share a storage in compiled only"),
    (D(Check.GRAD_VALUES, Subject.output(3), detail="Scalars are not close!"),
     "grad of output 3 (a leaf): Scalars are not close!"),
    (D(Check.RETAINS_GRAD, Subject.argument(0), expected="True", actual="False"),
     "retained grad of argument 0: eager retains_grad True, compiled False"),
    (D(Check.MUTATION_EFFECT, Subject.output(0), other=Subject.argument(1)),
     "after mutating output 0 in place, argument 1 differs from eager"),
    (D(Check.HARNESS_RAISED, error="KeyError: 'x'", detail="in the key-variation phase"),
     "harness raised KeyError in the key-variation phase: 'x'"),
    (D(Check.CACHE_MISS, actual="hits=0 misses=1 bypasses=0", state=0, cache_fill=True),
     "run that fills the cache: in state 0: expected cache hits only, got hits=0 misses=1 bypasses=0"),
])
def test_a_record_speaks_the_oracles_sentence(record, sentence):
    assert str(record) == record.message == sentence
    assert str(record.bare()) == sentence.removeprefix("run that fills the cache: in state 0: ")


def test_the_module_examples_run():
    import doctest
    failures, tried = doctest.testmod(divergence)
    assert tried and not failures


@pytest.mark.parametrize("kw, missing", [
    (dict(check=Check.VALUES, subject=Subject.output(0)), "needs detail"),
    (dict(check=Check.ALIASING, expected="fresh", actual="arg0"), "needs subject"),
    (dict(check=Check.COMPILED_RAISED), "needs error"),
    (dict(check="values", subject=Subject.output(0), detail="x"), "is a Check"),
    (dict(check=Check.RANDOM_STATE, state=-1), "state is an index"),
    (dict(check=Check.RANDOM_STATE, subject="output 0"), "subject is a Subject"),
    (dict(check=Check.STATE_LEAK, detail=["grad mode"]), "detail is short text"),
])
def test_a_record_without_what_its_sentence_needs_is_refused(kw, missing):
    with pytest.raises(ValueError, match=missing):
        Divergence(**kw)


def test_a_subject_has_no_sentinel_index():
    with pytest.raises(ValueError, match="index >= 0"):
        Subject.output(-1)
    assert str(Subject.leaf(2)) == "leaf 2" and Subject.argument(1).short == "arg1"


_TEXT = st.text(max_size=20)
_SUBJECTS = st.builds(Subject, st.sampled_from(list(Role)), st.integers(0, 50))


@given(st.builds(Divergence, st.sampled_from(list(Check)), _SUBJECTS, _TEXT, _TEXT, _TEXT, _TEXT, _SUBJECTS,
                 st.integers(0, 20), st.booleans()))
def test_a_record_with_every_field_round_trips_through_json(d):
    back = Divergence.from_dict(json.loads(json.dumps(d.to_dict())))
    assert back == d and str(back) == str(d)
    assert problem_from_json(json.loads(json.dumps(problem_to_json(d)))) == d


def test_absent_fields_stay_absent_and_a_sentence_stays_a_string():
    d = D(Check.RANDOM_STATE)
    assert d.to_dict() == {"schema": divergence.SCHEMA, "check": "random state"}
    assert Divergence.from_dict(d.to_dict()) == d
    assert problem_from_json(problem_to_json("not run: crashes")) == "not run: crashes"
    assert Divergence.from_dict(replace(d, state=3).to_dict()).state == 3


@pytest.mark.parametrize("bad", [
    {"check": "values"},                                        # no schema
    {"schema": 99, "check": "random state"},
    {"schema": 1, "check": "no such check"},
    {"schema": 1, "check": "random state", "colour": "red"},
    {"schema": 1, "check": "values", "subject": {"role": "output"}, "detail": "x"},
    {"schema": 1, "check": "values", "subject": {"role": "output", "index": 0}},
])
def test_a_malformed_record_is_named(bad):
    with pytest.raises(ValueError, match="not a divergence of schema"):
        Divergence.from_dict(bad)
