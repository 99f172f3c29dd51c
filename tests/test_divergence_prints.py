"""Characterization (issue 37, item 4): the fingerprint of every real problem message, pinned.

``divergence_prints.json`` holds each distinct message (numbers aside) that the corpus gave
through aotcheck's engine and the torch engines (every stage, key variations included),
through planted wrong "compiled" functions (``tools/divergence_census.py``: outputs detached,
cloned, scaled, raising, ...), and the harness's own sentences, with the two fingerprints the
code gave it before fingerprints read typed records: the regression command's
(``regress.fingerprint.fingerprint``) and the fuzzer's check (``fuzz.fingerprint.check_kind``).
The built-in records pin those fingerprints, so they must not move.
"""
from __future__ import annotations

import json
import pathlib
import re
import sys

import pytest

from aotcheck.check.divergence import APART, SHARED, Check, Divergence, Subject
from aotcheck.fuzz.fingerprint import check_kind
from aotcheck.regress.fingerprint import fingerprint

PINNED = json.loads((pathlib.Path(__file__).parent / "divergence_prints.json").read_text())["messages"]
BY_MESSAGE = {row["message"]: row for row in PINNED}


def problem(message: str):
    """The problem a producer hands for ``message``: its record, read back (``parse``)."""
    return parse(message)


# ---------------------------------------------------------------- the prose, read back

_S = {"output": Subject.output, "argument": Subject.argument, "out": Subject.output,
      "arg": Subject.argument, "leaf": Subject.leaf}
