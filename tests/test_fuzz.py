"""The fuzzer: generated programs against aotcheck's engine, cold and cached, and the
runner's own behaviour (seeds, signatures, reproducers, exit code).

AOTCHECK_FUZZ_EXAMPLES (default 200) sets how many programs the property tests run in
all; they are split into shards so that ``pytest -n 2`` spreads them. Each shard runs
under the default partitioner, and again (the same seed, half as many programs, to keep
CI's time) under the min-cut partitioner.
"""
import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, seed, settings

from aotcheck import flags
from aotcheck.targets.engines import ENGINES, AotcheckEngine
from aotcheck.fuzz.runner import FuzzOptions, format_summary, fuzz, run_program
from aotcheck.fuzz.strategies import ISSUE13_EXTENSIONS
from aotcheck.strategies import programs
from aotcheck.errors import DOCUMENTED_LIMITS

SHARDS = 4
PER_SHARD = max(1, flags.get(flags.FUZZ_EXAMPLES) // SHARDS)
ENGINE = AotcheckEngine()


PARTITIONERS = {"default": PER_SHARD, "mincut": max(1, PER_SHARD // 2)}


def _shard(k, examples=PER_SHARD, extensions=()):
    @seed(1000 + k)
    @settings(max_examples=examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(extensions=extensions))
    def prop(program):
        problems, sig, hit = run_program(program, ENGINE, cached=True)
        # no refusal is a documented limit (errors.DOCUMENTED_LIMITS is empty, pinned below):
        # every problem fails the property
        assert not problems, f"{sig}\n" + "\n".join(map(str, problems)) + "\n\n" + program.to_source()
        assert hit, "the cached run did not hit the cache"
    return prop


def test_no_refusal_is_excused_as_a_documented_limit():
    """The property above fails on every problem, refusals included; a documented limit added
    to ``errors.DOCUMENTED_LIMITS`` must come with a property that tells it from a wrong result."""
    assert DOCUMENTED_LIMITS == ()


@pytest.mark.parametrize("partitioner", list(PARTITIONERS))
@pytest.mark.parametrize("shard", range(SHARDS))
def test_generated_programs_match_eager_cold_and_cached(shard, partitioner):
    with flags.overridden(flags.PARTITIONER, partitioner):   # ENGINE's aot_function reads it
        _shard(shard, PARTITIONERS[partitioner])()


@pytest.mark.slow       # run with -m slow (AOTCHECK_FUZZ_EXAMPLES=2000 for a long run)
def test_wider_grammar_matches_eager_cold_and_cached():
    """The wider grammar (issue 13), all of it, drawn against aotcheck's engine: grad-mode
    regions, multi-output views, casts, custom Functions, random ops, set_, requires_grad_."""
    # issue 27's classes, in AOTCHECK_EXTENSIONS too, are tests/test_fuzz_escapes.py's
    _shard(SHARDS, extensions=ISSUE13_EXTENSIONS)()


class _Broken(AotcheckEngine):
    """aotcheck's engine with a planted bug: any function whose source has an in-place
    ``mul_`` gets its first output scaled by 2 (a wrong result the oracle must catch)."""
    name = "broken-for-tests"
    supports_cache = False

    def compile(self, fn):
        import torch
        compiled = super().compile(fn)
        planted = "mul_" in getattr(getattr(fn, "__code__", None), "co_names", ())

        def run(*args, **kwargs):
            out = compiled(*args, **kwargs)
            if planted and isinstance(out, tuple) and out and isinstance(out[0], torch.Tensor):
                with torch.no_grad():
                    return (out[0] * 2,) + out[1:]
            return out
        return run


@pytest.fixture
def broken_engine():
    ENGINES[_Broken.name] = _Broken()
    yield _Broken.name
    del ENGINES[_Broken.name]


# the grammar this test's seed was chosen with (before grad-mode regions and multi-output views
# joined aotcheck's default): its 80 programs include the planted bug's mul_
_PLANTED_GRAMMAR = {"extensions": ("casts", "integer", "non_tensor", "parameter", "random",
                                   "custom_function", "set_", "requires_grad_")}


def test_fuzzer_finds_shrinks_and_writes_reproducers(broken_engine, tmp_path):
    r1 = fuzz(FuzzOptions(broken_engine, examples=80, seed=5, cached=False, out=tmp_path / "a",
                          strategy_options=_PLANTED_GRAMMAR))
    planted = [f for f in r1.findings.values() if any(s.op == "mul_" for s in f.program.statements)]
    assert planted, f"the planted bug was not found: {format_summary(r1)}"
    for f in planted:
        assert f.size <= 4, f"not shrunk: {f.size} statements"
    # the same seed gives the same programs, hence the same findings
    r2 = fuzz(FuzzOptions(broken_engine, examples=80, seed=5, cached=False, out=tmp_path / "b",
                          strategy_options=_PLANTED_GRAMMAR))
    assert {s: f.program for s, f in r1.findings.items()} == {s: f.program for s, f in r2.findings.items()}
    assert "distinct failure signature" in format_summary(r1)
    # every program is counted once: passed, refused by name, or failed
    assert r1.passed + r1.refused + sum(f.count for f in r1.findings.values()) == r1.examples
    assert f"{r1.passed} passed" in format_summary(r1)
    # a reproducer exits 1 under the broken engine and 0 under aotcheck's
    path = r1.reproducers[next(s for s, f in r1.findings.items() if f in planted)]
    src = path.read_text()
    assert _exit_code(src) == 1
    fixed = src.replace(f"get_engine({broken_engine!r}).compile(f)", "__import__('aotcheck').aot_function(f)")
    assert fixed != src
    assert _exit_code(fixed) == 0


def _exit_code(src: str) -> int:
    ns = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(compile(src, "repro.py", "exec"), ns)
        except SystemExit as e:
            return int(e.code or 0)
    return 0


def test_cli_exit_code(broken_engine, tmp_path, capsys):
    from aotcheck.cli import main
    assert main(["fuzz", "--engine", broken_engine, "--examples", "80", "--seed", "5", "--no-cache",
                 "--no-shrink", "--out", str(tmp_path),
                 "--extensions", ",".join(_PLANTED_GRAMMAR["extensions"])]) == 1
    assert "distinct failure signature" in capsys.readouterr().out
    # issue 13's grammar, which aotcheck's engine passes (issue 27's, its default now, it fails)
    assert main(["fuzz", "--engine", "aotcheck", "--examples", "3", "--seed", "5",
                 "--out", str(tmp_path / "ok"), "--extensions", ",".join(ISSUE13_EXTENSIONS)]) == 0


def test_a_program_that_killed_the_process_is_kept_for_the_next_run(tmp_path, capsys):
    """Each explored program is written to OUT/inflight_program.py before it runs; a run that
    ends removes it, and one left behind (the process died: a SIGSEGV inside torch) is kept as
    crashed_NN.py by the next run, which says so."""
    from aotcheck.fuzz.inflight import NAME as INFLIGHT_NAME
    from aotcheck.fuzz.runner import FuzzOptions, fuzz
    fuzz(FuzzOptions("aotcheck", examples=3, seed=5, cached=False, out=tmp_path, shrink=False))
    assert not (tmp_path / INFLIGHT_NAME).exists()
    (tmp_path / INFLIGHT_NAME).write_text("# the program a dead run left\n")
    fuzz(FuzzOptions("aotcheck", examples=3, seed=5, cached=False, out=tmp_path, shrink=False))
    assert (tmp_path / "crashed_00.py").read_text() == "# the program a dead run left\n"
    assert "died while running the program now in" in capsys.readouterr().err
    assert not (tmp_path / INFLIGHT_NAME).exists()


def test_known_case_matching_never_runs_a_case_recorded_as_crashing(monkeypatch):
    """A torch fuzz run matches its findings against the engine's known failing corpus cases by
    running them; the CRASH_RESIZE cases kill the process (SIGSEGV), which ended a 10-minute
    hunt (seed 31) after its exploration. Cases recorded as crashing are listed, never run."""
    from aotcheck.fuzz import known
    from aotcheck.targets import engines, known_failures
    case = "input_mutation.resize_mutate_then_free"
    assert known_failures.crashes(known_failures.known_failure("torch", case))
    monkeypatch.setitem(known_failures.KNOWN_FAILURES, "torch", {case: known_failures.known_failure("torch", case)})

    def no_run(*a, **k):
        raise AssertionError("a case recorded as crashing the process was run")
    monkeypatch.setattr(engines, "outcome", no_run)
    k, *elsewhere = known.known_cases("torch")
    assert (k.case_id, k.check) == (case, "crash")
    assert elsewhere == known.pinned_elsewhere("torch")     # rows pinned outside the corpus


class _RaisesOnManyLines(AotcheckEngine):
    """An engine whose compiled call returns a structure whose pytree spec prints over several
    lines (a ``torch.Size`` in a tuple): the reproducer's header comments must stay comments."""
    name = "raises-on-many-lines-for-tests"
    supports_cache = False

    def compile(self, fn):
        def run(*args, **kwargs):
            import torch
            return (torch.Size([1, 2, 3]), (torch.Size([4]),))
        return run


def test_a_message_over_many_lines_gives_a_reproducer_that_still_runs(tmp_path):
    ENGINES[_RaisesOnManyLines.name] = _RaisesOnManyLines()
    try:
        r = fuzz(FuzzOptions(_RaisesOnManyLines.name, examples=5, seed=5, cached=False, out=tmp_path,
                             shrink=False))
    finally:
        del ENGINES[_RaisesOnManyLines.name]
    assert r.reproducers
    for path in r.reproducers.values():
        src = path.read_text()
        compile(src, str(path), "exec")     # a SyntaxError here was a header line broken in two
        header = src.split('"""')[0].strip().splitlines()
        assert all(line.startswith("#") for line in header), header
        assert any("output structure" in line for line in header), header
