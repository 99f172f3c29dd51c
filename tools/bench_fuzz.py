"""Fuzzer throughput: programs per second for each part of a fuzz run.

Usage: python tools/bench_fuzz.py [N] [--engine aotcheck]
Prints, over the same N generated programs (seeded): generation alone (drawing a program
executes it on real tensors), eager forward+backward, compiled cold (compile + oracle), and
compiled cached (a second, fresh compile from the filled cache + oracle), and the whole.
A benchmark, not a test: it prints figures and asserts nothing.
"""
from __future__ import annotations

import sys
import tempfile
import time

from hypothesis import HealthCheck, given, seed, settings


def main() -> None:
    n = int(next((a for a in sys.argv[1:] if a.isdigit()), 50))
    engine_name = sys.argv[sys.argv.index("--engine") + 1] if "--engine" in sys.argv else "aotcheck"
    from aotcheck.targets.engines import get_engine
    from aotcheck.check.oracle import check
    from aotcheck.fuzz.programs import run_eager
    from aotcheck.strategies import programs

    engine = get_engine(engine_name)
    drawn = []
    t0 = time.perf_counter()

    @seed(0)
    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(programs())
    def draw(p):
        drawn.append(p)

    draw()
    gen = time.perf_counter() - t0
    timings = {"eager": 0.0, "compiled cold": 0.0, "compiled cached": 0.0}
    for p in drawn:
        fn, make = p.to_function(), p.make_inputs
        t = time.perf_counter()
        run_eager(fn, make())
        timings["eager"] += time.perf_counter() - t
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            if engine.supports_cache:
                check(fn, engine.compile_cached(fn, d), make)
            else:
                check(fn, engine.compile(fn), make)
            timings["compiled cold"] += time.perf_counter() - t
            if engine.supports_cache:
                t = time.perf_counter()
                check(fn, engine.compile_cached(fn, d), make)
                timings["compiled cached"] += time.perf_counter() - t
    k = len(drawn)
    print(f"engine {engine_name}: {k} programs (hypothesis calls, including rejected draws: see STATS)")
    print(f"{'part':<18}{'seconds':>10}{'programs/s':>12}")
    print(f"{'generation':<18}{gen:>10.2f}{k / gen:>12.1f}")
    for part, sec in timings.items():
        if sec:
            print(f"{part:<18}{sec:>10.2f}{k / sec:>12.1f}")
    total = gen + sum(timings.values())
    print(f"{'whole fuzz loop':<18}{total:>10.2f}{k / total:>12.1f}")


if __name__ == "__main__":
    main()
