"""Pin the unpinned entries of the built-in known failures (aotcheck/targets/known_failures.json).

Format 2 (``aotcheck.regress.record``) stores each recorded failure as
``{"reason": ..., "fingerprint": {"check": ..., "subject": ..., "error": ...}}``; format 1 stored
the reason alone, and such an entry (one added by hand, or merged from a branch written before
format 2) still reads, as *unpinned*: any failure of that case counts as the known one. This
script runs exactly the cases with unpinned entries, on the engines that ``aotcheck check``
runs, and writes each one's fingerprint next to its reason; nothing else in the file changes
(other than its layout, one entry per line, and ``"format": 2``).

    python tools/known_failures_migrate.py            # pin every unpinned entry (runs the cases)
    python tools/known_failures_migrate.py --check    # exit 1 if any entry is unpinned (no run)

It refuses on a torch build other than the record's ``recorded_on`` (a fingerprint belongs to
the build it was seen on). An unpinned entry whose case now passes, or is skipped, stays as it
is and is listed: that is for a person (or ``aotcheck check --strict``) to settle. Entries of
engines that ``aotcheck check`` does not run (dynamo-aotcheck) stay unpinned.
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def unpinned(rec) -> dict[str, list[str]]:
    from aotcheck.regress.plan import SINGLE
    return {e: sorted(k for k, v in t.items() if v.fingerprint is None and not v.crashes)
            for e, t in rec.engines.items() if e in SINGLE}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="only say whether entries are unpinned")
    ap.add_argument("--file", default=None, help="the record (default: the built-in one)")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    import torch

    from aotcheck.check.corpus import all_cases
    from aotcheck.regress import record as records
    from aotcheck.regress.plan import Plan
    from aotcheck.regress.record import split_key
    from aotcheck.regress.run import run
    rec = records.load(args.file)
    todo = {e: keys for e, keys in unpinned(rec).items() if keys}
    n = sum(len(k) for k in todo.values())
    print(f"{n} unpinned entries: " + ", ".join(f"{e} {len(k)}" for e, k in todo.items()))
    if args.check or not n:
        return 1 if n and args.check else 0
    if torch.__version__.split("+")[0] != rec.torch.split("+")[0]:
        print(f"refusing: the record is of torch {rec.torch}, this is torch {torch.__version__}",
              file=sys.stderr)
        return 2
    by_id = {c.id: c for c in all_cases()}
    tables = {e: dict(t) for e, t in rec.engines.items()}
    left = []
    for engine, keys in todo.items():
        ids = {split_key(k)[1] for k in keys}
        cases = [c for c in by_id.values() if c.id in ids]
        cached = any(split_key(k)[0] == "cached" for k in keys)
        res = run(cases, Plan((engine,), cached=cached, variations=False), rec, jobs=args.jobs)
        got = {(o.stage, o.case_id): o for o in res.outcomes}
        for k in keys:
            o = got.get(split_key(k))
            if o is not None and o.status == "skipped":        # a cached entry, cold fails
                o = got.get(("cold", split_key(k)[1]))
            if o is None or o.status != "fail":
                left.append(f"{engine} {k}: {o.status if o else 'not run'}")
                continue
            tables[engine][k] = replace(tables[engine][k], fingerprint=o.fingerprint)
    replace(rec, engines=tables).save(args.file or records.record_path())
    print(f"pinned {n - len(left)}; left unpinned {len(left)}")
    for line in left:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
