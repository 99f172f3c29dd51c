"""Which fuzz findings are already known: pinned corpus cases that the engine fails.

A known failure is a corpus case listed for the engine in ``aotcheck/targets/known_failures.json``
(each has a row in docs/findings.md, or is an engine limit recorded there). Its fingerprint is
found by running it: the checks that fail (``fingerprint.check_kind`` of each of the oracle's
divergences, the first one apart) and the names the case's function uses (methods, attributes
and torch functions, read from its bytecode). A fuzz finding matches a known case when its check
is one of the case's, and:

- for a crash in Dynamo, AOT autograd or the compiled forward, nothing more: the error's stem
  (an internal assertion, a named RuntimeError) identifies the defect; the same for a default
  generator left in another state than eager's;
- otherwise, every Python name that the shrunk program's non-computing statements use (a view,
  a mutation, ``detach``, ``apply`` of a custom Function, a grad-mode region) appears in the
  case's function; failing that, the same holds once every view, in-place and metadata op is
  replaced by its kind (``select`` for ``view``, ``fill_`` for ``add_``). A computation (a
  pointwise op, a reduction, a matmul) is never required.

# NOTE [known matching is by check and ops, not by message]
Two programs with one root cause reach it through the same kind of wrong result and the same few
ops; their messages differ in numbers and names. Matching on check kind plus an op subset is
loose on purpose: a finding it calls known may be a new cause hiding behind a pinned one (the
report lists what it matched, so a person can look), but a finding it calls new has no pinned
case of that kind with those ops, which is what "new" has to mean to be worth a report. A
backward crash is matched by names as well as stem: "modified by an inplace operation" is
autograd's general complaint, raised by several distinct defects.

The fingerprints of the known cases are computed once per engine, torch version and case set,
and kept as JSON next to the fuzz output (``known_<engine>.json``).
"""
from __future__ import annotations

import dis
import json
import re
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

from ..check.divergence import Check, Divergence
from .fingerprint import VERSION, check_kind
from .programs import KIND_OF_OP, render_expr

# Op kinds that compute values; the others (views, mutations, detach, autograd state) are what
# a root cause in AOT autograd is made of.
_COMPUTE_KINDS = ("pointwise", "reduction", "matmul", "random", "scalar", "cast")

# Checks that alone name the defect (NOTE [known matching is by check and ops, not by message]):
# crashes with an internal stem, and a generator left in another state than eager's; a
# backward crash does not.
_CHECK_IDENTIFIES = ("crash in dynamo", "crash in aot_autograd", "crash in compiled forward",
                     "crash in inductor", "random state")
# Names in a rendered statement that say nothing about the op: the program's variables, the
# harness's helper classes (``_Double``), and module paths.
_VARIABLE = re.compile(r"^[abvl]\d+$")
_PATHS = {"torch", "nn", "functional"}
_SUBSCRIPT = {"BINARY_SUBSCR": "slice", "BINARY_SLICE": "slice", "STORE_SUBSCR": "setitem",
              "STORE_SLICE": "setitem"}
# Kinds whose ops stand in for each other in the looser pass of ``match``.
_INTERCHANGEABLE = ("view", "inplace", "metadata")


@dataclass(frozen=True)
class KnownCase:
    case_id: str
    check: str                       # the first divergence's check
    names: frozenset[str]
    reason: str
    checks: frozenset[str] = frozenset()    # every divergence's check (the first included)

    def to_dict(self) -> dict:
        return {"case_id": self.case_id, "check": self.check, "names": sorted(self.names),
                "reason": self.reason, "checks": sorted(self.checks | {self.check})}

    @staticmethod
    def from_dict(d: dict) -> "KnownCase":
        return KnownCase(d["case_id"], d["check"], frozenset(d["names"]), d["reason"],
                         frozenset(d.get("checks", ())))

    def covers(self, check: str) -> bool:
        return check == self.check or check in self.checks


