"""The corpus through the planned engines, in a pool of warm worker processes.

``run(cases, plan, record, jobs)`` returns a :class:`RunResult`: one :class:`Outcome` per
(engine, stage, case), and the time each engine took. Stages: ``cold``; ``cached`` (engines with
a persistent cache; NOTE [the cold run is the cache fill] in ``plan.py``); and, where the
key-variation phase is available, one ``variation.<name>`` per variation it ran.

# NOTE [where the regression command's time goes, and what is shared]
A corpus case costs a Dynamo trace, an AOT autograd trace and a compile per engine and stage;
eager is a few milliseconds. What is shared:
- *processes*: ``jobs`` workers (default 2, one per core) are started once, import torch, Dynamo,
  Inductor and the corpus once, and take cases in small chunks in corpus order, so one worker
  never waits on the other's slow theme; intra-op threads are set to 1 (two workers fill two
  cores; more threads only contend);
- *the cold run and the cache fill* (NOTE [the cold run is the cache fill] in ``plan.py``):
  one compile less per case and engine;
- *one case, every engine in a row*, in one worker: the case's inputs and eager code are hot.
What is not shared, so that a case's verdict is the one it has alone in a fresh process
(``aotcheck check -k CASE``), whatever ran before it: the in-memory caches, emptied before each
(case, engine), and the process-global settings, compared with the worker's start after each and
put back where a run left one changed (``isolation.py``; NOTE [a case's run as if alone]).
Also not shared, on purpose: the eager reference run. The oracle mutates the outputs and
arguments of both runs (output-mutation checks, backward into leaves), so each comparison needs
eager's run on fresh inputs; it is ~1% of a case.
A case recorded as crashing the process is never run (a SIGSEGV would take the worker down).
"""
from __future__ import annotations

import importlib
import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum

from ..check.divergence import Check, Divergence
from . import isolation
from .fingerprint import FailurePrint, fingerprint
from .plan import SHARES_FILL, Plan

# NOTE [the key-variation phase]
# The phase is ``aotcheck.targets.variations`` (branch keyvar): ``run_subject(engine, subject,
# per_case=N, a_dir=DIR)`` compiles nothing under A when ``a_dir`` is a cache directory a clean
# run under A already filled -- here, the case's cold run, so A costs nothing extra -- and runs
# each variation B from a copy of it. This module sees it through one interface,
# ``run_variations(engine, case, cache_dir) -> list[VariationOutcome]``; each outcome becomes a
# stage ``variation.<label>`` of the case, judged like the others (a recorded STALE HIT is a
# known failure; a new one is NEW). Where the module is missing, the phase is off and says so.
VARIATIONS_MODULE = "aotcheck.targets.variations"
VARIATIONS_PER_CASE = 1      # variations per case and engine; ``pick`` rotates the kinds over cases

# NOTE [inductor-lite varies half the corpus]
# A variation costs about what the case's cold run costs (a Dynamo trace and a compile under B):
# on ``all-torch`` the phase was ~40% of the torch engines' worker CPU, and the command ran
# 182.6 s on two idle cores (354.6 s CPU; tools/bench_check.py), over its 3-minute budget.
# torch-inductor-lite shares the torch engine's AOTAutogradCache key and adds Inductor's (the
# FX graph cache's) beside it, so it draws its rotated variation on the half of the cases whose
# id hashes even; the torch engine, which tests the AOTAutogradCache key alone, keeps one on every
# case. The variations ``pick`` adds besides the rotation (the stale grad-mode direction, and
# ``dynamic_shape`` on ``size_guards`` cases) run on both engines on every case.
HALF_VARIED = ("torch-inductor-lite",)


def variations_per_case(engine: str, case_id: str) -> int:
    """The rotated variations a case draws on ``engine``
    (NOTE [inductor-lite varies half the corpus]): ``VARIATIONS_PER_CASE``, or 0 on a half-varied engine for
    the odd half."""
    import hashlib
    if engine in HALF_VARIED and hashlib.sha256(f"vary:{case_id}".encode()).digest()[0] % 2:
        return 0
    return VARIATIONS_PER_CASE


_OK_VERDICTS = ("ok-hit", "ok-miss", "refused under B")


@dataclass(frozen=True)
class VariationOutcome:
    variation: str                    # a stable label: kind[target]=b
    verdict: str                      # "ok" or the bad verdict (STALE HIT, LOST HIT, FAILS UNDER B)
    detail: str = ""                  # the reason; for "ok", which ok (ok-hit, ok-miss, refused under B)
    fingerprint: FailurePrint | None = None


