"""``aotcheck ops``: the OpInfo backward suite (see ``aotcheck.grad.ops_suite``).

    aotcheck ops --samples first                 every differentiable OpInfo, first sample, cold
    aotcheck ops --op sin --op fmod --samples all
    aotcheck ops --op cov --samples all --sample-index 3 --variant fn     (a failure's repro line)
    aotcheck ops --cached                        cold into a fresh cache dir, then cached from it
    aotcheck ops --repeat 5                      five seeds: per-op failure rates (flakiness)

For a backend author (one column per backend, side by side, with BackendBench's scores):

    aotcheck ops --samples first --backend inductor --backend aot_eager --backend aotcheck
    aotcheck ops --backend mypkg.backend:compile_fn --json run.json     any torch.compile backend
    aotcheck ops --kernels my_kernels/                  one function per aten op, checked against aten
    aotcheck ops --backend inductor --reference numerical   finite differences only, no eager reference
    aotcheck ops --diff old.json new.json               what changed between two runs
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("ops", help="run every differentiable OpInfo through the engine and score it")
    p.add_argument("--samples", choices=("first", "all"), default="first", help="which samples per op")
    p.add_argument("--engine", choices=("aotcheck", "eager"), default="aotcheck",
                   help="aotcheck, or eager (identity: a sanity check of the suite)")
    p.add_argument("--op", action="append", default=[], metavar="NAME",
                   help="only this op (name or name.variant; repeatable)")
    p.add_argument("--limit", type=int, help="only the first N selected ops")
    p.add_argument("--shard", metavar="K/N", help="only the K-th of N contiguous slices of the selected ops "
                   "(K from 1; for splitting a long sweep over processes or machines; --report-from "
                   "merges their --stream files)")
    p.add_argument("--repeat", type=int, default=1, metavar="K", help="run the checks with K seeds")
    p.add_argument("--seed", type=int, default=0, help="first seed (cotangents, element subset)")
    p.add_argument("--cached", action="store_true",
                   help="also run each sample through a fresh aot_function reading the cold run's cache")
    p.add_argument("--cache-dir", help="cache directory for --cached (default: a new temp dir)")
    p.add_argument("--sample-index", type=int, help="only this sample (implies its position in all samples)")
    p.add_argument("--variant", choices=("fn", "inplace"), action="append",
                   help="only this variant (repeatable; default both)")
    p.add_argument("--max-elements", type=int, default=20,
                   help="elements per input perturbed by the numerical check")
    p.add_argument("--backend", action="append", default=[], metavar="B",
                   help="a torch.compile backend: inductor, aot_eager, aotcheck, an entry-point name or "
                        "module:function (repeatable: one column each)")
    p.add_argument("--kernels", metavar="PATH",
                   help="a directory, .py file or module of op implementations, one function per aten op "
                        "(mm, add_Tensor; mm_backward for its autograd formula); only the implemented ops run")
    p.add_argument("--reference", choices=("eager", "numerical"), default="eager",
                   help="numerical: score the backward against finite differences alone (no eager reference)")
    p.add_argument("--inductor-cache-dir", metavar="DIR",
                   help="torch's compile caches for --backend (default: $AOTCHECK_INDUCTOR_CACHE_DIR, else "
                        "cache/torch-inductor when ./cache exists, else <user cache dir>/torch-inductor)")
    p.add_argument("--perf-p", type=float, default=1.0, metavar="P",
                   help="perf@P: the fraction of ops that are correct and more than P times faster than eager")
    p.add_argument("--no-perf", action="store_true", help="do not time forwards against eager")
    p.add_argument("--stream", metavar="PATH.jsonl",
                   help="append every sample's result to PATH as it is checked (a long run's partial record)")
    p.add_argument("--resume", action="store_true",
                   help="with --stream: skip the ops the stream file already has results for")
    p.add_argument("--report-from", metavar="PATH.jsonl", action="append",
                   help="print the side-by-side report of --stream files (repeatable: shards of one run)")
    p.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"), help="compare two --json files and exit")
    p.add_argument("--json", metavar="PATH", help="write the run (scores, per-op statuses, every sample) as JSON")
    p.add_argument("--verbose", "-v", action="store_true", help="list every failing seed run")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..grad import ops_suite as S

    if args.diff:
        return _diff(*args.diff)
    if args.report_from:
        return _report_from(args)
    if args.backend or args.kernels:
        return _run_targets(args)
    t0 = time.perf_counter()
    engines, note = _engines(args, S)
    ops, header, stream = _streamed_selection(args, S.select_ops(args.op, args.limit))
    with stream:
        results = S.run_suite(S.Suite(samples=args.samples, index=args.sample_index, ops=ops,
                                      variants=tuple(args.variant or ("fn", "inplace")),
                                      seeds=range(args.seed, args.seed + args.repeat), engines=engines,
                                      max_elements=args.max_elements, reference=args.reference),
                              on_case=_progress(ops), on_results=stream.write)
    if header:
        note += f"; {header}"
    wall = time.perf_counter() - t0
    print(f"aotcheck ops: engine {args.engine}, samples {args.samples}, "
          f"max elements {args.max_elements}{note}")
    print(S.format_report(results, verbose=args.verbose))
    for e in engines:
        if e.name == "aotcheck":
            counts = ", ".join(f"{k} {v}" for k, v in sorted(e.cache_counts.items())) or "none"
            print(f"cache counters [{e.mode}]: {counts}")
    print(f"wall time {wall:.1f}s")
    if args.json:
        from ..grad.compare import run_document, write_document
        write_document(run_document(results, command=" ".join(sys.argv), meta={"engine": args.engine}),
                       args.json)
    bad = any(r.status(c) in (S.FAIL, S.ENGINE_ERROR, S.CRASH, S.XPASS) for r in results for c in S.CHECKS)
    return 1 if bad else 0


def _engines(args, S):
    if args.engine == "eager":
        return [S.eager_engine()], ""
    if not args.cached:
        return [S.aotcheck_engine()], ", mode cold"
    cache_dir = args.cache_dir or tempfile.mkdtemp(prefix="aotcheck-ops-cache-")
    return [S.aotcheck_engine(cache_dir, "cold"), S.aotcheck_engine(cache_dir, "cached")], \
        f", modes cold then cached (cache dir {cache_dir})"



def _run_targets(args) -> int:
    """``--backend``/``--kernels``: one column per target, side by side."""
    from ..grad import ops_suite as S
    from ..grad.compare import format_side_by_side, run_document, write_document

    if args.cached or args.engine != "aotcheck":
        raise SystemExit("aotcheck ops: --cached and --engine do not combine with --backend/--kernels")
    if args.backend and args.kernels:
        raise SystemExit("aotcheck ops: give --backend or --kernels, not both (--kernels runs only the "
                         "implemented ops)")
    t0 = time.perf_counter()
    perf = not args.no_perf
    meta = {"reference": args.reference, "samples": args.samples, "max_elements": args.max_elements}
    if args.kernels:
        from ..targets.kernels import load_kernels
        kernels = load_kernels(args.kernels)
        engines = [S.kernels_engine(kernels, perf)]
        ops, missing = S.select_kernel_ops(kernels, args.op)
        meta["kernels"] = [{"op": k.op, "source": k.source, "backward": k.has_backward}
                           for k in kernels.kernels]
        header = (f"kernels {args.kernels}: " + ", ".join(f"aten.{k.op}" + (" (+ backward)" if k.has_backward
                                                                            else "") for k in kernels.kernels))
        if missing:
            header += f"; no OpInfo tests {', '.join(missing)}"
    else:
        from ..targets.compile_backends import use_inductor_cache_dir
        cache = use_inductor_cache_dir(_inductor_cache_dir(args))
        engines = [S.backend_engine(b, perf) for b in args.backend]
        ops = S.select_ops(args.op, args.limit)
        meta["inductor_cache_dir"] = str(cache)
        header = f"backends {', '.join(args.backend)}; torch compile caches in {cache}"
    ops, resumed, stream = _streamed_selection(args, ops)
    header += f"; {resumed}" if resumed else ""
    with stream:
        results = S.run_suite(S.Suite(samples=args.samples, index=args.sample_index,
                                      variants=tuple(args.variant or ("fn", "inplace")),
                                      seeds=range(args.seed, args.seed + args.repeat), engines=engines,
                                      max_elements=args.max_elements, reference=args.reference, ops=ops),
                              on_case=_progress(ops), on_results=stream.write)
    wall = time.perf_counter() - t0
    print(f"aotcheck ops: {header}; samples {args.samples}, reference {args.reference}, "
          f"max elements {args.max_elements}")
    print(format_side_by_side(results, args.perf_p))
    print(S.format_report(results, verbose=args.verbose))
    print(f"wall time {wall:.1f}s")
    meta["wall_s"] = round(wall, 1)
    if args.json:
        write_document(run_document(results, command=" ".join(sys.argv), p=args.perf_p, meta=meta), args.json)
    bad = any(r.status(c) in (S.FAIL, S.ENGINE_ERROR, S.CRASH, S.XPASS) for r in results for c in S.CHECKS)
    return 1 if bad else 0


def _inductor_cache_dir(args) -> Path:
    from .. import flags
    if args.inductor_cache_dir:
        return Path(args.inductor_cache_dir)
    if flags.get(flags.INDUCTOR_CACHE_DIR):
        return Path(flags.get(flags.INDUCTOR_CACHE_DIR))
    if Path("cache").is_dir():
        return Path("cache") / "torch-inductor"
    from ..cache import default_dir
    return default_dir() / "torch-inductor"


def _diff(old: str, new: str) -> int:
    from ..grad.compare import diff_documents, read_document
    try:
        lines = diff_documents(read_document(old), read_document(new))
    except (OSError, ValueError) as e:
        raise SystemExit(f"aotcheck ops --diff: {e}") from None
    print(f"aotcheck ops --diff {old} {new}: {len(lines)} changes")
    for line in lines:
        print("  " + line)
    return 1 if lines else 0


def _progress(ops: list):
    """An ``on_case`` that advances a progress bar by op."""
    from .progress import Progress
    bar = Progress(len(ops), "ops")
    done = set()

    def on_case(case):
        if case.op not in done:
            done.add(case.op)
            bar.advance(case.op)
    return on_case


class _Stream:
    """``--stream``: every sample's result appended as one JSON line as soon as it is checked,
    after a header line of the options the results depend on (a no-op without ``--stream``)."""

    def __init__(self, path: str | None, options: dict):
        self.file = open(path, "a") if path else None
        if self.file is not None:
            self.file.write(json.dumps({"stream_header": options}, sort_keys=True) + "\n")

    def write(self, rows) -> None:
        if self.file is not None:
            for r in rows:
                self.file.write(json.dumps(asdict(r), sort_keys=True) + "\n")
            self.file.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.file is not None:
            self.file.close()


def _streamed_selection(args, ops: list) -> tuple[list, str, _Stream]:
    """The ops this process runs (``--shard``; less those a ``--resume``d stream has), a line for
    the header, and the ``--stream`` to write to."""
    from ..grad.ops_suite import op_id
    ops = _shard(ops, args.shard)
    options = _stream_options(args)
    header = ""
    if args.resume:
        if not args.stream:
            raise SystemExit("aotcheck ops: --resume needs --stream PATH (the run to continue)")
        seen = _streamed_ops(args.stream, options)
        ops = [o for o in ops if op_id(o) not in seen]
        header = f"resuming {args.stream}: {len(seen)} ops already done, {len(ops)} to go"
    if args.shard:
        header = f"shard {args.shard}" + (f", {header}" if header else "")
    return ops, header, _Stream(args.stream, options)


def _stream_options(args) -> dict:
    """What a --stream file's results depend on; --resume continues only a run with the same."""
    return {"engine": args.engine, "cached": args.cached,
            "backend": list(args.backend), "kernels": args.kernels, "samples": args.samples,
            "reference": args.reference, "max_elements": args.max_elements, "seed": args.seed,
            "repeat": args.repeat, "variant": sorted(args.variant or ("fn", "inplace")),
            "sample_index": args.sample_index, "schema_version": _schema()}


