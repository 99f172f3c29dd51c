"""fuzz: generated programs through an engine, cold and cached, with shrunk reproducers.

Two passes over one seeded stream of programs from ``aotcheck.fuzz.strategies.programs``:

1. **explore**: run N programs; each is compared with eager by the oracle, compiled
   cold and (for engines with a cache) compiled again from a fresh cache directory,
   which must hit. A failure is recorded under its *signature* (which run, and the
   oracle's first difference with numbers removed); nothing is raised, so the whole
   budget is explored.
2. **shrink**: for each distinct signature, the same seeded stream again, failing only
   on that signature. Hypothesis replays the stream up to the first such program
   (programs before it are not run through the engine) and shrinks it; the smallest
   failing program per signature is kept.

# NOTE [why two passes]
Hypothesis stops exploring at the first failure and shrinks it, so a single pass
finds one bug per run. Exploring without raising, then replaying the same seed with
a predicate for one signature, finds every distinct failure and still shrinks each
one with Hypothesis' own shrinker (drawing a "stop" choice inside each statement
makes that shrink to one to three statements).
"""
from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

from ..check.oracle import check
from ..errors import DOCUMENTED_LIMITS
from .programs import Program
from .strategies import programs


@dataclass
class Finding:
    signature: str
    count: int
    program: Program                 # the smallest failing program seen
    divergences: list[str]
    first_index: int                 # position in the explored stream

    @property
    def size(self) -> int:
        return len(self.program.statements)


@dataclass
class FuzzResult:
    engine: str
    seed: int
    examples: int = 0                # programs run through the engine
    refused: int = 0                 # programs the engine refused with a documented limit
    refused_by: dict[str, int] = field(default_factory=dict)   # limit phrase -> programs
    refusals: dict[str, "Finding"] = field(default_factory=dict)  # limit phrase -> smallest program
    passed: int = 0                  # programs that matched eager (cold and, if cached, cached)
    cached_hits: int = 0             # programs whose cached run hit every graph
    findings: dict[str, Finding] = field(default_factory=dict)
    seconds: float = 0.0
    reproducers: dict[str, Path] = field(default_factory=dict)


def run_program(program: Program, engine, cached: bool) -> tuple[list[str], str, bool]:
    """Problems of one program (empty: it matches eager), their signature, and whether the
    cached run hit."""
    fn, make = program.to_function(), program.make_inputs
    use_cache = cached and engine.supports_cache
    with tempfile.TemporaryDirectory(prefix="aotcheck-fuzz-") as d:
        # the cold run compiles into an empty cache directory (a miss, then a save), so the
        # cached run after it costs one compile more, not two
        compiled = engine.compile_cached(fn, d) if use_cache else engine.compile(fn)
        try:
            report = check(fn, compiled, make)
        except Exception as e:  # noqa: BLE001 - the oracle itself should not raise; report it
            return [f"oracle raised {type(e).__name__}: {e}"], f"cold: oracle raised {type(e).__name__}", False
        if not report.ok:
            return report.divergences, "cold: " + report.signature, False
        if not use_cache:
            return [], "", False
        with engine.measure() as stats:
            again = check(fn, engine.compile_cached(fn, d), make)
    if not again.ok:
        return again.divergences, "cached: " + again.signature, False
    if stats.misses or stats.bypasses or not stats.hits:
        msg = f"cached run did not hit: hits={stats.hits} misses={stats.misses} bypasses={stats.bypasses}"
        return [msg], "cached: no hit", False
    return [], "", True


def _settings(examples: int, phases) -> settings:
    return settings(max_examples=examples, database=None, deadline=None, phases=phases,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    print_blob=False)


class _Target(Exception):
    pass


