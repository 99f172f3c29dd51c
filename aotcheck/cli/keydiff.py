"""``aotcheck keydiff``: the key-completeness differential for torch's compiled-graph caches.

    aotcheck keydiff PROGRAM.py [...]      a user program through the differential (every input
                                           of compilation it declares in VARY, or the derived
                                           ones), KEY GAPs confirmed as stale hits in new processes
    aotcheck keydiff --census              the installed torch's census: every config field
                                           (in-process) and every probe program
    aotcheck keydiff --write-census        write or update the installed torch's census file
    aotcheck keydiff --census-sizes        the census's size per kind

Exit status: 1 on a NEW key gap (one the census does not list as known; for a program outside
the census, any key gap), else 0; with ``--strict`` also on FIXED.
"""
from __future__ import annotations

import sys
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("keydiff", help="compile each input of compilation under A and B: what was produced "
                                       "against the cache keys (KEY GAP, LOST HIT), gaps confirmed as stale hits")
    p.add_argument("programs", nargs="*", help="user-program files (fn, inputs, optional VARY; see README)")
    p.add_argument("--census", action="store_true", help="run the installed torch's census")
    p.add_argument("--target", choices=("torch", "aotcheck"), default="torch",
                   help="whose cache: torch's (AOTAutogradCache, the FX graph cache; default) or "
                        "aotcheck's own engine and cache")
    p.add_argument("--kinds", default="config,reached,ambient,registration,storage,entry",
                   help="with --census: the kinds to run (comma-separated)")
    p.add_argument("-k", "--only", action="append", default=None,
                   help="with --census: only config fields or programs whose name contains this (repeatable)")
    p.add_argument("--input", default=None, help="with a program: only this input (a VARY name)")
    p.add_argument("--no-confirm", action="store_true", help="do not confirm key gaps as stale hits")
    p.add_argument("--lost-hits", action="store_true", help="with --census: compile every keyed config field "
                   "in full too, to tell a LOST HIT from a keyed change (slower)")
    p.add_argument("--jobs", type=int, default=2, help="processes at a time (default 2)")
    p.add_argument("--json", default=None, metavar="OUT.json", help="write the result as JSON")
    p.add_argument("--repro-dir", default=None, metavar="DIR",
                   help="write a standalone reproducer for each confirmed stale hit into DIR")
    p.add_argument("--strict", action="store_true", help="exit 1 on FIXED too")
    p.add_argument("-v", "--verbose", action="store_true", help="list every comparison, not only key gaps")
    p.add_argument("--write-census", action="store_true", help="write or update the census of the installed torch")
    p.add_argument("--census-sizes", action="store_true", help="print the census's size per kind")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..keydiff import census
    from ..keydiff.program import ProgramError
    if args.write_census:
        print(f"wrote {census.write()}")
        return 0
    if args.census_sizes:
        data = census.load()
        for k, v in census.sizes(data).items():
            print(f"{k}: {v}")
        return 0
    if not args.census and not args.programs:
        print("aotcheck keydiff: give program files, or --census", file=sys.stderr)
        return 2
    try:
        result = _run(args)
    except ProgramError as e:
        print(f"aotcheck keydiff: {e}", file=sys.stderr)
        return 2
    return _report(args, result)


def _run(args):
    from ..keydiff import run as R

    def progress(done, total):
        print(f"  {done}/{total}", file=sys.stderr, flush=True)
    if args.census:
        kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
        return R.run_census(kinds, jobs=args.jobs, only=args.only, confirm=not args.no_confirm,
                            lost_hits=args.lost_hits, gap_dir=args.repro_dir, progress=progress,
                            target=args.target)
    import time
    start = time.perf_counter()
    programs = tuple(R.run_program(p, jobs=args.jobs, confirm=not args.no_confirm, only=args.input,
                                   target=args.target) for p in args.programs)
    from ..keydiff import census
    return R.CensusResult(census.release(), programs, (), time.perf_counter() - start)


def _report(args, result) -> int:
    from ..keydiff import census, report
    try:      # aotcheck's own cache has no known gap: any gap in it is NEW
        known = census.load().get("known_gaps", {}) if args.target == "torch" else {}
    except FileNotFoundError:
        known = {}
    if args.json:          # first: nothing after the run may lose it
        print(f"result: {result.save(args.json)}")
    repros = _write_repros(result, args.repro_dir) if args.repro_dir else {}
    print(report.format_result(result, known, verbose=args.verbose, repros=repros))
    j = report.judge(result, known)
    return 1 if j.new or (args.strict and j.fixed) else 0


def _write_repros(result, out_dir) -> dict[tuple[str, str, int, int], str]:
    from ..keydiff import program, repro
    out = {}
    for p in result.programs:
        if not Path(p.program).is_file():      # a temporary program (a config gap's, without --repro-dir)
            continue
        module = program.load(p.program).module()
        for c in p.comparisons:
            for conf in c.confirmations:
                if conf.outcome.value == "STALE HIT":
                    path = repro.write(module, c.input, conf.a, conf.b, c.component, out_dir)
                    out[(Path(p.program).stem, c.input, c.a, c.b)] = str(path)
    return out
