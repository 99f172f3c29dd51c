"""The cache-key variation pass over the corpus: verdict counts and time, per engine.

Usage: python tools/bench_variations.py [ENGINE ...] [--per-case K|all] [--jobs N] [--cases N]
       [--repros DIR] [--json OUT]
Runs ``aotcheck.targets.variation_corpus.run_corpus`` for each engine (default: aotcheck torch):
each corpus case compiled under A once, then K variations of it (``pick``; ``all``: every one
``derive`` finds) each under B from a copy of A's cache directory, in N spawned processes.
Prints, per engine, the verdict counts, the cases not varied (known failures, A failing,
nothing saved), every bad verdict (STALE HIT, LOST HIT, FAILS UNDER B) with its reproducer,
wall-clock seconds and the load average before and after. A benchmark, not a test: it
prints figures and asserts nothing.
"""
from __future__ import annotations

import json
import os
import sys
import time


def _arg(name: str, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def main() -> None:
    from aotcheck.check.corpus import all_cases
    from aotcheck.targets import variation_corpus as VC
    from aotcheck.targets import variations as V
    flags_with_value = {"--per-case", "--jobs", "--cases", "--repros", "--json"}
    skip = {i + 1 for i, a in enumerate(sys.argv) if a in flags_with_value}
    engines = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("--") and i not in skip] \
        or ["aotcheck", "torch"]
    per = _arg("--per-case", "3")
    per_case = None if per == "all" else int(per)
    jobs = int(_arg("--jobs", "2"))
    ids = [c.id for c in all_cases()]
    n = _arg("--cases", None)
    if n is not None:
        ids = ids[::max(1, len(ids) // int(n))][:int(n)]
    repros = _arg("--repros", None)
    dump = {}
    for engine in engines:
        load0 = os.getloadavg()
        t0 = time.perf_counter()
        runs = VC.run_corpus(engine, ids, per_case=per_case, jobs=jobs, repro_dir=repros)
        wall = time.perf_counter() - t0
        load1 = os.getloadavg()
        counts = VC.tally(runs)
        b_runs = sum(len(r.results) for r in runs)
        print(f"== {engine}: {len(ids)} cases, {b_runs} variations run, per case {per}, "
              f"{jobs} processes: {wall:.1f} s wall ({wall / max(b_runs, 1) * jobs:.2f} s per "
              f"variation per process); load average {load0[0]:.1f} before, {load1[0]:.1f} after")
        print("   " + ", ".join(f"{k}: {v}" for k, v in counts.items()))
        kinds: dict[str, int] = {}
        for r in runs:
            for x in r.results:
                kinds[x.variation.kind] = kinds.get(x.variation.kind, 0) + 1
        print("   kinds: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
        for r in runs:
            for x in r.results:
                if x.verdict in V.BAD:
                    print(f"   {x}" + (f"\n      reproducer: {x.repro}" if x.repro else ""))
        not_varied: dict[str, int] = {}
        for r in runs:
            if r.a != "ok" and not r.results:
                head = r.a.split(":")[0]
                not_varied[head] = not_varied.get(head, 0) + 1
        print("   not varied: " + ", ".join(f"{k} {v}" for k, v in sorted(not_varied.items())))
        dump[engine] = {"seconds": wall, "load": [load0, load1], "counts": counts,
                        "results": [json.loads(x.to_json()) for r in runs for x in r.results],
                        "not_varied": {r.subject: r.a for r in runs if r.a != "ok" and not r.results}}
    out = _arg("--json", None)
    if out:
        with open(out, "w") as f:
            json.dump(dump, f, indent=1)


if __name__ == "__main__":
    main()
