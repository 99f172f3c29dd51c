"""The cached run in a new process: a warm start that loads what another process wrote.

``WarmWorker(engine_name)`` keeps one spawned Python process. ``submit(program, cache_dir)``
hands it a program (as JSON) and the cache directory the fuzzing process filled with its cold
compile; the worker compiles the program from that cache (``engine.compile_cached``), runs the
oracle on it and returns ``(problems, hit)`` through a future, so the fuzzing process draws and
compiles the next program while the worker runs this one (the second CPU core).

# NOTE [one worker, fresh state per program]
A process per program would cost an ``import torch`` (seconds) each. The worker is one process
that never wrote the entries it loads; before each program ``compile_cached`` resets Dynamo and
Inductor's in-memory caches (``torch._dynamo.reset()``, ``clear_caches()``, which also forgets
the cache directory), so each lookup goes to the files, as in a process started afresh. It takes the fuzzing
process's flag overrides (``flags.overrides()``): without them, the test suite's CHECK_GRAPHS
(a cache-key component) made every warm lookup of aotcheck's engine miss.
"""
from __future__ import annotations

import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor

_ENGINE = None


def _init(engine_name: str, overrides: dict | None = None) -> None:
    global _ENGINE
    from .. import flags
    from ..targets.engines import get_engine
    flags.apply_overrides(overrides or {})  # the fuzzing process's flags (the test suite's CHECK_GRAPHS)
    _ENGINE = get_engine(engine_name)


def _run(program_json: str, cache_dir: str) -> tuple[list, bool]:
    from ..check.divergence import Check, Divergence
    from ..check.oracle import check
    from .programs import Program
    program = Program.from_json(program_json)
    fn = program.to_function()
    try:
        with _ENGINE.measure() as stats:
            report = check(fn, _ENGINE.compile_cached(fn, cache_dir), program.make_inputs)
    except Exception as e:  # noqa: BLE001 - the oracle should not raise; report it
        return [Divergence(Check.ORACLE_RAISED, error=f"{type(e).__name__}: {e}")], False
    hit = bool(stats.hits) and not stats.misses and not stats.bypasses
    if report.ok and not hit:
        return [Divergence(Check.CACHED_RUN_MISS, actual=f"hits={stats.hits} misses={stats.misses} "
                           f"bypasses={stats.bypasses}")], False
    return list(report.divergences), hit


class WarmWorker:
    def __init__(self, engine_name: str):
        ctx = multiprocessing.get_context("spawn")
        from .. import flags
        self.pool = ProcessPoolExecutor(1, mp_context=ctx, initializer=_init,
                                        initargs=(engine_name, flags.overrides()))

    def submit(self, program, cache_dir: str) -> Future:
        return self.pool.submit(_run, program.to_json(), str(cache_dir))

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