def variation_runner():
    """``run_variations`` over keyvar's module, or None while it is not installed."""
    try:
        mod = importlib.import_module(VARIATIONS_MODULE)
    except ModuleNotFoundError as e:
        if e.name != VARIATIONS_MODULE:
            raise
        return None

    def run_variations(engine, case, cache_dir) -> list[VariationOutcome]:
        sub = mod.run_subject(engine, mod.Subject.of_case(case), a_dir=cache_dir,
                              per_case=variations_per_case(engine.name, case.id))
        out = []
        for r in sub.results:
            label = r.variation.label.replace(":", ";")     # a record key is STAGE:CASE
            if r.verdict in _OK_VERDICTS:
                out.append(VariationOutcome(label, "ok", r.verdict))    # ok-hit, ok-miss, refused
                continue
            check = fingerprint(list(r.divergences))
            out.append(VariationOutcome(label, r.verdict, r.reason, FailurePrint(
                r.verdict.lower(), label, str(check) if check else "")))
        return out
    return run_variations


class Status(StrEnum):
    """How one stage of one case ended (``judge.py`` judges it against the record)."""
    PASS = "pass"
    FAIL = "fail"              # with its problems and their fingerprint
    NOT_RUN = "not run"        # a recorded crash: never run, it takes the process down
    SKIPPED = "skipped"        # the cached run of a failing cold run (the same failure, judged once)


@dataclass(frozen=True)
class Outcome:
    engine: str
    stage: str                        # cold | cached | variation.<name>
    case_id: str
    theme: str
    status: Status
    problems: tuple[Divergence | str, ...] = ()    # a str: a harness sentence (fuzz/fingerprint.py)
    fingerprint: FailurePrint | None = None
    seconds: float = 0.0


@dataclass
class RunResult:
    outcomes: list[Outcome] = field(default_factory=list)
    engine_seconds: dict[str, float] = field(default_factory=dict)   # worker CPU seconds
    wall_s: float = 0.0
    workers: int = 1
    variations_available: bool = False
    leaks: list[tuple[str, str, tuple[str, ...]]] = field(default_factory=list)   # (engine, case, what)


# ---------------------------------------------------------------- one case, one engine


def _run_case(engine, case, cache_dir, backward: bool):
    """engines.run_case, with the --forward-only switch; returns (run, problems)."""
    from ..check.harness import check_case
    from ..targets.engines import EngineRun, capture_problem
    with engine.measure() as stats:
        compiled = engine.compile(case.fn) if cache_dir is None else engine.compile_cached(case.fn, cache_dir)
        report = check_case(case, compiled, backward=case.backward and backward)
    run = EngineRun(report, stats)
    problems = list(report.divergences)
    cap = capture_problem(engine, run)
    if cap:
        problems.append(cap)
    return run, problems


def _guarded(fn):
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 - a harness crash is a failure, reported
        message = " ".join(str(e).split())[:300]
        return None, [Divergence(Check.HARNESS_RAISED, error=f"{type(e).__name__}: {message}")]


def _outcome(engine, stage, case, problems, t0, status: Status | None = None) -> Outcome:
    status = status or (Status.FAIL if problems else Status.PASS)
    return Outcome(engine, stage, case.id, case.theme, status, tuple(problems),
                   fingerprint(problems) if status is Status.FAIL else None, time.process_time() - t0)


def run_engine_case(engine, case, plan: Plan, variations=None) -> list[Outcome]:
    """Every stage of one case on one engine."""
    from ..targets.engines import cache_problem, outcome
    name, t0 = engine.name, time.process_time()
    cached = plan.cached and engine.supports_cache
    out = []
    with tempfile.TemporaryDirectory(prefix="aotcheck-check-") as d:
        if cached and name in SHARES_FILL:
            _, cold = _guarded(lambda: _run_case(engine, case, d, plan.backward))
            out.append(_outcome(name, "cold", case, cold, t0))
            if cold:
                out.append(_outcome(name, "cached", case, [], t0, status=Status.SKIPPED))
            else:
                t1 = time.process_time()
                run, p = _guarded(lambda: _run_case(engine, case, d, plan.backward))
                if not p and run is not None and (cp := cache_problem(run, case)):
                    p = [cp]
                out.append(_outcome(name, "cached", case, p, t1))
        else:
            _, cold = _guarded(lambda: _run_case(engine, case, None, plan.backward))
            out.append(_outcome(name, "cold", case, cold, t0))
            if cached:
                t1 = time.process_time()
                _, p = _guarded(lambda: outcome(engine, case, d))
                out.append(_outcome(name, "cached", case, p, t1))
        if variations is not None and plan.variations and engine.supports_cache and not cold:
            t1 = time.process_time()
            try:
                results = variations(engine, case, d)   # d: the cold run's cache, A's entries
            except Exception as e:  # noqa: BLE001
                p = [Divergence(Check.HARNESS_RAISED, error=f"{type(e).__name__}: {e}",
                                detail="in the key-variation phase")]
                out.append(_outcome(name, "variation", case, p, t1))
                results = []
            for r in results:
                p = [] if r.verdict == "ok" else [f"{r.verdict.lower()}: {r.detail}"]
                o = _outcome(name, f"variation.{r.variation}", case, p, t1)
                if p and r.fingerprint is not None:
                    o = Outcome(o.engine, o.stage, o.case_id, o.theme, o.status, o.problems,
                                r.fingerprint, o.seconds)
                out.append(o)
    return out