def fuzz(engine_name: str = "aotcheck", examples: int = 200, seed: int = 0, cached: bool = True,
         out: str | Path | None = None, progress=None, max_statements: int = 8,
         shrink: bool = True) -> FuzzResult:
    from ..targets.engines import get_engine
    engine = get_engine(engine_name)
    result = FuzzResult(engine_name, seed)
    t0 = time.perf_counter()
    strategy = programs(max_statements=max_statements)

    @hseed(seed)
    @_settings(examples, [Phase.generate])
    @given(strategy)
    def explore(program):
        index = result.examples
        result.examples += 1
        problems, sig, hit = run_program(program, engine, cached)
        result.cached_hits += hit
        if problems and all(any(lim in p for lim in DOCUMENTED_LIMITS) for p in problems):
            result.refused += 1          # a named refusal, counted apart from wrong results
            lim = next(lim for lim in DOCUMENTED_LIMITS if lim in problems[0])
            result.refused_by[lim] = result.refused_by.get(lim, 0) + 1
            r = result.refusals.get(lim)
            if r is None or len(program.statements) < r.size:
                result.refusals[lim] = Finding(lim, result.refused_by[lim], program, problems, index)
        elif not problems:
            result.passed += 1
        elif problems:
            f = result.findings.get(sig)
            if f is None:
                result.findings[sig] = Finding(sig, 1, program, problems, index)
            else:
                f.count += 1
                if len(program.statements) < f.size:
                    f.program, f.divergences = program, problems
        if progress is not None:
            progress.advance(f"{len(result.findings)} failure signatures")

    explore()
    if shrink:
        for sig, finding in result.findings.items():
            _shrink(finding, strategy, engine, cached, seed, examples)
    result.seconds = time.perf_counter() - t0
    if out is not None:
        result.reproducers = write_reproducers(result, Path(out))
    return result


def _shrink(finding: Finding, strategy, engine, cached: bool, seed: int, examples: int) -> None:
    seen = {"n": 0}

    @hseed(seed)
    @_settings(examples, [Phase.generate, Phase.shrink])
    @given(strategy)
    def replay(program):
        seen["n"] += 1
        if seen["n"] <= finding.first_index and seen["n"] <= examples:
            return                   # before the first failing program: not run again
        problems, sig, _ = run_program(program, engine, cached)
        if sig == finding.signature:
            if len(program.statements) <= finding.size:
                finding.program, finding.divergences = program, problems
            raise _Target(sig)

    try:
        replay()
    except _Target:
        pass


def slug(signature: str) -> str:
    s = re.sub(r"[^a-zA-Z0-9]+", "_", signature).strip("_").lower()
    return s[:60] or "failure"


def write_reproducers(result: FuzzResult, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i, (sig, f) in enumerate(sorted(result.findings.items())):
        path = out / f"repro_{i:02d}_{slug(sig)}.py"
        header = (f"# aotcheck fuzz: engine={result.engine} seed={result.seed}\n"
                  f"# signature: {sig}\n# seen {f.count} time(s); first divergence: "
                  f"{f.divergences[0][:200] if f.divergences else ''}\n")
        path.write_text(header + f.program.to_source(engine=result.engine))
        paths[sig] = path
    # the smallest program each documented limit refused (not failures: for triage)
    for i, (lim, f) in enumerate(sorted(result.refusals.items())):
        path = out / f"refused_{i:02d}_{slug(lim)}.py"
        header = (f"# aotcheck fuzz: engine={result.engine} seed={result.seed}\n"
                  f"# refused with a documented limit ({result.refused_by[lim]} program(s)): "
                  f"{lim}\n")
        path.write_text(header + f.program.to_source(engine=result.engine))
        paths["refused: " + lim] = path
    return paths


def format_summary(result: FuzzResult) -> str:
    lines = [f"engine {result.engine}, seed {result.seed}: {result.examples} programs in "
             f"{result.seconds:.1f}s ({result.examples / max(result.seconds, 1e-9):.1f}/s), "
             f"{result.cached_hits} went through the cache and hit",
             f"{result.passed} passed, {result.refused} refused with a documented limit (see "
             f"aotcheck.errors.DOCUMENTED_LIMITS), "
             f"{sum(f.count for f in result.findings.values())} failed"]
    for lim, n in sorted(result.refused_by.items(), key=lambda kv: -kv[1]):
        lines.append(f"{n:>6}  refused: ...{lim}...")
        where = result.reproducers.get("refused: " + lim, "")
        if where:
            lines.append(f"{'':>15}{where}")
    lines.append(f"{len(result.findings)} distinct failure signature(s)")
    if result.findings:
        lines.append(f"{'count':>6}  {'stmts':>5}  signature / smallest reproducer")
        for sig, f in sorted(result.findings.items(), key=lambda kv: -kv[1].count):
            where = result.reproducers.get(sig, "")
            lines.append(f"{f.count:>6}  {f.size:>5}  {sig}")
            if where:
                lines.append(f"{'':>15}{where}")
    return "\n".join(lines)
