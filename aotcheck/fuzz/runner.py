"""fuzz: generated programs through an engine, cold and cached, grouped by root cause.

Passes over one seeded stream of programs from ``aotcheck.fuzz.strategies.programs``:

1. **explore**: run programs until ``examples`` or the time budget (``minutes``) runs out. Each
   is compared with eager by the oracle, compiled cold into a fresh cache directory, then
   compiled again from it in this process (``cached``) and, with ``warm=True``, in a second
   process (``warm``, see ``warm.py``), as a real warm start does. With ``key_variations``
   (on by default against an engine with a cache), a program whose cached run hit is then
   called under changed conditions from the cold run's cache directory
   (``aotcheck.targets.variations``: a grad mode, an input's requires_grad, dtype or layout,
   ...), stage ``variation``: a STALE HIT, a LOST HIT or a failure under B is a failure. A
   failure is recorded under
   its *group*: the stage that failed and the check that failed (``fingerprint.py``); nothing
   is raised, so the whole budget is explored. Programs Dynamo never hands to AOT autograd
   (no graph captured) are counted apart as artefacts, never as failures.
2. **shrink**: for each group, the same seeded stream again, failing only on that group, under
   a time budget per group. Hypothesis replays the stream up to the group's first program
   (earlier programs are drawn but not run) and shrinks it; the smallest program is kept.
   Groups whose shrunk programs have one fingerprint (check + op skeleton) merge.
3. **match**: each finding is matched against the engine's known failing corpus cases
   (``known.py``); the summary lists what is new apart from what is already pinned.

``shard=(k, n)``: every shard draws the same stream and runs only the programs whose content
hash is ``k`` modulo ``n``, so ``n`` processes or machines split one run with no overlap.
``database``: a hypothesis example database (e.g. ``RedisExampleDatabase``); shrunk failures
are saved in it, and every run replays what is saved there first, so a failure found on one
machine replays on all.

# NOTE [why two passes]
Hypothesis stops exploring at the first failure and shrinks it, so a single pass finds one
bug per run. Exploring without raising, then replaying the same seed with a predicate for one
group, finds every distinct failure and still shrinks each with Hypothesis' own shrinker
(drawing a "stop" choice inside each statement makes that shrink to one to three statements).
"""
from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
import unittest
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed as hseed, settings

from ..check.divergence import Check, Divergence, problem_to_json
from ..check.oracle import check
from ..errors import DOCUMENTED_LIMITS
from .fingerprint import Fingerprint, check_kind, skeleton
from .inflight import InFlight
from .process_state import _global_state, _leak, quiet_gc  # noqa: F401 - also used by tools/
from .programs import Program
from .strategies import AOTCHECK_EXTENSIONS, EXTENSIONS, ISSUE13_EXTENSIONS, programs


def default_extensions(engine_name: str) -> tuple[str, ...]:
    """The wider grammar an engine is fuzzed with by default: ``AOTCHECK_EXTENSIONS`` (all of it)
    for aotcheck's own; issue 13's for PyTorch's engines, whose findings issue 27's classes
    (imperative autograd, ``.data``, torch.func, custom ops, ``out=``) would crowd out; they
    draw those with ``--extensions all``."""
    return ISSUE13_EXTENSIONS if engine_name.startswith("torch") else AOTCHECK_EXTENSIONS



def parse_extensions(text: str | None) -> dict:
    """``--extensions`` as strategy options: None (the engine's default), ``all``, ``none``, or
    names separated by commas."""
    if text is None:
        return {}
    if text in ("all", "none"):
        return {"extensions": "all" if text == "all" else ()}
    return {"extensions": tuple(x.strip() for x in text.split(",") if x.strip())}


_DYNAMO_ENGINES = ("torch", "torch-inductor", "dynamo-aotcheck")


