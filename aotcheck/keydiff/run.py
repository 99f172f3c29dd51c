"""run: a program through the differential, as a user runs it (``aotcheck keydiff PROGRAM.py``).

For each input of compilation of the program (``setters.inputs_of``: its VARY entries, or the
derived storage relations and ambient settings), every value is compiled cold into a cache
directory of its own and checked against eager under that value (``worker.py``: the values of
a ``setup`` input each in a process of their own, the others one after another in one
process); every pair of values is compared (``differential.compare``); each KEY GAP is
confirmed in both directions, the writer's directory read by the other value in a new process
(``confirm.py``); and the differing component is named (``naming.py``).
"""
from __future__ import annotations

import json
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

from . import confirm as C
from . import naming, program, setters
from .config_run import FieldResult
from .differential import Finding, Verdict, compare
from .observe import Observation
from .program import Kind
from .worker import Request, run as run_worker
from ..engine import serial

SCHEMA = 1
KINDS_ALL = ("config", "reached", "ambient", "registration", "storage", "entry")


@dataclass(frozen=True)
class Comparison:
    """Value ``a`` against value ``b`` of one input: the verdict, the component in words, and the
    confirmations of a KEY GAP (one per direction)."""
    input: str
    kind: Kind
    a: int
    b: int
    a_text: str
    b_text: str
    verdict: Verdict
    component: str
    confirmations: tuple[C.Confirmation, ...] = ()

    @property
    def stale(self) -> bool:
        return any(c.outcome is C.Outcome.STALE_HIT for c in self.confirmations)

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "Comparison":
        return serial.from_data(Comparison, d)


@dataclass(frozen=True)
class ProgramResult:
    program: str
    upstream: str
    backend: str
    comparisons: tuple[Comparison, ...]
    schema: int = SCHEMA

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "ProgramResult":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"result schema {d.get('schema')}, expected {SCHEMA}")
        return serial.from_data(ProgramResult, d)


def run_program(path, *, jobs: int = 2, confirm: bool = True, only: str | None = None,
                target: str = "torch") -> ProgramResult:
    """The differential over one program file (module docstring). ``only``: one input's name;
    ``target``: whose cache (``torch`` or ``aotcheck``: ``worker.Request``)."""
    prog = program.load(path)
    module = prog.module()
    inputs = [(i, v) for i, v in setters.inputs_of(module) if only is None or i.name == only]
    if only is not None and not inputs:
        raise program.ProgramError(f"{path}: no input named {only!r}")
    with tempfile.TemporaryDirectory(prefix="aotcheck-keydiff-") as tmp:
        observed = _observe_all(prog.path, inputs, Path(tmp), jobs, target)
        comparisons = [_compare(module, inp, a, b, observed)
                       for inp, values in inputs for a, b in combinations(range(len(values)), 2)]
        comparisons = _confirm_all(prog.path, comparisons, observed, Path(tmp), jobs, target) \
            if confirm else comparisons
    return ProgramResult(prog.path, prog.upstream, "aotcheck" if target == "aotcheck" else prog.backend,
                         tuple(comparisons))


def _dir(root: Path, name: str, index: int) -> str:
    safe = "".join(c if c.isalnum() else "_" for c in name)
    return str(root / safe / str(index))


def _observe_all(path: str, inputs, root: Path, jobs: int, target: str) -> dict[tuple[str, int], Observation]:
    """Every value of every input compiled cold (module docstring)."""
    reqs = [(inp.kind, Request(path, inp.name, k, _dir(root, inp.name, k), target=target))
            for inp, values in inputs for k in range(len(values))]
    return {(r.name, r.index): o for r, o in _run_batched(reqs, jobs)}


