"""``aotcheck check``: the corpus through one engine or every torch engine, judged against the
recorded failures: a pass table per theme, then NEW, CHANGED and FIXED.

    aotcheck check                                   # aotcheck's engine, cold and cached
    aotcheck check --engine all-torch                # torch, torch-aot-function, torch-inductor-lite
    aotcheck check --engine all-torch --baseline main.json   # against a saved baseline

Exit status: 1 on a NEW failure (not recorded) or a CHANGED one (recorded, failing differently);
with ``--strict`` a FIXED one (recorded, now passing) fails too; else 0. The stages are
``aotcheck.regress`` (plan, run, fingerprint, record, judge)."""
from __future__ import annotations

import sys
from collections import Counter

from . import add_partitioner_option


def add_run_options(p) -> None:
    """The options ``check`` and ``baseline save`` share: which engines and cases, how to run."""
    from ..regress.plan import CHOICES
    p.add_argument("--engine", default="aotcheck", metavar="ENGINE",
                   help=f"{', '.join(CHOICES)} (or a comma-separated list); default aotcheck")
    p.add_argument("--theme", action="append", help="only these themes (repeatable)")
    p.add_argument("-k", dest="pattern", default="", help="only cases whose id contains this text")
    p.add_argument("--forward-only", action="store_true", help="skip backward")
    p.add_argument("--no-cached", action="store_true", help="only the cold run (no cache round trip, "
                   "no key variations)")
    p.add_argument("--no-variations", action="store_true", help="skip the key-variation phase")
    p.add_argument("--quick", action="store_true", help="only the quick set, about a tenth of the "
                   "corpus: the cases that reach the lines and branches of torch's AOT autograd and "
                   "cache-key code the whole corpus reaches, each key variation's cache answer and "
                   "each fact of AOT autograd's analysis, chosen by measured coverage per second "
                   "(aotcheck/regress/quick_set.json, tools/quick_cover.py); every stage still runs; "
                   "corpus cases newer than the set run too; ~30 s on 2 cores")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="worker processes (default: 2, or 1 on a one-core machine); 1 runs in this process")
    add_partitioner_option(p)


def register(sub) -> None:
    p = sub.add_parser("check", help="run the corpus through an engine against eager; report NEW, "
                       "CHANGED and FIXED failures against the record")
    add_run_options(p)
    p.add_argument("--baseline", metavar="FILE", default=None,
                   help="compare with this saved baseline (aotcheck baseline save) instead of the "
                        "built-in record (aotcheck/targets/known_failures.json)")
    p.add_argument("--strict", action="store_true", help="a FIXED failure (recorded, now passing) "
                   "fails the run too")
    p.add_argument("--verbose", "-v", action="store_true", help="print each NEW and CHANGED "
                   "failure's problems in full under its one-line summary")
    p.set_defaults(func=run)


def selected_cases(args):
    from ..check.corpus import all_cases
    cases = all_cases()
    if getattr(args, "quick", False):
        cases = quick_cases(cases)
    return [c for c in cases if (not args.theme or c.theme in args.theme) and args.pattern in c.id]


def quick_cases(cases):
    """--quick: the quick set's cases (aotcheck.regress.quick.select), saying which and why."""
    import torch

    from ..regress import quick
    pick = quick.select(cases, quick.load(), torch.__version__)
    print(f"quick: {pick.reason}")
    return list(pick.cases)


def execute(args, record):
    """Plan and run: (plan, RunResult)."""
    from ..regress import run as regress_run
    from ..regress.plan import Plan, engines_of
    from .progress import Progress
    plan = Plan(engines_of(args.engine), cached=not args.no_cached,
                variations=not (args.no_cached or args.no_variations), backward=not args.forward_only)
    cases = selected_cases(args)
    jobs = args.jobs if args.jobs is not None else regress_run.default_jobs()
    with Progress(len(cases), f"check {args.engine}") as bar:
        result = regress_run.run(cases, plan, record, jobs=min(jobs, max(1, len(cases))), progress=bar)
    return plan, result


def run(args) -> int:
    from ..errors import AotcheckError
    from ..regress import judge, record as records
    try:
        record = records.load(args.baseline)
        from ..regress.plan import engines_of
        engines_of(args.engine)
    except (records.RecordError, AotcheckError) as e:
        print(f"aotcheck check: {e}", file=sys.stderr)
        return 2
    if args.baseline:
        _note_baseline_version(record)
    plan, result = execute(args, record)
    verdicts = judge.judge(result.outcomes, record, plan.stage_kinds(result.variations_available))
    print_report(plan, result, verdicts, record, verbose=args.verbose)
    return judge.exit_code(verdicts, strict=args.strict)