@dataclass
class Outcome:
    """One program's run: its problems (empty: it matched eager) and where they came from."""
    problems: list = field(default_factory=list)   # Divergence records, or harness sentences
    stage: str = ""          # cold | cached | warm, the first run that failed
    hit: bool = False        # the in-process cached run hit every graph
    artefact: str = ""       # why this program does not test AOT autograd at all
    pending: object = None   # the warm run's future, while it runs
    variation: str = ""      # stage "variation": the Variation (JSON) that failed
    variations: int = 0      # key variations run

    @property
    def group(self) -> str:
        return f"{self.stage}: {check_kind(self.problems)}" if self.problems else ""


@dataclass
class Finding:
    signature: str                   # the group (explore) or the full fingerprint (after shrink)
    count: int
    program: Program                 # the smallest failing program seen
    divergences: list                # as Outcome.problems
    first_index: int                 # position in the explored stream
    fingerprint: Fingerprint | None = None
    known: str = ""                  # the matching known corpus case, if any
    shrink_seconds: float = 0.0
    variation: str = ""              # stage "variation": the Variation (JSON) that failed

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
    artefacts: dict[str, int] = field(default_factory=dict)    # reason -> programs (not failures)
    passed: int = 0                  # programs that matched eager (cold and, if cached, cached)
    cached_hits: int = 0             # programs whose cached run hit every graph
    variations: int = 0              # key variations run (``key_variations``)
    other_shard: int = 0             # programs drawn but left to another shard
    digests: list = field(default_factory=list)   # content hash of each program run, in order
    findings: dict[str, Finding] = field(default_factory=dict)
    seconds: float = 0.0
    explore_seconds: float = 0.0
    shard: tuple[int, int] = (0, 1)
    reproducers: dict[str, Path] = field(default_factory=dict)

    @property
    def new(self) -> dict[str, Finding]:
        return {s: f for s, f in self.findings.items() if not f.known}


# ------------------------------------------------------------------------ one program

def run_outcome(program: Program, engine, cached: bool, warm=None, key_variations: int = 0) -> Outcome:
    """Run ``program`` cold, then (``cached``) from the cache in this process, then
    (``key_variations``: how many) under changed conditions from the cold run's cache, and
    (``warm``: a ``WarmWorker``) from the cache in another process; the warm result arrives
    later, in ``Outcome.pending`` (``finish`` waits for it)."""
    fn, make = program.to_function(), program.make_inputs
    use_cache = cached and engine.supports_cache
    d = tempfile.mkdtemp(prefix="aotcheck-fuzz-")
    keep = False
    try:
        # the cold run compiles into an empty cache directory (a miss, then a save)
        before = _global_state()
        with engine.measure() as cold:
            compiled = engine.compile_cached(fn, d, record=True) if use_cache else engine.compile(fn)
            try:
                report = check(fn, compiled, make)
            except Exception as e:  # noqa: BLE001 - the oracle itself should not raise
                _leak(before)
                return Outcome([Divergence(Check.ORACLE_RAISED, error=f"{type(e).__name__}: {e}")], "cold")
        leak = _leak(before)
        if leak:    # after a crash, the crash is the cause (row 38's failed compile, row 39)
            leaked = [Divergence(Check.STATE_LEAK, detail=leak)]
            crashed = report.divergences[:1] if report.divergences and \
                report.divergences[0].check is Check.COMPILED_RAISED else []
            return Outcome(crashed + leaked + list(report.divergences[len(crashed):]), "cold")
        if engine.name in _DYNAMO_ENGINES and cold.graphs == 0:
            return Outcome(artefact="Dynamo captured no graph (no tensor op): nothing reached "
                                    "AOT autograd")
        if not report.ok:
            return Outcome(list(report.divergences), "cold")
        if not use_cache:
            return Outcome()
        with engine.measure() as stats:      # NOTE [the cached run reuses Dynamo's trace]
            again_fn = engine.recompile_cached(compiled, fn, d)
            again = check(fn, again_fn, make)
        if not engine.reuse_held(again_fn):  # Dynamo compiled in the cold run's state: redo it
            with engine.measure() as stats:
                again = check(fn, engine.compile_cached(fn, d), make)
        leak = _leak(before)
        if leak:
            return Outcome([Divergence(Check.STATE_LEAK, detail=leak)] + list(again.divergences), "cached")
        if not again.ok:
            return Outcome(list(again.divergences), "cached")
        hit = bool(stats.hits) and not stats.misses and not stats.bypasses
        if not hit:
            return Outcome([Divergence(Check.CACHED_RUN_MISS, actual=f"hits={stats.hits} misses="
                                       f"{stats.misses} bypasses={stats.bypasses}")], "cached")
        out = Outcome(hit=True)
        if key_variations:
            out = _key_variations(program, engine, d, key_variations)
            if out.problems:
                return out
        if warm is not None:
            out.pending = (warm.submit(program, d), d)
            keep = True
        return out
    finally:
        if not keep:
            shutil.rmtree(d, ignore_errors=True)