def _run_batched(reqs: list, jobs: int) -> list[tuple[Request, Observation]]:
    """(kind, request) pairs run in new processes: a ``setup`` input's each alone, the others
    one after another in ``jobs`` shared processes."""
    batches = [[r] for kind, r in reqs if kind is Kind.SETUP]
    shared = [r for kind, r in reqs if kind is not Kind.SETUP]
    step = max(1, -(-len(shared) // max(1, jobs)))
    batches += [shared[k:k + step] for k in range(0, len(shared), step)]
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        results = list(pool.map(run_worker, batches))
    return [(r, o) for batch, obs in zip(batches, results) for r, o in zip(batch, obs)]


def _compare(module, inp, a: int, b: int, observed) -> Comparison:
    verdict = compare(observed[(inp.name, a)], observed[(inp.name, b)])
    component = naming.component(module, inp, a, b)
    return Comparison(inp.name, inp.kind, a, b, inp.values[a], inp.values[b], verdict, component)


def _confirm_all(path: str, comparisons, observed, root: Path, jobs: int, target: str) -> list[Comparison]:
    """Each KEY GAP confirmed A -> B, and B -> A where that was no stale hit (confirm.py)."""
    out = list(comparisons)
    first = [(n, c.a, c.b) for n, c in enumerate(out) if c.verdict.finding is Finding.KEY_GAP]
    for n, conf in _confirm_round(path, out, first, observed, root, jobs, target):
        out[n] = _with(out[n], conf)
    second = [(n, c.b, c.a) for n, c in enumerate(out) if c.verdict.finding is Finding.KEY_GAP and not c.stale]
    for n, conf in _confirm_round(path, out, second, observed, root, jobs, target):
        out[n] = _with(out[n], conf)
    return out


def _confirm_round(path, comparisons, todo, observed, root: Path, jobs: int, target: str):
    if not todo:
        return []
    kinds = {c.input: c.kind for c in comparisons}
    reqs = [(kinds[comparisons[n].input],
             C.request(path, comparisons[n].input, y, _dir(root, comparisons[n].input, x), root, target))
            for n, x, y in todo]
    done = _run_batched(reqs, jobs)
    by_req = {id(r): o for r, o in done}
    return [(n, C.decide(x, y, observed[(comparisons[n].input, y)], by_req[id(req)]))
            for (n, x, y), (_, req) in zip(todo, reqs)]


def _with(c: Comparison, conf: C.Confirmation) -> Comparison:
    return Comparison(c.input, c.kind, c.a, c.b, c.a_text, c.b_text, c.verdict, c.component,
                      c.confirmations + (conf,))


# ---------------------------------------------------------------- the census


@dataclass(frozen=True)
class CensusResult:
    """A run: the torch release, each program's result, each config field's, wall seconds."""
    torch: str
    programs: tuple[ProgramResult, ...]
    config: tuple[FieldResult, ...]
    seconds: float = 0.0
    schema: int = SCHEMA

    def to_json(self) -> dict:
        return serial.to_data(self)

    @staticmethod
    def from_json(d: dict) -> "CensusResult":
        if d.get("schema") != SCHEMA:
            raise ValueError(f"keydiff result schema {d.get('schema')}, expected {SCHEMA}")
        return serial.from_data(CensusResult, d)

    def save(self, path) -> Path:
        p = Path(path)
        p.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return p


def run_census(kinds=KINDS_ALL, *, jobs: int = 2, only: list[str] | None = None, confirm: bool = True,
               lost_hits: bool = False, gap_dir=None, progress=None, target: str = "torch") -> CensusResult:
    """The installed torch's census (``census.load``): its config fields (``config_run``) and its
    probe programs of the kinds asked for, through the differential. ``only``: config fields
    or programs whose name contains one of these strings. A config field's KEY GAP is confirmed
    by a program written into ``gap_dir`` (kept there, so that a reproducer can be made from
    it; default: a temporary folder)."""
    import time

    from . import census, config_run
    data = census.load()
    start = time.perf_counter()
    config = config_run.run_config(data, jobs=jobs, only=only, lost_hits=lost_hits, progress=progress,
                                   target=target) \
        if "config" in kinds else []
    names = [n for k in kinds for n in data["programs"].get(k, []) if not only or any(o in n for o in only)]
    programs = []
    with tempfile.TemporaryDirectory(prefix="aotcheck-keydiff-gaps-") as tmp:
        paths = [census.PROGRAMS_DIR / f"{n}.py" for n in names]
        if confirm:      # a config field's gap, confirmed on its probe with real kernels
            where = Path(gap_dir) if gap_dir else Path(tmp)
            where.mkdir(parents=True, exist_ok=True)
            paths += [config_run.confirm_gap(f, where) for f in config if f.verdict.finding is Finding.KEY_GAP]
        for path in paths:
            programs.append(run_program(path, jobs=jobs, confirm=confirm, target=target))
            if progress:
                progress(len(programs), len(paths))
    return CensusResult(data["torch"], tuple(programs), tuple(config), time.perf_counter() - start)
