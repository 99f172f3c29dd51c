"""Compute the quick set of ``aotcheck check --engine all-torch --quick`` and print how much of
the full run's coverage of torch's AOT autograd it keeps.

    python tools/quick_cover.py                    # measure, choose, write the built-in set
    python tools/quick_cover.py --budget 10        # the same, another budget (% of the full run)
    python tools/quick_cover.py --from cache/quick_cover/measure.json.gz   # choose again only
    python tools/quick_cover.py --report           # the built-in set against its full run

Measuring (NOTE [how the quick set is chosen] in ``aotcheck/regress/quick.py``) runs the whole
corpus through the torch engines twice, in ``--jobs`` warm workers exactly as ``aotcheck check``
does (``aotcheck.regress.run.work_pair``, one (case, engine) at a time): once under ``coverage``
(the lines and branches each (case, engine) executes in ``FILES``, the key variations it runs with
the cache's answer, and the facts of AOT autograd's analysis of it: its features), once
without (its CPU seconds: coverage's tracer slows torch's Python unevenly). About 3x the full
command's CPU time; the measurement is kept in ``cache/quick_cover/measure.json.gz`` so that
``--from`` can choose again under another budget in seconds.

The printout: per engine and per file, the lines the full run reaches and the share the quick set
reaches; the branches; the features; the CPU seconds; and the verdicts on which the coverage run and the
plain run disagree (coverage's tracer should change none).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import cover_workers  # noqa: E402

from aotcheck.regress import quick  # noqa: E402

# torch's AOT autograd, its cache, and the FX graph cache's key code, relative to torch/
FILES = ("_functorch/_aot_autograd/*", "_functorch/aot_autograd.py", "_functorch/partitioners.py",
         "_inductor/codecache.py")
# of a file, only the lines inside these top-level classes and functions count: codecache.py is
# also Inductor's C++/Triton/CUTLASS build code, which is not what the quick set is for
ONLY = {"_inductor/codecache.py": (
    "TensorMetadataAndValues", "extract_tensor_metadata_for_cache_key", "_get_stable_obj_key",
    "FxGraphCachePickler", "build_code_hash", "torch_key", "BypassFxGraphCache",
    "CacheabilityValidator", "FxGraphHashDetails", "compiled_fx_graph_hash", "GuardedCache",
    "FxGraphCache")}
ENGINES = "all-torch"
MEASURE = ROOT / "cache" / "quick_cover" / "measure.json.gz"
# NOTE [the budget is a share of the full run]
# The cover spends CPU seconds of case cost; measured on a shared machine they grow with its load
# (the same corpus measured 311 s at load 6 and 390 s at load 9), so the budget is a share of the
# full run measured in the same pass: 8% of the corpus's CPU is ~25 CPU s on an idle 2-core
# machine, ~12 s of wall time on two workers, beside ~8 s of start-up (aotcheck and two workers
# importing torch and the corpus) and the first compile in each worker.
DEFAULT_BUDGET = 8.0


# ---------------------------------------------------------------- in each worker
# (the pool and its workers: tools/cover_workers.py, shared with tools/torch_coverage.py)

_WORKER: dict = {}


def _torch_dir() -> str:
    return cover_workers.torch_dir()


def _setup() -> None:
    """After ``cover_workers.init``: record what each pair's variations and analyses found, and
    warm the worker up."""
    _record_variations()
    _record_metadata()
    _warm_up()


def _record_metadata() -> None:
    """Keep the facts of every ``ViewAndMutationMeta`` AOT autograd builds (``metadata_facts``)
    in ``_WORKER["facts"]``."""
    from torch._functorch._aot_autograd.schemas import ViewAndMutationMeta
    inner = ViewAndMutationMeta.__post_init__

    def recording(self):
        inner(self)
        _WORKER["facts"] |= metadata_facts(self)
    _WORKER["facts"] = set()
    ViewAndMutationMeta.__post_init__ = recording


INPUT_FLAGS = ("is_leaf", "mutates_data", "mutates_metadata", "mutations_hidden_from_autograd",
               "mutations_under_no_grad_or_inference_mode", "mutation_inductor_storage_resize",
               "mutates_storage_metadata", "requires_grad", "keep_input_mutations")


def metadata_facts(meta) -> set[str]:
    """What AOT autograd's analysis found, in its own vocabulary (``schemas.py``): each input's
    flags, each output's type, and which kinds of inputs and outputs the function combines.

        input[is_leaf,mutates_data,requires_grad]
        output[alias_of_input,Tensor,requires_grad]
        function[aliased_outputs,mutated_inputs]
    """
    out = set()
    for i in meta.input_info:
        out.add("input[" + ",".join(f for f in INPUT_FLAGS if getattr(i, f, False)) + "]")
    for o in meta.output_info:
        out.add(f"output[{o.output_type.name},{getattr(o.raw_type, '__name__', '?')}"
                f"{',requires_grad' if o.requires_grad else ''}{',dynamic' if o.dynamic_dims else ''}]")
    combo = {"mutated_inputs": meta.num_mutated_inp_runtime_indices,
             "aliased_outputs": meta.num_outputs_aliased,
             "unsafe_view_outputs": meta.num_unsafe_view_outputs,
             "intermediate_bases": meta.num_intermediate_bases,
             "non_aliased_outputs": meta.num_outputs_non_aliased,
             "keep_input_mutations": meta.keep_input_mutations,
             "grad_enabled_mutation": meta.grad_enabled_mutation is not None,
             "subclass_inputs": any(type(m).__name__ == "SubclassCreationMeta" for m in meta.subclass_inp_meta or ())}
    out.add("function[" + ",".join(k for k, v in combo.items() if v) + "]")
    return out


def _record_variations() -> None:
    """Keep each key variation's answer, which the stages fold into a pass, in
    ``_WORKER["seen"]`` (label -> answer): its verdict (ok-hit, ok-miss, ...), an ok-miss made
    precise by :func:`_why_missed`."""
    from aotcheck.regress import run
    inner = run._STATE.get("variations")
    if inner is None:
        return

    def recording(engine, case, cache_dir):
        from torch._dynamo.utils import counters
        before = counters["aot_autograd"]["autograd_cache_guard_miss"]
        out = inner(engine, case, cache_dir)
        guard_missed = counters["aot_autograd"]["autograd_cache_guard_miss"] > before
        for v in out:
            answer = v.detail if v.verdict == "ok" else v.verdict
            if answer == "ok-miss":
                answer = _why_missed(engine, case, v.variation, guard_missed)
            _WORKER["seen"][v.variation] = answer
        return out
    _WORKER["seen"] = {}
    run._STATE["variations"] = recording


# NOTE [a miss a stale entry would show]
# A cache-key mutant that drops a component turns a miss into a hit, and the hit is caught only
# where the entry written under A behaves visibly unlike eager under B. For the call-wide state
# the key is built to hold (grad mode, autocast, ...) any such hit is an UNKEYED HIT; for a
# dynamic-shape variation, a hit on an entry whose shape guards B fails is one, and the cache
# counts that rejection (``autograd_cache_guard_miss``). For an input's properties the served
# entry is seen only if B changes what eager returns beyond values: each output's requires_grad,
# dtype, shape or strides. On the torch engine, of the 20 cases whose requires_grad variation
# missed, 7 show a key without requires_grad; they are the ones whose flipped input reaches an
# output's requires_grad. So an ok-miss answer is ``miss-guard`` (rejected on guards),
# ``miss-seen`` (B changes eager's outputs beyond values) or ``miss``.


def _why_missed(engine, case, label: str, guard_missed: bool) -> str:
    """``ok-miss-guard``, ``ok-miss-seen`` or ``ok-miss`` (NOTE [a miss a stale entry would show])."""
    if label.startswith("dynamic_shape"):
        return "ok-miss-guard" if guard_missed else "ok-miss"
    from aotcheck.regress import run
    from aotcheck.targets import variations as mod
    subject = mod.Subject.of_case(case)
    picked = mod.pick(mod.derive(subject, engine.name), subject.name,
                      run.variations_per_case(engine.name, case.id), subject.size_guards)
    v = next((x for x in picked if x.label.replace(":", ";") == label), None)
    if v is None:
        return "ok-miss"
    return "ok-miss-seen" if _eager_print(subject, None) != _eager_print(subject, v) else "ok-miss"


def _eager_print(subject, v) -> tuple:
    """What eager returns under A (``v`` None) or B, beyond values: per output, requires_grad,
    dtype, shape and strides; or the exception's type."""
    import torch
    from torch.utils import _pytree as pytree

    from aotcheck.targets.conditions import call_context, state_context, vary_inputs, wrapped
    make = subject.make_inputs if v is None else vary_inputs(v, subject.make_inputs)
    torch.manual_seed(0)
    try:
        with state_context(subject, v):
            inp = make()
            out = wrapped(subject.fn, call_context(subject, v))(*inp.args, **inp.kwargs)
    except Exception as e:  # noqa: BLE001 - a raise is a behaviour too
        return ("raised", type(e).__name__)
    return tuple((o.requires_grad, str(o.dtype), tuple(o.shape), o.stride())
                 if isinstance(o, torch.Tensor) and o.layout == torch.strided else type(o).__name__
                 for o in pytree.tree_leaves(out))


