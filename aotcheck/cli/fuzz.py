"""``aotcheck fuzz``: generated mutation/alias programs against an engine."""
from __future__ import annotations

from . import add_partitioner_option


def register(sub) -> None:
    p = sub.add_parser("fuzz", help="run generated programs against an engine, cold and cached; "
                                    "write one shrunk reproducer per distinct root cause")
    p.add_argument("--engine", default="aotcheck",
                   help="aotcheck | torch | torch-inductor | torch-aot-function | dynamo-aotcheck")
    p.add_argument("--examples", type=int, default=None, help="how many programs to generate "
                   "(default 200; with --minutes, no limit)")
    p.add_argument("--minutes", type=float, default=None, help="bound the whole run (explore, "
                   "then shrink) to this many minutes")
    p.add_argument("--shrink-seconds", type=float, default=60.0, help="time budget per failure group")
    p.add_argument("--seed", type=int, default=0, help="the same seed gives the same programs")
    p.add_argument("--shard", default="1/1", help="K/N: run the K-th of N disjoint parts of the stream")
    p.add_argument("--database", default=None, help="hypothesis example database shared by all "
                   "shards: redis://HOST:PORT[/DB] or a directory")
    p.add_argument("--out", default="fuzz-out", help="folder for the reproducers")
    p.add_argument("--no-cache", action="store_true", help="cold runs only")
    p.add_argument("--warm", action="store_true", help="also run each program from the cache in "
                   "a second process (a real warm start)")
    p.add_argument("--retrace-cached", action="store_true", help="torch engines: the cached run "
                   "traces with Dynamo again, as a second process does (default: it compiles the "
                   "graphs of the cold run's trace again from the cache; --warm always retraces)")
    p.add_argument("--key-variations", dest="key_variations", type=int, default=None, nargs="?",
                   const=1, metavar="N", help="after a program's cached run hits, call it under N "
                   "changed conditions (grad mode, an input's requires_grad, dtype, layout, ...) from "
                   "the cold run's cache: a stale hit, lost hit or failure under B is a finding "
                   "(default: on, 1 per program, against an engine with a cache)")
    p.add_argument("--no-key-variations", dest="key_variations", action="store_const", const=0,
                   help="no key variations")
    p.add_argument("--no-shrink", action="store_true", help="keep the first failing programs")
    p.add_argument("--no-known", action="store_true", help="do not match findings against the "
                   "engine's known failing corpus cases")
    p.add_argument("--max-statements", type=int, default=8)
    p.add_argument("--extensions", default=None, help="the wider grammar to draw, comma-separated "
                   "(issue 13's: regions, casts, integer, multi_output, non_tensor, parameter, "
                   "custom_function, random, set_, requires_grad_, subclass, seeding; issue 27's: "
                   "retain_grad, hooks, data, inner_leaves, func, library, out_variants), 'all' or "
                   "'none'; default: all for aotcheck's engine, issue 13's for the torch engines")
    p.add_argument("--progress", action="store_true", help="draw the progress bar even when "
                   "stderr is not a terminal (e.g. a log file)")
    add_partitioner_option(p)
    p.set_defaults(func=run)


def run(args) -> int:
    import faulthandler
    import io
    import sys
    try:                         # a crash inside torch (SIGSEGV) prints where it happened
        faulthandler.enable()
    except (io.UnsupportedOperation, AttributeError, ValueError):     # stderr has no file
        if sys.__stderr__ is not None:
            faulthandler.enable(file=sys.__stderr__)
    from ..fuzz.database import open_database
    from ..fuzz.runner import FuzzOptions, format_summary, fuzz, parse_extensions, parse_shard
    from ..targets.engines import get_engine
    from .progress import Progress
    shard = parse_shard(args.shard)
    if args.retrace_cached:
        get_engine(args.engine).retrace_cached = True
    examples = args.examples or (10**9 if args.minutes else 200)
    total = None if examples >= 10**9 else examples
    with Progress(total, f"fuzz {args.engine}", force=args.progress) as bar:
        result = fuzz(FuzzOptions(
            args.engine, examples, args.seed, cached=not args.no_cache, out=args.out,
            max_statements=args.max_statements, shrink=not args.no_shrink, minutes=args.minutes,
            shrink_seconds=args.shrink_seconds, shard=shard,
            database=open_database(args.database), warm=args.warm,
            match_known=not args.no_known and args.engine != "aotcheck",
            strategy_options=parse_extensions(args.extensions),
            key_variations=args.key_variations), progress=bar)
    print(format_summary(result))
    return 1 if result.findings else 0
