"""The regression command's verdicts (aotcheck.regress): fingerprints, records, NEW / CHANGED /
FIXED, exit codes and --strict, and a baseline saved and compared on a tiny subset of cases."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from aotcheck.check.divergence import Check, Divergence as D, Subject
from aotcheck.regress import judge, record
from aotcheck.regress.fingerprint import FailurePrint, fingerprint
from aotcheck.regress.record import Entry, Record
from aotcheck.regress.run import Outcome, Status

# ---------------------------------------------------------------- fingerprints


@pytest.mark.parametrize("problems, expected", [
    ([D(Check.REQUIRES_GRAD, Subject.output(1), expected="True", actual="False"),
      D(Check.GRAD_VALUES, Subject.leaf(0), detail="x")],
     FailurePrint("requires_grad", "output 1")),
    ([D(Check.GRAD_PRESENCE, Subject.leaf(2), expected="None", actual="a tensor")],
     FailurePrint("grad presence", "grad of leaf 2")),
    ([D(Check.GRAD_PRESENCE, Subject.output(2), expected="None", actual="a tensor")],   # never named
     FailurePrint("grad of output N (a leaf): eager None, compiled a tensor", "grad of output 2")),
    ([D(Check.COMPILED_RAISED, error="BackendCompilerFailed: backend='aot_eager' raised: AssertionError: "
                                     "outs_to_grad length (1) != tangents length (2)")],
     FailurePrint("crash in aot_autograd", "", "AssertionError: outs_to_grad length [...] != tangents "
                                               "length [...]")),
    ([D(Check.VALUES, Subject.argument(0), detail="not close", state=1, cache_fill=True)],
     FailurePrint("mutation", "state 1 / argument 0")),
    ([D(Check.RETAINS_GRAD, Subject.output(0), expected="True", actual="False", state=2)],
     FailurePrint("retained grad presence", "state 2")),
    ([D(Check.GRAPH_BREAK, detail="graph_break: Unsupported Tensor.item() call 7")],
     FailurePrint("graph break", "", "graph_break: Unsupported Tensor.item[...] call N")),
    ([D(Check.CACHE_MISS, actual="hits=0 misses=1 bypasses=0")], FailurePrint("cache miss")),
    (["STALE HIT: grad_mode no_grad -> enabled: output 0 requires_grad"], FailurePrint("stale hit")),
    (["not run: recorded as crashing"], FailurePrint("not run: recorded as crashing")),
    ([], None),
])
def test_fingerprint_of_the_first_problem(problems, expected):
    assert fingerprint(problems) == expected


def test_numbers_in_a_message_do_not_change_the_fingerprint():
    a = fingerprint([D(Check.COMPILED_RAISED, error="RuntimeError: size (3, 4) at 0x7f00 differs from 12")])
    b = fingerprint([D(Check.COMPILED_RAISED, error="RuntimeError: size (5, 6) at 0x7faa differs from 30")])
    assert a == b and a.check == "crash in compiled forward"


@given(st.builds(FailurePrint, st.text(min_size=1), st.text(), st.text()))
def test_fingerprint_round_trips_through_json(fp):
    assert FailurePrint.from_dict(json.loads(json.dumps(fp.to_dict()))) == fp


def test_a_malformed_fingerprint_is_named():
    with pytest.raises(ValueError, match="not a failure fingerprint"):
        FailurePrint.from_dict({"kind": "values"})


# ---------------------------------------------------------------- records

V = FailurePrint("values", "output 0")
R = FailurePrint("requires_grad", "output 1")


def _record() -> Record:
    return Record("2.13.0", {"torch": {
        "a": Entry("a fails in values", V),
        "b": Entry("b fails, unpinned"),                     # format 1: reason only
        "cached:c": Entry("only c's cached run fails", R),
        "d": Entry("crashes the process (SIGSEGV)"),
    }}, reasons={"SHARED": "a fails in values"})


def test_record_round_trips_through_json_and_keeps_shared_reasons(tmp_path):
    rec = _record()
    data = rec.to_json()
    assert data["format"] == 2 and data["engines"]["torch"]["a"]["reason"] == "SHARED"
    assert data["engines"]["torch"]["b"] == "b fails, unpinned"
    rec.save(tmp_path / "r.json")
    back = record.load(tmp_path / "r.json")
    assert back.engines == rec.engines and back.torch == "2.13.0"


def test_format_1_reads_as_unpinned():
    rec = record.from_json({"recorded_on": {"torch": "2.13.0"}, "reasons": {"N": "a shared reason"},
                            "engines": {"torch": {"x": "N", "y": "own"}}})
    assert rec.engines["torch"] == {"x": Entry("a shared reason"), "y": Entry("own")}


def test_the_cached_stage_falls_back_to_the_cases_entry():
    rec = _record()
    assert rec.lookup("torch", "cached", "a") == rec.engines["torch"]["a"]
    assert rec.lookup("torch", "cold", "c") is None
    assert rec.lookup("torch", "cached", "c").fingerprint == R
    assert rec.lookup("torch", "variation.grad_mode", "a") is None


def test_aotchecks_own_known_failures_are_the_corpus_cases_xfail(monkeypatch):
    """A corpus case marked ``xfail`` (a known failure of aotcheck's engine) is known to the
    regression command too, cold and cached; when it passes it is FIXED; other engines and the
    variation stages do not read it."""
    from aotcheck.targets import known_failures
    monkeypatch.setattr(known_failures, "_XFAILS", {"t.broken": "silently wrong: planted", "": ""})
    rec = Record("2.13.0", {})
    fp = FailurePrint("values", "output 0", "")
    for stage in ("cold", "cached"):
        assert judge.judge_one(rec, "aotcheck", stage, "t.broken", fp).kind == "known"
        assert judge.judge_one(rec, "aotcheck", stage, "t.broken", None).kind == "FIXED"
        assert judge.judge_one(rec, "aotcheck", stage, "t.other", fp).kind == "NEW"
    assert judge.judge_one(rec, "torch", "cold", "t.broken", fp).kind == "NEW"
    assert judge.judge_one(rec, "aotcheck", "variation.grad_mode=no_grad", "t.broken", fp).kind == "NEW"


def test_a_record_that_is_not_one_is_named(tmp_path):
    p = tmp_path / "bad.json"
    p.write_text('{"engines": {}}')
    with pytest.raises(record.RecordError, match="not a known-failures record"):
        record.load(p)
    with pytest.raises(record.RecordError, match="cannot read the record"):
        record.load(tmp_path / "missing.json")


def _o(case, status, fp=None, stage="cold", engine="torch"):
    return Outcome(engine, stage, case, "t", Status(status), ("p",) if fp else (), fp)


def test_from_outcomes_pins_failures_and_keeps_reasons_and_unrun_entries():
    prev = _record()
    outs = [_o("a", "fail", R), _o("a", "skipped", stage="cached"), _o("b", "fail", V),
            _o("f", "fail", FailurePrint("crash in process", "", "the worker process died")),
            _o("c", "pass"), _o("c", "fail", V, stage="cached"), _o("d", "not run"),
            _o("e", "fail", V), _o("e", "fail", V, stage="cached")]
    new = record.from_outcomes(outs, "2.14.0", ["torch"], prev)
    t = new.engines["torch"]
    assert new.torch == "2.14.0"
    assert t["a"] == Entry("", R)            # fails another way: re-pinned, its reason dropped
    assert t["b"] == Entry("b fails, unpinned")               # unpinned stays so (the migrate tool pins)
    assert t["cached:c"] == Entry("", V)                     # another way again: reason dropped
    assert t["d"] == prev.engines["torch"]["d"]               # a recorded crash, not run: kept
    assert t["e"] == Entry("", V) and "cached:e" not in t     # the cached twin of a cold failure
    assert t["f"].crashes                                     # a crash found now: never run again
    assert record.from_outcomes([_o("a", "fail", V)], "2.13.0", ["torch"], prev).engines["torch"]["a"] \
        == prev.engines["torch"]["a"]                         # same way: reason kept
    unpinned = Record("2.13.0", {"torch": {"g": Entry("flickers")}})
    assert record.from_outcomes([_o("g", "fail", V)], "2.13.0", ["torch"], unpinned).engines["torch"]["g"] \
        == Entry("flickers")                                  # left unpinned on purpose: stays so
    assert set(record.from_outcomes(outs, "2.14.0", ["torch"], prev, keep_unrun=False)
               .engines["torch"]) == {"a", "b", "cached:c", "d", "e", "f"}


def test_a_recorded_variation_the_run_no_longer_gives_is_fixed_and_dropped_from_a_regenerated_record():
    """NOTE [a recorded stage the run no longer reaches]: a variation entry of a case that ran
    but gave no such stage is judged FIXED ("no longer runs") and dropped by ``--builtin``;
    kept when the case did not run or the plan ran no variations."""
    prev = Record("2.13.0", {"torch": {"variation.values=changed:a": Entry("lost", V),
                                       "variation.values=changed:z": Entry("lost", V),
                                       "variation.values=changed:d": Entry("lost", V)}})
    outs = [_o("a", "pass"), _o("a", "pass", stage="cached"), _o("d", "not run")]
    every = frozenset(("cold", "cached", "variation"))
    gone = [v for v in judge.judge(outs, prev, every) if v.kind == "FIXED"]
    assert [(v.stage, v.case_id) for v in gone] == [("variation.values=changed", "a")]
    assert "this stage no longer runs" in gone[0].sentence
    assert judge.exit_code(gone, strict=True) == 1
    assert not [v for v in judge.judge(outs, prev, frozenset(("cold", "cached"))) if v.kind == "FIXED"]
    kept = record.from_outcomes(outs, "2.13.0", ["torch"], prev, kinds=every).engines["torch"]
    assert set(kept) == {"variation.values=changed:z", "variation.values=changed:d"}
    assert len(record.from_outcomes(outs, "2.13.0", ["torch"], prev,
                                    kinds=frozenset(("cold", "cached"))).engines["torch"]) == 3


# ---------------------------------------------------------------- verdicts and exit codes


@pytest.mark.parametrize("stage, case, now, status, kind", [
    ("cold", "a", V, None, "known"),
    ("cold", "a", R, None, "CHANGED"),
    ("cold", "a", None, None, "FIXED"),
    ("cold", "b", R, None, "known"),          # unpinned: any failure is the known one
    ("cold", "b", None, None, "FIXED"),
    ("cold", "z", V, None, "NEW"),
    ("cold", "z", None, None, "pass"),
    ("cached", "c", R, None, "known"),
    ("cached", "c", V, None, "CHANGED"),
    ("cold", "c", V, None, "NEW"),            # the cached entry says nothing of the cold run
    ("cold", "d", None, "not run", "known"),
    ("cached", "a", None, "skipped", "skipped"),
])
def test_verdicts_from_a_synthetic_record(stage, case, now, status, kind):
    verdict = judge.judge_one(_record(), "torch", stage, case, now, status=status and Status(status))
    assert verdict.kind is judge.VerdictKind(kind)


def test_exit_codes_and_strict():
    rec = _record()

    def code(outs, strict=False):
        return judge.exit_code(judge.judge(outs, rec), strict=strict)
    assert code([_o("a", "fail", V), _o("z", "pass")]) == 0
    assert code([_o("a", "fail", V), _o("z", "pass")], strict=True) == 0
    assert code([_o("z", "fail", V)]) == 1                    # NEW
    assert code([_o("a", "fail", R)]) == 1                    # CHANGED
    assert code([_o("a", "pass")]) == 0                       # FIXED
    assert code([_o("a", "pass")], strict=True) == 1          # FIXED under --strict


def test_sentences_say_what_changed():
    v = judge.judge_one(_record(), "torch", "cold", "a", R, detail="output 1 requires_grad: ...")
    assert v.sentence.startswith("a [torch, cold]: was values, output 0; now requires_grad, output 1")


# ---------------------------------------------------------------- the commands, on a tiny subset


def _cli(argv, capsys):
    from aotcheck.cli import main
    code = main(argv)
    return code, capsys.readouterr().out


def test_baseline_save_then_check_new_changed_fixed(tmp_path, capsys):
    """A baseline of two cases on torch-aot-function (one passes, one fails as the built-in
    record says, with the same fingerprint), compared with itself, then with the entry removed (NEW), re-pinned (CHANGED) and with a
    passing case recorded (FIXED: exit 0, 1 under --strict). In-process (-j 1), no cache stage."""
    builtin = record.load().engines["torch-aot-function"]
    failing = next(k for k, e in builtin.items() if ":" not in k and e.fingerprint is not None
                   and not e.crashes and k.split(".")[0] in ("basics", "dtypes", "layers", "alias_of_input"))
    passing = "basics.scalar_args"
    assert passing not in builtin
    sel = ["--engine", "torch-aot-function", "-k", "", "-j", "1"]
    base = tmp_path / "base.json"
    subset = ["--theme", failing.split(".")[0], "--theme", "basics"]

    def run(*extra):
        return _cli(["check", *sel, *subset, *extra], capsys)

    import aotcheck.cli.check as check_cli
    orig = check_cli.selected_cases
    try:
        check_cli.selected_cases = lambda args: [c for c in orig(args) if c.id in (failing, passing)]
        code, out = _cli(["baseline", "save", str(base), *sel], capsys)
        assert code == 0 and "saved 1 recorded failure" in out
        data = json.loads(base.read_text())
        saved = data["engines"]["torch-aot-function"][failing]["fingerprint"]
        assert FailurePrint.from_dict(saved) == builtin[failing].fingerprint   # as recorded built in
        code, out = run("--baseline", str(base))
        assert code == 0 and "NEW: 0" in out and "CHANGED: 0" in out and "FIXED: 0" in out

        table = data["engines"]["torch-aot-function"]
        table[failing]["fingerprint"] = {"check": "values", "subject": "output 0", "error": ""}
        base.write_text(json.dumps(data))
        code, out = run("--baseline", str(base))
        assert code == 1 and "CHANGED: 1" in out and f"was values, output 0; now {builtin[failing].fingerprint}" in out

        del table[failing]
        table[passing] = {"reason": "", "fingerprint": {"check": "values"}}
        base.write_text(json.dumps(data))
        code, out = run("--baseline", str(base))
        assert code == 1 and "NEW: 1" in out and "FIXED: 1" in out
        table[failing] = {"reason": "", "fingerprint": saved}
        base.write_text(json.dumps(data))
        assert run("--baseline", str(base))[0] == 0
        assert run("--baseline", str(base), "--strict")[0] == 1
    finally:
        check_cli.selected_cases = orig


def test_bad_arguments_exit_2_with_a_named_error(tmp_path, capsys):
    from aotcheck.cli import main
    assert main(["check", "--engine", "nope"]) == 2
    assert "unknown engine 'nope'" in capsys.readouterr().err
    assert main(["check", "--engine", "torch", "--baseline", str(tmp_path / "missing.json")]) == 2
    assert "cannot read the record" in capsys.readouterr().err


# ---------------------------------------------------------------- the key-variation phase's interface


def test_variation_results_become_judged_stages(monkeypatch):
    """The phase behind ``run.variation_runner`` (NOTE [the key-variation phase]): each result is
    a stage ``variation.<label>``; a STALE HIT is a failure pinned as such (NEW unless recorded,
    known when recorded), an ok verdict a pass; A's cache is the cold run's directory."""
    import types

    from aotcheck.check.corpus import all_cases
    from aotcheck.regress import run as regress_run
    from aotcheck.regress.plan import Plan
    from aotcheck.targets.engines import get_engine
    seen = []

    class Var:
        def __init__(self, label):
            self.label = label

    def run_subject(engine, subject, per_case=None, a_dir=None):
        import os
        seen.append((subject, per_case, sorted(os.listdir(a_dir))))
        return types.SimpleNamespace(results=(
            types.SimpleNamespace(variation=Var("grad_mode=no_grad"), verdict="STALE HIT",
                                  reason="a hit under no_grad", divergences=(
                                      D(Check.REQUIRES_GRAD, Subject.output(0), expected="True",
                                        actual="False"),)),
            types.SimpleNamespace(variation=Var("values"), verdict="ok-hit", reason="", divergences=())))
    fake = types.SimpleNamespace(run_subject=run_subject, Subject=types.SimpleNamespace(of_case=lambda c: c.id))
    monkeypatch.setitem(__import__("sys").modules, regress_run.VARIATIONS_MODULE, fake)
    case = next(c for c in all_cases() if c.id == "basics.scalar_args")
    outs = regress_run.run_engine_case(get_engine("aotcheck"), case, Plan(("aotcheck",)),
                                       regress_run.variation_runner())
    assert [o.stage for o in outs] == ["cold", "cached", "variation.grad_mode=no_grad", "variation.values"]
    assert seen[0][0] == case.id and seen[0][1] == regress_run.VARIATIONS_PER_CASE and seen[0][2]
    stale = outs[2]
    assert stale.status == "fail" and stale.fingerprint == FailurePrint(
        "stale hit", "grad_mode=no_grad", "requires_grad, output 0")
    assert outs[3].status == "pass"
    empty = Record("2.13.0", {})
    assert [v.kind for v in judge.judge(outs, empty)] == ["pass", "pass", "NEW", "pass"]
    rec = record.from_outcomes(outs, "2.13.0", ["aotcheck"], None, keep_unrun=False)
    assert list(rec.engines["aotcheck"]) == ["variation.grad_mode=no_grad:basics.scalar_args"]
    assert [v.kind for v in judge.judge(outs, rec)] == ["pass", "pass", "known", "pass"]


def test_a_case_that_leaks_process_state_is_named_and_the_next_case_runs_as_if_alone():
    """NOTE [a case's run as if alone]: a planted leak (deterministic algorithms and a functorch
    config flag left changed) is named in the result and put back before the next case."""
    import torch
    import torch._functorch.config as fconfig

    from aotcheck.check.corpus.registry import Case
    from aotcheck.check.oracle import Inputs
    from aotcheck.regress import run as regress_run
    from aotcheck.regress.plan import Plan
    seen, guards = [], []

    def leaky(x):
        torch.use_deterministic_algorithms(True)
        fconfig.view_replay_for_aliased_outputs = not fconfig.view_replay_for_aliased_outputs
        if not guards:      # as a compile that fails inside inference_mode leaves it (rows 38-39)
            guards.append(torch._C._InferenceMode(True))
            guards[0].__enter__()
        return x * 2

    def reads(x):
        seen.append((torch.are_deterministic_algorithms_enabled(), fconfig.view_replay_for_aliased_outputs,
                     torch.is_inference_mode_enabled()))
        return x + 1

    def make():
        return Inputs((torch.ones(2),))
    cases = [Case("leaky", leaky, make, "basics", "inference"), Case("reads", reads, make, "basics", "inference")]
    start = (torch.are_deterministic_algorithms_enabled(), fconfig.view_replay_for_aliased_outputs, False)
    monkey = {c.id: c for c in cases}
    old_cases = regress_run._STATE.get("cases")
    try:
        regress_run._init_worker(Plan(("torch-aot-function",), cached=False, variations=False), {}, {})
        regress_run._STATE["cases"] = monkey
        outs, _, leaks = regress_run._work(["basics.leaky", "basics.reads"])
    finally:
        torch.use_deterministic_algorithms(start[0])
        fconfig.view_replay_for_aliased_outputs = start[1]
        if old_cases is not None:
            regress_run._STATE["cases"] = old_cases
    assert [o.status for o in outs] == ["pass", "pass"]
    assert seen and set(seen) == {start}
    assert [(e, c) for e, c, _ in leaks] == [("torch-aot-function", "basics.leaky")]
    what = leaks[0][2]
    assert [w.split(":")[0] for w in what] == [
        "deterministic_algorithms", "dispatch_keys_excluded", "dispatch_keys_included",
        "forward_grad_enabled", "functorch.view_replay_for_aliased_outputs", "grad_enabled",
        "inductor.deterministic", "inference_mode"]
    assert what[0] == "deterministic_algorithms: (False, False) -> (True, False)"
    assert what[2] == "dispatch_keys_included: +[] -['ADInplaceOrView']"
    assert what[-1] == "inference_mode: False -> True"
    assert not torch.is_inference_mode_enabled() and torch.is_grad_enabled()


def test_a_graph_break_with_another_first_reason_is_the_known_failure():
    """NOTE [graph breaks are not pinned by their reason] (fingerprint.py): Dynamo names either of
    two breaks first from run to run; a break that became a crash is still CHANGED."""
    from aotcheck.regress.fingerprint import FailurePrint as F
    from aotcheck.regress.judge import judge_one
    from aotcheck.regress.record import Entry, Record
    rec = Record("2.13.0", {"torch": {"c": Entry("why", F("graph break", "", "set_ reason"))}})
    assert judge_one(rec, "torch", "cold", "c", F("graph break", "", "requires_grad_ reason")).kind == "known"
    assert judge_one(rec, "torch", "cold", "c", F("crash in backward", "", "x")).kind == "CHANGED"


def test_inductor_lite_varies_half_the_corpus_and_torch_all_of_it():
    """NOTE [inductor-lite varies half the corpus]: the rotated variation runs on every case
    for the torch engine and on about half for torch-inductor-lite, the same half every run;
    the variations ``pick`` adds besides the rotation still run there."""
    from aotcheck.check.corpus import all_cases
    from aotcheck.regress.run import VARIATIONS_PER_CASE, variations_per_case
    from aotcheck.targets import variations as V
    ids = [c.id for c in all_cases()]
    assert all(variations_per_case("torch", i) == VARIATIONS_PER_CASE for i in ids)
    lite = [variations_per_case("torch-inductor-lite", i) for i in ids]
    assert 0.4 < sum(lite) / len(ids) < 0.6
    assert lite == [variations_per_case("torch-inductor-lite", i) for i in ids]
    guarded = next(c for c in all_cases() if "size_guards" in c.tags and
                   variations_per_case("torch-inductor-lite", c.id) == 0)
    s = V.Subject.of_case(guarded)
    assert [v.kind for v in V.pick(V.derive(s, "torch-inductor-lite"), s.name, 0, s.size_guards)] == \
        ["dynamic_shape"]


def test_a_record_keeps_the_reason_of_a_graph_break_that_dynamo_names_differently():
    """NOTE [graph breaks are not pinned by their reason]: regenerating the record keeps the
    written reason of a case whose first graph break Dynamo now names differently (three hand
    reasons were lost that way); a break that became a wrong value loses it."""
    was = FailurePrint("graph break", "", "graph_break: Unsupported function call (delayed)")
    now = FailurePrint("graph break", "", "graph_break: Unsupported Tensor.requires_grad_ call")
    prev = Record("2.13.0", {"torch": {"g": Entry("written by hand", was)}})
    assert record.from_outcomes([_o("g", "fail", now)], "2.13.0", ["torch"], prev).engines["torch"]["g"] \
        == Entry("written by hand", now)
    assert record.from_outcomes([_o("g", "fail", V)], "2.13.0", ["torch"], prev).engines["torch"]["g"] \
        == Entry("", V)


def test_the_regress_fingerprint_examples_run():
    """The examples of ``same_failure`` (NOTE [graph breaks are not pinned by their reason])."""
    import doctest

    from aotcheck.regress import fingerprint
    failures, tried = doctest.testmod(fingerprint)
    assert tried and not failures


# ---------------------------------------------------------------- stable verdicts (slow)


@pytest.mark.slow
def test_the_regression_command_gives_equal_verdicts_twice_on_one_build(tmp_path):
    """Issue 35: two whole runs of ``aotcheck check --engine all-torch`` on the same torch build
    (each worker pool takes its chunks in whatever order they finish) record the same failures
    with the same fingerprints, and both equal the installed release's built-in record (the run
    CI makes exits 0 only if so). ~7 minutes on two cores: run with ``-m slow``."""
    import subprocess
    import sys
    saved = []
    for name in ("first.json", "second.json"):
        out = subprocess.run([sys.executable, "-m", "aotcheck.cli", "baseline", "save",
                              str(tmp_path / name), "--engine", "all-torch"],
                             capture_output=True, text=True, timeout=1800)
        assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
        saved.append(record.load(tmp_path / name))
    assert_equal_verdicts(saved[0], saved[1], record.load())


def assert_equal_verdicts(first_run, second_run, builtin_record) -> None:
    """Two whole runs' baselines record the same failures, and so does the built-in record, each
    entry judged as the regression command judges it (``fingerprint.same_failure``): an entry the
    record leaves unpinned by its presence alone, and a graph break as a graph break, whichever
    break Dynamo names first (NOTE [graph breaks are not pinned by their reason])."""
    builtin = {e: {k: v.fingerprint for k, v in t.items()} for e, t in builtin_record.engines.items()
               if e in first_run.engines}

    def judged(e, k, fp):
        if builtin.get(e, {}).get(k, 0) is None or fp is None:
            return "any"
        return "graph break" if fp.check == "graph break" else fp
    first, second = ({e: {k: judged(e, k, v.fingerprint) for k, v in t.items()} for e, t in r.engines.items()}
                     for r in (first_run, second_run))
    assert first == second, _diff(first, second)
    pinned = {e: {k: judged(e, k, fp) for k, fp in t.items()} for e, t in builtin.items()}
    assert first == pinned, _diff(pinned, first)


def _diff(a: dict, b: dict) -> str:
    lines = []
    for e in sorted(set(a) | set(b)):
        x, y = a.get(e, {}), b.get(e, {})
        lines += [f"{e} {k}: {x.get(k)} vs {y.get(k)}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
    return "\n".join(lines[:60])


def test_the_check_printout_counts_each_verdict_kind_by_its_printed_value():
    """``aotcheck check``'s table and summary read the verdict kinds (judge.VerdictKind): the
    printout is the one the string kinds gave."""
    import io

    from aotcheck.cli.check import print_report
    from aotcheck.regress.plan import Plan
    from aotcheck.regress.run import RunResult
    outs = [_o("a", "fail", R), _o("a", "skipped", stage="cached"), _o("b", "fail", V), _o("z", "fail", V),
            _o("d", "not run"), _o("y", "pass"), _o("a", "pass", stage="cached", engine="torch-inductor")]
    rec = _record()
    verdicts = judge.judge(outs, rec)
    assert [str(v.kind) for v in verdicts] == ["CHANGED", "skipped", "known", "NEW", "known", "pass", "pass"]
    out = io.StringIO()
    print_report(Plan(("torch",)), RunResult(outs), verdicts, rec, stream=out)
    text = out.getvalue()
    assert "1/5 (2k, 1n, 1c)" in text and "0/0 (1s)" in text and "1/1" in text
    assert "runs: 2 passed, 2 known failures, 2 failing against the record, 0 fixed, 1 skipped" in text
    assert "NEW: 1\n  z [torch, cold]: " in text and "CHANGED: 1\n  a [torch, cold]: was " in text
    assert "FIXED: 0\n" in text
