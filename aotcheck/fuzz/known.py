"""Which fuzz findings are already known: pinned corpus cases that the engine fails.

A known failure is a corpus case listed for the engine in ``aotcheck/targets/known_failures.json``
(each has a row in docs/findings.md, or is an engine limit recorded there). Its fingerprint is
found by running it: the check that fails (``fingerprint.check_kind`` of the oracle's first
divergence) and the names the case's function uses (methods and torch functions, read from its
bytecode). A fuzz finding matches a known case when the check is the same and every op of the
shrunk program that has a name in Python source, and is not a computation (a pointwise op,
a reduction, a matmul), appears in the case's function.

# NOTE [known matching is by check and ops, not by message]
Two programs with one root cause reach it through the same kind of wrong result and the same few
ops; their messages differ in numbers and names. Matching on check kind plus an op subset is
loose on purpose: a finding it calls known may be a new cause hiding behind a pinned one (the
report lists what it matched, so a person can look), but a finding it calls new has no pinned
case of that kind with those ops, which is what "new" has to mean to be worth a report.

The fingerprints of the known cases are computed once per engine, torch version and case set,
and kept as JSON next to the fuzz output (``known_<engine>.json``).
"""
from __future__ import annotations

import json
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

from .fingerprint import VERSION, check_kind
from .programs import KIND_OF_OP

# Op kinds that compute values; the others (views, mutations, detach, autograd state) are what
# a root cause in AOT autograd is made of.
_COMPUTE_KINDS = ("pointwise", "reduction", "matmul", "random", "scalar", "cast")

# Fuzz ops that source code shows as syntax, not as a name (x[i], x[i] = v, an alias).
_UNNAMED = {"slice", "setitem", "same"}


@dataclass(frozen=True)
class KnownCase:
    case_id: str
    check: str
    names: frozenset[str]
    reason: str

    def to_dict(self) -> dict:
        return {"case_id": self.case_id, "check": self.check, "names": sorted(self.names),
                "reason": self.reason}

    @staticmethod
    def from_dict(d: dict) -> "KnownCase":
        return KnownCase(d["case_id"], d["check"], frozenset(d["names"]), d["reason"])


def code_names(fn) -> frozenset[str]:
    """Every attribute and global name ``fn`` (and the functions nested in it) uses."""
    names: set[str] = set()
    stack = [getattr(fn, "__code__", None)]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        names |= set(code.co_names)
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return frozenset(names)


def known_cases(engine_name: str, cache_path: Path | None = None) -> list[KnownCase]:
    """The engine's known failing corpus cases with their fingerprints (run once, then cached)."""
    import torch

    from ..check.corpus import all_cases
    from ..targets.engines import get_engine, outcome
    from ..targets.known_failures import KNOWN_FAILURES, crashes
    table = KNOWN_FAILURES.get(engine_name, {})
    ids = sorted({k.removeprefix("cached:") for k in table})
    stamp = {"engine": engine_name, "torch": torch.__version__, "ids": ids, "version": VERSION}
    if cache_path is not None and cache_path.exists():
        data = json.loads(cache_path.read_text())
        if data.get("stamp") == stamp:
            return [KnownCase.from_dict(d) for d in data["cases"]]
    engine = get_engine(engine_name)
    by_id = {c.id: c for c in all_cases()}
    out = []
    for case_id in ids:
        case = by_id.get(case_id)
        if case is None:
            continue
        fn = case.fn
        reason = table.get(case_id) or table.get(f"cached:{case_id}", "")
        if crashes(reason):
            # recorded as killing the process (a SIGSEGV in torch): never run, here as anywhere
            out.append(KnownCase(case_id, "crash", code_names(fn), reason))
            continue
        try:
            if case_id in table:
                _, problems = outcome(engine, case)
            else:   # only the cached run is known to fail
                with tempfile.TemporaryDirectory(prefix="aotcheck-known-") as d:
                    _, problems = outcome(engine, case, d)
        except Exception as e:  # noqa: BLE001 - a case that crashes the harness is still known
            problems = [f"compiled raised {type(e).__name__}: {e}"]
        reason = table.get(case_id) or table.get(f"cached:{case_id}", "")
        out.append(KnownCase(case_id, check_kind(problems) if problems else "cached only",
                             code_names(fn), reason))
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps({"stamp": stamp, "cases": [k.to_dict() for k in out]},
                                         indent=1))
    return out


def match(check: str, ops: set[str], known: list[KnownCase]) -> KnownCase | None:
    """The first known case with the same check whose function uses every named op that is
    not a computation (views, mutations, detach, regions: see ``_COMPUTE_KINDS``)."""
    named = {op for op in ops if op not in _UNNAMED and KIND_OF_OP.get(op) not in _COMPUTE_KINDS}
    if not named:
        return None      # nothing but computations: no known case can be said to cover it
    for k in known:
        if k.check == check and named <= k.names:
            return k
    return None
