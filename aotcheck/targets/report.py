"""Side-by-side results of engines over the corpus: collect, then format as markdown.

``collect(engines, cached=...)`` runs every case through each engine (cold, and with
``cached`` the cache round trip of :func:`aotcheck.targets.engines.outcome`) and classifies it
against ``KNOWN_FAILURES``: pass, fail (unexpected), xfail (expected), xpass (expected
to fail but passed). ``to_markdown`` prints one row per theme with a column group per
engine, then the hit rates, then every failure with its first divergence or reason::

    | theme     | aotcheck cold | aotcheck cached | torch cold | torch cached |
    |-----------|---------------|-----------------|------------|--------------|
    | basics    | 21/21         | 21/21           | 18/21 (3x) | 18/21 (3x)   |

A cell ``P/N (Xx, Ff, Uxp)`` reads: P of N cases passed, X expected failures, F
unexpected failures, U unexpected passes.
"""
from __future__ import annotations

import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum

from .engines import Engine, get_engine, outcome
from .known_failures import crashes, known_failure


class Status(StrEnum):
    """One case's outcome against ``KNOWN_FAILURES`` (the report prints the value)."""
    PASS = "pass"          # passed, no failure recorded
    FAIL = "fail"          # failed, no failure recorded (unexpected)
    XFAIL = "xfail"        # failed, as recorded (expected)
    XPASS = "xpass"        # passed although a failure is recorded (unexpected)


class RunMode(StrEnum):
    """How an engine ran the corpus: a column group of the report."""
    COLD = "cold"          # compiled afresh, no cache
    CACHED = "cached"      # the cache round trip: one run fills an empty directory, a second reads it


@dataclass
class Result:
    case_id: str
    theme: str
    status: Status
    problems: list               # Divergence records, or harness sentences ("not run: ...")
    reason: str | None           # the KNOWN_FAILURES entry, if any
    stats: dict


@dataclass
class EngineResults:
    engine: str
    mode: RunMode
    results: list[Result] = field(default_factory=list)
    wall_s: float = 0.0

    def counts(self, theme: str | None = None) -> Counter:
        return Counter(r.status for r in self.results if theme is None or r.theme == theme)

    def hits(self) -> tuple[int, int]:
        """(hits, lookups) over the runs whose graphs reached the cache."""
        h = sum(r.stats.get("hits", 0) for r in self.results)
        n = sum(r.stats.get("hits", 0) + r.stats.get("misses", 0) + r.stats.get("bypasses", 0)
                for r in self.results)
        return h, n


def _status(ok: bool, reason: str | None) -> Status:
    if ok:
        return Status.XPASS if reason else Status.PASS
    return Status.XFAIL if reason else Status.FAIL


def run_engine(engine: Engine, cases, cached: bool, progress=None) -> EngineResults:
    out = EngineResults(engine.name, RunMode.CACHED if cached else RunMode.COLD)
    t0 = time.perf_counter()
    for c in cases:
        reason = known_failure(engine.name, c.id, cached)
        try:
            if crashes(reason):
                run, problems, stats = None, [f"not run: {reason}"], {}
            elif cached:
                with tempfile.TemporaryDirectory(prefix="aotcheck-report-") as d:
                    run, problems = outcome(engine, c, d)
            else:
                run, problems = outcome(engine, c)
            if run is not None:
                stats = run.stats.as_dict()
        except Exception as e:  # noqa: BLE001 - a harness crash is a failure, reported
            problems, stats = [f"harness raised {type(e).__name__}: {e}"], {}
        out.results.append(Result(c.id, c.theme, _status(not problems, reason), problems, reason, stats))
        if progress:
            progress.advance(f"{engine.name} {out.mode} {c.id}")
    out.wall_s = time.perf_counter() - t0
    return out


def collect(engine_names, cases, cached: bool, progress=None) -> list[EngineResults]:
    runs = []
    for name in engine_names:
        eng = get_engine(name)
        runs.append(run_engine(eng, cases, cached=False, progress=progress))
        if cached and eng.supports_cache:
            runs.append(run_engine(eng, cases, cached=True, progress=progress))
    return runs


def _cell(c: Counter) -> str:
    n = sum(c.values())
    extra = [f"{c[k]}{s}" for k, s in ((Status.XFAIL, "x"), (Status.FAIL, "f"), (Status.XPASS, "xp")) if c[k]]
    return f"{c[Status.PASS]}/{n}" + (f" ({', '.join(extra)})" if extra else "")


def to_markdown(runs: list[EngineResults], themes, *, verbose: bool = False, command: str = "") -> str:
    lines = ["# Engines over the corpus", ""]
    if command:
        lines += [f"Regenerate: `{command}`", ""]
    lines += ["A cell `P/N (Xx, Ff, Uxp)`: P of N cases passed; X expected failures (strict xfails in "
              "`aotcheck.targets.known_failures`), F unexpected failures, U unexpected passes. "
              "*cached*: a first run fills an empty cache directory, a second, compiled afresh, must "
              "equal eager and hit for every graph.", ""]
    head = ["theme"] + [f"{r.engine} {r.mode}" for r in runs]
    lines += ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    present = [t for t in themes if any(r.counts(t) for r in runs)]
    for t in present:
        lines.append("| " + " | ".join([t] + [_cell(r.counts(t)) for r in runs]) + " |")
    lines.append("| **total** | " + " | ".join(f"**{_cell(r.counts())}**" for r in runs) + " |")
    lines += ["", "Cache lookups are counted in each case's last run: the cached run, or the run that "
              "filled the cache where that one already failed.", "",
              "| engine | mode | cache hits / lookups | hit rate | wall time |", "|---|---|---|---|---|"]
    for r in runs:
        h, n = r.hits()
        rate = f"{100 * h / n:.1f}%" if n else "n/a"
        lines.append(f"| {r.engine} | {r.mode} | {h} / {n} | {rate} | {r.wall_s:.0f} s |")
    for r in runs:
        bad = [x for x in r.results if x.status is not Status.PASS]
        if not bad:
            continue
        lines += ["", f"## {r.engine}, {r.mode}: {len(bad)} not passing", ""]
        for x in bad:
            why = x.reason if x.status is Status.XFAIL else (x.problems[0] if x.problems else "unexpectedly passed")
            lines.append(f"- `{x.case_id}` **{x.status}**: {_one_line(str(why))}")
            if verbose and x.status is not Status.XPASS:
                lines += [f"  - {_one_line(str(p))}" for p in x.problems[:4]]
    return "\n".join(lines) + "\n"


def _one_line(s: str, limit: int = 400) -> str:
    s = " ".join(s.split())
    return s if len(s) <= limit else s[:limit - 1] + "…"
