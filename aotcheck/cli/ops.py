"""``aotcheck ops``: the OpInfo backward suite (see ``aotcheck.grad.ops_suite``).

    aotcheck ops --samples first                 every differentiable OpInfo, first sample, cold
    aotcheck ops --op sin --op fmod --samples all
    aotcheck ops --op cov --samples all --sample-index 3 --variant fn     (a failure's repro line)
    aotcheck ops --cached                        cold into a fresh cache dir, then cached from it
    aotcheck ops --repeat 5                      five seeds: per-op failure rates (flakiness)
"""
from __future__ import annotations

import json
import tempfile
import time
from dataclasses import asdict


def register(sub) -> None:
    p = sub.add_parser("ops", help="run every differentiable OpInfo through the engine and score it")
    p.add_argument("--samples", choices=("first", "all"), default="first", help="which samples per op")
    p.add_argument("--engine", choices=("aotcheck", "eager"), default="aotcheck",
                   help="aotcheck, or eager (identity: a sanity check of the suite)")
    p.add_argument("--op", action="append", default=[], metavar="NAME",
                   help="only this op (name or name.variant; repeatable)")
    p.add_argument("--limit", type=int, help="only the first N selected ops")
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="run the checks with K seeds")
    p.add_argument("--seed", type=int, default=0, help="first seed (cotangents, element subset)")
    p.add_argument("--cached", action="store_true",
                   help="also run each sample through a fresh aot_function reading the cold run's cache")
    p.add_argument("--cache-dir", help="cache directory for --cached (default: a new temp dir)")
    p.add_argument("--sample-index", type=int, help="only this sample (implies its position in all samples)")
    p.add_argument("--variant", choices=("fn", "inplace"), action="append",
                   help="only this variant (repeatable; default both)")
    p.add_argument("--max-elements", type=int, default=20,
                   help="elements per input perturbed by the numerical check")
    p.add_argument("--json", metavar="PATH", help="write every SampleResult as JSON")
    p.add_argument("--verbose", "-v", action="store_true", help="list every failing seed run")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..grad import ops_suite as S
    from .progress import Progress

    t0 = time.perf_counter()
    engines, note = _engines(args, S)
    ops = S.select_ops(args.op, args.limit)
    bar = Progress(len(ops), "ops")
    done = set()

    def on_case(case):
        if case.op not in done:
            done.add(case.op)
            bar.advance(case.op)

    results = S.run_suite(args.op, samples=args.samples, limit=args.limit, index=args.sample_index,
                          variants=tuple(args.variant or ("fn", "inplace")),
                          seeds=range(args.seed, args.seed + args.repeat), engines=engines,
                          max_elements=args.max_elements, on_case=on_case)
    wall = time.perf_counter() - t0
    print(f"aotcheck ops: engine {args.engine}, samples {args.samples}, "
          f"max elements {args.max_elements}{note}")
    print(S.format_report(results, verbose=args.verbose))
    for e in engines:
        if e.name == "aotcheck":
            counts = ", ".join(f"{k} {v}" for k, v in sorted(e.cache_counts.items())) or "none"
            print(f"cache counters [{e.mode}]: {counts}")
    print(f"wall time {wall:.1f}s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([asdict(r) for r in results], f)
    bad = any(r.status(c) in (S.FAIL, S.ENGINE_ERROR, S.CRASH, S.XPASS) for r in results for c in S.CHECKS)
    return 1 if bad else 0


def _engines(args, S):
    if args.engine == "eager":
        return [S.eager_engine()], ""
    if not args.cached:
        return [S.aotcheck_engine()], ", mode cold"
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="aotcheck-ops-cache-")
    return [S.aotcheck_engine(cache_dir, "cold"), S.aotcheck_engine(cache_dir, "cached")], \
        f", modes cold then cached (cache dir {cache_dir})"

