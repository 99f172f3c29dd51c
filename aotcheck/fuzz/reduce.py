"""Greedy reduction of a failing program: delete statements, returned values and inputs one at
a time while the failure keeps its group.

Hypothesis' shrinker needs hundreds of runs per failure, and each run compiles; a fuzz run
against ``torch.compile`` on a loaded machine pays about a second for each. Deleting one item
at a time, newest statement first, costs one run per item and pass, and reaches one to three
statements for most failures in a handful of passes. A candidate is run only if it is still a
valid program (every name defined before use) and eager PyTorch still runs it forward and
backward (``run_eager``), so a reduction never turns a failure into an eager error.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Callable

from .programs import Program, run_eager


def _valid(program: Program) -> bool:
    try:
        program.check()
        run_eager(program.to_function(), program.make_inputs())
    except Exception:  # noqa: BLE001 - any eager failure makes the candidate useless
        return False
    return True


def _candidates(program: Program):
    """Programs with one item less: a statement (newest first), a returned value, an input."""
    stmts = program.statements
    for i in reversed(range(len(stmts))):
        out = stmts[i].out
        rest = stmts[:i] + stmts[i + 1:]
        if out is not None and (any(out in s.args for s in rest) or out in program.returns):
            # the value is used later: try it with its uses in returns removed only
            if any(out in s.args for s in rest):
                continue
            yield replace(program, statements=rest,
                          returns=tuple(r for r in program.returns if r != out))
            continue
        yield replace(program, statements=rest)
    for j in range(len(program.returns)):
        yield replace(program, returns=program.returns[:j] + program.returns[j + 1:])
    used = {a for s in stmts for a in s.args if isinstance(a, str)} | set(program.returns)
    for spec in program.inputs:
        sources = {s.args[0] for s in program.inputs if s is not spec}
        if spec.name not in used and spec.name not in sources and len(program.inputs) > 1:
            inputs = tuple(s for s in program.inputs if s is not spec)
            needed = {s.args[0] for s in inputs}
            bases = tuple(b for b in program.bases if b.name in needed)
            yield replace(program, inputs=inputs, bases=bases)


def reduce_program(program: Program, still_fails: Callable[[Program], bool],
                   deadline: float) -> Program:
    """The smallest program reached from ``program`` by deleting items while ``still_fails``."""
    changed = True
    while changed and time.perf_counter() < deadline:
        changed = False
        for cand in _candidates(program):
            if time.perf_counter() >= deadline:
                break
            try:
                ok = _valid(cand) and still_fails(cand)
            except Exception:  # noqa: BLE001 - a candidate that breaks the runner is skipped
                ok = False
            if ok:
                program, changed = cand, True
                break
    return program
