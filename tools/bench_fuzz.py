"""Fuzzer throughput: programs per second for each part of a fuzz run.

Usage: python tools/bench_fuzz.py [N] [--engine torch] [--extensions all|none] [--retrace-cached]
Prints, over the same N generated programs (seeded, after a warm-up of 10 not counted):
generation alone (drawing a program executes it on real tensors), eager forward+backward,
compiled cold (compile into an empty cache + oracle), compiled cached (a second, fresh compile
from the filled cache + oracle; for the torch engine the graphs of the cold run's trace compiled
again, NOTE [the cached run reuses Dynamo's trace], or with ``--retrace-cached`` a second Dynamo
trace), and the whole loop, as the fuzz runner does it
(``aotcheck.fuzz.runner.run_outcome``, with the runner's GC settings). Each row gives wall-clock
and CPU-time (this process) rates, and the load average is printed: on a shared machine the
CPU-time rate is what the machine would give this process alone.
A benchmark, not a test: it prints figures and asserts nothing.
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

from hypothesis import HealthCheck, given, seed, settings


class _Clock:
    def __init__(self):
        self.wall = self.cpu = 0.0

    def __enter__(self):
        self._w, self._c = time.perf_counter(), time.process_time()

    def __exit__(self, *exc):
        self.wall += time.perf_counter() - self._w
        self.cpu += time.process_time() - self._c


def main() -> None:
    n = int(next((a for a in sys.argv[1:] if a.isdigit()), 50))
    engine_name = sys.argv[sys.argv.index("--engine") + 1] if "--engine" in sys.argv else "torch"
    from aotcheck.check.oracle import check
    from aotcheck.fuzz.programs import run_eager
    from aotcheck.fuzz.runner import (_DYNAMO_ENGINES, _global_state, _leak, default_extensions,
                                      quiet_gc, run_outcome)
    from aotcheck.strategies import programs
    from aotcheck.targets.engines import get_engine

    engine = get_engine(engine_name)
    engine.retrace_cached = "--retrace-cached" in sys.argv
    ext = default_extensions(engine_name)
    if "--extensions" in sys.argv:
        ext = {"all": "all", "none": ()}[sys.argv[sys.argv.index("--extensions") + 1]]
    import torch._dynamo  # noqa: F401 - once per process (1.7 s): drawing a program imports it
    strategy = programs(min_statements=1 if engine_name in _DYNAMO_ENGINES else 0, extensions=ext)
    drawn = []
    gen = _Clock()

    @seed(0)
    @settings(max_examples=n + 10, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(p):
        drawn.append(p)

    with gen:
        draw()
    warm, drawn = drawn[:10], drawn[10:]
    for p in warm:
        run_outcome(p, engine, cached=True)
    parts = {"eager": _Clock(), "compiled cold": _Clock(), "compiled cached": _Clock(),
             "whole (runner)": _Clock()}
    broken = 0
    with quiet_gc():
        for p in drawn:
            fn, make = p.to_function(), p.make_inputs
            before = _global_state()   # some programs leak thread-local state (a finding)
            try:
                with parts["eager"]:
                    try:
                        run_eager(fn, make())
                    except Exception:  # noqa: BLE001 - timing only
                        pass
                with tempfile.TemporaryDirectory() as d:
                    with parts["compiled cold"]:
                        compiled = engine.compile_cached(fn, d, record=True) if engine.supports_cache \
                            else engine.compile(fn)
                        check(fn, compiled, make)
                    _leak(before)
                    if engine.supports_cache:   # as the runner does it (--retrace-cached: traced again)
                        with parts["compiled cached"]:
                            check(fn, engine.recompile_cached(compiled, fn, d), make)
                _leak(before)
                with parts["whole (runner)"]:
                    run_outcome(p, engine, cached=True)
            except Exception:  # noqa: BLE001 - a program that breaks the process state
                broken += 1
                _leak(before)
    k = len(drawn)
    load = os.getloadavg()
    print(f"engine {engine_name}: {k} programs (extensions: {ext or 'none'}); load average "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on {os.cpu_count()} CPUs; {broken} programs "
          "raised outside the oracle (torch left the process in a bad state)")
    print(f"{'part':<26}{'wall s':>8}{'programs/s':>12}{'CPU s':>8}{'programs/CPU-s':>16}")
    rows = [("generation", gen)] + list(parts.items())
    cold_cached = _Clock()
    cold_cached.wall = gen.wall * k / (k + 10) + parts["compiled cold"].wall + parts["compiled cached"].wall
    cold_cached.cpu = gen.cpu * k / (k + 10) + parts["compiled cold"].cpu + parts["compiled cached"].cpu
    rows.append(("generation+cold+cached", cold_cached))
    for part, c in rows:
        if c.wall:
            print(f"{part:<26}{c.wall:>8.2f}{k / c.wall:>12.1f}{c.cpu:>8.2f}{k / max(c.cpu, 1e-9):>16.1f}")


if __name__ == "__main__":
    main()
