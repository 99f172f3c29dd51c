"""``aotcheck triage REPRO.py``: a reproducer eager, compiled cold and compiled cached; the first
divergence; with ``--miss``, why the cache lookup missed; with ``--report``, a markdown report.

A key-variation reproducer (written by the variation pass for a STALE HIT, a LOST HIT or a
failure under B) is replayed, A then B, and the triage names the key component that differed
between the compile that wrote the entry and the call that read it
(``aotcheck/targets/key_triage.py``)."""
from __future__ import annotations


def register(sub) -> None:
    p = sub.add_parser("triage", help="run a reproducer eager, cold and cached, and print the "
                                      "first divergence (--miss: why the lookup missed; "
                                      "--report: an upstream-ready markdown file)")
    p.add_argument("repro", help="a file defining f(...) and make_inputs(), e.g. from aotcheck fuzz")
    p.add_argument("--engine", default=None, help="default: the engine named in the file's header, "
                                                  "else aotcheck")
    p.add_argument("--miss", action="store_true", help="say why aotcheck's cache lookup for this "
                   "call misses in --cache: the key components that differ from the nearest entry")
    p.add_argument("--cache", default="cache", help="the cache directory --miss looks in")
    p.add_argument("--report", default=None, metavar="OUT.md", help="write an upstream-ready report")
    p.add_argument("--reduce-seconds", type=float, default=60.0, help="with --report: time to "
                   "reduce a fuzz program further")
    p.set_defaults(func=run)


def run(args) -> int:
    import sys
    from pathlib import Path

    from ..targets.variation_repro import is_repro
    from ..targets.variations import BAD
    if is_repro(args.repro):
        from ..targets.key_triage import triage_repro
        t = triage_repro(args.repro)
        print(t)
        return 1 if t.verdict in BAD else 0
    from ..fuzz.triage import explain_miss, triage, write_report
    if not Path(args.repro).is_file():
        print(f"aotcheck triage: no reproducer file {args.repro!r}; give a .py file that defines "
              f"f(...) and make_inputs(), as aotcheck fuzz writes them", file=sys.stderr)
        return 2
    if args.miss:
        print(explain_miss(args.repro, args.cache))
        return 0
    t = triage(args.repro, args.engine, reduce_seconds=args.reduce_seconds if args.report else 0.0)
    print(t)
    if args.report:
        print(f"report: {write_report(t, args.report)}")
    return 1 if t.first[1] else 0