_ATTR = "dtype|shape|requires_grad|stride|storage_offset|is_leaf|grad_fn|type|storage bytes"
_NONE = "(None|a tensor)"
_GRAMMAR = [   # (pattern, record from the match): the oracle's and the harness's sentences
    (r"compiled raised (?P<e>.*)", lambda m: Divergence(Check.COMPILED_RAISED, error=m["e"])),
    (r"eager raised (?P<e>\w+) but compiled did not", lambda m: Divergence(Check.EAGER_RAISED, error=m["e"])),
    (r"output structure: eager (?P<a>.*) vs compiled (?P<b>.*)",
     lambda m: Divergence(Check.STRUCTURE, expected=m["a"], actual=m["b"])),
    (r"output (?P<k>\d+): compiled returned a tensor whose storage cannot be read \((?P<d>.*)\)",
     lambda m: Divergence(Check.UNREADABLE, Subject.output(int(m["k"])), detail=m["d"])),
    (rf"(?P<r>output|argument) (?P<k>\d+)(?: after the call)? (?P<c>{_ATTR}): eager (?P<a>.*), compiled (?P<b>.*)",
     lambda m: Divergence(Check(m["c"]), _S[m["r"]](int(m["k"])), expected=m["a"], actual=m["b"])),
    (r"(?P<r>output|argument) (?P<k>\d+)(?: after the call)? values: (?P<d>.*)",
     lambda m: Divergence(Check.VALUES, _S[m["r"]](int(m["k"])), detail=m["d"])),
    (r"(?P<r>output|argument) (?P<k>\d+)(?: after the call)?: eager (?P<a>.*), compiled (?P<b>.*)",
     lambda m: Divergence(Check.VALUE, _S[m["r"]](int(m["k"])), expected=m["a"], actual=m["b"])),
    (r"output (?P<k>\d+) aliasing: eager (?P<a>.*), compiled (?P<b>.*)",
     lambda m: Divergence(Check.ALIASING, Subject.output(int(m["k"])), expected=m["a"], actual=m["b"])),
    (r"out(?P<k>\d+) and (?P<r>out|arg)(?P<j>\d+) share a storage in (?P<w>eager|compiled) only",
     lambda m: Divergence(Check.SHARING, Subject.output(int(m["k"])), other=_S[m["r"]](int(m["j"])),
                          expected=SHARED if m["w"] == "eager" else APART,
                          actual=APART if m["w"] == "eager" else SHARED)),
    (r"random generator state after the call differs from eager's \(the compiled function drew a "
     r"different number of random values\)", lambda m: Divergence(Check.RANDOM_STATE)),
    (r"backward: only compiled raised (?P<e>.*)", lambda m: Divergence(Check.BACKWARD_RAISED, error=m["e"])),
    (r"backward: only eager raised (?P<e>.*)", lambda m: Divergence(Check.BACKWARD_EAGER_RAISED, error=m["e"])),
    (rf"grad of (?P<r>leaf|output) (?P<k>\d+)(?: \(a leaf\))?: eager {_NONE}, compiled {_NONE}",
     lambda m: Divergence(Check.GRAD_PRESENCE, _S[m["r"]](int(m["k"])), expected=m[3], actual=m[4])),
    (r"grad of (?P<r>leaf|output) (?P<k>\d+)(?: \(a leaf\))?: (?P<d>.*)",
     lambda m: Divergence(Check.GRAD_VALUES, _S[m["r"]](int(m["k"])), detail=m["d"])),
    (r"retained grad of (?P<r>output|argument) (?P<k>\d+): eager retains_grad (?P<a>.*), compiled (?P<b>.*)",
     lambda m: Divergence(Check.RETAINS_GRAD, _S[m["r"]](int(m["k"])), expected=m["a"], actual=m["b"])),
    (rf"retained grad of (?P<r>output|argument) (?P<k>\d+): eager {_NONE}, compiled {_NONE}",
     lambda m: Divergence(Check.RETAINED_GRAD_PRESENCE, _S[m["r"]](int(m["k"])), expected=m[3], actual=m[4])),
    (r"retained grad of (?P<r>output|argument) (?P<k>\d+): (?P<d>.*)",
     lambda m: Divergence(Check.RETAINED_GRAD_VALUES, _S[m["r"]](int(m["k"])), detail=m["d"])),
    (r"mutating output (?P<k>\d+) in place: eager (?P<a>.*), compiled (?P<b>.*)",
     lambda m: Divergence(Check.OUTPUT_MUTATION, Subject.output(int(m["k"])), expected=m["a"], actual=m["b"])),
    (r"after mutating output (?P<k>\d+) in place, (?P<r>argument|output) (?P<j>\d+) differs from eager",
     lambda m: Divergence(Check.MUTATION_EFFECT, Subject.output(int(m["k"])), other=_S[m["r"]](int(m["j"])))),
    (r"Dynamo could not capture the whole function: (?P<d>.*)",
     lambda m: Divergence(Check.GRAPH_BREAK, detail=m["d"])),
    (r"Dynamo captured no graph: the function ran eagerly", lambda m: Divergence(Check.NO_GRAPH)),
    (r"expected cache hits only, got (?P<a>.*)", lambda m: Divergence(Check.CACHE_MISS, actual=m["a"])),
    (r"cached run did not hit: (?P<a>.*)", lambda m: Divergence(Check.CACHED_RUN_MISS, actual=m["a"])),
    (r"harness raised (?P<t>\w+) (?P<d>in the key-variation phase): (?P<e>.*)",
     lambda m: Divergence(Check.HARNESS_RAISED, error=f"{m['t']}: {m['e']}", detail=m["d"])),
    (r"harness raised (?P<e>.*)", lambda m: Divergence(Check.HARNESS_RAISED, error=m["e"])),
    (r"oracle raised (?P<e>.*)", lambda m: Divergence(Check.ORACLE_RAISED, error=m["e"])),
    (r"global state leaked from the compiled call: (?P<d>.*)",
     lambda m: Divergence(Check.STATE_LEAK, detail=m["d"])),
]


