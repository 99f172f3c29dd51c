"""``aotcheck baseline save FILE``: record this torch build's failures, pinned by fingerprint.

    aotcheck baseline save main.json --engine all-torch      # on main's torch build
    aotcheck check --engine all-torch --baseline main.json   # on your branch's build
    aotcheck baseline save --builtin --engine all-torch      # regenerate the built-in record

A baseline has the built-in record's format (``aotcheck.regress.record``). ``--builtin`` writes
the installed torch release's record, ``aotcheck/targets/records/torch-<release>.json`` (made
from the nearest recorded release's when the release has none yet), for the engines run,
keeping every other engine's table,
the reasons of failures that are still there, and the entries of cases that were not run; a new
failure gets the reason "recorded by aotcheck baseline save; no reason written yet", for a
person to replace."""
from __future__ import annotations

import sys

NO_REASON = "recorded by aotcheck baseline save; no reason written yet"


def register(sub) -> None:
    from .check import add_run_options
    p = sub.add_parser("baseline", help="save this torch build's failures as a baseline")
    bsub = p.add_subparsers(dest="baseline_command", required=True)
    s = bsub.add_parser("save", help="run the corpus and record every failure with its fingerprint")
    s.add_argument("file", nargs="?", default=None, help="where to write the baseline")
    s.add_argument("--builtin", action="store_true", help="rewrite the installed torch release's "
                   "built-in record (aotcheck/targets/records/torch-RELEASE.json) instead of FILE")
    add_run_options(s)
    s.set_defaults(func=save, engine="all-torch")


def save(args) -> int:
    import torch

    from ..errors import AotcheckError
    from ..regress import record as records
    from ..regress.plan import engines_of
    from ..targets.known_failures import own_record_path
    from .check import execute
    if (args.file is None) == (not args.builtin):
        print("aotcheck baseline save: give FILE or --builtin (not both)", file=sys.stderr)
        return 2
    try:
        engines = engines_of(args.engine)
        previous = records.load()
    except (records.RecordError, AotcheckError) as e:
        print(f"aotcheck baseline save: {e}", file=sys.stderr)
        return 2
    plan, result = execute(args, previous)
    from .check import print_leaks
    print_leaks(result, sys.stdout)
    rec = records.from_outcomes(result.outcomes, torch.__version__.split("+")[0], engines, previous,
                                keep_unrun=args.builtin, kinds=plan.stage_kinds(result.variations_available))
    if args.builtin:
        rec = _with_reasons(rec, engines)
    path = own_record_path() if args.builtin else args.file
    rec.save(path)
    n = sum(len(rec.engines.get(e, {})) for e in engines)
    print(f"saved {n} recorded failure(s) of {', '.join(engines)} on torch {rec.torch} to {path} "
          f"(wall time {result.wall_s:.0f}s)")
    return 0


def _with_reasons(rec, engines):
    from dataclasses import replace
    tables = dict(rec.engines)
    for e in engines:
        tables[e] = {k: (v if v.reason else replace(v, reason=NO_REASON)) for k, v in rec.engines[e].items()}
    return replace(rec, engines=tables)