def _key_variations(program: Program, engine, cache_dir: str, n: int) -> Outcome:
    """``n`` key variations of ``program`` (drawn by its content hash from those that apply to
    its inputs), each called under B from a copy of the cold run's cache directory."""
    from ..targets import variations as V
    name = hashlib.sha1(program.to_json().encode()).hexdigest()[:12]
    subject = V.Subject(f"program {name}", program.to_function(), program.make_inputs,
                        source=_program_source(program))
    run = V.run_subject(engine, subject, per_case=n, a_dir=cache_dir)
    bad = [r for r in run.results if r.verdict in V.BAD]
    if not bad:
        return Outcome(hit=True, variations=len(run.results))
    r = bad[0]
    detail = list(r.divergences) or [r.reason]
    return Outcome([f"key variation {r.variation.label}: {r.verdict}: {detail[0]}", *detail[1:]],
                   "variation", hit=True, variation=r.variation.to_json(), variations=len(run.results))


def _program_source(program: Program) -> str:
    """The program as a module that defines ``f`` and ``make_inputs`` (and runs nothing)."""
    return "\n".join([program.prelude(), "", program.function_source(), "", program.inputs_source(), ""])


def finish(out: Outcome) -> Outcome:
    """Wait for the warm run of ``out``, if any, and fold it in."""
    if out.pending is None:
        return out
    future, d = out.pending
    out.pending = None
    try:
        problems, _ = future.result()
    except Exception as e:  # noqa: BLE001 - the worker died: report it as the warm run's failure
        problems = [f"warm worker failed: {type(e).__name__}: {e}"]
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if problems:
        out.problems, out.stage = problems, "warm"
    return out


def run_program(program: Program, engine, cached: bool) -> tuple[list, str, bool]:
    """Problems of one program (empty: it matches eager), their group, and whether the cached
    run hit. An artefact (no graph captured) counts as no problem."""
    out = run_outcome(program, engine, cached)
    return out.problems, out.group, out.hit


def is_refusal(problems: list) -> bool:
    return bool(problems) and all(any(lim in str(p) for lim in DOCUMENTED_LIMITS) for p in problems)


# ------------------------------------------------------------------------ hypothesis plumbing

def _settings(examples: int, phases, database=None) -> settings:
    return settings(max_examples=examples, database=database, deadline=None, phases=phases,
                    suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                    print_blob=False)


class _Target(Exception):
    pass


class _OutOfTime(BaseException):
    """Raised inside a hypothesis test to end it at once (hypothesis lets BaseException through)."""


def shard_of(program: Program, n: int) -> int:
    return int(hashlib.sha1(program.to_json().encode()).hexdigest(), 16) % n


_BODY = {"fn": None}


def _body(program):
    """The one test function every pass wraps, so that all passes (and all machines) share one
    hypothesis database key; the pass in progress decides what it does."""
    _BODY["fn"](program)