def not_run(engine: str, case, plan: Plan, reason: str, has_cache: bool) -> list[Outcome]:
    stages = ["cold"] + (["cached"] if plan.cached and has_cache else [])
    return [Outcome(engine, s, case.id, case.theme, Status.NOT_RUN, (f"not run: {reason}",)) for s in stages]


# ---------------------------------------------------------------- workers


_STATE: dict = {}


def _init_worker(plan: Plan, crashing: dict, flag_values: dict, beacon_dir: str | None = None) -> None:
    import torch

    from .. import flags
    torch.set_num_threads(1)
    flags.apply_overrides(flag_values)
    import torch._dynamo  # noqa: F401 - warm imports, once per worker
    if any("inductor" in n for n in plan.engines):
        import torch._inductor.compile_fx  # noqa: F401
    import functorch.compile  # noqa: F401

    from ..check.corpus import all_cases
    from ..targets.engines import get_engine
    _STATE.update(plan=plan, crashing=crashing, cases={c.id: c for c in all_cases()}, beacon=(
                  os.path.join(beacon_dir, f"{os.getpid()}.case") if beacon_dir else None),
                  engines=[get_engine(n) for n in plan.engines],
                  variations=variation_runner() if plan.variations else None)
    _STATE["start"] = isolation.snapshot()      # NOTE [a case's run as if alone]


CRASHED_NOW = ("compiled raised WorkerCrash: crashed the worker process in this run (a signal such "
               "as SIGSEGV while this case ran; confirmed alone in a fresh worker)")


# NOTE [a case's run as if alone]
# A case's verdict used to depend on what its worker ran before it, so that two runs of the
# regression command, whose two workers take chunks in whatever order they finish, disagreed on
# dozens of verdicts. Before each (case, engine) the worker empties the in-memory caches a fresh
# process starts without (``isolation.fresh_caches``); after it, it compares the process-global
# settings with the snapshot taken when the worker started and puts back any that differ,
# naming them in ``RunResult.leaks`` (the report prints them: a leak is a finding about the
# case, the engine or the harness, not a verdict). Measured cost: see
# NOTE [which state a case may leak] in ``isolation.py``.


def _work(case_ids: list[str]) -> tuple[list[Outcome], dict[str, float], list]:
    outcomes, seconds, leaks = [], defaultdict(float), []
    for cid in case_ids:
        for eng in _STATE["engines"]:
            t0 = time.process_time()
            outs, leak = work_pair(cid, eng)
            outcomes += outs
            leaks += leak
            seconds[eng.name] += time.process_time() - t0
    return outcomes, dict(seconds), leaks


def work_pair(cid: str, eng) -> tuple[list[Outcome], list]:
    """One (case, engine) in an initialised worker: its outcomes, and the state it leaked."""
    plan, crashing, case = _STATE["plan"], _STATE["crashing"], _STATE["cases"][cid]
    if _STATE.get("beacon"):        # NOTE [a case that kills its worker]
        with open(_STATE["beacon"], "w") as f:
            f.write(f"{cid}\t{eng.name}")
    reason = crashing.get((eng.name, cid))
    if reason == CRASHED_NOW:
        return [Outcome(eng.name, "cold", cid, case.theme, Status.FAIL, (CRASHED_NOW,),
                        FailurePrint("crash in process", "", "the worker process died"))], []
    if reason:
        return not_run(eng.name, case, plan, reason, eng.supports_cache), []
    isolation.fresh_caches()
    outcomes = run_engine_case(eng, case, plan, _STATE["variations"])
    after = isolation.snapshot()
    if found := isolation.leaks(_STATE["start"], after):
        stuck = isolation.restore(_STATE["start"], after)
        return outcomes, [(eng.name, cid, tuple(found + [f"not put back: {x}" for x in stuck]))]
    return outcomes, []


