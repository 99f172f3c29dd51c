"""variation_corpus: the key-variation pass over the corpus, in a pool of processes.

``run_corpus(engine_name, case_ids, per_case=K, jobs=N)`` splits the cases into chunks, runs
each chunk in a spawned process (``run_cases``: a case an engine is known to crash on is not
varied; every other one through ``variations.run_subject``), and returns one
``SubjectRun`` per case. ``tally`` counts the verdicts; ``format_results`` prints the bad ones.

# NOTE [a worker that dies]
A variation can kill its process (a crash inside torch, or inside eager when the variation
made the function invalid). Each worker writes a progress file, a line before A, before each
B, before each eager and compiled call, and the whole ``SubjectRun`` after each case. When the
pool breaks, finished cases are read back from those files, the case that was running is run
again alone, and where it dies alone, the step it was taking is its result: "eager died under
B" when eager's call was running, else FAILS UNDER B.
"""
from __future__ import annotations

import contextlib
import tempfile
from pathlib import Path

import torch

from .conditions import _PROGRESS, mark
from .variations import (BAD, EAGER_DIED, FAILS_UNDER_B, VERDICTS, Result, Subject, SubjectRun, Variation,
                         run_subject)


def run_cases(engine_name: str, case_ids: list[str], per_case: int | None = None,
              repro_dir: str | None = None, progress: str | None = None) -> list[SubjectRun]:
    """The pass over these corpus cases in this process (a pool worker's task). Cases an engine
    is known to crash on are not varied; one it is known to get wrong is varied against B's own
    cold compile (NOTE [a variation of a subject the engine gets wrong] in variations.py). ``progress``: a file that gets
    a line before A, before each B and after each case (``run_corpus`` reads it after a crash)."""
    from ..check.corpus import all_cases
    from .engines import get_engine
    from .known_failures import crashes, known_failure
    engine = get_engine(engine_name)
    cases = {c.id: c for c in all_cases()}
    out = []
    with contextlib.ExitStack() as stack:
        if progress is not None:
            _PROGRESS[:] = [stack.enter_context(open(progress, "a"))]
            stack.callback(_PROGRESS.clear)
        for cid in case_ids:
            c = cases[cid]
            reason = known_failure(engine_name, cid) or (c.xfail if engine_name == "aotcheck" else None)
            if crashes(reason):       # a known wrong result is varied against B cold (run_relative)
                run = SubjectRun(cid, engine_name, f"known crash, not varied: {reason}")
            else:
                run = run_subject(engine, Subject.of_case(c), per_case=per_case, repro_dir=repro_dir)
            mark("DONE\t" + run.to_json())
            out.append(run)
    return out


def _worker_init() -> None:
    torch.set_num_threads(1)


def run_corpus(engine_name: str, case_ids: list[str] | None = None, *, per_case: int | None = 3,
               jobs: int = 1, repro_dir: str | None = None, chunk: int = 8) -> list[SubjectRun]:
    """The pass over the corpus (or ``case_ids``), split over ``jobs`` spawned processes.
    A case that kills its process is run again alone (NOTE [a worker that dies])."""
    from ..check.corpus import all_cases
    ids = case_ids if case_ids is not None else [c.id for c in all_cases()]
    if jobs <= 1:
        return run_cases(engine_name, ids, per_case, repro_dir)
    done: dict[str, SubjectRun] = {}
    todo = [(ids[k:k + chunk], False) for k in range(0, len(ids), chunk)]   # (cases, alone?)
    with tempfile.TemporaryDirectory(prefix="aotcheck-var-progress-") as tmp:
        for attempt in range(2 * len(ids) + 1):
            if not todo:
                break
            shared = [part for part, alone in todo if not alone]
            batches = ([shared] if shared else []) + [[part] for part, alone in todo if alone]
            todo = []
            for b, batch in enumerate(batches):
                files = [str(Path(tmp) / f"{attempt}-{b}-{k}.txt") for k in range(len(batch))]
                alone = len(batch) == 1 and b >= (1 if shared else 0)
                for part, f in _run_batch(engine_name, batch, files, per_case, repro_dir,
                                          1 if alone else jobs, done):
                    todo += _after_crash(engine_name, part, f, alone, done)
    return [done[c] for c in ids if c in done]


def _run_batch(engine_name, batch, files, per_case, repro_dir, jobs, done) -> list:
    """Run the chunks of ``batch`` in one pool; fill ``done``; return the (chunk, progress
    file) of each chunk whose pool broke."""
    import concurrent.futures as cf
    import multiprocessing as mp
    broken = []
    with cf.ProcessPoolExecutor(min(jobs, len(batch)), mp_context=mp.get_context("spawn"),
                                initializer=_worker_init) as pool:
        futures = [pool.submit(run_cases, engine_name, part, per_case, repro_dir, f)
                   for part, f in zip(batch, files)]
        for part, f, fut in zip(batch, files, futures):
            try:
                for run in fut.result():
                    done[run.subject] = run
            except cf.process.BrokenProcessPool:
                broken.append((part, f))
    return broken


def _after_crash(engine_name: str, part: list, progress: str, alone: bool, done: dict) -> list:
    """Read a broken chunk's progress file: keep its finished cases; the case that was running
    is blamed where it ran ``alone`` (its own pool), else queued to run alone; the rest of the
    chunk is queued again. Returns the new (cases, alone?) entries."""
    started, calling = None, ""
    for line in Path(progress).read_text().splitlines() if Path(progress).exists() else []:
        kind, _, rest = line.partition("\t")
        if kind == "DONE":
            run = SubjectRun.from_json(rest)
            done[run.subject] = run
            started = None
        elif kind == "CALL":
            calling = rest
        else:
            started, calling = rest, ""
    left = [c for c in part if c not in done]
    if started is None:
        return [(left, False)] if left else []
    name, _, v = started.partition("\t")
    rest = [(([c for c in left if c != name]), False)] if len(left) > 1 else []
    if not alone:
        return [([name], True)] + rest
    crash = () if not v else (Result(name, engine_name, Variation.from_json(v),
                                     EAGER_DIED if calling == "eager" else FAILS_UNDER_B,
                                     f"the process died in the {calling or 'compile'} call under B"
                                     + (": the variation makes the function invalid" if calling == "eager"
                                        else " (a crash inside the engine or torch)")),)
    done[name] = SubjectRun(name, engine_name, "ok" if v else "A killed the process", crash)
    return rest


def tally(runs: list[SubjectRun]) -> dict[str, int]:
    """Verdict counts over a pass, plus ``not varied`` (subjects whose A did not run clean)."""
    counts = {v: 0 for v in VERDICTS}
    counts["not varied"] = 0
    for r in runs:
        if r.a != "ok" and not r.results:
            counts["not varied"] += 1
        for x in r.results:
            counts[x.verdict] += 1
    return counts


def format_results(runs: list[SubjectRun], verbose: bool = False) -> str:
    lines = []
    for r in runs:
        for x in r.results:
            if verbose or x.verdict in BAD:
                lines.append(str(x) + (f"\n    reproducer: {x.repro}" if x.repro else ""))
    c = tally(runs)
    lines.append(", ".join(f"{k}: {n}" for k, n in c.items()))
    return "\n".join(lines)
