"""compare: several backends side by side, the run as a JSON document, and the diff of two runs.

    column_scores(results, mode, p)   the three scores, BackendBench's performance score and
                                      perf@p of one column (one backend)
    op_status(rows)                   one word per op and column: pass, fail:backward, error, ...
    format_side_by_side(results, p)   the score table, one column per backend, then every op
                                      that is not "pass" everywhere with its status per column
    run_document(results, ...)        plain JSON: columns, scores, per-op statuses, every sample
    diff_documents(old, new)          what changed between two documents: scores and statuses

Before: results of ``aotcheck ops --backend inductor --backend aot_eager`` (mode = column).
After (``format_side_by_side``)::

    scores                    inductor  aot_eager
      correctness                0.990      1.000
      backward correctness       0.985      1.000
      ...
    ops that differ from "pass" in some column (status per column; repro lines below):
      nextafter                  fail:forward    pass
"""
from __future__ import annotations

import json
from typing import Sequence

from .gradcheck import FAIL, PASS
from .perf import correct_ops, performance_score, perf_at_p, per_op_speedup
from .results import CHECKS, CRASH, ENGINE_ERROR, SCHEMA_VERSION, SKIPPED, XPASS, SampleResult
from .scores import score

DOC_KIND = "aotcheck-ops-run"
_METRICS = (("correctness", "correctness"), ("backward correctness", "backward_correctness"),
            ("numerical agreement", "numerical_agreement"), ("performance (geomean speedup)", "performance"),
            ("perf@p", "perf_at_p"))


def column_scores(results: Sequence[SampleResult], mode: str, p: float = 1.0) -> dict:
    rows = [r for r in results if r.mode == mode]
    s = score(rows, mode)
    return {"correctness": s.correctness, "backward_correctness": s.backward_correctness,
            "numerical_agreement": s.numerical_agreement, "performance": performance_score(rows),
            "perf_at_p": perf_at_p(rows, p), "p": p, "n_ops": dict(s.n_ops),
            "correct_ops": sum(correct_ops(rows).values())}


def op_status(rows: Sequence[SampleResult]) -> str:
    """The worst outcome over an op's samples in one column, e.g. ``fail:backward``."""
    worst = None
    for rank, word, hit in ((0, "crash", lambda st: st == CRASH), (1, "error", lambda st: st == ENGINE_ERROR),
                            (2, "fail", lambda st: st in (FAIL, XPASS))):
        checks = [c for c in CHECKS if any(hit(r.status(c)) for r in rows)]
        if checks:
            worst = word if word != "fail" else "fail:" + "+".join(checks)
            break
    if worst:
        return worst
    if any(r.status(c) == PASS for r in rows for c in CHECKS):
        return "pass"
    return "skipped" if any(r.status(c) == SKIPPED for r in rows for c in CHECKS) else "n/a"


def _per_op(results: Sequence[SampleResult], modes: Sequence[str]) -> dict[str, dict[str, str]]:
    by = {}
    for r in results:
        by.setdefault(r.op, {}).setdefault(r.mode, []).append(r)
    return {op: {m: op_status(cols.get(m, [])) if m in cols else "-" for m in modes} for op, cols in by.items()}


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_side_by_side(results: Sequence[SampleResult], p: float = 1.0, max_ops: int = 200) -> str:
    modes = list(dict.fromkeys(r.mode for r in results))
    cols = {m: column_scores(results, m, p) for m in modes}
    width = max([12] + [len(m) + 2 for m in modes])
    lines = [f"{'scores':<32}" + "".join(f"{m:>{width}}" for m in modes)]
    for label, key in _METRICS:
        name = f"perf@{p:g} (correct and > {p:g}x)" if key == "perf_at_p" else label
        lines.append(f"  {name:<30}" + "".join(f"{_fmt(cols[m][key]):>{width}}" for m in modes))
    lines.append(f"  {'ops scored (forward)':<30}" + "".join(f"{cols[m]['n_ops']['forward']:>{width}}"
                                                           for m in modes))
    lines.append(f"  {'ops fully correct':<30}" + "".join(f"{cols[m]['correct_ops']:>{width}}" for m in modes))
    per_op = _per_op(results, modes)
    odd = {op: st for op, st in per_op.items() if any(v not in ("pass", "skipped", "n/a", "-")
                                                     for v in st.values())}
    lines.append(f'ops that are not "pass" in some column: {len(odd)} of {len(per_op)} '
                 "(status per column; each failure's repro line is under failing samples)")
    opw = max([20] + [len(op) + 2 for op in odd])
    sw = max([width] + [len(v) + 2 for st in odd.values() for v in st.values()])
    lines.append(f"  {'op':<{opw}}" + "".join(f"{m:>{sw}}" for m in modes))
    for k, (op, st) in enumerate(sorted(odd.items())):
        if k == max_ops:
            lines.append(f"  … {len(odd) - max_ops} more (see the JSON file)")
            break
        lines.append(f"  {op:<{opw}}" + "".join(f"{st[m]:>{sw}}" for m in modes))
    return "\n".join(lines)


def run_document(results: Sequence[SampleResult], *, command: str = "", p: float = 1.0,
                 meta: dict | None = None) -> dict:
    """Plain JSON-able data; ``SampleResult(**row)`` reads a row back."""
    from dataclasses import asdict
    modes = list(dict.fromkeys(r.mode for r in results))
    speed = {m: per_op_speedup([r for r in results if r.mode == m]) for m in modes}
    return {"kind": DOC_KIND, "schema_version": SCHEMA_VERSION, "command": command, "columns": modes,
            "meta": dict(meta or {}), "scores": {m: column_scores(results, m, p) for m in modes},
            "ops": _per_op(results, modes), "speedup": speed,
            "results": sorted((asdict(r) for r in results),
                              key=lambda d: (d["op"], d["variant"], d["index"], d["seed"], d["mode"]))}


def write_document(doc: dict, path: str) -> None:
    """One result per line, keys sorted, so ``diff a.json b.json`` is readable too."""
    rows = doc["results"]
    head = {k: v for k, v in doc.items() if k != "results"}
    with open(path, "w") as f:
        f.write(json.dumps(head, sort_keys=True)[:-1] + ', "results": [\n')
        f.write(",\n".join(json.dumps(r, sort_keys=True) for r in rows))
        f.write("\n]}\n")


def read_document(path: str) -> dict:
    with open(path) as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or doc.get("kind") != DOC_KIND:
        raise ValueError(f"{path}: not an aotcheck ops JSON file (written by aotcheck ops --json)")
    return doc


def diff_documents(old: dict, new: dict) -> list[str]:
    """Score changes per column, and every op whose status changed in a column both runs have."""
    lines = []
    shared = [m for m in new["columns"] if m in old["columns"]]
    for m in shared:
        for label, key in _METRICS:
            a, b = old["scores"][m].get(key), new["scores"][m].get(key)
            if a != b:
                lines.append(f"[{m}] {label}: {_fmt(a)} -> {_fmt(b)}")
    for op in sorted(set(old["ops"]) | set(new["ops"])):
        for m in shared:
            a, b = old["ops"].get(op, {}).get(m, "-"), new["ops"].get(op, {}).get(m, "-")
            if a != b:
                lines.append(f"[{m}] {op}: {a} -> {b}")
    for m in new["columns"]:
        if m not in old["columns"]:
            lines.append(f"column {m}: only in the new run")
    for m in old["columns"]:
        if m not in new["columns"]:
            lines.append(f"column {m}: only in the old run")
    return lines
