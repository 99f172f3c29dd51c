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
import sys

import pytest

from aotcheck.fuzz.fingerprint import check_kind
from aotcheck.regress.fingerprint import fingerprint

PINNED = json.loads((pathlib.Path(__file__).parent / "divergence_prints.json").read_text())["messages"]
BY_MESSAGE = {row["message"]: row for row in PINNED}


def problem(message: str):
    """The problem a producer hands for ``message``."""
    return message


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


def test_the_oracles_own_problems_fingerprint_as_pinned():
    """The planted wrong functions again, on every fourth corpus case: each problem the oracle
    hands whose text is pinned (the census kept one message per shape) fingerprints as pinned."""
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "tools"))
    import divergence_census
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
