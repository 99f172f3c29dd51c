"""``aotcheck check``: run the corpus through an engine and print a pass table per theme."""
from __future__ import annotations

import time
from collections import Counter

from . import add_partitioner_option


def register(sub) -> None:
    p = sub.add_parser("check", help="run the corpus against eager and print a pass table per theme")
    p.add_argument("--theme", action="append", help="only these themes (repeatable)")
    p.add_argument("-k", dest="pattern", default="", help="only cases whose id contains this text")
    p.add_argument("--forward-only", action="store_true", help="skip backward")
    p.add_argument("--verbose", "-v", action="store_true", help="print every failure's divergences")
    add_partitioner_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from .. import aot_function
    from ..check.corpus import all_cases
    from ..check.harness import check_case
    from .progress import Progress

    cases = [c for c in all_cases() if (not args.theme or c.theme in args.theme)
             and args.pattern in c.id]
    bar = Progress(len(cases), "check")
    rows: dict[str, Counter] = {}
    failures = []
    t0 = time.perf_counter()
    for c in cases:
        # in the case's call mode (no_grad, inference_mode), through each of its states
        r = check_case(c, aot_function(c.fn), backward=c.backward and not args.forward_only)
        row = rows.setdefault(c.theme, Counter())
        if r.ok and c.xfail:
            row["xpass"] += 1
            failures.append((c, ["unexpectedly passed; remove its xfail"]))
        elif r.ok:
            row["pass"] += 1
        elif c.xfail:
            row["xfail"] += 1
        else:
            row["fail"] += 1
            failures.append((c, r.divergences))
        bar.advance(c.id)
    from .. import flags
    print(f"partitioner: {flags.get(flags.PARTITIONER)}")
    print(f"{'theme':<24}{'cases':>6}{'pass':>6}{'fail':>6}{'xfail':>6}")
    total = Counter()
    for theme, row in rows.items():
        n = sum(row.values())
        total.update(row)
        print(f"{theme:<24}{n:>6}{row['pass']:>6}{row['fail'] + row['xpass']:>6}{row['xfail']:>6}")
    print(f"{'total':<24}{sum(total.values()):>6}{total['pass']:>6}"
          f"{total['fail'] + total['xpass']:>6}{total['xfail']:>6}")
    print(f"wall time {time.perf_counter() - t0:.1f}s")
    for c, divs in failures:
        print(f"FAIL {c.id}: {divs[0]}")
        if args.verbose:
            for d in divs[1:]:
                print(f"     {d}")
    return 1 if failures else 0