def parse(message: str) -> Divergence | str:
    """The record whose sentence is ``message``; a sentence no record speaks stays a string."""
    body, fill = message, message.startswith("run that fills the cache: ")
    body = body.removeprefix("run that fills the cache: ")
    state = re.match(r"in state (\d+): ", body)
    body = body[state.end():] if state else body
    for pattern, make in _GRAMMAR:
        m = re.fullmatch(pattern, body, re.S)
        if m:
            return Divergence(**{**make(m).__dict__, "state": int(state[1]) if state else None,
                                 "cache_fill": fill})
    assert not fill and not state, f"a prefix on a sentence no record speaks: {message!r}"
    return message


def test_each_record_read_back_speaks_its_message():
    """The grammar above reads every pinned message into a record whose ``str`` is the message
    again, byte for byte; only the harness's free sentences stay strings."""
    strings = [row["message"] for row in PINNED if isinstance(parse(row["message"]), str)]
    assert not [m for m in (row["message"] for row in PINNED) if str(parse(m)) != m]
    assert all(m.startswith(("not run: ", "stale hit", "lost hit", "fails under b", "unkeyed hit",
                             "STALE HIT", "warm worker failed", "key variation")) for m in strings), strings


def _fingerprints(p) -> tuple:
    fp = fingerprint([p, "a later problem does not count"])
    return fp.to_dict() if fp else None, check_kind([p, "a later problem does not count"])


def test_the_pinned_messages_are_many_and_of_every_kind():
    checks = {row["check"] for row in PINNED}
    assert len(PINNED) > 600, len(PINNED)
    assert {"values", "aliasing", "mutation", "requires_grad", "autograd metadata", "layout",
            "grad presence", "grad values", "retained grad presence", "retained grad values",
            "output mutation", "structure", "random state", "missing error",
            "missing error in backward", "non-tensor output", "cache miss", "global state leak",
            "oracle error"} <= checks
    assert any(c.startswith("crash in aot_autograd: ") for c in checks)
    assert any(row["fingerprint"] and row["fingerprint"]["check"] == "graph break" for row in PINNED)


@pytest.mark.parametrize("start", range(0, len(PINNED), 200))
def test_every_pinned_message_keeps_its_fingerprints(start):
    wrong = []
    for row in PINNED[start:start + 200]:
        got = _fingerprints(problem(row["message"]))
        if got != (row["fingerprint"], row["check"]):
            wrong.append(f"{row['message']!r}:\n  pinned {row['fingerprint']}, {row['check']!r}\n"
                         f"  now    {got[0]}, {got[1]!r}")
    assert not wrong, "\n".join(wrong[:10])


def _census():
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "tools"))
    import divergence_census
    return divergence_census


def test_the_harness_problems_fingerprint_as_pinned():
    """The harness's own problems, built as their producers build them (records, and the few
    sentences of NOTE [harness sentences without a record]): each sentence is pinned, and so is
    its fingerprint."""
    problems = _census()._harness()
    assert len(problems) > 25 and sum(isinstance(p, str) for p in problems) < 10
    for p in problems:
        row = BY_MESSAGE[str(p)]
        assert _fingerprints(p) == (row["fingerprint"], row["check"]), str(p)


def test_the_oracles_own_problems_fingerprint_as_pinned():
    """The planted wrong functions again, on every fourth corpus case: each problem the oracle
    hands whose text is pinned (the census kept one message per shape) fingerprints as pinned."""
    divergence_census = _census()
    from aotcheck.check.corpus import all_cases
    cases = all_cases()[::4]
    met, wrong = set(), []
    for p in [*divergence_census.planted_problems(cases), *divergence_census.pair_problems()]:
        row = BY_MESSAGE.get(str(p))
        if row is None:
            continue
        met.add(row["message"])
        if _fingerprints(p) != (row["fingerprint"], row["check"]):
            wrong.append(f"{str(p)!r}: pinned {row['fingerprint']}, {row['check']!r}; now {_fingerprints(p)}")
    assert not wrong, "\n".join(wrong[:10])
    assert len(met) > 100, len(met)