def _warm_up() -> None:
    """The first compile in a process pays for lazy imports and first-use setup; run one case
    unrecorded so that no case's measured cost includes it."""
    from aotcheck.regress import run
    first = next(iter(run._STATE["cases"]))
    for eng in run._STATE["engines"]:
        run.work_pair(first, eng)


def _kind(stage: str) -> str | None:
    """``variation.grad_mode=enabled`` -> ``grad_mode=enabled``; ``variation.dtype[input 0]=float64``
    -> ``dtype``: a kind, with grad mode's direction (NOTE [how the quick set is chosen])."""
    if not stage.startswith("variation."):
        return None
    label = stage[len("variation."):]
    kind = re.match(r"[a-z_]+", label)
    if kind is None:
        return None
    return label if kind.group(0) == "grad_mode" else kind.group(0)


ANSWERS = {"ok-hit": "hit", "ok-miss": "miss", "ok-miss-seen": "miss-seen", "ok-miss-guard": "miss-guard"}


def kind_elements(engine: str, answers: dict[str, str]) -> set[str]:
    """``engine:kind:hit``, ``engine:kind:miss-seen``, ... per key variation that ran and gave
    eager's result: what the cache answered is what a key mutant changes (a miss that turns into
    a hit serves a stale entry, NOTE [a miss a stale entry would show]; a hit that turns into a
    miss is a lost one)."""
    out = set()
    for label, answer in answers.items():
        kind = _kind(f"variation.{label}")
        if kind and answer in ANSWERS:
            out.add(f"{engine}:{kind}:{ANSWERS[answer]}")
    return out