# Findings pinned outside the corpus (tests/test_torch_findings_fuzz.py: they break the process,
# so they run in a subprocess): (engine, where pinned, the oracle's first divergence, names).
_PINNED_ELSEWHERE = (
    ("torch", "tests/test_torch_findings_fuzz.py::test_view_of_input_under_inference_mode_compiles "
              "(docs/findings.md row 38)",
     Divergence(Check.COMPILED_RAISED, error="BackendCompilerFailed: backend='aot_eager' raised: "
                "RuntimeError: Cannot set version_counter for inference tensor"), ("inference_mode",)),
)


def pinned_elsewhere(engine_name: str) -> list[KnownCase]:
    return [KnownCase(where, check_kind([first]), frozenset(names), "pinned outside the corpus")
            for engine, where, first, names in _PINNED_ELSEWHERE if engine == engine_name]


def code_names(fn) -> frozenset[str]:
    """Every attribute and global name ``fn`` (and the functions nested in it) uses, and
    ``slice``/``setitem`` where it indexes (``x[i]``) or assigns through an index (``x[i] = v``),
    which bytecode shows as instructions, not names."""
    names: set[str] = set()
    stack = [getattr(fn, "__code__", None)]
    while stack:
        code = stack.pop()
        if code is None:
            continue
        names |= set(code.co_names)
        names |= {_SUBSCRIPT[i.opname] for i in dis.get_instructions(code) if i.opname in _SUBSCRIPT}
        stack += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return frozenset(names)


def _by_kind(names: frozenset[str]) -> frozenset[str]:
    """``names`` with every view, in-place and metadata op replaced by its kind: the second,
    looser pass of ``match`` (a no_grad ``select`` and a no_grad ``view`` are one cause)."""
    return frozenset(f"<{KIND_OF_OP[n]}>" if KIND_OF_OP.get(n) in _INTERCHANGEABLE else n
                     for n in names)


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
            return [KnownCase.from_dict(d) for d in data["cases"]] + pinned_elsewhere(engine_name)
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
            problems = [Divergence(Check.COMPILED_RAISED, error=f"{type(e).__name__}: {e}")]
        checks = frozenset(check_kind([p]) for p in problems)
        out.append(KnownCase(case_id, check_kind(problems) if problems else "cached only",
                             code_names(fn), reason, checks))
    if cache_path is not None:
        cache_path.parent.mkdir(parents=True, exist_ok=True)
        cache_path.write_text(json.dumps({"stamp": stamp, "cases": [k.to_dict() for k in out]},
                                         indent=1))
    return out + pinned_elsewhere(engine_name)


def statement_names(op: str, args: tuple) -> frozenset[str]:
    """The Python names one fuzz statement's source uses (``_Double.apply(a0)`` -> apply), which
    a corpus case written by hand uses too when it does the same thing."""
    code = compile(render_expr(op, args), "<statement>", "exec")
    names = {n for n in code.co_names
             if not _VARIABLE.match(n) and not n.startswith("_") and n not in _PATHS}
    return frozenset(names | ({op} if op in _SUBSCRIPT.values() else set()))


def program_names(program) -> frozenset[str]:
    """What a known case must use to cover ``program``: the names of its statements that do not
    compute (views, mutations, detach, custom Functions, state) and of the regions they run in."""
    names: set[str] = set()
    for stmt in program.statements:
        if stmt.block and stmt.block != "enable_grad":   # enable_grad inside no_grad: grad mode
            names.add(stmt.block)
        if KIND_OF_OP.get(stmt.op) not in _COMPUTE_KINDS:
            names |= statement_names(stmt.op, stmt.args)
    return frozenset(names)


def match(check: str, names: frozenset[str], known: list[KnownCase]) -> KnownCase | None:
    """The first known case that covers ``check`` and, unless the check alone names the defect
    (``_CHECK_IDENTIFIES``), uses every name in ``names`` (``program_names`` of the program)."""
    candidates = [k for k in known if k.covers(check)]
    if check.startswith(_CHECK_IDENTIFIES):
        return candidates[0] if candidates else None
    if not names:
        return None
    for k in candidates:            # the same names first
        if names <= k.names:
            return k
    for k in candidates:            # then the same kinds of view and mutation
        if _by_kind(names) <= _by_kind(k.names):
            return k
    return None