def _schema() -> int:
    from ..grad.results import SCHEMA_VERSION
    return SCHEMA_VERSION


def _streamed_ops(path: str, options: dict) -> set[str]:
    """Ops with results in a --stream file written with the same ``options``; the last op may be
    partial, so it is run again. A file written with other options is refused, not reused."""
    ops = []
    try:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                row = json.loads(line)
                if "stream_header" in row:
                    if row["stream_header"] != options:
                        diff = sorted(k for k in options if row["stream_header"].get(k) != options[k])
                        raise SystemExit(f"aotcheck ops --resume: {path} was written with other options "
                                         f"({', '.join(diff)} differ); use a new --stream file")
                    continue
                ops.append(row["op"])
    except FileNotFoundError:
        return set()
    return set(ops) - ({ops[-1]} if ops else set())


def _report_from(args) -> int:
    from ..grad import ops_suite as S
    from ..grad.compare import format_side_by_side
    latest = {}     # a resumed run repeats its last op: the later row wins
    for path in args.report_from:
        with open(path) as f:
            for line in f:
                row = json.loads(line) if line.strip() else {"stream_header": None}
                if "stream_header" not in row:
                    r = S.SampleResult(**row)
                    latest[(r.op, r.variant, r.index, r.seed, r.mode)] = r
    results = list(latest.values())
    print(f"aotcheck ops --report-from {' '.join(args.report_from)}: {len(results)} sample results, "
          f"{len({r.op for r in results})} ops")
    print(format_side_by_side(results, args.perf_p))
    print(S.format_report(results, verbose=args.verbose))
    return 0


def _shard(ops: list, spec: str | None) -> list:
    if not spec:
        return ops
    try:
        k, n = (int(x) for x in spec.split("/"))
        assert 1 <= k <= n
    except (ValueError, AssertionError):
        raise SystemExit(f"aotcheck ops: --shard {spec}: expected K/N with 1 <= K <= N, e.g. 2/4") from None
    return ops[(k - 1) * len(ops) // n:k * len(ops) // n]