def _cpu() -> float:
    """CPU seconds of this process and of the children it waited for: Inductor builds some
    graphs with g++ even in lite mode, and that build is the case's cost too."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _children() -> float:
    t = os.times()
    return t.children_user + t.children_system


def _measure_pair(cid: str, eng) -> dict:
    cover_workers.take()          # drop what ran before this pair
    _WORKER["seen"] = {}
    _WORKER["facts"] = set()
    t0, c0 = _cpu(), _children()
    try:
        outcomes, _ = cover_workers.work_pair(cid, eng)
    finally:
        seconds, children = _cpu() - t0, _children() - c0
        ran, ran_arcs = cover_workers.take()
    lines = {f: quick.ranges(ls) for f, ls in ran.items()}
    arcs = {f: ",".join(f"{a}>{b}" for a, b in pairs) for f, pairs in ran_arcs.items()}
    return {"case": cid, "engine": eng.name, "seconds": round(seconds, 4),
            "children_seconds": round(children, 4), "lines": lines, "arcs": arcs,
            "kinds": sorted({k for o in outcomes if (k := _kind(o.stage))}),
            "variations": dict(_WORKER.get("seen", {})),
            "facts": sorted(_WORKER.get("facts", ())),
            "verdicts": {o.stage: o.status for o in outcomes}}


def _measure_chunk(case_ids: list[str]) -> list[dict]:
    return [_measure_pair(cid, eng) for cid in case_ids for eng in cover_workers.engines()]


# ---------------------------------------------------------------- in this process


def measure(jobs: int, with_coverage: bool, pattern: str = "", chunk: int = 2) -> list[dict]:
    """Every corpus case (whose id contains ``pattern``) through the torch engines, one row per
    (case, engine)."""
    label = "coverage pass" if with_coverage else "cost pass"
    with cover_workers.pool(jobs, ENGINES, list(FILES) if with_coverage else None, branch=True,
                            setup=_setup, pattern=pattern) as pool:
        futures = [pool.submit(_measure_chunk, ch) for ch in cover_workers.chunks(pattern, chunk)]
        return [row for rows in cover_workers.results(futures, label) for row in rows]


def save_measure(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with gzip.open(tmp, "wt") as f:
        json.dump(data, f)
    tmp.replace(path)


def load_measure(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


# NOTE [a C++ build costs the toolchain probe]
# torch-inductor-lite falls back to aten for every op it can, but a few graphs (a resize_ of an
# argument, a convolution) still get a C++ kernel, and the first C++ build in a process first
# probes the compiler and the CPU's vector ISA: ~16 g++ runs, ~12 CPU s, once per process. In the
# full run that is two workers' one-time cost, paid by whichever case comes first; in a 30-second
# quick run it is most of the budget. So a case that builds C++ is charged the probe once per
# worker (``JOBS``) on top of its own build, and the case that happened to pay the probe in the
# measurement is charged only its own build. The probe is measured: the largest build time seen
# minus the median one.
CPP_MIN_S = 0.3          # children CPU above this: the pair built C++
JOBS = 2                 # the quick run's workers (aotcheck check's default on 2 cores)


def cpp_probe(rows: list[dict]) -> tuple[float, float]:
    """(the probe's CPU seconds, a build's median CPU seconds) from the plain pass's rows."""
    builds = sorted(r.get("children_seconds", 0.0) for r in rows if r.get("children_seconds", 0.0) > CPP_MIN_S)
    if not builds:
        return 0.0, 0.0
    median = builds[len(builds) // 2]
    return max(builds[-1] - median, 0.0), median


def case_costs(rows: list[dict]) -> dict[str, float]:
    """CPU seconds per case (every engine), charged NOTE [a C++ build costs the toolchain probe]."""
    probe, median = cpp_probe(rows)
    seconds: dict[str, float] = defaultdict(float)
    builds: set[str] = set()
    for r in rows:
        children = r.get("children_seconds", 0.0)
        paid = probe if children > median + probe / 2 else 0.0     # this pair paid the probe
        seconds[r["case"]] += r["seconds"] - paid
        if children > CPP_MIN_S:
            builds.add(r["case"])
    for case in builds:
        seconds[case] += probe * JOBS
    return seconds


def counted_lines(rel: str) -> range | set | None:
    """The lines of torch/``rel`` that count (``ONLY``); None: all of them."""
    names = ONLY.get(rel)
    if names is None:
        return None
    import ast
    tree = ast.parse(Path(_torch_dir(), rel).read_text())
    keep: set[int] = set()
    for node in tree.body:
        if getattr(node, "name", None) in names:
            first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
            keep.update(range(first, node.end_lineno + 1))
    return keep


def _arcs(text: str) -> list[tuple[int, int]]:
    """``"-3>4,4>-3"`` -> ``[(-3, 4), (4, -3)]`` (coverage's arcs: negative = entry or exit)."""
    return [(int(a), int(b)) for a, _, b in (p.partition(">") for p in text.split(",") if p)]


def candidates(data: dict) -> list[quick.Candidate]:
    """One Candidate per case: lines, branches and analysis facts from the coverage pass; the
    variations' answers and the seconds from the plain one."""
    seconds = case_costs(data["cost"])
    lines: dict[str, set] = defaultdict(set)
    arcs: dict[str, set] = defaultdict(set)
    features: dict[str, set] = defaultdict(set)
    counted = {rel: counted_lines(rel) for rel in ONLY}
    for r in data["coverage"]:
        e = r["engine"]
        for f, rs in r["lines"].items():
            keep = counted.get(f)
            lines[r["case"]].update((e, f, n) for n in quick.expand_ranges(rs) if keep is None or n in keep)
        for f, text in r.get("arcs", {}).items():
            keep = counted.get(f)
            arcs[r["case"]].update((e, f, a, b) for a, b in _arcs(text) if keep is None or abs(a) in keep)
    for r in data["cost"] or data["coverage"]:
        features[r["case"]] |= kind_elements(r["engine"], r.get("variations", {}))
    for r in data["coverage"]:
        features[r["case"]] |= {f"{r['engine']}:{fact}" for fact in r.get("facts", ())}
    return [quick.Candidate(cid, round(seconds[cid], 4), frozenset(lines[cid]), frozenset(features[cid]),
                            frozenset(arcs[cid]))
            for cid in data["corpus"]]


def choose(data: dict, budget_pct: float, command: str) -> quick.QuickSet:
    cands = candidates(data)
    budget = round(budget_pct / 100 * sum(r["seconds"] for r in data["cost"]), 2)
    picks = quick.cover(cands, budget)
    full = replace(quick.totals(cands), seconds=round(sum(r["seconds"] for r in data["cost"]), 2))
    files = tuple(f"{f}: {', '.join(ONLY[f])}" if f in ONLY else f for f in FILES)
    return quick.QuickSet(data["torch"], tuple(data["engines"]), budget, files, tuple(data["corpus"]),
                          tuple(quick.quick_case(p) for p in picks), full, quick.totals(picks), command)


# ---------------------------------------------------------------- the printout


def _pct(a: int, b: int) -> str:
    return f"{100 * a / b:5.1f}%" if b else "    -"


def report(qs: quick.QuickSet, data: dict | None) -> None:
    full, q = qs.full, qs.quick
    print(f"quick set: {len(qs.cases)} of {full.cases} cases, measured on torch {qs.torch} "
          f"({', '.join(qs.engines)}), budget {qs.budget_s:.1f} CPU s of case cost")
    print(f"  lines (any engine)   {q.lines:6d} of {full.lines:6d}  {_pct(q.lines, full.lines)}")
    print(f"  lines (per engine)   {q.engine_lines:6d} of {full.engine_lines:6d}  "
          f"{_pct(q.engine_lines, full.engine_lines)}")
    print(f"  branches (per engine){q.engine_arcs:6d} of {full.engine_arcs:6d}  "
          f"{_pct(q.engine_arcs, full.engine_arcs)}")
    print(f"  features             {q.features:6d} of {full.features:6d}  {_pct(q.features, full.features)} "
          f"(variation answers and analysis facts, each in {quick.FEATURE_TIMES} cases where it can)")
    print(f"  CPU seconds of cases {q.seconds:6.1f} of {full.seconds:6.1f}  {_pct(q.seconds, full.seconds)}")
    if data is None:
        return
    cands = candidates(data)
    chosen = [c for c in cands if c.id in set(qs.ids)]
    _per_file(cands, chosen)
    probe, median = cpp_probe(data["cost"])
    n_cpp = len({r["case"] for r in data["cost"] if r.get("children_seconds", 0.0) > CPP_MIN_S})
    print(f"  C++ builds: {n_cpp} cases build a C++ kernel ({median:.1f} CPU s each); each is charged "
          f"the toolchain probe ({probe:.1f} CPU s) x {JOBS} workers")
    missed = sorted(set().union(*(c.features for c in cands)) - set().union(*(c.features for c in chosen)))
    if missed:
        print(f"  features the quick set misses: {', '.join(missed)}")
    _disagreements(data)


def _per_file(cands, chosen) -> None:
    def count(cs):
        per = Counter()
        for e, f, n in set().union(*(c.lines for c in cs)):
            per[(e, f)] += 1
        return per
    full, q = count(cands), count(chosen)
    print("  per engine and file (lines reached by the full run, share the quick set reaches):")
    for (e, f), n in sorted(full.items()):
        print(f"    {e:20} {f:55} {n:5d} {_pct(q[(e, f)], n)}")


def _disagreements(data: dict) -> None:
    if not data["cost"]:
        return
    plain = {(r["case"], r["engine"]): r["verdicts"] for r in data["cost"]}
    diff = [(r["case"], r["engine"]) for r in data["coverage"]
            if plain.get((r["case"], r["engine"])) != r["verdicts"]]
    print(f"  (case, engine) pairs whose verdicts differ between the coverage run and the plain "
          f"run: {len(diff)}" + (f" ({', '.join(f'{c} [{e}]' for c, e in diff[:6])}"
                                 f"{', ...' if len(diff) > 6 else ''})" if diff else ""))


# ---------------------------------------------------------------- main


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=DEFAULT_BUDGET,
                    help=f"the share of the full run's CPU the quick set's cases may cost, in percent "
                         f"(default {DEFAULT_BUDGET:g}; NOTE [the budget is a share of the full run])")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes for the measurement")
    ap.add_argument("--from", dest="source", type=Path, default=None,
                    help="choose from this saved measurement instead of measuring again")
    ap.add_argument("--measure-out", type=Path, default=MEASURE, help=f"where the measurement is kept "
                    f"(default {MEASURE.relative_to(ROOT)})")
    ap.add_argument("--out", type=Path, default=quick.BUILTIN, help="where the quick set is written "
                    "(default: the built-in aotcheck/regress/quick_set.json)")
    ap.add_argument("--coverage-again", action="store_true", help="with --from: run the coverage "
                    "pass again, keep the plain pass")
    ap.add_argument("--cost-again", action="store_true", help="with --from: measure the cases' "
                    "cost again (the plain pass only), keep the coverage pass")
    ap.add_argument("--lines-only", action="store_true", help="skip the plain pass (every case "
                    "then costs 0 s): for checking what cases reach, not for choosing")
    ap.add_argument("-k", dest="pattern", default="", help="measure only cases whose id contains "
                    "this text (a trial run; the set it writes knows only those cases)")
    ap.add_argument("--report", action="store_true", help="print the built-in set's coverage and exit "
                    "(with --from: per file too)")
    args = ap.parse_args(argv)
    data = load_measure(args.source) if args.source else None
    if args.report:
        report(quick.load(), data)
        return 0
    if data is not None and args.coverage_again:
        data["coverage"] = measure(args.jobs, True, args.pattern)
        save_measure(args.measure_out, data)
    if data is not None and args.cost_again:
        data["cost"] = measure(args.jobs, False, args.pattern)
        save_measure(args.measure_out, data)
    if data is None:
        data = measure_all(args.jobs, args.pattern, cost=not args.lines_only)
        save_measure(args.measure_out, data)
        print(f"measurement kept in {args.measure_out}", file=sys.stderr)
    qs = choose(data, args.budget, f"python tools/quick_cover.py --budget {args.budget:g} (percent)")
    quick.save(qs, args.out)
    print(f"wrote {args.out}")
    report(quick.load(args.out), data)
    return 0


def measure_all(jobs: int, pattern: str = "", cost: bool = True) -> dict:
    import torch

    from aotcheck.check.corpus import all_cases
    from aotcheck.regress.plan import engines_of
    t0 = time.perf_counter()
    cov = measure(jobs, True, pattern)
    t1 = time.perf_counter()
    plain = measure(jobs, False, pattern) if cost else []
    print(f"measured in {t1 - t0:.0f}s (coverage) + {time.perf_counter() - t1:.0f}s (plain), "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}", file=sys.stderr)
    return {"torch": torch.__version__.split("+")[0], "engines": list(engines_of(ENGINES)),
            "corpus": [c.id for c in all_cases() if pattern in c.id], "files": list(FILES),
            "coverage": cov, "cost": plain}


if __name__ == "__main__":
    sys.exit(main())
