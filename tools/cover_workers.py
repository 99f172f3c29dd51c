"""The regression command's work in warm workers, under ``coverage``: what ``tools/quick_cover.py``
(per (case, engine)) and ``tools/torch_coverage.py`` (the whole run) share.

Both hand the corpus to ``jobs`` spawned worker processes that run it exactly as ``aotcheck check``
does (``aotcheck.regress.run.work_pair``: one (case, engine) at a time, every stage: cold, cached,
the key variations), each worker with one ``coverage.Coverage`` over some files of the installed
torch::

    pool = cover_workers.pool(2, "all-torch", ["_functorch/partitioners.py"])
    for lines in cover_workers.results(pool, [pool.submit(my_chunk, ids) for ids in chunks], "cover"):
        ...                 # my_chunk ran in a worker: cover_workers.take() gave it its lines

# NOTE [coverage starts before torch]
A worker starts its ``Coverage`` before anything imports torch, so the statements a module runs
when it is imported (its ``def`` and ``class`` lines, its constants) count as run, as they would
under ``coverage run``. That needs the worker to reach ``init`` with torch not yet imported: a
spawned worker first imports the parent's main script (as ``__mp_main__``) and unpickles the
initializer's arguments, so the tools keep torch and aotcheck out of their module level, and
``init`` takes plain data (engine names, not a ``Plan``). A tool that wants only what a call
ran (``quick_cover`` per pair) calls ``take()`` before it, which drops everything so far.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import Callable

_WORKER: dict = {}


def torch_dir() -> str:
    """The installed torch package's directory, found without importing torch."""
    spec = importlib.util.find_spec("torch")
    return os.path.realpath(list(spec.submodule_search_locations)[0])


def init(engines: str, crashing: dict, flag_values: dict, files: list[str] | None,
         branch: bool = False, setup: Callable[[], None] | None = None) -> None:
    """A worker's initializer: coverage over torch/``files`` (glob patterns; None: no coverage)
    started first (NOTE [coverage starts before torch]), then the regression command's worker
    (``run._init_worker``) for ``engines`` (``all-torch``, ...), then the tool's ``setup`` (a
    module-level function of the tool: pickled by name like the tasks, it runs in the same module
    object as they do, ``__mp_main__`` for the script that was run)."""
    if files is not None:
        import coverage
        top = torch_dir()
        cov = coverage.Coverage(data_file=None, config_file=False, branch=branch,
                                include=[os.path.join(top, f) for f in files])
        _WORKER.update(cov=cov, top=top)
        cov.start()
    from aotcheck.regress import run
    from aotcheck.regress.plan import Plan, engines_of
    run._init_worker(Plan(engines_of(engines)), crashing, flag_values)
    if setup is not None:
        setup()


def take() -> tuple[dict[str, list[int]], dict[str, list[tuple[int, int]]]]:
    """The lines (and, with ``branch``, the arcs) run since the worker started or since the last
    ``take``, per file relative to torch's directory, and coverage restarted from nothing.
    Without coverage: two empty dicts."""
    cov = _WORKER.get("cov")
    if cov is None:
        return {}, {}
    cov.stop()
    data = cov.get_data()
    files = [f for f in data.measured_files() if f.endswith(".py")]   # not generated code
    rel = {f: os.path.relpath(f, _WORKER["top"]) for f in files}
    lines = {rel[f]: sorted(data.lines(f) or ()) for f in files}
    arcs = {rel[f]: sorted(data.arcs(f) or ()) for f in files} if data.has_arcs() else {}
    cov.erase()
    cov.start()
    return lines, arcs


def work_pair(cid: str, engine):
    """``run.work_pair`` in this worker: the (case, engine)'s outcomes and leaks."""
    from aotcheck.regress import run
    return run.work_pair(cid, engine)


def engines() -> list:
    """The worker's engines, in the plan's order."""
    from aotcheck.regress import run
    return list(run._STATE["engines"])


def pool(jobs: int, engine_names: str, files: list[str] | None, branch: bool = False,
         setup: Callable[[], None] | None = None, pattern: str = ""):
    """``jobs`` spawned workers (``init``), with the crashing cases of the built-in record and the
    flags of this process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from aotcheck import flags
    from aotcheck.check.corpus import all_cases
    from aotcheck.regress import record, run
    from aotcheck.regress.plan import Plan, engines_of
    cases = [c for c in all_cases() if pattern in c.id]
    crashing = run.crashing_of(record.load(None), Plan(engines_of(engine_names)), cases)
    ctx = multiprocessing.get_context("spawn")   # no fork of a process with torch's threads
    return ProcessPoolExecutor(jobs, mp_context=ctx, initializer=init,
                               initargs=(engine_names, crashing, flags.overrides(), files, branch, setup))


def results(futures: list, label: str, every: int = 25) -> list:
    """Each future's result, in the order they finish, with a progress line on stderr."""
    from concurrent.futures import as_completed
    out, t0 = [], time.perf_counter()
    for k, f in enumerate(as_completed(futures), 1):
        out.append(f.result())
        if k % every == 0 or k == len(futures):
            print(f"  {label}: {k}/{len(futures)} chunks, {time.perf_counter() - t0:.0f}s",
                  file=sys.stderr, flush=True)
    return out


def chunks(pattern: str = "", size: int = 2) -> list[list[str]]:
    """The corpus's case ids (those containing ``pattern``), in corpus order, in chunks."""
    from aotcheck.check.corpus import all_cases
    ids = [c.id for c in all_cases() if pattern in c.id]
    return [ids[i:i + size] for i in range(0, len(ids), size)]
