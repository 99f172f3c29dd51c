"""``aotcheck fuzz``: generated mutation/alias programs against an engine."""
from __future__ import annotations

from . import add_partitioner_option


def register(sub) -> None:
    p = sub.add_parser("fuzz", help="run generated programs against an engine, cold and cached; "
                                    "write one shrunk reproducer per distinct failure")
    p.add_argument("--engine", default="aotcheck", help="aotcheck | torch | torch-aot-function")
    p.add_argument("--examples", type=int, default=200, help="how many programs to generate")
    p.add_argument("--seed", type=int, default=0, help="the same seed gives the same programs")
    p.add_argument("--out", default="fuzz-out", help="folder for the reproducers")
    p.add_argument("--no-cache", action="store_true", help="cold runs only")
    p.add_argument("--no-shrink", action="store_true", help="keep the first failing programs")
    p.add_argument("--max-statements", type=int, default=8)
    p.add_argument("--progress", action="store_true", help="draw the progress bar even when "
                   "stderr is not a terminal (e.g. a log file)")
    add_partitioner_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from ..fuzz.runner import format_summary, fuzz
    from .progress import Progress
    bar = Progress(args.examples, f"fuzz {args.engine}", force=args.progress)
    result = fuzz(args.engine, args.examples, args.seed, cached=not args.no_cache, out=args.out,
                  progress=bar, max_statements=args.max_statements, shrink=not args.no_shrink)
    print(format_summary(result))
    return 1 if result.findings else 0
