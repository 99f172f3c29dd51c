"""scores: BackendBench-style scores over the suite's results, and the printed report.

``score(results)`` gives per-op mean pass rates for correctness (forward), backward
correctness (against eager) and numerical agreement (against finite differences);
``format_report`` prints them, the engine errors grouped by message stem, and every
failure with a one-line repro command. ``parse_scores`` reads the scores back from a
printed report.
"""
from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Sequence

from .gradcheck import FAIL, PASS
from .results import CHECKS, COUNTED, CRASH, ENGINE_ERROR, SKIPPED, STATUSES, XPASS, SampleResult


@dataclass
class Scores:
    """Mean per-op pass rates and counts; one instance per engine mode."""
    mode: str
    correctness: float | None                 # forward
    backward_correctness: float | None        # backward vs eager, over ops that support backward
    numerical_agreement: float | None         # backward vs finite differences
    n_ops: dict[str, int] = field(default_factory=dict)     # ops entering each score
    counts: dict[str, Counter] = field(default_factory=dict)  # check -> status -> samples
    accepted: dict[str, float | None] = field(default_factory=dict)  # scores over samples the engine accepted


def score(results: Sequence[SampleResult], mode: str = "cold") -> Scores:
    """Per-op pass rate of each check, averaged over ops. A sample counts when its status is in
    ``COUNTED`` (engine errors and crashes count as failures; vacuous, skipped, n/a and xfail do
    not). Backward is not conditional on forward."""
    rows = [r for r in results if r.mode == mode]
    counts = {c: Counter(r.status(c) for r in rows) for c in CHECKS}
    means, n_ops, accepted = {}, {}, {}
    for c in CHECKS:
        for key, allowed in ((c, COUNTED), (c + "/accepted", (PASS, FAIL, XPASS))):
            per_op = defaultdict(lambda: [0, 0])
            for r in rows:
                if r.status(c) in allowed:
                    per_op[r.op][1] += 1
                    per_op[r.op][0] += r.status(c) in (PASS, XPASS)
            rates = [p / n for p, n in per_op.values()]
            value = sum(rates) / len(rates) if rates else None
            if key == c:
                means[c], n_ops[c] = value, len(rates)
            else:
                accepted[c] = value
    return Scores(mode, means["forward"], means["backward"], means["numerical"], n_ops, counts, accepted)


def failure_rates(results: Sequence[SampleResult], check: str) -> dict[str, float]:
    """Per op (and mode), the fraction of seed runs that failed ``check`` at the chosen tolerances:
    only pass/fail outcomes count (engine errors and crashes do not depend on the seed)."""
    per_op = defaultdict(lambda: [0, 0])
    for r in results:
        if r.status(check) in (PASS, FAIL, XPASS):
            per_op[(r.op, r.mode)][1] += 1
            per_op[(r.op, r.mode)][0] += r.status(check) == FAIL
    return {f"{op} ({mode})": f / n for (op, mode), (f, n) in per_op.items()}


def flaky_cases(results: Sequence[SampleResult], check: str) -> list[str]:
    """Cases that passed under some seeds and failed under others, as repro commands."""
    outcomes = defaultdict(dict)
    for r in results:
        if r.status(check) in (PASS, FAIL):
            outcomes[(r.op, r.variant, r.index, r.mode)][r.seed] = r
    return [next(x for x in o.values() if x.status(check) == FAIL).repro() for o in outcomes.values()
            if {x.status(check) for x in o.values()} == {PASS, FAIL}]


_NORMALIZE = ((re.compile(r"aten\.[\w.]+"), "aten.OP"), (re.compile(r"0x[0-9a-f]+"), "ADDR"),
              (re.compile(r"-?\d+(\.\d+)?(e-?\d+)?"), "N"), (re.compile(r"'[^']*'"), "'…'"))


def stem(text: str, width: int = 140) -> str:
    """A message with numbers, addresses, aten op names and quoted names replaced, for grouping.

    >>> stem("TraceError: op aten.nonzero.default has 3 outputs at 0x7f'x'")
    "TraceError: op aten.OP has N outputs at ADDR'…'"
    """
    for pattern, repl in _NORMALIZE:
        text = pattern.sub(repl, text)
    return text[:width]


def group_failures(results: Sequence[SampleResult],
                   statuses: Sequence[str]) -> list[tuple[str, str, list[str]]]:
    """``(checks, message stem, ops)`` for samples whose status is in ``statuses``, largest first.

    One sample's same message under several checks (an engine error hits all three) is one entry,
    labelled with every check it affected, e.g. ``forward+backward+numerical``.
    """
    groups: dict[str, tuple[set, list[str]]] = {}
    for r in results:
        for c in CHECKS:
            if r.status(c) in statuses:
                checks, ops = groups.setdefault(stem(r.detail(c)), (set(), []))
                checks.add(c)
                if r.op not in ops:
                    ops.append(r.op)
    rows = [("+".join(c for c in CHECKS if c in checks), s, ops) for s, (checks, ops) in groups.items()]
    return sorted(rows, key=lambda g: (-len(g[2]), g[0], g[1]))