def crashing_of(record, plan: Plan, cases) -> dict[tuple[str, str], str]:
    """(engine, case id) -> the record's reason, for each case recorded as crashing the process."""
    return {(e, c.id): record.engines[e][c.id].reason for e in plan.engines for c in cases
            if e in record.engines and record.crashes(e, c.id)}


def run(cases, plan: Plan, record, jobs: int = 2, progress=None, chunk: int = 3) -> RunResult:
    """Run ``cases`` through ``plan`` in ``jobs`` worker processes (1: in this process)."""
    from .. import flags
    crashing = crashing_of(record, plan, cases)
    result = RunResult(workers=jobs, variations_available=variation_runner() is not None)
    ids = [c.id for c in cases]
    chunks = [ids[i:i + chunk] for i in range(0, len(ids), chunk)]
    t0 = time.perf_counter()

    def take(res, n):
        outs, secs, leaks = res
        result.outcomes += outs
        result.leaks += leaks
        for k, v in secs.items():
            result.engine_seconds[k] = result.engine_seconds.get(k, 0.0) + v
        if progress is not None:
            for _ in range(n):
                progress.advance()

    if jobs <= 1:
        _init_worker(plan, crashing, flags.overrides())
        for ch in chunks:
            take(_work(ch), len(ch))
    else:
        _run_pool(chunks, plan, crashing, jobs, take, {c.id: c for c in cases})
    result.wall_s = time.perf_counter() - t0
    order = {cid: i for i, cid in enumerate(ids)}
    eorder = {e: i for i, e in enumerate(plan.engines)}
    result.outcomes.sort(key=lambda o: (eorder[o.engine], order[o.case_id], o.stage != "cold", o.stage))
    result.leaks.sort(key=lambda x: (eorder[x[0]], order[x[1]]))
    return result


def default_jobs() -> int:
    return max(1, min(2, os.cpu_count() or 1))


# NOTE [a case that kills its worker]
# A case may crash the process (a SIGSEGV inside torch) without being recorded as doing so; the
# pool then breaks and every unfinished chunk fails with it. Each worker writes the (case,
# engine) it is about to run to a file of its own (its beacon); after a break, each beaconed pair
# runs again alone in a fresh one-worker pool. A pair that breaks that pool too is a crash: it is
# reported as a failure (check "crash in process") and not run again; every unfinished chunk then
# runs in a new pool.


def _spawn(jobs, plan, crashing, beacons):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from .. import flags
    ctx = multiprocessing.get_context("spawn")   # no fork of a process with torch's threads
    return ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_init_worker,
                               initargs=(plan, dict(crashing), flags.overrides(), beacons))


def _run_pool(chunks, plan, crashing, jobs, take, cases) -> None:
    from concurrent.futures import as_completed
    from concurrent.futures.process import BrokenProcessPool
    crashing = dict(crashing)
    pending = [list(ch) for ch in chunks]
    while pending:
        with tempfile.TemporaryDirectory(prefix="aotcheck-beacons-") as beacons:
            pool = _spawn(jobs, plan, crashing, beacons)
            futures = {pool.submit(_work, ch): ch for ch in pending}
            pending = []
            for f in as_completed(futures):
                try:
                    res = f.result()
                except BrokenProcessPool:
                    pending.append(futures[f])
                    continue
                take(res, len(futures[f]))
            pool.shutdown(wait=True, cancel_futures=True)
            if not pending:
                return
            suspects = set()
            for name in os.listdir(beacons):
                with open(os.path.join(beacons, name)) as fh:
                    cid, _, eng = fh.read().partition("\t")
                if (eng, cid) not in crashing:
                    suspects.add((cid, eng))
        if not suspects:
            raise RuntimeError("the worker pool broke with no case running to blame")
        confirmed = 0
        for cid, eng in sorted(suspects):
            alone = Plan((eng,), plan.cached, plan.variations, plan.backward)
            pool = _spawn(1, alone, crashing, None)
            try:
                pool.submit(_work, [cid]).result()
            except BrokenProcessPool:
                crashing[(eng, cid)] = CRASHED_NOW
                confirmed += 1
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        if not confirmed:      # a crash that does not repeat alone: blame every suspect, not loop
            crashing.update({(eng, cid): CRASHED_NOW for cid, eng in suspects})