def _test(strategy, seed: int, examples: int, phases, database, digest: str):
    # settings after seed: ``@seed`` alone switches the example database off
    test = _settings(examples, phases, database)(hseed(seed)(given(strategy)(_body)))
    # one key per engine and grammar, the same in every pass and on every machine
    test._hypothesis_internal_database_key = hashlib.sha256(b"aotcheck-fuzz:" + digest.encode()).digest()
    return test


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` (K counted from 1) as ``(K - 1, N)``."""
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes K/N with 1 <= K <= N, got {text!r}") from None
    if not 1 <= k <= n:
        raise ValueError(f"--shard takes K/N with 1 <= K <= N, got {text!r}")
    return k - 1, n


# ------------------------------------------------------------------------ the run

@dataclass(frozen=True)
class FuzzOptions:
    """One fuzz run's settings (see ``fuzz`` and the module docstring). ``minutes`` bounds the
    whole run (explore gets 60% of it unless ``examples`` ends it first); ``shrink_seconds``
    bounds each group's shrink. ``key_variations``: key variations per program whose cached run
    hit (None: 1 against an engine with a cache, when ``cached``; 0: none)."""

    engine: str = "aotcheck"
    examples: int = 200
    seed: int = 0
    cached: bool = True
    out: str | Path | None = None       # where reproducers and findings.json are written
    max_statements: int = 8
    shrink: bool = True
    minutes: float | None = None
    shrink_seconds: float = 60.0
    shard: tuple[int, int] = (0, 1)
    database: object = None             # a hypothesis example database, shared by machines
    warm: bool = False                  # also run each cached program in a second process
    match_known: bool = False           # match findings against the engine's known failures
    strategy_options: dict | None = None
    key_variations: int | None = None


@dataclass(frozen=True)
class _Stream:
    """What every pass over the seeded stream shares: the run's options, the engine, the
    program strategy and its database key, and how each program is run."""

    options: FuzzOptions
    engine: object
    strategy: object
    digest: str                 # the engine and grammar, for the database key
    key_variations: int         # ``options.key_variations``, resolved for the engine
    worker: object = None       # a WarmWorker (``options.warm``), or None


def _stream(options: FuzzOptions, engine) -> _Stream:
    """The strategy for ``options`` (its grammar defaulted for the engine) and the warm worker."""
    key_variations = options.key_variations
    if key_variations is None:
        key_variations = 1 if options.cached and engine.supports_cache else 0
    grammar = dict(options.strategy_options or {})
    if options.engine in _DYNAMO_ENGINES:
        # Dynamo captures no graph for a function that does no tensor op: such programs never
        # reach AOT autograd (item 2 of issue 13), so draw at least one statement
        grammar.setdefault("min_statements", 1)
    grammar.setdefault("extensions", default_extensions(options.engine))
    grammar["extensions"] = tuple(sorted(EXTENSIONS if grammar["extensions"] == "all"
                                         else grammar["extensions"]))
    strategy = programs(max_statements=options.max_statements, **grammar)
    digest = json.dumps({"engine": options.engine, "max_statements": options.max_statements,
                         **grammar}, sort_keys=True)
    worker = None
    if options.warm and options.cached and engine.supports_cache:
        from .warm import WarmWorker
        worker = WarmWorker(options.engine)
    return _Stream(options, engine, strategy, digest, key_variations, worker)


def fuzz(options: FuzzOptions, progress=None) -> FuzzResult:
    """Explore, shrink and match (see the module docstring) as ``options`` say; ``progress``
    (a bar, or None) advances once per program explored."""
    from ..targets.engines import get_engine
    engine = get_engine(options.engine)
    t0 = time.perf_counter()
    end = None if options.minutes is None else t0 + 60 * options.minutes
    stream = _stream(options, engine)
    result = _Explorer(stream, t0, end, progress).run()
    if options.shrink:
        _shrink_groups(result, stream, end)
    if stream.worker is not None:
        stream.worker.close()
    _merge(result)
    if options.match_known:
        _match_known(result, options)
    result.seconds = time.perf_counter() - t0
    if options.out is not None:
        result.reproducers = write_reproducers(result, Path(options.out))
    return result


class _Explorer:
    """The explore pass (NOTE [why two passes]): runs the stream's programs, records each
    outcome in the result, and folds in the warm runs as they finish."""

    def __init__(self, stream: _Stream, t0: float, end: float | None, progress):
        self.stream, self.t0, self.end, self.progress = stream, t0, end, progress
        options = stream.options
        self.result = FuzzResult(options.engine, options.seed, shard=options.shard)
        self.pending: list[tuple[int, Program, Outcome]] = []
        self.inflight = InFlight(options.out)
        self.index = 0

    def run(self) -> FuzzResult:
        """Explore until ``examples`` or 60% of the time budget; the result so far."""
        options, stream = self.stream.options, self.stream
        _BODY["fn"] = self.explore
        budget = 10**9 if options.minutes is not None else options.examples
        try:
            if options.database is not None:   # first replay what any machine saved (read-only here)
                from hypothesis.database import ReadOnlyDatabase
                self.index = -10**9     # replayed programs are not part of the stream
                try:
                    _test(stream.strategy, options.seed, 10**6, [Phase.reuse],
                          ReadOnlyDatabase(options.database), stream.digest)()
                except unittest.SkipTest:    # hypothesis' way of saying nothing was saved yet
                    pass
                self.index = 0
            with quiet_gc():
                _test(stream.strategy, options.seed, budget, [Phase.generate], None, stream.digest)()
        except _OutOfTime:
            pass
        self.drain(all_of_them=True)
        self.inflight.clear()                       # exploration ended: no program is in flight
        self.result.explore_seconds = time.perf_counter() - self.t0
        return self.result

    def explore(self, program) -> None:
        """Run one program of the stream (unless it is another shard's), and record it."""
        options, result = self.stream.options, self.result
        index = self.index
        self.index += 1
        if self.end is not None and time.perf_counter() > self.t0 + 0.6 * (self.end - self.t0):
            raise _OutOfTime
        shard = options.shard
        if index >= 0 and shard[1] > 1 and shard_of(program, shard[1]) != shard[0]:
            # (a program replayed from the shared database runs on every shard)
            result.other_shard += 1
            return
        result.examples += 1
        result.digests.append(hashlib.sha1(program.to_json().encode()).hexdigest()[:16])
        self.inflight.write(program, options.engine)
        o = run_outcome(program, self.stream.engine, options.cached, self.stream.worker,
                        self.stream.key_variations)
        if o.pending is not None:
            self.pending.append((index, program, o))
        else:
            self.record(index, program, o)
        self.drain(all_of_them=False)
        if self.progress is not None:
            self.progress.advance(f"{len(result.findings)} failure groups")

    def drain(self, all_of_them: bool) -> None:
        """Record the programs whose warm runs finished (``all_of_them``: wait for every one)."""
        while self.pending and (all_of_them or self.pending[0][2].pending[0].done()):
            index, program, o = self.pending.pop(0)
            self.record(index, program, finish(o))

    def record(self, index: int, program: Program, o: Outcome) -> None:
        """Count one program's outcome: an artefact, a refusal, a pass or a failure's group."""
        result = self.result
        result.cached_hits += o.hit
        result.variations += o.variations
        if o.artefact:
            result.artefacts[o.artefact] = result.artefacts.get(o.artefact, 0) + 1
        elif is_refusal(o.problems):
            result.refused += 1          # a named refusal, counted apart from wrong results
            lim = next(lim for lim in DOCUMENTED_LIMITS if lim in str(o.problems[0]))
            result.refused_by[lim] = result.refused_by.get(lim, 0) + 1
            r = result.refusals.get(lim)
            if r is None or len(program.statements) < r.size:
                result.refusals[lim] = Finding(lim, result.refused_by[lim], program, o.problems, index)
        elif not o.problems:
            result.passed += 1
        else:
            f = result.findings.get(o.group)
            if f is None:
                result.findings[o.group] = Finding(o.group, 1, program, o.problems, index,
                                                   variation=o.variation)
            else:
                f.count += 1
                if len(program.statements) < f.size:
                    f.program, f.divergences, f.variation = program, o.problems, o.variation


def _shrink_groups(result: FuzzResult, stream: _Stream, end: float | None) -> None:
    """Shrink each failure group, the most frequent first, within what is left of the budget."""
    groups = sorted(result.findings.values(), key=lambda f: -f.count)
    for i, finding in enumerate(groups):
        left = None if end is None else (end - time.perf_counter()) / (len(groups) - i)
        if left is not None and left <= 1:
            break
        shrink_seconds = stream.options.shrink_seconds
        _shrink(finding, stream, shrink_seconds if left is None else min(shrink_seconds, left))


def _match_known(result: FuzzResult, options: FuzzOptions) -> None:
    """Mark each finding with the engine's known failing corpus case it matches (``known.py``)."""
    from .known import known_cases, match, program_names
    cache = None if options.out is None else Path(options.out) / f"known_{options.engine}.json"
    known = known_cases(options.engine, cache)
    for f in result.findings.values():
        k = match(f.fingerprint.check, program_names(f.program), known)
        f.known = k.case_id if k else ""


def _shrink(finding: Finding, stream: _Stream, seconds: float) -> None:
    """Reduce the group's smallest program by deleting items (``reduce.py``) within ``seconds``.
    With a shared database, first replay the stream to the group's first program under
    hypothesis, which saves that failing example in the database for every other machine."""
    from .reduce import reduce_program
    options = stream.options
    start = time.perf_counter()
    stop = start + seconds
    stage = finding.signature.split(":")[0]
    # a cold failure needs only the cold run; a cached one the cache round trip in this
    # process; a warm one the second process too
    run_cached = options.cached and stage != "cold"
    run_warm = stream.worker if stage == "warm" else None
    run_variations = stream.key_variations if stage == "variation" else 0

    def outcome(program) -> Outcome:
        return finish(run_outcome(program, stream.engine, run_cached, run_warm, run_variations))

    if options.database is not None:
        _replay_to_first(finding, stream, stop, lambda program: outcome(program).group)

    def still_fails(program) -> bool:
        out = outcome(program)
        if out.group == finding.signature:
            finding.divergences, finding.variation = out.problems, out.variation
            return True
        return False

    finding.program = reduce_program(finding.program, still_fails, stop)
    finding.shrink_seconds = time.perf_counter() - start


def _replay_to_first(finding: Finding, stream: _Stream, stop: float, group_of) -> None:
    """Replay the stream under hypothesis with the shared database, running programs from the
    group's first on, until one fails in the group (which hypothesis saves) or ``stop``."""
    seen = {"n": 0}

    def replay(program):
        seen["n"] += 1
        if time.perf_counter() > stop:
            raise _OutOfTime
        if seen["n"] <= finding.first_index:
            return                   # before the group's first program: not run again
        if group_of(program) == finding.signature:
            raise _Target(finding.signature)

    _BODY["fn"] = replay
    try:
        _test(stream.strategy, stream.options.seed, 10**9, [Phase.generate],
              stream.options.database, stream.digest)()
    except (_Target, _OutOfTime):
        pass


def _merge(result: FuzzResult) -> None:
    """Give each finding its fingerprint, and merge findings with equal fingerprints."""
    merged: dict[str, Finding] = {}
    for f in result.findings.values():
        stage = f.signature.split(":")[0]
        f.fingerprint = Fingerprint(stage, check_kind(f.divergences), skeleton(f.program))
        key = str(f.fingerprint)
        if key in merged:
            g = merged[key]
            g.count += f.count
            if f.size < g.size:
                g.program, g.divergences = f.program, f.divergences
        else:
            f.signature = key
            merged[key] = f
    result.findings = merged


# ------------------------------------------------------------------------ output

def slug(signature: str) -> str:
    import re
    s = re.sub(r"[^a-zA-Z0-9]+", "_", signature).strip("_").lower()
    return s[:60] or "failure"


def _one_line(text: str) -> str:
    """``text`` with its line breaks folded, for a ``#`` comment (a message can span lines)."""
    return " ".join(text.split())


def write_reproducers(result: FuzzResult, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    summary = []
    for i, (sig, f) in enumerate(sorted(result.findings.items())):
        path = out / f"repro_{i:02d}_{slug(sig)}.py"
        first = str(f.divergences[0])[:200] if f.divergences else ""
        header = (f"# aotcheck fuzz: engine={result.engine} seed={result.seed} "
                  f"shard={result.shard[0] + 1}/{result.shard[1]}\n"
                  f"# fingerprint: {_one_line(sig)}\n"
                  f"# {'known: ' + f.known if f.known else 'NEW'}; seen {f.count} time(s); "
                  f"first divergence: {_one_line(first)}\n"
                  f"# program: {f.program.to_json()}\n")
        if f.variation:          # a key-variation finding: a reproducer that replays A then B
            from ..targets import variations as V
            v = V.Variation.from_json(f.variation)
            subject = V.Subject(f"fuzz {i:02d}", f.program.to_function(), f.program.make_inputs,
                                source=_program_source(f.program))
            r = V.Result(subject.name, result.engine, v, (first.split(": ") + ["", ""])[1], first)
            path = V.write_repro(r, subject, out)
        else:
            path.write_text(header + f.program.to_source(engine=result.engine))
        paths[sig] = path
        summary.append({"fingerprint": f.fingerprint.to_dict() if f.fingerprint else sig,
                        "count": f.count, "statements": f.size, "known": f.known,
                        "divergences": [problem_to_json(p) for p in f.divergences[:5]],
                        "program": f.program.to_json(),
                        "reproducer": path.name, "shrink_seconds": round(f.shrink_seconds, 1)})
    # the smallest program each documented limit refused (not failures: for triage)
    for i, (lim, f) in enumerate(sorted(result.refusals.items())):
        path = out / f"refused_{i:02d}_{slug(lim)}.py"
        header = (f"# aotcheck fuzz: engine={result.engine} seed={result.seed}\n"
                  f"# refused with a documented limit ({result.refused_by[lim]} program(s)): "
                  f"{_one_line(lim)}\n")
        path.write_text(header + f.program.to_source(engine=result.engine))
        paths["refused: " + lim] = path
    (out / "findings.json").write_text(json.dumps(
        {"engine": result.engine, "seed": result.seed, "shard": list(result.shard),
         "examples": result.examples, "seconds": round(result.seconds, 1),
         "findings": summary}, indent=1))
    return paths


def summary_rows(result: FuzzResult) -> list[tuple]:
    """(count, statements, new/known, fingerprint, reproducer) per finding, most frequent first."""
    rows = []
    for sig, f in sorted(result.findings.items(), key=lambda kv: -kv[1].count):
        rows.append((f.count, f.size, f"known: {f.known}" if f.known else "NEW", sig,
                     str(result.reproducers.get(sig, ""))))
    return rows


def format_summary(result: FuzzResult) -> str:
    rate = result.examples / max(result.explore_seconds or result.seconds, 1e-9)
    lines = [f"engine {result.engine}, seed {result.seed}"
             + (f", shard {result.shard[0] + 1}/{result.shard[1]}" if result.shard[1] > 1 else "")
             + f": {result.examples} programs in {result.seconds:.1f}s (explore "
             f"{result.explore_seconds:.1f}s, {rate:.1f}/s), "
             f"{result.cached_hits} went through the cache and hit"
             + (f", {result.variations} key variations run" if result.variations else ""),
             f"{result.passed} passed, {result.refused} refused with a documented limit (see "
             f"aotcheck.errors.DOCUMENTED_LIMITS), "
             f"{sum(result.artefacts.values())} artefacts (not tests of AOT autograd), "
             f"{sum(f.count for f in result.findings.values())} failed"]
    for reason, n in sorted(result.artefacts.items()):
        lines.append(f"{n:>6}  artefact: {reason}")
    for lim, n in sorted(result.refused_by.items(), key=lambda kv: -kv[1]):
        lines.append(f"{n:>6}  refused: ...{lim}...")
        where = result.reproducers.get("refused: " + lim, "")
        if where:
            lines.append(f"{'':>15}{where}")
    n_new = len(result.new)
    lines.append(f"{len(result.findings)} distinct failure signature(s) (root-cause fingerprints), "
                 f"{n_new} new, {len(result.findings) - n_new} known")
    if result.findings:
        lines.append(f"{'count':>6}  {'stmts':>5}  fingerprint / smallest reproducer")
        for count, size, status, sig, where in summary_rows(result):
            lines.append(f"{count:>6}  {size:>5}  {status}: {sig}")
            if where:
                lines.append(f"{'':>15}{where}")
    return "\n".join(lines)