def _format_cache(results: Sequence[SampleResult]) -> list[str]:
    """Cached-mode cases that did not only hit (engine errors excluded: nothing was saved)."""
    rows = defaultdict(list)
    first_seed = min((r.seed for r in results), default=0)
    for r in results:
        if r.mode != "cached" or r.seed != first_seed or r.forward in (ENGINE_ERROR, CRASH):
            continue
        other = [kv for kv in r.cache.split(", ") if kv and not kv.startswith(("hits", "backward_hits"))]
        if other:
            key = ", ".join(re.sub(r" \d+$", "", kv) for kv in other)
            if r.op not in rows[key]:
                rows[key].append(r.op)
    if not rows:
        return []
    out = [f"cached mode: {sum(len(v) for v in rows.values())} ops did not only hit the cache"]
    for key, ops in sorted(rows.items(), key=lambda kv: -len(kv[1])):
        out.append(f"  {key}: {len(ops)} ops, e.g. {', '.join(ops[:8])}")
    return out


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def format_scores(s: Scores) -> str:
    """The score block; ``parse_scores`` reads it back."""
    lines = [f"scores [{s.mode}] (mean per-op pass rate; engine errors count as failures)",
             f"  correctness           {_fmt(s.correctness)}  over {s.n_ops['forward']} ops",
             f"  backward correctness  {_fmt(s.backward_correctness)}  over {s.n_ops['backward']} ops",
             f"  numerical agreement   {_fmt(s.numerical_agreement)}  over {s.n_ops['numerical']} ops",
             f"  (over accepted samples only: correctness {_fmt(s.accepted['forward'])}, "
             f"backward {_fmt(s.accepted['backward'])}, numerical {_fmt(s.accepted['numerical'])})"]
    lines.append(f"  {'samples':<11}" + "".join(f"{st:>13}" for st in STATUSES))
    for c in CHECKS:
        lines.append(f"  {c:<11}" + "".join(f"{s.counts[c][st]:>13}" for st in STATUSES))
    return "\n".join(lines)


_SCORE_LINE = re.compile(r"^\s+(correctness|backward correctness|numerical agreement)\s+(\S+)\s+over (\d+) ops")


def parse_scores(text: str) -> dict[str, float | None]:
    """``{"correctness": 0.95, ...}`` from ``format_scores`` output (the first block)."""
    out: dict[str, float | None] = {}
    for line in text.splitlines():
        m = _SCORE_LINE.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = None if m.group(2) == "n/a" else float(m.group(2))
    return out


def format_report(results: Sequence[SampleResult], *, verbose: bool = False, max_listed: int = 400) -> str:
    """Scores per mode, engine errors and crashes grouped by stem, failures grouped by reason,
    then every failing sample with its repro command."""
    modes = list(dict.fromkeys(r.mode for r in results))
    lines = []
    n_ops = len({r.op for r in results})
    n_cases = len({(r.op, r.variant, r.index) for r in results})
    views = sorted({r.op for r in results if r.is_view})
    lines.append(f"{n_ops} ops, {n_cases} samples (variants included), "
                 f"{len({r.seed for r in results})} seed(s), modes: {', '.join(modes)}; "
                 f"{len(views)} view ops")
    for m in modes:
        lines.append(format_scores(score(results, m)))
    for title, statuses in (("engine errors", (ENGINE_ERROR,)), ("crashes (non-aotcheck exceptions)", (CRASH,)),
                            ("failures", (FAIL,)), ("pytorch skips", (SKIPPED,))):
        groups = group_failures(results, statuses)
        if not groups:
            continue
        n = len({op for _, _, ops in groups for op in ops})
        lines.append(f"{title}: {n} ops, {len(groups)} distinct messages")
        for c, s, ops in groups:
            shown = ", ".join(ops[:8]) + (f", … (+{len(ops) - 8})" if len(ops) > 8 else "")
            lines.append(f"  [{c}] {len(ops)} ops: {s}\n      e.g. {shown}")
    lines.extend(_format_cache(results))
    seeds = {r.seed for r in results}
    if len(seeds) > 1:
        rows = [f"  [{c}] {op}: {rate:.2f}" + ("  (flaky)" if rate < 1 else "")
                for c in ("backward", "numerical") for op, rate in sorted(failure_rates(results, c).items())
                if rate > 0]
        lines.append(f"failure rate per op across {len(seeds)} seeds, pass/fail runs only "
                     f"(ops with a failure): " + ("none" if not rows else f"{len(rows)}"))
        lines.extend(rows)
        for c in ("backward", "numerical"):
            for repro in flaky_cases(results, c):
                lines.append(f"  flaky [{c}]: {repro}")
    bad = [r for r in results if any(r.status(c) in (FAIL, ENGINE_ERROR, CRASH, XPASS) for c in CHECKS)]
    if bad:
        lines.append("failing samples:")
        seen = set()
        for r in bad:
            key = (r.op, r.variant, r.index, r.mode)
            if key in seen and not verbose:
                continue
            seen.add(key)
            if len(seen) > max_listed:
                lines.append(f"  … {len(bad) - max_listed} more")
                break
            worst = next(c for c in CHECKS if r.status(c) in (FAIL, ENGINE_ERROR, CRASH, XPASS))
            flags = " ".join(f"{c}={r.status(c)}" for c in CHECKS)
            lines.append(f"  {r.op} [{r.variant} #{r.index}, {r.mode}] {flags}: {r.detail(worst)[:200]}")
            lines.append(f"      repro: {r.repro()}")
    return "\n".join(lines)