def _note_baseline_version(record) -> None:
    import torch
    if record.torch.split("+")[0] != torch.__version__.split("+")[0]:
        print(f"aotcheck: the baseline {record.source} was recorded on torch {record.torch}; this is "
              f"torch {torch.__version__}: NEW, CHANGED and FIXED compare the two builds.", file=sys.stderr)


def _columns(plan, result) -> list[tuple[str, str]]:
    seen = dict.fromkeys((o.engine, o.stage if not o.stage.startswith("variation.") else "variations")
                         for o in result.outcomes)
    return [c for c in seen]


def print_leaks(result, out) -> None:
    """NOTE [a case's run as if alone] in regress/run.py: what runs left changed, put back."""
    if result.leaks:
        print(f"process state left changed by {len(result.leaks)} run(s), put back before the next "
              f"case:", file=out)
        for engine, case_id, what in result.leaks:
            print(f"  {case_id} [{engine}]: {'; '.join(what)}", file=out)


def print_report(plan, result, verdicts, record, *, verbose: bool = False, stream=None) -> None:
    from .. import flags
    from ..regress.judge import VerdictKind
    from .progress import print_table
    out = stream or sys.stdout
    print(f"partitioner: {flags.get(flags.PARTITIONER)}", file=out)
    print(f"record: {record.source} (torch {record.torch})", file=out)
    cols = _columns(plan, result)
    cells: dict[tuple, Counter] = {}
    themes: dict[str, None] = {}
    for o, v in zip(result.outcomes, verdicts):
        col = (o.engine, o.stage if not o.stage.startswith("variation.") else "variations")
        themes.setdefault(o.theme)
        for t in (o.theme, "total"):
            cells.setdefault((t, col), Counter())[v.kind] += 1
    rows = [(t, *(_cell(cells.get((t, c), Counter())) for c in cols)) for t in [*themes, "total"]]
    print_table("passed/judged per theme; k known, f FIXED, n NEW, c CHANGED, s skipped",
                ["theme"] + [f"{e} {s}" for e, s in cols], rows, stream=out)
    if not result.variations_available and plan.variations:
        print("key variations: not run (the key-variation phase is not installed: "
              "aotcheck.regress.run.VARIATIONS_MODULE)", file=out)
    secs = ", ".join(f"{e} {s:.0f}s" for e, s in result.engine_seconds.items())
    print(f"wall time {result.wall_s:.1f}s with {result.workers} worker(s); worker CPU per engine: {secs}",
          file=out)
    print_leaks(result, out)
    unpinned = sum(1 for v in verdicts if v.kind is VerdictKind.KNOWN and v.was is not None and v.was.fingerprint is None
                   and v.now is not None)
    if unpinned:
        print(f"{unpinned} known failure(s) matched an unpinned entry (reason only; pin them with "
              f"tools/known_failures_migrate.py)", file=out)
    n = Counter(v.kind for v in verdicts)
    print(f"runs: {n[VerdictKind.PASS]} passed, {n[VerdictKind.KNOWN]} known failures, "
          f"{n[VerdictKind.NEW] + n[VerdictKind.CHANGED]} failing against the record, "
          f"{n[VerdictKind.FIXED]} fixed, {n[VerdictKind.SKIPPED]} skipped", file=out)
    for kind in (VerdictKind.NEW, VerdictKind.CHANGED, VerdictKind.FIXED):
        vs = [v for v in verdicts if v.kind is kind]
        print(f"{kind}: {len(vs)}", file=out)
        for v in vs:
            print(f"  {v.sentence}", file=out)
            if verbose and kind is not VerdictKind.FIXED:
                o = next(o for o in result.outcomes if (o.engine, o.stage, o.case_id) == (v.engine, v.stage, v.case_id))
                for p in o.problems:
                    print(f"      {p}", file=out)
        if vs and kind is not VerdictKind.FIXED and not verbose:
            print("  (one line each; -v prints every problem in full)", file=out)


def _cell(c: Counter) -> str:
    from ..regress.judge import VerdictKind
    n = sum(v for k, v in c.items() if k is not VerdictKind.SKIPPED)
    if not n and not c:
        return ""
    ok = c[VerdictKind.PASS]
    extra = [f"{c[k]}{s}" for k, s in ((VerdictKind.KNOWN, "k"), (VerdictKind.FIXED, "f"), (VerdictKind.NEW, "n"),
                                        (VerdictKind.CHANGED, "c"), (VerdictKind.SKIPPED, "s")) if c[k]]
    return f"{ok}/{n}" + (f" ({', '.join(extra)})" if extra else "")
