"""``aotcheck report ENGINE [ENGINE ...]``: the corpus through engines, side by side, as markdown."""
from __future__ import annotations

import shlex
import sys

from . import add_partitioner_option


def register(sub) -> None:
    p = sub.add_parser("report", help="run the corpus through engines and write a side-by-side markdown table")
    p.add_argument("engines", nargs="+", metavar="ENGINE",
                   help="engines to run: aotcheck, torch, torch-aot-function")
    p.add_argument("--cached", action="store_true",
                   help="also the cache round trip, for engines with a persistent cache")
    p.add_argument("--out", help="also write the markdown here (e.g. docs/report.md)")
    p.add_argument("--theme", action="append", help="only these themes (repeatable)")
    p.add_argument("-k", dest="pattern", default="", help="only cases whose id contains this text")
    p.add_argument("--verbose", "-v", action="store_true", help="list each failure's divergences")
    add_partitioner_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import logging
    import warnings

    from ..check.corpus import THEMES, all_cases
    from ..targets.engines import get_engine
    from .progress import Progress
    from ..targets.report import Status, collect, to_markdown

    for name in args.engines:
        get_engine(name)                      # fail early on a typo
    cases = [c for c in all_cases() if (not args.theme or c.theme in args.theme) and args.pattern in c.id]
    n_runs = sum(1 + (args.cached and get_engine(e).supports_cache) for e in args.engines)
    bar = Progress(len(cases) * n_runs, "report")
    logging.getLogger("torch").setLevel(logging.ERROR)    # Dynamo's graph-break warnings are in the table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = collect(args.engines, cases, args.cached, progress=bar)
    command = "aotcheck report " + " ".join(shlex.quote(a) for a in sys.argv[2:]) if len(sys.argv) > 2 else ""
    md = to_markdown(runs, THEMES, verbose=args.verbose, command=command)
    print(md)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md)
    return 1 if any(r.status in (Status.FAIL, Status.XPASS) for run in runs for r in run.results) else 0
